"""What ``gpulab exam start|status|grade|submit|show`` do once their options are parsed.

A sitting (:mod:`assessor.labs.exam_session`) draws its tasks by the exam's blueprint
(:mod:`assessor.labs.exam_draw`), sets each node task up on a fresh simulated node of its own (or on a node the
candidate names) with the lab's own start, and keeps every grade in the session file. Until the sitting is
submitted, nothing here tells the candidate how a grade went: a grade says only that it was recorded. The
submit scores it (:mod:`assessor.labs.exam_score`) and adds each task's debrief (:mod:`assessor.labs.debrief`).

Exam grades are the sitting's own: they do not go into the attempts database, so practice labs and an exam
never share a clock, an open start or a ticket's grade limit. The clock is injected (``clock``), so a test can
sit an exam in a few seconds and still be late.

Lines handed back are raw data (a candidate's name, a node's path): the CLI neutralises each where it prints it.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assessor.errors import InputError
from assessor.labs import exam_session
from assessor.labs.exam_session import Session, Task

if TYPE_CHECKING:
    from assessor.labs.exam_spec import ExamSpec
    from assessor.labs.model import Lab
    from assessor.targets import TargetOptions

Clock = Callable[[], dt.datetime]


def _now() -> dt.datetime:
    from assessor.labs.attempts import now

    return now()


def _iso(t: dt.datetime) -> str:
    from assessor.labs.attempts import iso

    return iso(t)


# ---- start ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Started:
    session: Session
    ended: Session | None = None  # the candidate's earlier sitting, whose time was up, submitted by the clock


def start(
    exam: str,
    *,
    candidate: str,
    db: str | None = None,
    minutes: int | None = None,
    tasks: int | None = None,
    seed: int | None = None,
    targets: Sequence[str] = (),
    options: TargetOptions | None = None,
    inventory: str | None = None,
    clock: Clock = _now,
) -> Started:
    """Start a sitting of ``exam`` for ``candidate``: draw its tasks, set up a node for each node task, start
    the clock. Refused (InputError) while the candidate has a sitting whose time is not up; one whose time is
    up is submitted by the clock first."""
    from assessor.labs import capture, lifecycle
    from assessor.labs.exam_draw import draw
    from assessor.labs.exam_spec import load_exams
    from assessor.labs.loader import load_catalogue, pick_variant, with_variant

    spec = load_exams().get(exam)
    if minutes is not None and minutes < 1:
        raise InputError(f"--minutes must be at least 1, not {minutes}")
    if tasks is not None and tasks < 1:
        raise InputError(f"--tasks must be at least 1, not {tasks}")
    root = exam_session.exams_root(db)
    now = clock()
    ended = None
    before = exam_session.open_session(root, candidate)
    if before is not None:
        if now <= before.deadline_time():
            raise InputError(
                f"{candidate} is sitting {before.exam} (session {before.id}) until {_iso(before.deadline_time())}: "
                "submit it first (`gpulab exam submit`)"
            )
        ended = submit(candidate=candidate, db=db, session_id=before.id, clock=clock, by="clock").session
    kind = "simulator" if all(t.startswith("mock:") for t in targets) else "real"
    cat = load_catalogue()
    labs = [x for x in cat.labs if x.is_design or kind in x.runs_on]
    seed = seed if seed is not None else _random_seed()
    plan = draw(spec.name, spec.weights, labs, tasks or spec.tasks, seed)
    if not plan.tasks:
        raise InputError(f"no lab of {cat.root} trains a domain of {spec.name} on {kind} nodes: nothing to set")
    by_id = {x.id: x for x in labs}
    node_tasks = [d for d in plan.tasks if not by_id[d.lab].is_design]
    if targets and len(targets) < len(node_tasks):
        raise InputError(
            f"{spec.name} drew {len(node_tasks)} node tasks but {len(targets)} --target were given: give one node "
            "per node task, or none for fresh simulated nodes"
        )
    sid = exam_session.session_id(spec.name, now, seed)
    folder = exam_session.candidate_folder(root, candidate) / sid
    if folder.exists():
        raise InputError(f"{folder}: an exam session with this id exists already; start again with another --seed")
    folder.mkdir(parents=True)
    try:
        made = []
        given = iter(targets)
        for n, drawn in enumerate(plan.tasks, 1):
            lab = with_variant(by_id[drawn.lab], pick_variant(by_id[drawn.lab], f"{candidate}\0exam {seed}"))
            task = Task(
                n=n,
                lab=lab.id,
                domain=drawn.domain,
                kind="design" if lab.is_design else "node",
                variant=dict(lab.variant),
                lab_sha256=lab.digest,
            )
            if not lab.is_design:
                target = next(given, None) or _fresh_node(lab, folder, n)
                lifecycle.start(lab, target, options, inventory=inventory, replace_node=True)
                ident, baseline = capture.start_record(lab, target, options=options, inventory=inventory)
                task.target, task.key = target, capture.target_key(target, inventory)
                task.identity, task.baseline = ident.to_json(), baseline
            made.append(task)
        session = Session(
            id=sid,
            exam=spec.name,
            title=spec.title,
            candidate=candidate,
            seed=seed,
            started_at=_iso(now),
            minutes=minutes or spec.minutes,
            deadline=_iso(now + dt.timedelta(minutes=minutes or spec.minutes)),
            pass_percent=spec.pass_percent,
            tasks=made,
            folder=folder,
            plan={
                "asked": plan.asked,
                "shares": plan.shares,
                "not_examined": list(plan.not_examined),
                "capped": list(plan.capped),
                "inventory": inventory,
                "on": kind,
            },
        )
        exam_session.save(session)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Started(session, ended)


def _random_seed() -> int:
    import secrets

    return secrets.randbelow(1_000_000)


def _fresh_node(lab: Lab, folder: Path, n: int) -> str:
    """A new simulated node of the lab's fixture in the sitting's folder: ``nodes/task-N.json``."""
    from assessor.sim.node_init import init_node

    path = folder / "nodes" / f"task-{n}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    assert lab.fixture is not None  # the loader requires a fixture on node labs
    list(init_node(lab.fixture, str(path), host=f"exam-node-{n}"))
    return f"mock:{path}"


def start_lines(started: Started, spec: ExamSpec | None = None) -> list[str]:
    """What `exam start` prints: the exam, its clock, the tasks and how to work and grade them."""
    s = started.session
    lines = []
    if started.ended is not None:
        e = started.ended
        lines.append(f"your earlier sitting {e.id} ran out of time at {_when(e.deadline)}: submitted by the clock")
    lines.append(f"{s.exam} practice exam ({s.title}) for {s.candidate}: session {s.id}")
    lines.append(
        f"{len(s.tasks)} tasks, {s.minutes} min: from {_when(s.started_at)} to {_when(s.deadline)}; "
        f"pass mark {s.pass_percent:g} %"
    )
    if s.plan.get("not_examined"):
        lines.append(f"not examined (no lab trains them): {', '.join(s.plan['not_examined'])}")
    lines += task_lines(s)
    lines.append(
        "read a task with `gpulab exam show N`; grade it with `gpulab exam grade N` (design and ticket tasks: "
        "`--answer FILE`); a grade says only whether it was recorded: the results come with `gpulab exam submit`"
    )
    return lines


def _when(iso_time: str) -> str:
    t = dt.datetime.fromisoformat(iso_time).astimezone(dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def task_lines(session: Session) -> list[str]:
    """A line per task: its number, lab and title, the domain it counts for, where it is done, and whether a
    grade is recorded. Nothing of how a grade went."""
    from assessor.labs.loader import find_lab

    out = []
    for t in session.tasks:
        try:
            title = find_lab(t.lab).title
        except InputError:
            title = "(the lab is gone from the catalogue)"
        where = f"node {t.target}" if t.target else "answer file"
        state = "recorded" if t.recorded else "not recorded"
        out.append(f"  {t.n}. {t.lab} — {title} [{t.domain}]; {where}; {state}")
    return out


# ---- status ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    session: Session
    now: dt.datetime

    @property
    def seconds_left(self) -> int:
        return int((self.session.deadline_time() - self.now).total_seconds())

    def to_json(self) -> dict[str, Any]:
        s = self.session
        return {
            "session": s.id,
            "exam": s.exam,
            "candidate": s.candidate,
            "started_at": s.started_at,
            "deadline": s.deadline,
            "seconds_left": max(0, self.seconds_left) if not s.submitted else None,
            "time_up": self.seconds_left <= 0,
            "submitted_at": s.submitted_at,
            "tasks": [
                {
                    "n": t.n,
                    "lab": t.lab,
                    "domain": t.domain,
                    "target": t.target,
                    "grade": "recorded" if t.recorded else "not recorded",
                }
                for t in s.tasks
            ],
        }


def status(*, candidate: str, db: str | None = None, session_id: str | None = None, clock: Clock = _now) -> Status:
    session = exam_session.find(exam_session.exams_root(db), candidate, session_id)
    return Status(session, clock())


def status_lines(st: Status) -> list[str]:
    s = st.session
    lines = [f"{s.exam} practice exam for {s.candidate}: session {s.id}"]
    if s.submitted:
        lines.append(f"submitted at {_when(s.submitted_at or '')}: the result is `gpulab exam report`")
    elif st.seconds_left > 0:
        left = st.seconds_left
        lines.append(f"{left // 60} min {left % 60:02d} s left (ends {_when(s.deadline)})")
    else:
        lines.append(
            f"time is up since {_when(s.deadline)}: grades taken now do not count; `gpulab exam submit` ends the exam"
        )
    lines += task_lines(s)
    return lines


# ---- show ------------------------------------------------------------------------------------------------------


def show(which: str, *, candidate: str, db: str | None = None, session_id: str | None = None) -> tuple[Task, Lab, str]:
    """A task's lab (built with the sitting's variant) and its README, the variant's values filled in."""
    from assessor.labs.loader import fill, find_lab, read_readme, with_variant

    session = exam_session.find(exam_session.exams_root(db), candidate, session_id)
    task = session.task(which)
    lab = with_variant(find_lab(task.lab), task.variant)
    readme = read_readme(lab)
    return task, lab, fill(readme, task.variant) if task.variant else readme


# ---- grade ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    """What a grade during the exam tells: recorded or not (why not, in words that give nothing away)."""

    task: int
    lab: str
    recorded: bool
    at: str
    after_deadline: bool = False
    why_not: str | None = None

    def line(self) -> str:
        if not self.recorded:
            return f"task {self.task} ({self.lab}): not recorded: {self.why_not}"
        late = "; after the deadline: it does not count" if self.after_deadline else ""
        at = _when(self.at)
        return f"task {self.task} ({self.lab}): grade recorded at {at}{late} (results at `gpulab exam submit`)"


def grade(
    which: str,
    *,
    candidate: str,
    db: str | None = None,
    answer: str | None = None,
    session_id: str | None = None,
    timeout: float = 120.0,
    options: TargetOptions | None = None,
    clock: Clock = _now,
) -> Recorded:
    """Grade task ``which`` of the candidate's sitting and keep the grade in the session; the candidate learns
    only that it was recorded. Refused (InputError) once the sitting is submitted."""
    from assessor.labs import capture, grading
    from assessor.labs.attempts import Identity, identity_mismatch
    from assessor.labs.grade import load_ticket
    from assessor.labs.loader import find_lab, with_variant

    root = exam_session.exams_root(db)
    session = exam_session.find(root, candidate, session_id)
    if session.submitted:
        raise InputError(f"exam session {session.id} was submitted at {session.submitted_at}: its grades are final")
    task = session.task(which)
    lab = with_variant(find_lab(task.lab), task.variant)
    if lab.is_design:
        if not answer:
            raise InputError(
                f"task {task.n} ({lab.id}) is graded from your answer file: --answer FILE "
                f"(format: {lab.path / (lab.answer_example or '')})"
            )
        from assessor.labs import designs

        located = designs.load_answer(answer, [c.id for c in lab.checks])
        captured = capture.answer_captured(located, f"answer:{answer}")
        ticket = None
    else:
        ticket = load_ticket(lab, answer)
        inventory = session.plan.get("inventory")
        captured = capture.capture_node(lab, task.target or "", timeout=timeout, options=options, inventory=inventory)
        mismatch = identity_mismatch(Identity.from_json(task.identity), captured.identity)
        if mismatch:
            return Recorded(task.n, lab.id, False, _iso(clock()), why_not=f"not the task's node: {mismatch}")
    now = clock()
    used = sum(1 for g in task.grades if g.get("answer_graded"))
    result = grading.evaluate(
        lab,
        captured.facts,
        graded_at=now,
        started_at=session.started_time(),
        baseline=task.baseline,
        answer=ticket,
        extras={"candidate": candidate, "target": captured.spec, "host": captured.identity.host},
        hints_revealed=0,
        ticket_grades=used if lab.answer_grades is not None else None,
    )
    flags = list(captured.flags)
    if lab.digest != task.lab_sha256:
        flags.append(f"lab {lab.id} changed since the exam started (its files are not the ones drawn)")
    from assessor.labs.attempts import answer_was_graded

    answer_checks = [s.to_json() for s, c in zip(result.scores, lab.checks, strict=True) if c.grades_answer]
    at = _iso(now)
    record: dict[str, Any] = {
        "at": at,
        "after_deadline": now > session.deadline_time(),
        "percent": result.percent,
        "passed": result.passed,
        "guards_broken": [s.check for s in result.failed_guards],
        "flags": flags,
        "answer_graded": bool(answer_checks) and answer_was_graded(answer_checks),
        "grade": {**result.to_json(), "flags": flags},
    }
    with exam_session.updating(session.path) as current:
        if current.submitted:
            raise InputError(f"exam session {current.id} was submitted while this grade ran: it is not recorded")
        current.task(task.n).grades.append(record)
    return Recorded(task.n, lab.id, True, at, after_deadline=bool(record["after_deadline"]))


# ---- submit ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    session: Session
    already: bool = False  # it had been submitted before this call
    errors: list[str] = field(default_factory=list)


def submit(
    *,
    candidate: str,
    db: str | None = None,
    session_id: str | None = None,
    clock: Clock = _now,
    by: str = "candidate",
) -> Submitted:
    """End the sitting and score it, each task with its debrief. ``by`` the clock: it ends at its deadline (an
    expired sitting found by the next `exam start`); by the candidate: now, marked late past the deadline."""
    from assessor.labs.exam_score import result

    root = exam_session.exams_root(db)
    session = exam_session.find(root, candidate, session_id)
    if session.submitted:
        return Submitted(session, already=True)
    now = clock()
    at = session.deadline_time() if by == "clock" else now
    debriefs = {t.n: _task_debrief(t) for t in session.tasks}
    spec = _spec_or_none(session.exam)
    weights = spec.weights if spec else {t.domain: 1 for t in session.tasks}
    titles = _titles(session)
    info = {"format": spec.format, "sources": spec.sources, "pass_note": spec.pass_note} if spec else None
    with exam_session.updating(session.path) as current:
        if current.submitted:
            return Submitted(current, already=True)
        current.submitted_at = _iso(at)
        current.submitted_by = by
        current.result = result(
            current,
            submitted_at=_iso(at),
            submitted_by=by,
            weights=weights,
            titles=titles,
            generated_at=_iso(now),
            debriefs=debriefs,
            exam_info=info,
        )
    return Submitted(current)


def _spec_or_none(exam: str) -> ExamSpec | None:
    from assessor.labs.exam_spec import load_exams

    try:
        return load_exams().get(exam)
    except InputError:
        return None


def _titles(session: Session) -> dict[str, str]:
    from assessor.labs.loader import find_lab

    out = {}
    for t in session.tasks:
        try:
            out[t.lab] = find_lab(t.lab).title
        except InputError:
            out[t.lab] = t.lab
    return out


def _task_debrief(task: Task) -> dict[str, Any]:
    """The debrief of one task at the end of the sitting: of its counted grade (or, ungraded, of the lab's
    checks, none of them proved), with the commands typed on its node."""
    from assessor.labs import debrief
    from assessor.labs.debrief_inputs import objectives_of, reference_text
    from assessor.labs.exam_score import counted_grade
    from assessor.labs.loader import find_lab, with_variant
    from assessor.labs.shell_history import node_history

    try:
        lab = with_variant(find_lab(task.lab), task.variant)
    except InputError as exc:
        return {"lab": task.lab, "error": str(exc)}
    g = counted_grade(task)
    if g is not None:
        checks = list((g.get("grade") or {}).get("checks") or [])
    else:
        checks = [
            {"check": c.id, "role": c.role, "status": "not graded", "points": c.points, "earned": 0.0, "message": ""}
            for c in lab.checks
        ]
    d = debrief.build(
        lab,
        checks,
        node_history(task.key or task.target) if task.kind == "node" else node_history(None),
        debrief.default_notes(),
        passed=bool(g and g.get("passed")),
        percent=float(g.get("percent", 0.0)) if g else 0.0,
        objectives=objectives_of(lab),
        reference_text=reference_text(lab),
    )
    return d.to_json()
