"""Where grades go after grading: the gradebook directory of ``lab grade --out DIR``, and the one line
that says what a grade comes to.

The gradebook keeps everything. Each grade is its own file, never replaced::

    DIR/<lab>/<candidate>/<NNN>-<graded at, UTC>-<host>.json           a gpulab.grade/1 document
    DIR/<lab>/<candidate>/<NNN>-<tried at, UTC>-<host>.unreachable.json a gpulab.ungraded/1 document

``NNN`` numbers the candidate's entries of that lab in the order they were written, so a regrade, a second
lab and a second grade run into the same directory add files beside the first. A host a cohort grade run
could not reach (or capture) gets a gpulab.ungraded/1 document, so the candidate still has a row in the
cohort report, which says why. `gpulab report cohort DIR` reads every file under DIR and picks each lab's
best by the rule `gpulab progress` applies (:func:`assessor.labs.attempts.counts`), so a better grade is
never lost to a later one; gradebooks written by an older gpulab (``DIR/<host>.json``) read as before.

Names are made safe (no path separators, no leading dot) and a file is created only if it does not exist
(``O_EXCL``, links not followed): nothing planted in the directory redirects a write.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assessor.errors import InputError

if TYPE_CHECKING:
    from assessor.labs.grading import Grade

UNGRADED_SCHEMA = "gpulab.ungraded/1"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@-]")
_MAX_NAME = 80


def safe_name(text: str, fallback: str) -> str:
    """``text`` as one file name: characters other than letters, digits and ``_ . @ -`` become ``_``, no
    leading dot, at most 80 characters; ``fallback`` when nothing is left."""
    return _UNSAFE.sub("_", text).lstrip(".")[:_MAX_NAME] or fallback


def stamp(t: dt.datetime) -> str:
    """A time for a file name: ``20261102T092500Z`` (UTC), so names sort by time."""
    return t.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _folder(root: Path, *parts: str) -> Path:
    """``root/parts...``, made; a link planted where a folder belongs is replaced by a folder."""
    here = root
    try:
        root.mkdir(parents=True, exist_ok=True)
        for part in parts:
            here = here / part
            if here.is_symlink():
                here.unlink()
            here.mkdir(exist_ok=True)
    except FileExistsError:
        raise InputError(f"{here}: a file where the gradebook needs a directory") from None
    except OSError as exc:
        raise InputError(f"{here}: cannot create the gradebook directory: {exc.strerror or exc}") from None
    return here


def _create(folder: Path, tail: str, doc: dict[str, Any]) -> Path:
    """Write ``doc`` as the folder's next entry, ``NNN-<tail>``; never over an existing file or through a link."""
    text = json.dumps(doc, indent=2) + "\n"
    number = 1 + sum(1 for p in folder.iterdir() if p.name[:3].isdigit())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for n in range(number, number + 10_000):
        path = folder / f"{n:03d}-{tail}"
        try:
            fd = os.open(path, flags, 0o644)
        except FileExistsError:
            continue  # another grader wrote this number first: take the next
        except OSError as exc:
            raise InputError(f"{path}: cannot write the grade: {exc.strerror or exc}") from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path
    raise InputError(f"{folder}: no free entry name left")


def write_grade(out: str | Path, grade: Grade, *, candidate: str, host: str | None) -> Path:
    """Keep ``grade`` (its gpulab.grade/1 document) in the gradebook ``out``, beside every earlier one."""
    folder = _folder(Path(out), safe_name(grade.lab_id, "lab"), safe_name(candidate, "candidate"))
    return _create(folder, f"{stamp(grade.graded_at)}-{safe_name(host or 'node', 'node')}.json", grade.to_json())


def ungraded_document(
    lab_id: str, *, candidate: str, host: str | None, target: str | None, status: str, message: str, at: dt.datetime
) -> dict[str, Any]:
    """The gpulab.ungraded/1 document of a candidate a grade run could not grade (``status``: unreachable or
    failed), with why."""
    from assessor.labs.attempts import iso

    return {
        "schema": UNGRADED_SCHEMA,
        "lab": lab_id,
        "candidate": candidate,
        "host": host,
        "target": target,
        "at": iso(at),
        "status": status,
        "message": message,
    }


def write_ungraded(
    out: str | Path,
    lab_id: str,
    *,
    candidate: str,
    host: str | None,
    target: str | None,
    status: str,
    message: str,
    at: dt.datetime,
) -> Path:
    """Keep a candidate the grade run could not grade in the gradebook ``out``: their row says why."""
    doc = ungraded_document(
        lab_id, candidate=candidate, host=host, target=target, status=status, message=message, at=at
    )
    folder = _folder(Path(out), safe_name(lab_id, "lab"), safe_name(candidate, "candidate"))
    kind = "unreachable" if status == "unreachable" else "failed"
    return _create(folder, f"{stamp(at)}-{safe_name(host or 'node', 'node')}.{kind}.json", doc)


# ---- what a grade comes to, in words ------------------------------------------------------------------


def verdict(grade: Grade, *, detail: bool = False) -> str:
    """What a grade comes to, as every summary line says it: passed or not, each broken guard with its message,
    whether it counts, recorded or not (and why), each flag, late. With ``detail`` (one grade on its own): the
    pass mark and the hints used too.

    ``PASSED; recorded`` · ``NOT PASSED (guard broken: gpu.persistence: persistence mode is off on GPU 3);
    recorded`` · ``PASSED, does not count; NOT RECORDED: no open `gpulab lab start ...``` ·
    ``PASSED, does not count; recorded; FLAG: reference solution applied on this node (...)``

    The text holds node and candidate data (messages, flags, targets): print it neutralised.
    """
    from assessor.labs.attempts import counts

    head = "PASSED" if grade.passed else "NOT PASSED"
    notes = [f"{grade.pass_percent:g} % needed"] if detail else []
    notes += [f"guard broken: {s.check}: {s.message}" for s in grade.failed_guards]
    if notes:
        head += f" ({'; '.join(notes)})"
    if not counts(grade):
        head += ", does not count"
    parts = [head]
    if grade.recorded:
        parts.append(f"recorded as an attempt (hints used: {grade.hints_used})" if detail else "recorded")
    else:
        parts.append(f"NOT RECORDED: {grade.not_recorded_because or 'no matching start'}")
    parts += [f"FLAG: {flag}" for flag in grade.flags]
    if grade.late:
        parts.append("late")
    return "; ".join(parts)
