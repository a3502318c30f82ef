"""What `gpulab lab list|status|show|hint|close` and `gpulab progress` show, worked out once options are parsed.

The CLI (:mod:`assessor.cli.labs`) parses the options, calls one function here and formats what it returns:
which labs a listing holds and each one's state for the candidate (:func:`listing`), the candidate's open labs
(:func:`open_labs`), a lab's README with the candidate's variant filled in (:func:`show`), which hint comes
next and its use recorded (:func:`hint`), which open lab a candidate gives up (:func:`close`), a candidate's
history, levels, study plan and readiness for an exam (:func:`progress`). Each returns plain data; nothing
here prints or escapes, so every string in it (a lab's title, a candidate's name, a node's host) is raw data,
neutralised by the CLI at the point of printing.

A listing and the open labs never create an attempts database: with none yet, they are those of a candidate
who has started nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assessor.errors import InputError
    from assessor.labs.attempts import Attempt, DatabaseError, Summarised
    from assessor.labs.levels import Levels
    from assessor.labs.model import Lab, LabCheck
    from assessor.labs.readiness import Readiness
    from assessor.labs.study_plan import StudyPlan


def candidate_or_default(name: str | None) -> str:
    """Whose attempt this is: ``name``, else the OS user."""
    from assessor.labs.attempts import default_candidate

    return name or default_candidate()


def lab_record(x: Lab) -> dict[str, Any]:
    """A lab's metadata as JSON data (`lab list --json`, `lab show --json`): ``graded_by`` labels a check the lab
    uses twice (:func:`assessor.labs.wording.labels`), ``answer_example`` is the example answer file's path."""
    from assessor.labs.wording import labels

    return {
        "id": x.id,
        "title": x.title,
        "domain": x.domain,
        "level": x.level,
        "level_name": x.level_name,
        "exam_domains": list(x.exam_domains),
        "objectives": [str(o) for o in x.objectives],  # labs/objectives.yaml ids; "(part)": a part of the task
        "time_limit_min": x.time_limit_min,
        "target": x.target,
        "runs_on": list(x.runs_on),
        "fixture": x.fixture,
        "pass_percent": x.pass_percent,
        "points": x.total_points,
        "checks": [c.id for c in x.checks],
        "graded_by": labels(x.checks),
        "answer_example": str(example_path(x)) if example_path(x) else None,
        "path": str(x.path),
        "sha256": x.digest,
    }


def example_path(x: Lab) -> Path | None:
    """Where the lab's example answer file is (a design's format, a ticket's), or None: it takes no answer."""
    return x.path / x.answer_example if x.answer_example else None


def _database_exists(db: str | None) -> bool:
    from assessor.labs import attempts

    return Path(db or attempts.default_path()).exists()


@dataclass(frozen=True)
class Listing:
    """The labs of `lab list`, each with the candidate's state (``states``: None when the database failed)."""

    root: Path
    labs: list[Lab]
    candidate: str
    states: dict[str, dict[str, Any]] | None
    failure: DatabaseError | None = None  # why the attempts database could not be read
    errors: list[InputError] = field(default_factory=list)  # the catalogue's malformed labs

    def by_domain(self) -> list[tuple[str, list[Lab]]]:
        """The labs grouped by domain, in the domains' order; a domain without labs left out."""
        from assessor.labs.model import DOMAINS

        groups = [(d, [x for x in self.labs if x.domain == d]) for d in DOMAINS]
        return [(d, mine) for d, mine in groups if mine]

    def records(self) -> list[dict[str, Any]]:
        """`lab list --json`: each lab's metadata, with the candidate's state when it could be read."""
        states = self.states
        return [
            {**lab_record(x), **({"candidate": self.candidate, **states[x.id]} if states else {})} for x in self.labs
        ]


def listing(
    *, domain: str | None = None, level: int | None = None, candidate: str | None = None, db: str | None = None
) -> Listing:
    """The labs of ``domain`` and ``level`` (None: every one), each with ``candidate``'s state and best score."""
    from assessor.labs import attempts
    from assessor.labs.loader import load_catalogue

    cat = load_catalogue()
    labs = [x for x in cat.labs if (domain is None or x.domain == domain) and (level is None or x.level == level)]
    who = candidate_or_default(candidate)
    states: dict[str, dict[str, Any]] | None = None
    failure: DatabaseError | None = None
    try:
        if _database_exists(db):  # listing never creates a database
            with attempts.guarded(db) as conn:
                states = attempts.lab_states(conn, who, [x.id for x in labs])
        else:
            states = {x.id: {"state": "not started", "best_percent": None, "attempts": 0} for x in labs}
    except attempts.DatabaseError as exc:
        failure = exc
    return Listing(cat.root, labs, who, states, failure, list(cat.errors))


@dataclass(frozen=True)
class OpenLabs:
    """`lab status`: the candidate's open labs, each a row of :func:`assessor.labs.attempts.status`."""

    candidate: str
    rows: list[dict[str, Any]]


def open_labs(*, candidate: str | None = None, db: str | None = None) -> OpenLabs:
    """``candidate``'s open labs: where, since when, time left, hints used (no database yet: none)."""
    from assessor.labs import attempts
    from assessor.labs.loader import load_catalogue

    who = candidate_or_default(candidate)
    known = {x.id: x for x in load_catalogue().labs}
    rows: list[dict[str, Any]] = []
    if _database_exists(db):  # no database yet: nothing is open
        with attempts.guarded(db) as conn:
            rows = attempts.status(conn, who, {k: (v.time_limit_min, len(v.checks)) for k, v in known.items()})
    return OpenLabs(who, rows)


@dataclass(frozen=True)
class Shown:
    """`lab show`: the lab and its README text (a lab with variants: the candidate's variant filled in)."""

    lab: Lab
    readme: str


def show(lab_id: str, *, candidate: str | None = None) -> Shown:
    """The lab ``lab_id`` and its README; the OS user is asked for only when the lab has variants."""
    from assessor.labs.loader import fill, find_lab, pick_variant, read_readme

    x = find_lab(lab_id)
    readme = read_readme(x)  # bounded (MAX_README_BYTES): a 1 GB README is one line of error
    if x.variants:
        readme = fill(readme, pick_variant(x, candidate_or_default(candidate)))
    return Shown(x, readme)


@dataclass(frozen=True)
class Hints:
    """`lab hint`: the hints shown so far (in the order the checks are graded) and whether one was new."""

    lab: Lab
    candidate: str
    shown: list[LabCheck]  # every hint revealed so far, the new one last
    new: bool  # False: every hint was already shown

    @property
    def total(self) -> int:
        return len(self.lab.checks)

    @property
    def left(self) -> int:
        return self.total - len(self.shown)


def hint(lab_id: str, *, candidate: str | None = None, db: str | None = None) -> Hints:
    """Reveal the next hint of ``lab_id`` for ``candidate``, recorded with their open start (if any)."""
    from assessor.labs import attempts
    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    who = candidate_or_default(candidate)
    with attempts.guarded(db) as conn:
        begun = attempts.open_start(conn, who, x.id)
        new = attempts.reveal_hint(
            conn,
            candidate=who,
            lab_id=x.id,
            start_id=begun.id if begun else None,
            available=len(x.checks),
            at=attempts.now(),
        )
        shown = attempts.hints_used(conn, who, x.id, begun.id if begun else None)
    return Hints(x, who, list(x.checks[:shown]), new is not None)


@dataclass(frozen=True)
class ClosedLab:
    """One open lab `lab close` closed: which, on which node, and in words (:func:`.lifecycle.describe_open`)."""

    lab_id: str
    target: str
    described: str


@dataclass(frozen=True)
class Closed:
    """`lab close`: the candidate and the labs closed (none: nothing was open)."""

    candidate: str
    labs: list[ClosedLab]


def close(lab_id: str | None, *, candidate: str | None = None, db: str | None = None) -> Closed:
    """Close ``candidate``'s open ``lab_id`` (None: their only open lab) as abandoned (:func:`.lifecycle.close_own`)."""
    from assessor.labs import lifecycle

    who = candidate_or_default(candidate)
    closed = lifecycle.close_own(lab_id, candidate=who, db=db)
    return Closed(who, [ClosedLab(s.lab_id, s.target, lifecycle.describe_open(s)) for s in closed])


@dataclass(frozen=True)
class Progress:
    """`gpulab progress`: a candidate's history, best per lab, levels, and what may make them doubtful."""

    candidate: str
    history: list[Attempt]  # every attempt, oldest first; unless asked for all: the last ones and the flagged
    passed: set[str]  # the labs passed by an attempt that counts
    levels: Levels
    summaries: dict[str, dict[str, Any]]  # each lab's best score, time taken, hints used
    mismatches: dict[str, list[str]]  # labs whose attempts came from different machines: those machines
    flags: list[str]  # where the attempts database was edited by hand, or lost rows
    plan: StudyPlan  # the labs to take next, in order (for the exam, when one is asked)
    readiness: Readiness | None = None  # how ready for the exam asked (--exam); None: none asked
    errors: list[InputError] = field(default_factory=list)  # labs skipped as malformed
    total: int = 0  # how many attempts the candidate has (``history`` may hold fewer)


def progress(
    *,
    candidate: str | None = None,
    db: str | None = None,
    exam: str | None = None,
    sessions: Sequence[Mapping[str, Any]] | None = None,
    recent: int | None = None,
) -> Progress:
    """``candidate``'s lab history and skill levels (per domain and overall), each level explained, with the
    study plan; for ``exam``, how ready they are for it by its domains, from their labs and exam sessions
    (``sessions``: their exam-session results, oldest first, exam domain -> score in percent; None: their
    submitted sittings of ``exam`` kept beside the attempts database, :func:`.exam_session.domain_scores`, as
    `gpulab report candidate --exam` reads them). InputError for an exam the blueprints do not know, or a
    sitting edited by hand. ``recent``: the history holds only the last ``recent`` attempts and every flagged
    one before them, the others only counted and summarised (None: every attempt)."""
    from assessor.labs import attempts, levels, readiness, study_plan
    from assessor.labs.loader import load_catalogue

    who = candidate_or_default(candidate)
    cat = load_catalogue()
    rules = levels.load_rules(cat.root)
    if exam is not None:
        exam = readiness.find_exam(rules.blueprints, exam)  # an unknown exam before the database is opened
        if sessions is None:
            from assessor.labs.exam_session import domain_scores

            sessions = domain_scores(who, exam, db)
    sessions = sessions or ()
    with attempts.guarded(db) as conn:
        check = attempts.check_chain(conn)
        breaks = check.breaks
        if recent is None:
            history = attempts.attempts(conn, candidate=who, breaks=breaks)
            tried: Sequence[Summarised] = history
        else:  # the rows the table shows read in full, the others summarised from their plain columns
            seen = attempts.overview(conn, who, recent, check=check)
            history, tried = seen.shown, seen.every
    # rows edited by hand are keyed by (table, row id); what the head record tells of the whole database (rows
    # missing at the end, an edited head record) by ("head", n <= 0): not a hand edit (a WAL file lost, an
    # older copy restored), so shown on its own lines without the "edited by hand" prefix
    edited = sorted({why for (table, row_id), why in breaks.items() if not (table == "head" and row_id <= 0)})
    whole = [why for (table, row_id), why in sorted(breaks.items(), reverse=True) if table == "head" and row_id <= 0]
    known = {x.id for x in cat.labs}
    best = attempts.best([a for a in tried if a.lab_id in known])
    passed = {lab_id for lab_id, a in best.items() if a.passed}
    ready = None
    if exam is not None:
        titles = readiness.exam_titles(levels.data_file(levels.BLUEPRINTS, cat.root))
        ready = readiness.readiness(exam, rules.blueprints, cat.labs, passed, sessions=sessions, title=titles.get(exam))
    return Progress(
        candidate=who,
        history=history,
        passed=passed,
        levels=levels.compute(rules, cat.labs, passed),
        summaries=attempts.lab_summaries(tried),
        mismatches=attempts.machine_mismatches(tried),
        flags=[f"{attempts.DB_EDITED}: {why}" for why in edited] + [f"attempts database: {why}" for why in whole],
        plan=study_plan.plan(rules, cat.labs, passed, exam=exam, sessions=sessions),
        readiness=ready,
        errors=list(cat.errors),
        total=len(tried),
    )
