"""The candidates file of a cohort: whose node each inventory host is, and who each candidate is in the
school's systems (for an LMS import of the gradebook).

Two forms, told apart by the file's suffix (``.csv``, else YAML):

CSV, ``host,candidate`` rows (a header row ``host,candidate`` allowed), or with a header row naming its
columns: ``candidate`` and any of ``host``, ``name``, ``email``, ``login``, ``sis_id``, ``section``,
``lms_id``::

    host,candidate,email,login,sis_id,section
    node01,alice,alice@example.edu,alice,S1001,Section A

YAML, a mapping of inventory host to a candidate's name, or to a mapping of ``candidate`` and the same
identity keys::

    node01: alice
    node02: {candidate: bob, email: bob@example.edu, sis_id: S1002, section: Section B}

Blank lines and ``#`` comments are skipped. Every error names the file, the line and the key: an unknown
column or key, a missing candidate, an e-mail address that is not one, a host or candidate listed twice, an
e-mail, login, SIS id or LMS id given to two candidates (an LMS would give both rows to one person).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assessor.errors import InputError

# What an LMS import matches a row on, and what it shows (docs/REPORTS.md, "LMS import").
IDENTITY_KEYS = ("name", "email", "login", "sis_id", "section", "lms_id")
COLUMNS = ("host", "candidate", *IDENTITY_KEYS)
# Two candidates may share a name or a section, never one of these.
_UNIQUE = ("email", "login", "sis_id", "lms_id")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class Member:
    """One line of the candidates file: a candidate, their host (when the file maps hosts), who they are."""

    candidate: str
    host: str | None = None
    name: str | None = None
    email: str | None = None
    login: str | None = None
    sis_id: str | None = None
    section: str | None = None
    lms_id: str | None = None
    where: str = ""  # file:line, for errors

    @property
    def identity(self) -> dict[str, str]:
        """The identity fields given, by key."""
        return {k: v for k in IDENTITY_KEYS if (v := getattr(self, k))}


def read(path: str) -> list[Member]:
    """The members of a candidates file, in file order (InputError: file, line and key)."""
    from assessor.content import MAX_YAML_BYTES, read_text

    file = Path(path)
    try:
        # the size is checked before a byte is read: a 1 GB candidates file is one line of error
        text = read_text(file, limit=MAX_YAML_BYTES, what="a candidates file")
    except FileNotFoundError:
        raise InputError(f"{path}: candidates file does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    return parse_csv(text, path) if file.suffix.lower() == ".csv" else parse_yaml(text, path)


def parse_csv(text: str, source: str) -> list[Member]:
    """``host,candidate`` rows, or rows under a header that names its columns (:data:`COLUMNS`)."""
    import csv

    header: list[str] | None = None
    out: list[Member] = []
    first = True
    for number, row in enumerate(csv.reader(text.splitlines()), 1):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if first:
            first = False
            names = [c.lower() for c in cells]
            if "candidate" in names:  # a header row
                header = _header(names, source, number)
                continue
        if header is None:
            if len(cells) != 2 or not cells[0] or not cells[1]:
                raise InputError(f"{source}:{number}: expected `host,candidate`, got {','.join(cells)!r}")
            out.append(_member({"host": cells[0], "candidate": cells[1]}, f"{source}:{number}"))
            continue
        if len(cells) > len(header):
            raise InputError(
                f"{source}:{number}: {len(cells)} cells, but the header names {len(header)} columns "
                f"({','.join(header)})"
            )
        values = dict(zip(header, cells, strict=False))
        out.append(_member(values, f"{source}:{number}"))
    return _unique(out)


def _header(names: list[str], source: str, number: int) -> list[str]:
    for name in names:
        if name not in COLUMNS:
            raise InputError(f"{source}:{number}: unknown column {name!r} (columns: {', '.join(COLUMNS)})")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{source}:{number}: column {name!r} is named twice")
        seen.add(name)
    return names


def parse_yaml(text: str, source: str) -> list[Member]:
    """A YAML mapping of inventory host to a candidate's name, or to ``{candidate: ..., email: ..., ...}``."""
    from assessor import yamlio

    located = yamlio.load(source, text=text)
    if located.data is None:
        return []
    if not isinstance(located.data, dict):
        raise located.error((), "expected a mapping of inventory host to candidate (node01: alice)")
    out: list[Member] = []
    for host, entry in located.data.items():
        line = located.line((host,))
        where = f"{source}:{line}" if line else source
        if isinstance(entry, dict):
            for key, value in entry.items():
                if key not in COLUMNS or key == "host":
                    raise located.error(
                        (host, key), f"unknown key {key!r} (keys: candidate, {', '.join(IDENTITY_KEYS)})"
                    )
                if not _scalar(value):
                    raise located.error((host, key), f"{key} must be a text or a number, got {value!r}")
            if "candidate" not in entry:
                raise located.error((host,), f"no candidate for {host}: give `candidate: NAME`")
            values = {str(k): str(v).strip() for k, v in entry.items()}
            try:
                out.append(_checked({"host": str(host), **values}, where))
            except _Bad as bad:
                raise located.error((host, bad.key), bad.message) from None
            continue
        if not _scalar(entry) or not str(entry).strip():
            raise located.error((host,), f"the candidate of {host} must be a name, got {entry!r}")
        out.append(_member({"host": str(host), "candidate": str(entry).strip()}, where))
    return _unique(out)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


class _Bad(Exception):
    """One value of a row is wrong: which key, and why."""

    def __init__(self, key: str, message: str) -> None:
        self.key, self.message = key, message
        super().__init__(message)


def _member(values: dict[str, str], where: str) -> Member:
    """A member from one row's values, each checked; InputError (``where``, the key) when one is wrong."""
    try:
        return _checked(values, where)
    except _Bad as bad:
        raise InputError(f"{where}: {bad.message} (key {bad.key})") from None


def _checked(values: dict[str, str], where: str) -> Member:
    if not values.get("candidate"):
        raise _Bad("candidate", "no candidate")
    email = values.get("email")
    if email and not _EMAIL.match(email):
        raise _Bad("email", f"{email!r} is not an e-mail address")
    given = {k: v or None for k, v in values.items() if k in IDENTITY_KEYS or k == "host"}
    return Member(candidate=values["candidate"], where=where, **given)


def _unique(members: list[Member]) -> list[Member]:
    """Refuse a host, a candidate, or an e-mail, login, SIS id or LMS id listed twice (naming both lines)."""
    seen: dict[tuple[str, str], Member] = {}
    for m in members:
        keys = [("host", m.host), ("candidate", m.candidate)] + [(k, getattr(m, k)) for k in _UNIQUE]
        for key, value in keys:
            if not value:
                continue
            first = seen.get((key, value))
            if first is None:
                seen[(key, value)] = m
                continue
            if key in ("host", "candidate"):
                raise InputError(f"{m.where}: {key} {value} is listed twice")
            raise InputError(
                f"{m.where}: {key} {value} is also {first.candidate}'s ({first.where}): an LMS would give both rows "
                f"to one person (key {key})"
            )
    return members


def host_candidates(members: list[Member], source: str) -> dict[str, str]:
    """Inventory host -> candidate, for the lab commands over a cohort: every member must name a host."""
    out: dict[str, str] = {}
    for m in members:
        if not m.host:
            raise InputError(
                f"{m.where}: no host for candidate {m.candidate}: a cohort's candidates file says whose node each "
                f"inventory host is (a `host` column) ({source})"
            )
        out[m.host] = m.candidate
    return out
