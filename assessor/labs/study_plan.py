"""What to study next: the labs a candidate has not passed, in the order to take them, each with why.

A pure function of the level rule (``labs/levels.yaml``), the catalogue, the passed lab ids and, for an exam,
the exam-session results. The plan is built a lab at a time, as if the candidate passed each lab in turn:

- **Prerequisites first.** A lab is open when every lower level of its lab domain that has labs has the
  passes the level rule needs (levels.yaml: passes above an unmet level wait for it); only open labs are
  planned, so a domain's lower levels come before its higher ones.
- **For an exam** (``--exam``): the plan holds the labs that train the exam and the labs that open them.
  The next lab is the one for the weakest exam domain (the least ready, :mod:`assessor.labs.readiness`; the
  heaviest in the blueprint among equals), its readiness recomputed after each lab planned, so the plan
  moves on when a domain has caught up. A lab that trains no domain of the exam but is needed before one
  that does takes that lab's place in the order. Then the lower level, then the id.
- **Without an exam**, by the overall level rule: first the labs a domain's next level still needs (lowest
  level first, the domain with the heavier blueprint weight first: the overall level climbs one level at a
  time across two thirds of the weight), then the labs beyond what the levels need, as practice.

Each step says why it comes there, with the figures as they stand when it is reached (the steps before it
passed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from assessor.labs import levels as level_rule
from assessor.labs import readiness as exam_rule
from assessor.labs.model import LEVEL_NAMES


class PlanLab(Protocol):
    """What the plan needs of a lab."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def exam_domains(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Step:
    """One lab of the plan, and why it comes here."""

    lab: str
    title: str
    domain: str
    level: int
    why: str
    exam_domain: str | None = None  # with an exam: the exam domain it is planned for

    def to_json(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "title": self.title,
            "domain": self.domain,
            "level": self.level,
            "exam_domain": self.exam_domain,
            "why": self.why,
        }


@dataclass(frozen=True)
class StudyPlan:
    """The labs to take next, in order; ``exam`` None: by the overall level rule."""

    exam: str | None
    steps: tuple[Step, ...]

    @property
    def goal(self) -> str:
        return f"readiness for {self.exam}" if self.exam else "the overall level"

    def to_json(self) -> dict[str, Any]:
        return {
            "exam": self.exam,
            "goal": self.goal,
            "rule": rule_words(self.exam),
            "steps": [s.to_json() for s in self.steps],
        }


SHOWN = 10  # steps `gpulab progress` prints; the JSON has them all


def lines(p: StudyPlan, shown: int = SHOWN) -> list[str]:
    """What `gpulab progress` prints of the plan: a heading, the first ``shown`` steps, how many more, the rule."""
    if not p.steps:
        done = f"every lab that trains {p.exam} is passed" if p.exam else "every lab is passed"
        return [f"Study plan ({p.goal}): nothing left to take: {done}"]
    out = [f"Study plan ({p.goal}): the next labs, in order"]
    for n, s in enumerate(p.steps[:shown], 1):
        out.append(f"  {n}. {s.lab} ({s.domain}, level {s.level}) {s.title}: {s.why}")
    if len(p.steps) > shown:
        out.append(f"  ... and {len(p.steps) - shown} more (`gpulab progress --json` lists them all)")
    out.append(f"How the plan is ordered: {rule_words(p.exam)}")
    return out


def rule_words(exam: str | None) -> str:
    """How the plan is ordered, in one paragraph."""
    common = (
        "A lab comes only once the lower levels of its lab domain have the passes the level rule needs "
        "(labs/levels.yaml)."
    )
    if exam:
        return (
            f"{common} For {exam}: the labs that train it and those needed first, the weakest exam domain first "
            "(readiness recomputed as each planned lab is passed; the heavier domain among equals), then the lower "
            "level."
        )
    return (
        f"{common} By the overall level rule: first the labs each domain's next level needs, lowest level first "
        "and the heavier blueprint weight first; then the labs beyond what the levels need, as practice."
    )


def _tallies(rules: level_rule.Rules, labs: Sequence[PlanLab], done: set[str]) -> dict[str, level_rule.DomainLevel]:
    return {d: level_rule.domain_level(rules, d, labs, done) for d in {x.domain for x in labs}}


def _is_open(x: PlanLab, tallies: Mapping[str, level_rule.DomainLevel]) -> bool:
    return all(t.met for t in tallies[x.domain].tallies if t.level < x.level)


def _still_needed(x: PlanLab, tallies: Mapping[str, level_rule.DomainLevel]) -> bool:
    """Passing it counts toward a level of its domain the rule does not have yet."""
    return any(t.level == x.level and not t.met for t in tallies[x.domain].tallies)


def plan(
    rules: level_rule.Rules,
    labs: Sequence[PlanLab],
    passed: Collection[str],
    *,
    exam: str | None = None,
    sessions: Sequence[Mapping[str, Any]] = (),
) -> StudyPlan:
    """The labs ``passed`` leaves, in the order to take them (the module's rule); for ``exam``, the labs that
    train it and those that open them. InputError for an exam the blueprints do not know."""
    if exam is not None:
        return _for_exam(rules, labs, set(passed), exam_rule.find_exam(rules.blueprints, exam), sessions)
    return _for_levels(rules, labs, set(passed))


def _for_levels(rules: level_rule.Rules, labs: Sequence[PlanLab], done: set[str]) -> StudyPlan:
    weights = level_rule.domain_weights(rules, [d for d in dict.fromkeys(x.domain for x in labs)])
    steps: list[Step] = []
    while True:
        tallies = _tallies(rules, labs, done)
        open_ = [x for x in labs if x.id not in done and _is_open(x, tallies)]
        if not open_:
            break
        x = min(
            open_,
            key=lambda x: (not _still_needed(x, tallies), x.level, -weights.get(x.domain, Fraction(0)), x.id),
        )
        v = tallies[x.domain]
        tally = next(t for t in v.tallies if t.level == x.level)
        weight = f"{float(weights.get(x.domain, 0) * 100):.0f} %"
        if not tally.met:
            more = tally.needed - len(tally.passed)
            why = (
                f"{x.domain} is at level {v.level}: level {x.level} ({LEVEL_NAMES[x.level]}) needs {more} more of "
                f"{', '.join(tally.open)} ({tally.needed} of {tally.total}); {x.domain} carries {weight} of the "
                "overall weight"
            )
        else:
            why = f"practice: level {x.level} in {x.domain} already has the passes it needs"
        steps.append(Step(x.id, x.title, x.domain, x.level, why))
        done.add(x.id)
    return StudyPlan(None, tuple(steps))


def _weakest(y: PlanLab, exam: str, standing: Mapping[str, exam_rule.DomainReadiness]) -> exam_rule.DomainReadiness:
    """The weakest exam domain lab ``y`` trains (the heaviest among equals)."""
    return min(
        (d for name, d in standing.items() if exam_rule.trains(y, exam, name)),
        key=lambda d: (d.readiness, -d.weight, d.name),
    )


def _for_exam(
    rules: level_rule.Rules,
    labs: Sequence[PlanLab],
    done: set[str],
    exam: str,
    sessions: Sequence[Mapping[str, Any]],
) -> StudyPlan:
    bp = rules.blueprints
    goal = {x.id for x in labs if any(exam_rule.trains(x, exam, d) for d in bp.exams[exam])}
    steps: list[Step] = []
    while True:
        standing = {d.name: d for d in exam_rule.readiness(exam, bp, labs, done, sessions=sessions).domains}
        tallies = _tallies(rules, labs, done)
        waiting = [y for y in labs if y.id in goal and y.id not in done]
        # each open lab with what it is for: itself when it trains the exam, and the labs of its domain it opens;
        # ranked by the weakest exam domain among those (the heavier among equals), itself before what it opens
        options: list[tuple[tuple[Any, ...], PlanLab, PlanLab, exam_rule.DomainReadiness]] = []
        for x in labs:
            if x.id in done or not _is_open(x, tallies):
                continue
            targets = [x] if x.id in goal else []
            if _still_needed(x, tallies):
                targets += [y for y in waiting if y.domain == x.domain and y.level > x.level]
            ranked = sorted(
                (d.readiness, -d.weight, d.name, y is not x, y.level, y.id, y, d)
                for y in targets
                for d in [_weakest(y, exam, standing)]
            )
            if ranked:
                *key, target, domain = ranked[0]
                options.append(((*key[:4], x.level, x.id), x, target, domain))
        if not options:
            break
        _, x, target, domain = min(options, key=lambda o: o[0])
        at = f"{domain.name} ({float(domain.weight):g} % of {exam}), at {float(domain.readiness * 100):.0f} %"
        if target is x:
            why = f"{at}, is the weakest domain with a lab open: {x.id} trains it"
        else:
            why = (
                f"needed before {target.id} (level {target.level}): level {x.level} of {x.domain} comes first; "
                f"{target.id} trains {at}, the weakest domain with a lab open"
            )
        steps.append(Step(x.id, x.title, x.domain, x.level, why, domain.name))
        done.add(x.id)
    return StudyPlan(exam, tuple(steps))
