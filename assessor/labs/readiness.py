"""How ready a candidate is for one NVIDIA exam, by the exam's domains: from the labs passed, and exam sessions.

The rule (docs/LEVELS.md, "Readiness for an exam"), a pure function of the blueprint, the labs, the set of
passed lab ids and the candidate's exam-session results:

- The labs that train an exam domain are those whose lab.yaml ``exam_domains`` name it ("EXAM: Domain",
  matched without regard to case).
- A lab weighs its level: a level-3 lab counts three times a level-1 lab, since it shows more of the domain.
- From the labs, a domain's readiness is the weight of its passed labs over the weight of all its labs (a lab
  is passed when its best attempt that counts passed, as `gpulab progress` says). A domain no lab trains has
  no figure from the labs.
- An exam session (``gpulab exam``) scores the exam's domains in percent. The latest session that scored a
  domain counts as much as the labs: the domain's readiness is the mean of the two; with no lab training the
  domain, the session's score alone. A domain with neither is at 0.
- Overall: the blueprint-weighted mean of every domain of the exam, trained by the labs or not (the exam asks
  them all).
- Verdict: **ready** at :data:`READY` overall with no domain below :data:`FLOOR`; **nearly** at :data:`NEARLY`
  overall; else **not yet**.

Every figure comes with its words; :meth:`Readiness.to_json` is what `gpulab progress --exam --json` and the
candidate report carry, the same dict for the same inputs. Everything here is pure but :func:`exam_titles`,
which reads the exams' titles from the blueprints file.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from assessor.errors import InputError
from assessor.labs.levels import Blueprints

READY = Fraction(80, 100)  # overall readiness for "ready" ...
FLOOR = Fraction(50, 100)  # ... with no domain below this
NEARLY = Fraction(60, 100)  # overall readiness for "nearly"

VERDICTS = ("ready", "nearly", "not yet")


class ExamLab(Protocol):
    """What readiness needs of a lab."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def exam_domains(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class LabMark:
    """A lab that trains an exam domain, and whether the candidate passed it."""

    lab: str
    title: str
    level: int
    passed: bool

    def to_json(self) -> dict[str, Any]:
        return {"lab": self.lab, "title": self.title, "level": self.level, "passed": self.passed}


@dataclass(frozen=True)
class DomainReadiness:
    """One exam domain: its weight, its labs, and how ready the candidate is in it (0 to 1)."""

    name: str
    weight: Fraction  # percent of the exam
    labs: tuple[LabMark, ...]
    from_labs: Fraction | None  # None: no lab trains the domain
    session: Fraction | None  # the latest exam session's score for it (0 to 1); None: none scored it
    readiness: Fraction

    @property
    def passed(self) -> tuple[LabMark, ...]:
        return tuple(m for m in self.labs if m.passed)

    @property
    def explanation(self) -> str:
        head = f"{self.name} ({_pct(self.weight / 100)} of the exam): {_pct(self.readiness)}"
        if self.from_labs is None:
            parts = ["no lab trains it"]
        else:
            done = sum(m.level for m in self.passed)
            total = sum(m.level for m in self.labs)
            passed = ", ".join(f"{m.lab} (level {m.level})" for m in self.passed) or "none"
            parts = [f"labs {_pct(self.from_labs)} (level-weighted {done} of {total}; passed: {passed})"]
        if self.session is not None:
            parts.append(f"latest exam session {_pct(self.session)}")
        elif self.from_labs is None:
            parts.append("no exam session has scored it")
        return f"{head}: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "domain": self.name,
            "weight_pct": _num(self.weight),
            "readiness_pct": _num(self.readiness * 100),
            "from_labs_pct": None if self.from_labs is None else _num(self.from_labs * 100),
            "session_pct": None if self.session is None else _num(self.session * 100),
            "labs": [m.to_json() for m in self.labs],
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class Readiness:
    """How ready the candidate is for one exam: each domain, the weighted whole, the verdict."""

    exam: str
    title: str
    domains: tuple[DomainReadiness, ...]
    overall: Fraction
    verdict: str  # one of VERDICTS
    sessions: int  # exam sessions taken into account
    blueprint: str  # which blueprint: "v1 as of 2026-11-29"

    @property
    def trained(self) -> Fraction:
        """The share of the exam's weight that some lab trains (0 to 1)."""
        return sum((d.weight for d in self.domains if d.from_labs is not None), Fraction(0)) / 100

    @property
    def weakest(self) -> DomainReadiness | None:
        """The domain to work on first: the least ready, the heaviest of those."""
        return min(self.domains, key=lambda d: (d.readiness, -d.weight, d.name), default=None)

    @property
    def explanation(self) -> str:
        low = [d.name for d in self.domains if d.readiness < FLOOR]
        text = f"{self.exam} readiness {_pct(self.overall)}: {self.verdict}"
        if self.verdict == "ready":
            text += f" (at least {_pct(READY)} overall, no domain below {_pct(FLOOR)})"
        elif self.overall >= READY:
            text += f" ({_pct(self.overall)} overall, but below {_pct(FLOOR)} in {', '.join(low)})"
        elif self.verdict == "nearly":
            text += f" ({_pct(READY)} overall, with no domain below {_pct(FLOOR)}, is ready)"
        else:
            text += f" (nearly at {_pct(NEARLY)} overall; ready at {_pct(READY)} with no domain below {_pct(FLOOR)})"
        untrained = [d for d in self.domains if d.from_labs is None]
        if untrained:
            names = ", ".join(f"{d.name} ({_pct(d.weight / 100)})" for d in untrained)
            text += f"; no lab trains {names}: only an exam session scores it"
        weakest = self.weakest
        if weakest is not None and self.verdict != "ready":
            text += f"; weakest: {weakest.name} at {_pct(weakest.readiness)}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "exam": self.exam,
            "title": self.title,
            "blueprint": self.blueprint,
            "readiness_pct": _num(self.overall * 100),
            "verdict": self.verdict,
            "trained_pct": _num(self.trained * 100),
            "sessions": self.sessions,
            "explanation": self.explanation,
            "rule": rule_words(),
            "domains": [d.to_json() for d in self.domains],
        }


def lines(r: Readiness) -> list[str]:
    """What `gpulab progress --exam` prints of the readiness: a heading, a line per domain, the verdict, the rule."""
    return [
        f"Readiness for {r.exam} ({r.title}), blueprint {r.blueprint}"
        + (f", {r.sessions} exam session(s)" if r.sessions else "")
        + ":",
        *(f"  {d.explanation}" for d in r.domains),
        r.explanation,
        f"How readiness is given: {rule_words()}",
    ]


def _num(x: Fraction) -> float:
    return round(float(x), 1)


def _pct(x: Fraction) -> str:
    return f"{float(x * 100):.0f} %"


def rule_words() -> str:
    """The readiness rule in one paragraph, for `progress` and the reports."""
    return (
        "A domain's readiness from the labs is the share of its labs passed, each lab weighing its level (the "
        "labs whose exam_domains name it; the best attempt that counts); the latest exam session that scored the "
        "domain counts as much as the labs (the mean of the two; the session alone where no lab trains it); a "
        "domain with neither is at 0. The exam's readiness is the blueprint-weighted mean of all its domains. "
        f"Ready: {_pct(READY)} or more with no domain below {_pct(FLOOR)}; nearly: {_pct(NEARLY)} or more; "
        "else not yet."
    )


def find_exam(blueprints: Blueprints, exam: str) -> str:
    """The exam's name as the blueprints spell it (matched without regard to case); InputError naming the
    exams there are."""
    for name in blueprints.exams:
        if name.casefold() == exam.strip().casefold():
            return name
    raise InputError(f"unknown exam {exam!r} (exams: {', '.join(blueprints.exams)})")


def _session_scores(
    exam: str, weights: Mapping[str, Fraction], sessions: Sequence[Mapping[str, Any]]
) -> dict[str, Fraction]:
    """Each domain's score in the latest session that scored it (0 to 1). A session's keys are the exam's
    domain names, bare or as "EXAM: Domain", any case; a score is a percent from 0 to 100."""
    known = {name.casefold(): name for name in weights}
    known.update({f"{exam}: {name}".casefold(): name for name in weights})
    latest: dict[str, Fraction] = {}
    for n, session in enumerate(sessions, 1):
        for key, score in session.items():
            name = known.get(str(key).strip().casefold())
            if name is None:
                raise InputError(f"exam session {n}: {key!r} is not a domain of {exam} (domains: {', '.join(weights)})")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 100:
                raise InputError(
                    f"exam session {n}: the score of {name} must be a percent from 0 to 100, got {score!r}"
                )
            latest[name] = Fraction(str(score)) / 100
    return latest


def trains(lab: ExamLab, exam: str, domain: str) -> bool:
    """Whether the lab's ``exam_domains`` name ``EXAM: Domain`` (without regard to case)."""
    key = f"{exam}: {domain}".casefold()
    return any(str(name).strip().casefold() == key for name in lab.exam_domains)


def readiness(
    exam: str,
    blueprints: Blueprints,
    labs: Sequence[ExamLab],
    passed: Collection[str],
    *,
    sessions: Sequence[Mapping[str, Any]] = (),
    title: str | None = None,
) -> Readiness:
    """How ready a candidate who passed ``passed`` is for ``exam``, by its domains (the module's rule).

    ``sessions``: the candidate's exam-session results, oldest first, each exam domain -> score in percent.
    InputError for an exam the blueprints do not know, or a session naming a domain the exam does not have.
    """
    name = find_exam(blueprints, exam)
    weights = blueprints.exams[name]
    scored = _session_scores(name, weights, sessions)
    domains: list[DomainReadiness] = []
    for domain, weight in weights.items():
        marks = tuple(
            LabMark(x.id, x.title, x.level, x.id in passed)
            for x in sorted(labs, key=lambda x: (x.level, x.id))
            if trains(x, name, domain)
        )
        total = sum(max(1, m.level) for m in marks)
        from_labs = Fraction(sum(max(1, m.level) for m in marks if m.passed), total) if total else None
        session = scored.get(domain)
        if from_labs is not None and session is not None:
            value = (from_labs + session) / 2
        else:
            value = from_labs if from_labs is not None else session if session is not None else Fraction(0)
        domains.append(DomainReadiness(domain, weight, marks, from_labs, session, value))
    overall = sum((d.weight * d.readiness for d in domains), Fraction(0)) / 100
    if overall >= READY and all(d.readiness >= FLOOR for d in domains):
        verdict = "ready"
    elif overall >= NEARLY:
        verdict = "nearly"
    else:
        verdict = "not yet"
    return Readiness(
        exam=name,
        title=title or name,
        domains=tuple(domains),
        overall=overall,
        verdict=verdict,
        sessions=len(sessions),
        blueprint=f"v{blueprints.version} as of {blueprints.as_of}",
    )


def exam_titles(path: Path | None = None) -> dict[str, str]:
    """Each exam's title from the blueprints file (the shipped one, or the labs tree's own)."""
    from assessor import yamlio
    from assessor.labs.levels import BLUEPRINTS, data_file

    data = yamlio.load(path or data_file(BLUEPRINTS)).data
    exams = data.get("exams") if isinstance(data, dict) else None
    if not isinstance(exams, dict):
        return {}
    return {str(e): str((d or {}).get("title") or e) if isinstance(d, dict) else str(e) for e, d in exams.items()}
