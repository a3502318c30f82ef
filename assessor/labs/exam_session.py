"""A practice exam's sitting on disk: ``session.json`` in a folder of its own, beside the attempts database.

Layout: ``<folder of the attempts database>/exams/<candidate>/<session id>/`` holds ``session.json`` and
``nodes/`` (each node task's simulated node: ``task-N.json`` and its files, ``task-N.json.d/``). The session
file says which exam, whose, when it started and ends, which tasks were drawn (lab, exam domain, variant, node,
the node's identity and what already passed on it at the start), every grade taken, and, once submitted, the
result. Times are ISO 8601 in UTC, as the attempts database writes them (:func:`assessor.labs.attempts.iso`).

Tamper evidence, as the simulator stamps a node's state: every write stamps the document (``integrity``, a
keyed hash over the canonical JSON); a session changed by anything but gpulab (its clock moved, a grade
edited) no longer matches its stamp and is refused with one line, exit 2. The key is in this source: the
stamp is evidence for a reader of the result, not a secret. Writes are atomic (a temporary file, fsync,
rename) under an exclusive lock on a sidecar ``.lock`` file, so two gpulab commands do not lose each other's
grades.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.errors import InputError

SCHEMA = "gpulab.exam-session/1"
SESSION_FILE = "session.json"
STAMP_KEY = "integrity"
_STAMP_KEY_BYTES = b"gpulab.exam-session/1 written by gpulab"
MAX_SESSION_BYTES = 16 * 1024 * 1024


@dataclass
class Task:
    """One task of a sitting: a lab, the exam domain it counts for, and where it is done."""

    n: int  # 1-based, the number the candidate types (`exam grade 3`)
    lab: str
    domain: str
    kind: str  # node | design
    target: str | None = None  # the node as the candidate names it (mock:FILE.json, ssh://host); None: design
    key: str | None = None  # the node as a grade compares it (:func:`assessor.labs.capture.target_key`)
    variant: dict[str, Any] = field(default_factory=dict)
    lab_sha256: str = ""  # the lab as drawn: a lab edited during the sitting flags its grades
    identity: dict[str, Any] = field(default_factory=dict)  # the node right after the start
    baseline: dict[str, float] | None = None  # what each task check earned right after the start
    grades: list[dict[str, Any]] = field(default_factory=list)  # every grade taken, in order

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "lab": self.lab,
            "domain": self.domain,
            "kind": self.kind,
            "target": self.target,
            "key": self.key,
            "variant": self.variant,
            "lab_sha256": self.lab_sha256,
            "identity": self.identity,
            "baseline": self.baseline,
            "grades": self.grades,
        }

    @property
    def recorded(self) -> bool:
        """Whether a grade of this task has been recorded (the only thing a sitting tells before the end)."""
        return bool(self.grades)


@dataclass
class Session:
    """One sitting of a practice exam."""

    id: str
    exam: str
    title: str
    candidate: str
    seed: int
    started_at: str
    minutes: int
    deadline: str
    pass_percent: float
    tasks: list[Task]
    folder: Path
    plan: dict[str, Any] = field(default_factory=dict)  # how the tasks were drawn (shares, domains not examined)
    submitted_at: str | None = None
    submitted_by: str | None = None  # candidate | clock
    result: dict[str, Any] | None = None

    @property
    def path(self) -> Path:
        return self.folder / SESSION_FILE

    @property
    def submitted(self) -> bool:
        return self.submitted_at is not None

    def deadline_time(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.deadline)

    def started_time(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.started_at)

    def task(self, which: str | int) -> Task:
        """Task ``which``: its number, or its lab's id. InputError naming the tasks otherwise."""
        text = str(which).strip()
        for t in self.tasks:
            if text == str(t.n) or text == t.lab:
                return t
        listed = ", ".join(f"{t.n} ({t.lab})" for t in self.tasks)
        raise InputError(f"no task {text!r} in exam session {self.id}: its tasks are {listed}")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "id": self.id,
            "exam": self.exam,
            "title": self.title,
            "candidate": self.candidate,
            "seed": self.seed,
            "started_at": self.started_at,
            "minutes": self.minutes,
            "deadline": self.deadline,
            "pass_percent": self.pass_percent,
            "plan": self.plan,
            "tasks": [t.to_json() for t in self.tasks],
            "submitted_at": self.submitted_at,
            "submitted_by": self.submitted_by,
            "result": self.result,
        }


# ---- where sittings live -----------------------------------------------------------------------------------


def exams_root(db: str | os.PathLike[str] | None = None) -> Path:
    """``exams/`` beside the attempts database (``--db``, else $GPULAB_DB, else the default one)."""
    from assessor.labs.attempts import default_path

    return Path(db if db is not None else default_path()).parent / "exams"


def candidate_folder(root: Path, candidate: str) -> Path:
    """The folder of ``candidate``'s sittings: their name as a safe file name, plus a short hash so two names
    that read alike (``a b`` and ``a_b``) never share one."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", candidate)[:48].lstrip(".") or "candidate"
    return root / f"{safe}-{hashlib.sha256(candidate.encode()).hexdigest()[:8]}"


def session_id(exam: str, started: dt.datetime, seed: int) -> str:
    return f"{exam}-{started.astimezone(dt.UTC):%Y%m%dT%H%M%S}-s{seed}"


def sessions_of(root: Path, candidate: str) -> list[Session]:
    """Every sitting of ``candidate`` under ``root``, oldest first. A tampered or unreadable one: InputError."""
    folder = candidate_folder(root, candidate)
    if not folder.is_dir():
        return []
    found = [load(p) for p in sorted(folder.glob(f"*/{SESSION_FILE}"))]
    return sorted((s for s in found if s.candidate == candidate), key=lambda s: (s.started_at, s.id))


def open_session(root: Path, candidate: str) -> Session | None:
    """``candidate``'s sitting not yet submitted (the latest), or None."""
    left = [s for s in sessions_of(root, candidate) if not s.submitted]
    return left[-1] if left else None


def find(root: Path, candidate: str, session: str | None = None) -> Session:
    """The sitting ``session`` (its id), else ``candidate``'s open one, else their latest; InputError when
    there is none."""
    mine = sessions_of(root, candidate)
    if session is not None:
        for s in mine:
            if s.id == session:
                return s
        known = ", ".join(s.id for s in mine) or "none"
        raise InputError(f"no exam session {session!r} of {candidate} under {root} (theirs: {known})")
    if not mine:
        raise InputError(f"no exam session of {candidate} under {root}: start one with `gpulab exam start EXAM`")
    left = [s for s in mine if not s.submitted]
    return left[-1] if left else mine[-1]


def domain_scores(candidate: str, exam: str, db: str | os.PathLike[str] | None = None) -> list[dict[str, float]]:
    """``candidate``'s submitted sittings of ``exam``, oldest first, each as exam domain -> score (percent) for the
    domains it set tasks for: the shape readiness takes (:mod:`assessor.labs.readiness`)."""
    out = []
    for s in sessions_of(exams_root(db), candidate):
        if s.exam.casefold() != exam.strip().casefold() or not s.result:
            continue
        scored = {
            str(d["domain"]): float(d["score_percent"])
            for d in s.result.get("domains") or ()
            if isinstance(d, dict) and d.get("score_percent") is not None
        }
        if scored:
            out.append(scored)
    return out


# ---- reading and writing, stamped ----------------------------------------------------------------------------


def stamp(data: dict[str, Any]) -> str:
    """The integrity stamp of a session document (its ``integrity`` key left out)."""
    body = {k: v for k, v in data.items() if k != STAMP_KEY}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "hmac-sha256:" + hmac.new(_STAMP_KEY_BYTES, canonical.encode(), hashlib.sha256).hexdigest()


def save(session: Session) -> None:
    """Write the session atomically, stamped."""
    import tempfile

    data = session.to_json()
    data[STAMP_KEY] = stamp(data)
    session.folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{SESSION_FILE}.", suffix=".tmp", dir=session.folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, session.path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load(path: Path) -> Session:
    """The session in ``path`` (a session.json); InputError, naming the file, when it cannot be read, is not a
    session, or was changed since gpulab wrote it."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_SESSION_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the exam session: {exc.strerror or exc}") from None
    if len(raw) > MAX_SESSION_BYTES:
        raise InputError(f"{path}: over {MAX_SESSION_BYTES >> 20} MiB: not an exam session gpulab wrote")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not an exam session (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(f"{path}: not an exam session (schema is not {SCHEMA})")
    written = data.get(STAMP_KEY)
    if not isinstance(written, str):
        raise InputError(f"{path}: exam session has no integrity stamp: not written by gpulab, it cannot be trusted")
    if not hmac.compare_digest(written, stamp(data)):
        raise InputError(
            f"{path}: exam session edited by hand (its integrity stamp does not match): its clock and grades "
            f"cannot be trusted, so gpulab will not use it (an instructor may move {path.parent.name} away)"
        )
    try:
        return _session(data, path.parent)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: malformed exam session: {type(exc).__name__}: {exc}") from None


def _session(data: dict[str, Any], folder: Path) -> Session:
    tasks = [
        Task(
            n=int(t["n"]),
            lab=str(t["lab"]),
            domain=str(t["domain"]),
            kind=str(t["kind"]),
            target=t.get("target"),
            key=t.get("key"),
            variant=dict(t.get("variant") or {}),
            lab_sha256=str(t.get("lab_sha256") or ""),
            identity=dict(t.get("identity") or {}),
            baseline={str(k): float(v) for k, v in t["baseline"].items()} if t.get("baseline") is not None else None,
            grades=list(t.get("grades") or []),
        )
        for t in data["tasks"]
    ]
    dt.datetime.fromisoformat(data["started_at"])  # times that are not times: malformed
    dt.datetime.fromisoformat(data["deadline"])
    return Session(
        id=str(data["id"]),
        exam=str(data["exam"]),
        title=str(data.get("title") or data["exam"]),
        candidate=str(data["candidate"]),
        seed=int(data["seed"]),
        started_at=str(data["started_at"]),
        minutes=int(data["minutes"]),
        deadline=str(data["deadline"]),
        pass_percent=float(data["pass_percent"]),
        tasks=tasks,
        folder=folder,
        plan=dict(data.get("plan") or {}),
        submitted_at=data.get("submitted_at"),
        submitted_by=data.get("submitted_by"),
        result=data.get("result"),
    )


@contextlib.contextmanager
def updating(path: Path) -> Iterator[Session]:
    """Read the session in ``path``, let the block change it, write it back: one read-modify-write under an
    exclusive lock (a sidecar ``.lock`` file), so concurrent grades are all kept."""
    lock = path.with_name(path.name + ".lock")
    with open(lock, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            session = load(path)
            yield session
            save(session)
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
