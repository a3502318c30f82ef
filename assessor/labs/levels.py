"""Skill levels from lab results: the rule lives in ``labs/levels.yaml``, the weights in ``labs/blueprints.yaml``.

Everything here is a pure function of the rule, the labs and the set of passed lab ids, and every level
comes with its explanation in words (see levels.yaml for the rule itself).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from assessor.labs.model import DOMAINS, LEVEL_NAMES
from assessor.yamlio import Located

BLUEPRINTS = "blueprints.yaml"
LEVELS = "levels.yaml"


class LabLike(Protocol):
    """What the level rule needs of a lab."""

    @property
    def id(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def level(self) -> int: ...


@dataclass(frozen=True)
class Blueprints:
    version: int
    as_of: str
    exams: dict[str, dict[str, Fraction]]  # exam -> exam domain -> weight (percent)


@dataclass(frozen=True)
class Rules:
    version: int
    pass_ratio: Fraction
    min_passed: int
    overall_exams: tuple[str, ...]
    weight_share: Fraction
    trains: dict[str, tuple[str, ...]]  # lab domain -> "EXAM: Domain"
    blueprints: Blueprints


def _fraction(located: Located, path: tuple[str, ...], value: Any) -> Fraction:
    try:
        out = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise located.error(path, f"{value!r} is not a fraction such as 2/3 or 0.5") from None
    if not 0 < out <= 1:
        raise located.error(path, f"{value} must be above 0 and at most 1")
    return out


def _get(located: Located, path: tuple[str, ...], kind: type | tuple[type, ...]) -> Any:
    node = located.data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            raise located.error(path[:-1], f"missing key {part!r}")
        node = node[part]
    if not isinstance(node, kind):
        raise located.error(path, f"expected {getattr(kind, '__name__', kind)}, got {node!r}")
    return node


def data_file(name: str, root: Path | None = None) -> Path:
    """A data file of the labs tree (``levels.yaml``, ``blueprints.yaml``): the root's own, else the shipped one."""
    import os

    from assessor import content

    shipped = content.folder("labs")
    root = root or Path(os.environ.get("GPULAB_LABS") or shipped)
    own = root / name
    return own if own.is_file() else shipped / name


def load_blueprints(path: Path | None = None) -> Blueprints:
    """The exam blueprints data file; InputError naming file, line and key when malformed."""
    from assessor import yamlio

    located = yamlio.load(path or data_file(BLUEPRINTS))
    version = _get(located, ("version",), int)
    as_of = str(_get(located, ("as_of",), (str, int, object)))
    exams: dict[str, dict[str, Fraction]] = {}
    for exam in _get(located, ("exams",), dict):
        domains = _get(located, ("exams", exam, "domains"), dict)
        weights: dict[str, Fraction] = {}
        for name, weight in domains.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
                raise located.error(
                    ("exams", exam, "domains", name), f"weight must be a positive number, got {weight!r}"
                )
            weights[str(name)] = Fraction(str(weight))
        total = sum(weights.values())
        if total != 100:
            raise located.error(("exams", exam, "domains"), f"weights of {exam} add up to {float(total):g}, not 100")
        exams[str(exam)] = weights
    return Blueprints(version, as_of, exams)


def exam_domain_names(path: Path | None = None) -> list[str]:
    """Every "EXAM: Domain" the blueprints know."""
    bp = load_blueprints(path)
    return [f"{exam}: {name}" for exam, domains in bp.exams.items() for name in domains]


def load_rules(root: Path | None = None) -> Rules:
    """levels.yaml (with blueprints.yaml beside it) from ``root``, else the shipped ones."""
    from assessor import yamlio

    blueprints = load_blueprints(data_file(BLUEPRINTS, root))
    located = yamlio.load(data_file(LEVELS, root))
    version = _get(located, ("version",), int)
    ratio = _fraction(located, ("rule", "pass_ratio"), _get(located, ("rule", "pass_ratio"), (str, int, float)))
    min_passed = _get(located, ("rule", "min_passed"), int)
    exams = _get(located, ("overall", "exams"), list)
    for i, exam in enumerate(exams):
        if exam not in blueprints.exams:
            raise located.error(
                ("overall", "exams", i), f"unknown exam {exam!r} (blueprints: {', '.join(blueprints.exams)})"
            )
    share = _fraction(
        located, ("overall", "weight_share"), _get(located, ("overall", "weight_share"), (str, int, float))
    )
    known = {f"{e}: {d}".casefold(): (e, d) for e, ds in blueprints.exams.items() for d in ds}
    trains: dict[str, tuple[str, ...]] = {}
    for domain in _get(located, ("trains",), dict):
        if domain not in DOMAINS:
            raise located.error(("trains", domain), f"unknown lab domain {domain!r} (domains: {', '.join(DOMAINS)})")
        canonical = []
        for i, name in enumerate(_get(located, ("trains", domain), list)):
            hit = known.get(str(name).casefold())
            if hit is None:
                raise located.error(("trains", domain, i), f"unknown exam domain {name!r} (see blueprints.yaml)")
            canonical.append(f"{hit[0]}: {hit[1]}")
        trains[domain] = tuple(canonical)
    return Rules(version, ratio, min_passed, tuple(exams), share, trains, blueprints)


def domain_weights(rules: Rules, domains: Iterable[str] | None = None) -> dict[str, Fraction]:
    """Weight of each lab domain (fractions summing to 1) over ``domains`` (default: all mapped ones).

    Exams in ``overall.exams`` count equally; an exam domain's weight is shared equally by the lab domains
    that train it; exam domains no lab domain in ``domains`` trains drop out.
    """
    chosen = list(domains) if domains is not None else list(rules.trains)
    raw: dict[str, Fraction] = dict.fromkeys(chosen, Fraction(0))
    for exam in rules.overall_exams:
        weights = rules.blueprints.exams[exam]
        for name, weight in weights.items():
            key = f"{exam}: {name}"
            sharers = [d for d in chosen if key in rules.trains.get(d, ())]
            for d in sharers:
                raw[d] += weight / len(sharers) / len(rules.overall_exams)
    total = sum(raw.values())
    if total == 0:
        return {d: Fraction(1, len(chosen)) for d in chosen} if chosen else {}
    return {d: w / total for d, w in raw.items()}


@dataclass(frozen=True)
class LevelTally:
    level: int
    passed: tuple[str, ...]
    total: int
    needed: int
    open: tuple[str, ...]  # labs at this level not passed yet

    @property
    def met(self) -> bool:
        return len(self.passed) >= self.needed


@dataclass(frozen=True)
class DomainLevel:
    domain: str
    level: int
    tallies: tuple[LevelTally, ...]
    explanation: str

    @property
    def name(self) -> str:
        return LEVEL_NAMES[self.level]

    @property
    def top(self) -> int:
        """The highest level with labs in this domain (0: none)."""
        return max((t.level for t in self.tallies), default=0)

    def counts_at(self, level: int) -> bool:
        """Whether this domain counts toward an overall ``level``: it is at that level or above, or its labs
        stop below that level and it is at the highest of them (nothing more can be shown in it)."""
        return self.level >= level or (0 < self.top < level and self.level == self.top)


@dataclass(frozen=True)
class Levels:
    domains: dict[str, DomainLevel]
    overall: int
    weights: dict[str, Fraction]
    explanation: str
    rule: str = field(default="")

    @property
    def overall_name(self) -> str:
        return LEVEL_NAMES[self.overall]


def needed(rules: Rules, labs_at_level: int) -> int:
    """Passes needed among ``labs_at_level`` labs: ceil(ratio × n), at least min_passed, at most n."""
    return min(labs_at_level, max(rules.min_passed, math.ceil(rules.pass_ratio * labs_at_level)))


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids[:-1]) + f" or {ids[-1]}" if len(ids) > 1 else ids[0]


def domain_level(rules: Rules, domain: str, labs: Iterable[LabLike], passed: set[str]) -> DomainLevel:
    """The level of one domain with the words that explain it."""
    by_level: dict[int, list[str]] = {}
    for lab in labs:
        if lab.domain == domain:
            by_level.setdefault(lab.level, []).append(lab.id)
    tallies = tuple(
        LevelTally(
            k,
            tuple(sorted(i for i in ids if i in passed)),
            len(ids),
            needed(rules, len(ids)),
            tuple(sorted(i for i in ids if i not in passed)),
        )
        for k, ids in sorted(by_level.items())
    )
    if not tallies:
        return DomainLevel(domain, 0, (), f"Level 0 ({LEVEL_NAMES[0]}) in {domain}: no labs in this domain yet")
    level, blocker = 0, None
    for t in tallies:
        if not t.met:
            blocker = t
            break
        level = t.level
    counted = [t for t in tallies if t.level <= level]
    head = f"Level {level} ({LEVEL_NAMES[level]}) in {domain}"
    parts = [f"{len(t.passed)} of {t.total} level-{t.level} labs" for t in counted]
    joined = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
    text = head + (f": passed {joined}" if parts else ": no level passed yet")
    if blocker is None:
        text += "; that is the highest level with labs in this domain"
    else:
        more = blocker.needed - len(blocker.passed)
        text += (
            f"; to reach level {blocker.level} ({LEVEL_NAMES[blocker.level]}), pass "
            + (
                _ids(blocker.open)
                if more == 1
                else " and ".join(blocker.open)
                if more == len(blocker.open)
                else f"{more} of {', '.join(blocker.open)}"
            )
            + f" ({blocker.needed} of {blocker.total} level-{blocker.level} labs needed)"
        )
        later = [t for t in tallies if t.level > blocker.level and t.passed]
        if later:
            done = ", ".join(f"{len(t.passed)} level-{t.level}" for t in later)
            text += f"; already passed {done} lab(s), which count once level {blocker.level} is reached"
    return DomainLevel(domain, level, tallies, text)


def compute(rules: Rules, labs: Sequence[LabLike], passed: set[str]) -> Levels:
    """Every domain's level and the overall level, each explained."""
    present = [d for d in DOMAINS if any(lab.domain == d for lab in labs)]
    domains = {d: domain_level(rules, d, labs, passed) for d in DOMAINS}
    weights = domain_weights(rules, present)
    overall = 0
    for level in range(5, 0, -1):
        shown = any(domains[d].level >= level for d in present)  # some domain shows the level itself
        share = sum((weights[d] for d in present if domains[d].counts_at(level)), Fraction(0))
        if shown and share >= rules.weight_share:
            overall = level
            break
    return Levels(domains, overall, weights, _overall_words(rules, domains, weights, overall), rule_words(rules))


def _pct(x: Fraction) -> str:
    return f"{float(x * 100):.0f} %"


def _overall_words(rules: Rules, domains: dict[str, DomainLevel], weights: dict[str, Fraction], overall: int) -> str:
    if not weights:
        return f"Overall level 0 ({LEVEL_NAMES[0]}): no labs"
    need = _pct(rules.weight_share)
    if overall:
        at = [d for d in weights if domains[d].counts_at(overall)]
        share = sum((weights[d] for d in at), Fraction(0))
        text = (
            f"Overall level {overall} ({LEVEL_NAMES[overall]}): domains at level {overall} or above, or at the "
            f"top of their labs ({', '.join(f'{d} {_pct(weights[d])}' for d in at)}) carry {_pct(share)} of the "
            f"blueprint weight ({need} needed)"
        )
    else:
        text = f"Overall level 0 ({LEVEL_NAMES[0]}): domains carrying {need} of the blueprint weight must reach level 1"
    if overall < 5:
        text += _next_overall(rules, domains, weights, overall + 1)
    return text


def _next_overall(rules: Rules, domains: dict[str, DomainLevel], weights: dict[str, Fraction], target: int) -> str:
    """What reaches overall level ``target``: the heaviest domains brought to it (or to the top of their labs,
    for a domain whose labs stop below it), with at least one of them shown at the level itself."""
    # the level each domain must reach: the first with labs at or above the target, else the top of its labs
    goal = {d: min((t.level for t in domains[d].tallies if t.level >= target), default=domains[d].top) for d in weights}
    have = sum((weights[d] for d in weights if domains[d].counts_at(target)), Fraction(0))
    short = sorted(
        (d for d in weights if not domains[d].counts_at(target) and goal[d] > domains[d].level),
        key=lambda d: (goal[d] < target, -weights[d], d),  # a domain that can show the level itself first
    )
    shown = any(domains[d].level >= target for d in weights)
    picks, acc = [], have
    for d in short:
        if acc >= rules.weight_share and shown:
            break
        picks.append(d)
        acc += weights[d]
        shown = shown or goal[d] >= target
    if acc >= rules.weight_share and shown and picks:
        return f"; to reach level {target} ({LEVEL_NAMES[target]}), bring " + ", ".join(
            f"{d} ({_pct(weights[d])}) to level {goal[d]}" for d in picks
        )
    return f"; no set of labs in this catalogue reaches overall level {target} yet"


def rule_words(rules: Rules) -> str:
    """The rule itself in one paragraph, for reports."""
    return (
        f"A domain is at level L when, at every level up to L that has labs in it, at least "
        f"max({rules.min_passed}, ceil({rules.pass_ratio} x labs at that level)) of them are passed "
        f"(unattempted labs are simply not passed; the best attempt counts). The overall level is the highest L "
        f"such that domains carrying at least {_pct(rules.weight_share)} of the blueprint weight "
        f"({', '.join(rules.overall_exams)}, blueprints v{rules.blueprints.version} as of {rules.blueprints.as_of})"
        f" are at level L or above, or at the top of their labs where those stop below L, and at least one "
        f"domain is at level L itself."
    )
