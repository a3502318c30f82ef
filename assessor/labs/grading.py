"""Scoring a lab: check results to points, partial credit, total, pass or not, late or not.

Pure: the caller captures the facts (or reads the answer file) and says when the lab was started and
graded; the same inputs always give the same grade.

Scoring rule per check: ``pass`` earns the full points; ``fail`` (and ``warn``, which is not a pass unless
the lab says ``warn_counts: true``) tries the check's ``partial`` rules in order, re-running the check with
the parameter multiplied by the rule's factor: the first relaxed run that passes earns ``credit`` × points;
``skip`` and ``error`` earn 0 with the reason. The total is a percentage of the lab's points; the lab is
passed when it reaches ``pass_percent`` and no guard failed. A grade after the time limit is marked late,
never refused.

A node lab whose remedy is physical (a cable, a GPU in its slot) also grades the candidate's ticket for the
data centre: its ``design.*`` checks read the answer file handed in with the grade, and are ``error`` (0
points) without one. A ticket is graded a limited number of times (:func:`limit_ticket_grades`, the lab's
``answer.grades``), counted in the attempts database, so repeated grading cannot enumerate its answer.

Points are for what the candidate did, not for how the node was: guards (``role: guard``) carry no points,
and a task check that earned as much right after ``lab start`` (the start's *baseline*) earns 0, "already
true when the lab started", unless the lab marks it ``baseline_ok``. So doing nothing scores 0.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from assessor.checks.result import Result
from assessor.facts import NodeFacts
from assessor.labs.model import Lab, LabCheck
from assessor.yamlio import Located

Evaluate = Callable[[str, dict[str, Any]], Result]


@dataclass(frozen=True)
class CheckScore:
    check: str
    status: str
    message: str
    points: float  # what it is worth
    earned: float
    hint: str  # the lab's hint for this check
    observed: Any = None
    expected: Any = None
    credit: float = 0.0  # share of the points earned: 1, a partial rule's credit, or 0
    note: str | None = None  # how the credit came about (partial rule, warn, skip reason)
    check_hint: str | None = None  # the check's own hint, when it gave one
    role: str = "task"  # task | guard

    @property
    def guard_failed(self) -> bool:
        return self.role == "guard" and self.credit < 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "check": self.check,
            "role": self.role,
            "status": self.status,
            "message": self.message,
            "points": self.points,
            "earned": self.earned,
            "credit": self.credit,
        }
        if self.hint:  # a hint not yet revealed with `lab hint` is left out
            out["hint"] = self.hint
        for key in ("observed", "expected", "note", "check_hint"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class Grade:
    lab_id: str
    scores: tuple[CheckScore, ...]
    points: float
    max_points: float
    pass_percent: float
    graded_at: dt.datetime
    started_at: dt.datetime | None
    time_limit_min: int
    extras: dict[str, Any] = field(default_factory=dict)  # target, host, candidate: filled by the caller
    flags: tuple[str, ...] = ()  # tamper evidence: why this grade is not to be trusted as it stands
    recorded: bool = False  # stored in the attempts database as an attempt of the lab
    not_recorded_because: str | None = None
    hints_used: int = 0

    @property
    def percent(self) -> float:
        return round(100.0 * self.points / self.max_points, 2) if self.max_points else 0.0

    @property
    def failed_guards(self) -> tuple[CheckScore, ...]:
        return tuple(s for s in self.scores if s.guard_failed)

    @property
    def passed(self) -> bool:
        # compare unrounded so 69.999 never passes a 70 % lab by rounding
        enough = self.max_points > 0 and 100.0 * self.points >= self.pass_percent * self.max_points - 1e-9
        return enough and not self.failed_guards

    @property
    def time_taken_s(self) -> int | None:
        if self.started_at is None:
            return None
        return max(0, round((self.graded_at - self.started_at).total_seconds()))

    @property
    def elapsed_min(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.graded_at - self.started_at).total_seconds() / 60.0

    @property
    def late(self) -> bool:
        elapsed = self.elapsed_min
        return elapsed is not None and elapsed > self.time_limit_min

    def to_json(self) -> dict[str, Any]:
        from assessor.labs.attempts import iso

        elapsed = self.elapsed_min
        return {
            "schema": "gpulab.grade/1",
            "lab": self.lab_id,
            **self.extras,
            "graded_at": iso(self.graded_at),
            "started_at": iso(self.started_at) if self.started_at else None,
            "elapsed_min": round(elapsed, 1) if elapsed is not None else None,
            "time_limit_min": self.time_limit_min,
            "late": self.late,
            "points": round(self.points, 4),
            "max_points": self.max_points,
            "percent": self.percent,
            "pass_percent": self.pass_percent,
            "passed": self.passed,
            "time_taken_s": self.time_taken_s,
            "hints_used": self.hints_used,
            "recorded": self.recorded,
            "not_recorded_because": self.not_recorded_because,
            "flags": list(self.flags),
            "checks": [s.to_json() for s in self.scores],
        }


def with_hints_revealed(grade: Grade, revealed: int) -> Grade:
    """The grade with only the first ``revealed`` hints (in check order) shown: hints are earned with
    ``gpulab lab hint``, one at a time, and their use is recorded."""
    scores = tuple(s if i < revealed else replace(s, hint="") for i, s in enumerate(grade.scores))
    return replace(grade, scores=scores, hints_used=revealed)


def active_tests(lab: Lab) -> tuple[str, ...]:
    """Which active tests a grade must run (:attr:`~assessor.labs.model.Lab.active_tests`)."""
    return lab.active_tests


def relaxed(value: Any, factor: float) -> Any:
    """A parameter value multiplied by a partial rule's factor (ints stay ints, floats are rounded to 6 places)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return round(value * factor)
    if isinstance(value, float):
        return round(value * factor, 6)
    return value


ALREADY_TRUE = "already true when the lab started: no points for it"


def check_key(index: int, check: LabCheck) -> str:
    """How a baseline names a check: its place in the lab and its id (a lab may use one check twice)."""
    return f"{index}:{check.id}"


def score_check(
    check: LabCheck, evaluate: Evaluate, *, warn_counts: bool = False, baseline_credit: float | None = None
) -> CheckScore:
    """Run one lab check and turn its result into points.

    ``baseline_credit`` is what the check earned right after ``lab start``: a task check earning no more
    than that now earns 0 (the candidate did not do it), unless the lab marks the check ``baseline_ok``.
    A guard earns no points; its credit says whether it held (1) or not (0).
    """
    scored = _score_check(check, evaluate, warn_counts=warn_counts)
    if check.is_guard:
        held = scored.credit >= 1
        note = None if held else "a guard that must hold: the lab is not passed while it fails"
        return replace(scored, earned=0.0, credit=1.0 if held else 0.0, note=note)
    if (
        baseline_credit is not None
        and not check.baseline_ok
        and scored.credit > 0
        and scored.credit <= baseline_credit + 1e-9
    ):
        return replace(scored, earned=0.0, credit=0.0, note=ALREADY_TRUE)
    return scored


def _score_check(check: LabCheck, evaluate: Evaluate, *, warn_counts: bool = False) -> CheckScore:
    res = evaluate(check.id, dict(check.params))

    def made(credit: float, note: str | None) -> CheckScore:
        return CheckScore(
            check=check.id,
            status=res.status,
            message=res.message,
            points=check.points,
            earned=round(check.points * credit, 6),
            hint=check.hint,
            observed=res.observed,
            expected=res.expected,
            credit=credit,
            note=note,
            check_hint=res.hint,
            role=check.role,
        )

    if res.status == "pass" or (res.status == "warn" and warn_counts):
        return made(1.0, "warn counts as a pass in this lab" if res.status == "warn" else None)
    if res.status in ("skip", "error"):
        return made(0.0, f"{res.status}: no points ({res.message})")
    if check.is_guard:
        return made(0.0, None)
    for rule in check.partial:
        original = check.params.get(rule.param)
        value = relaxed(original, rule.factor)
        again = evaluate(check.id, {**check.params, rule.param: value})
        if again.status == "pass":
            note = (
                f"partial credit: passes with {rule.param}={value:g} ({rule.factor:.0%} of {original:g}): "
                f"{rule.credit:.0%} of the points"
            )
            return made(rule.credit, note)
    return made(0.0, "a warn is not a pass in this lab" if res.status == "warn" else None)


def baseline(lab: Lab, evaluate: Evaluate) -> dict[str, float]:
    """What each task check earns right after ``lab start`` (:func:`check_key` -> credit, 0 to 1)."""
    out = {}
    for i, c in enumerate(lab.checks):
        if not c.is_guard:
            out[check_key(i, c)] = _score_check(c, evaluate, warn_counts=lab.warn_counts).credit
    return out


def score(
    lab: Lab,
    evaluate: Evaluate,
    *,
    graded_at: dt.datetime,
    started_at: dt.datetime | None,
    baseline: dict[str, float] | None = None,
) -> Grade:
    """Score every check of ``lab`` through ``evaluate(check_id, params)``, against the start's ``baseline``."""
    base = baseline or {}
    scores = tuple(
        score_check(c, evaluate, warn_counts=lab.warn_counts, baseline_credit=base.get(check_key(i, c)))
        for i, c in enumerate(lab.checks)
    )
    return Grade(
        lab_id=lab.id,
        scores=scores,
        points=round(sum(s.earned for s in scores), 6),
        max_points=lab.total_points,
        pass_percent=lab.pass_percent,
        graded_at=graded_at,
        started_at=started_at,
        time_limit_min=lab.time_limit_min,
    )


NO_TICKET = "no ticket handed in: write it (the lab's README shows the format) and grade with --answer FILE"


def facts_evaluator(facts: NodeFacts, answer: Located | dict[str, Any] | None = None) -> Evaluate:
    """Evaluate catalogue checks against captured facts, and a node lab's ``design.*`` checks (its ticket
    for a physical fault) against the candidate's ``answer``: with none handed in, they are ``error``."""
    from assessor import checks

    answered = answer_evaluator(answer) if answer is not None else None

    def evaluate(check_id: str, params: dict[str, Any]) -> Result:
        if check_id.startswith("design."):
            if answered is None:
                return Result(check_id, "error", NO_TICKET)
            return answered(check_id, params)
        return checks.run_check(checks.get(check_id), facts, params)

    return evaluate


def answer_evaluator(answer: Located | dict[str, Any]) -> Evaluate:
    """Evaluate design.* graders against a design answer."""
    from assessor.labs import designs

    def evaluate(check_id: str, params: dict[str, Any]) -> Result:
        return designs.run(check_id, answer, params)

    return evaluate


def grade_facts(
    lab: Lab,
    facts: NodeFacts,
    *,
    graded_at: dt.datetime,
    started_at: dt.datetime | None,
    baseline: dict[str, float] | None = None,
    answer: Located | dict[str, Any] | None = None,
) -> Grade:
    """Grade a node lab from the target's facts (against the start's ``baseline`` when there is one), and its
    ticket checks from the candidate's ``answer``."""
    return score(lab, facts_evaluator(facts, answer), graded_at=graded_at, started_at=started_at, baseline=baseline)


def grade_answer(
    lab: Lab, answer: Located | dict[str, Any], *, graded_at: dt.datetime, started_at: dt.datetime | None
) -> Grade:
    """Grade a design lab from the candidate's answer."""
    return score(lab, answer_evaluator(answer), graded_at=graded_at, started_at=started_at)


def evaluate(
    lab: Lab,
    captured: Any,
    *,
    graded_at: dt.datetime,
    started_at: dt.datetime | None,
    baseline: dict[str, float] | None = None,
    answer: Located | dict[str, Any] | None = None,
    extras: dict[str, Any] | None = None,
    hints_revealed: int = 0,
    ticket_grades: int | None = None,
) -> Grade:
    """The whole of a grade's scoring, pure: a design lab from its answer (``captured``), a node lab from its
    facts against the start's ``baseline`` (and its ticket, ``answer``); ``extras`` (candidate, target, host)
    kept with it; only the first ``hints_revealed`` hints shown; the lab's limit on answer grades applied
    (``ticket_grades``: :func:`limit_ticket_grades`'s ``used``)."""
    if lab.is_design:
        result = grade_answer(lab, captured, graded_at=graded_at, started_at=started_at)
    else:
        result = grade_facts(
            lab, captured, graded_at=graded_at, started_at=started_at, baseline=baseline, answer=answer
        )
    result.extras.update(extras or {})
    result = with_hints_revealed(result, hints_revealed)
    return limit_ticket_grades(result, lab, ticket_grades)


# ---- how often an answer is graded ------------------------------------------------------------------------

TICKET_NOT_COUNTED = (
    "ticket not graded: this grade cannot be counted (no open `gpulab lab start` of the lab for you on this "
    "node, or the attempts database could not be used), and a ticket is graded only where its grades are counted"
)


def limit_ticket_grades(grade: Grade, lab: Lab, used: int | None) -> Grade:
    """Apply the lab's limit on answer grades (``answer.grades``; a ticket lab's default is
    :data:`~assessor.labs.model.DEFAULT_TICKET_GRADES`) to a fresh ``grade``.

    ``used`` is how many earlier grades of this candidate read an answer of the lab (the attempts database
    counts them, ``attempts.ticket_grades``); None when this grade cannot be counted (it will not be recorded,
    or the database is unusable): its answer is then not graded, since an uncounted grade would be an oracle.
    Within the limit, the answer's checks keep ``factor(n)`` of their credit and say which grade of how many
    this is; past it, they are ``error``, 0 points, and the best grade stands. A grade that read no answer (none
    handed in) is returned as it is: it uses nothing.
    """
    from assessor.labs.attempts import answer_was_graded

    policy = lab.answer_grades
    answer_at = [i for i, c in enumerate(lab.checks) if c.grades_answer]
    if policy is None or not answer_at or not answer_was_graded([grade.scores[i].to_json() for i in answer_at]):
        return grade
    nth = None if used is None else used + 1
    scores = list(grade.scores)
    for i in answer_at:
        s = scores[i]
        if nth is None:
            scores[i] = _ungraded(s, TICKET_NOT_COUNTED)
        elif nth > policy.limit:
            why = (
                f"ticket not graded: its {policy.limit} grades in this lab are used (grade {nth}); "
                "your best grade stands"
            )
            scores[i] = _ungraded(s, why)
        else:
            factor = policy.factor(nth)
            note = f"ticket grade {nth} of {policy.limit}"
            if policy.penalty_percent and nth > 1:
                note += f": {policy.penalty_percent:g} % less per earlier ticket grade, {factor:.0%} of its points"
            if s.note:
                note = f"{s.note}; {note}"
            credit = round(s.credit * factor, 6)
            scores[i] = replace(s, credit=credit, earned=round(s.points * credit, 6), note=note)
    extras = {**grade.extras}
    if nth is not None:
        extras["ticket_grades"] = {
            "this": nth,
            "limit": policy.limit,
            "penalty_percent": policy.penalty_percent,
        }
    return replace(grade, scores=tuple(scores), points=round(sum(x.earned for x in scores), 6), extras=extras)


def _ungraded(score: CheckScore, why: str) -> CheckScore:
    """An answer check left ungraded: an error worth nothing, with nothing of the answer's verdict shown."""
    return replace(score, status="error", message=why, earned=0.0, credit=0.0, expected=None, note=f"error: {why}")
