"""A grade, in one pass: take in what the candidate did, resolve the lab as they sit it, evaluate, record.

The stages, each the job of one module, each entered once (a cohort takes each stage for all its hosts at
once, :func:`grade_all`):

1. **capture**: the node's facts, identity, key and flags (:func:`assessor.labs.capture.capture_node`), or a
   design lab's answer file (:func:`assessor.labs.designs.load_answer`); a node lab's ticket is read and
   checked first (:func:`load_ticket`). The lab's variant changes what is graded, never what is captured.
2. **resolve**: what the attempts database says of the candidate's lab (:class:`Sitting`: the open start, its
   clock, baseline and variant, the hints revealed, the earlier ticket grades, whether this grade can count),
   read once; then the lab built with that start's variant, or the candidate's own
   (:func:`assessor.labs.loader.with_variant`), once.
3. **evaluate**: :func:`assessor.labs.grading.evaluate`, pure.
4. **record**: :func:`assessor.labs.attempts.record_grade` when the grade belongs to the start.

A database that cannot be used never costs the grade: it is returned with the failure, not recorded.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from assessor.errors import InputError
from assessor.labs import attempts
from assessor.labs.capture import Captured
from assessor.labs.model import Lab

if TYPE_CHECKING:
    from assessor.labs.grading import Grade
    from assessor.targets import TargetOptions


@dataclass(frozen=True)
class Sitting:
    """One candidate's grade of a lab as the attempts database finds it, before it is evaluated."""

    candidate: str
    captured: Captured
    lab: Lab  # built with the variant of the candidate's open start (else their own)
    graded_at: dt.datetime
    ticket: Any = None  # a node lab's ticket for the data centre (:func:`load_ticket`)
    start: attempts.Start | None = None  # the candidate's open start of the lab
    hints: int = 0  # hints revealed in that start
    ticket_grades: int | None = None  # earlier answer grades counted against the lab's limit; None: cannot count
    flags: tuple[str, ...] = ()  # the node's tamper evidence, and a reference answer shown since the start
    failure: attempts.DatabaseError | None = None  # why the database could not be read


def grade_and_record(
    lab: Lab,
    *,
    candidate: str,
    spec: str | None = None,
    answer: str | None = None,
    db: str | None = None,
    options: TargetOptions | None = None,
    inventory: str | None = None,
    timeout: float = 120.0,
) -> tuple[Grade, attempts.DatabaseError | None]:
    """``lab grade`` on one node (``spec``) or of a design lab's ``answer`` file: capture, resolve, evaluate,
    record. Returns the grade (always) and the DatabaseError that kept it from being recorded, or None."""
    from assessor.labs import capture

    if lab.is_design:
        from assessor.labs import designs

        if not answer:
            raise InputError(
                f"{lab.id} is a design lab: grade your answer file with --answer FILE "
                f"(format: {lab.path / (lab.answer_example or '')})"
            )
        located = designs.load_answer(answer, [c.id for c in lab.checks])
        return grade_captured(lab, capture.answer_captured(located, f"answer:{answer}"), candidate=candidate, db=db)
    if not spec:
        raise InputError(f"`lab grade {lab.id}` needs --target (the node you worked on, e.g. mock:node.json)")
    ticket = load_ticket(lab, answer)
    captured = capture.capture_node(lab, spec, timeout=timeout, options=options, inventory=inventory)
    return grade_captured(lab, captured, candidate=candidate, db=db, ticket=ticket)


def load_ticket(lab: Lab, answer: str | None) -> Any:
    """A node lab's ticket for the data centre, read and checked before the node is captured (InputError:
    file, line, key); None when none was handed in (its checks are then ``error``). A lab that grades no
    ticket refuses one, so nobody believes it was read."""
    if answer is None:
        return None
    if not lab.answer_check_ids:
        raise InputError(f"lab {lab.id} grades the node only: it reads no answer file (drop --answer {answer})")
    from assessor.labs import designs

    return designs.load_answer(answer, lab.answer_check_ids)


def grade_captured(
    lab: Lab,
    captured: Captured,
    *,
    candidate: str,
    db: str | None = None,
    conn: Any = None,
    ticket: Any = None,
) -> tuple[Grade, attempts.DatabaseError | None]:
    """The stages after the capture for one candidate (:func:`grade_all` of one)."""
    return grade_all(lab, [(candidate, captured, ticket)], db=db, conn=conn)[0]


def grade_all(
    lab: Lab,
    handed_in: Sequence[tuple[str, Captured, Any]],
    *,
    db: str | None = None,
    conn: Any = None,
    one_connection: bool = False,
) -> list[tuple[Grade, attempts.DatabaseError | None]]:
    """Resolve, evaluate and record the grade of each (candidate, what was captured, their ticket), in order:
    each stage for all of them before the next (a cohort's hosts are different candidates, so one's record
    changes nothing another's grade reads). ``conn``: an open attempts database to use; else ``db`` is opened
    once for all of them (``one_connection``, as a cohort does: a database that cannot be opened stops it) or
    for each read and write. Each grade comes with the DatabaseError that kept it from being recorded, or
    None."""
    from assessor.labs import grading
    from assessor.labs.loader import pick_variant, with_variant

    if one_connection and conn is None:
        with attempts.opened(db) as opened:
            return grade_all(lab, handed_in, conn=opened)

    read = [_read(lab, candidate, captured, ticket, db=db, conn=conn) for candidate, captured, ticket in handed_in]
    sittings = [
        replace(s, lab=with_variant(lab, s.start.variant if s.start else pick_variant(lab, s.candidate))) for s in read
    ]
    grades = [
        grading.evaluate(
            s.lab,
            s.captured.facts,
            graded_at=s.graded_at,
            started_at=s.start.started_at if s.start else None,
            baseline=s.start.baseline if s.start else None,
            answer=s.ticket,
            extras={
                "candidate": s.candidate,
                "target": s.captured.spec,
                "host": s.captured.identity.host,
                "lab_sha256": s.lab.digest,
            },
            hints_revealed=s.hints,
            ticket_grades=s.ticket_grades,
        )
        for s in sittings
    ]
    return [_record(s, g, db=db, conn=conn) for s, g in zip(sittings, grades, strict=True)]


def _read(lab: Lab, candidate: str, captured: Captured, ticket: Any, *, db: str | None, conn: Any) -> Sitting:
    """What the attempts database says of ``candidate``'s lab: one read (``lab`` is not yet resolved)."""
    flags = list(captured.flags)
    failure: attempts.DatabaseError | None = None
    start: attempts.Start | None = None
    hints = 0
    used: int | None = None  # earlier answer grades of this lab by this candidate (the lab limits them)
    try:
        with _connection(conn, db) as c:
            start = attempts.open_start(c, candidate, lab.id)
            hints = attempts.hints_used(c, candidate, lab.id, start.id if start else None)
            used = attempts.ticket_grades(c, candidate, lab.id)
            if lab.takes_answer and start is not None and attempts.design_solved(c, lab.id, candidate, start):
                what = "answer" if lab.is_design else "ticket"
                flags.append(f"reference {what} of {lab.id} shown to {candidate} (`lab solve`) after the start")
    except attempts.DatabaseError as exc:
        failure = exc
    # an answer is graded only when the grade counts (else repeated grading would be an oracle), and only
    # within the lab's limit of answer grades
    counted = failure is None and (
        attempts.why_not_recorded(
            start,
            candidate=candidate,
            lab_id=lab.id,
            target=captured.key,
            identity=captured.identity,
            design=lab.is_design,
        )
        is None
    )
    return Sitting(
        candidate,
        captured,
        lab,
        attempts.now(),
        ticket=ticket,
        start=start,
        hints=hints,
        ticket_grades=used if counted else None,
        flags=tuple(flags),
        failure=failure,
    )


def _record(s: Sitting, result: Grade, *, db: str | None, conn: Any) -> tuple[Grade, attempts.DatabaseError | None]:
    """Record the grade when it belongs to the start; a database that cannot be used leaves it unrecorded."""
    failure = s.failure
    if failure is None:
        try:
            with _connection(conn, db) as c:
                result = attempts.record_grade(
                    c,
                    result,
                    lab=s.lab,
                    candidate=s.candidate,
                    target=s.captured.key,
                    identity=s.captured.identity,
                    start=s.start,
                    flags=list(s.flags),
                    hints=s.hints,
                )
        except attempts.DatabaseError as exc:
            failure = exc
    if failure is not None:
        result = replace(
            result,
            flags=tuple(dict.fromkeys(s.flags)),
            recorded=False,
            not_recorded_because=f"the attempts database could not be used ({failure})",
        )
    return result, failure


@contextlib.contextmanager
def _connection(conn: Any, db: str | None) -> Iterator[Any]:
    if conn is not None:
        yield conn
        return
    with attempts.guarded(db) as opened:
        yield opened
