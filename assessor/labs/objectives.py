"""The official exam objectives (``labs/objectives.yaml``): each exam's tasks per blueprint domain, where the
list was copied from and when, and, for an objective no lab trains, why.

A malformed file is one InputError naming the file, the line and the key. Every exam it lists must be in
the blueprints (``labs/blueprints.yaml``) with every one of its blueprint domains, so that the weight of each
objective is defined: the domain's weight split equally between its objectives, unless every objective of
the domain gives its own ``weight`` (then they add up to the domain's weight).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.labs.levels import Blueprints
from assessor.yamlio import KeyPath, Located

OBJECTIVES = "objectives.yaml"
ID = re.compile(r"^(?P<exam>[A-Z]+-[A-Z]+)-(?P<number>[0-9]+(?:\.[0-9]+)?)$")
DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
NUMBERING = ("official", "gpulab")
_EXAM_KEYS = {"source", "document", "as_of", "numbering", "note", "domains"}
_OBJECTIVE_KEYS = {"id", "title", "reason", "weight"}


@dataclass(frozen=True)
class Objective:
    """One official objective (an exam's task): ``NCP-AII-2.2`` in domain "Physical Layer Management"."""

    id: str
    exam: str
    domain: str  # the blueprint's spelling
    title: str
    weight: Fraction  # percent of the exam
    reason: str | None = None  # why no lab trains it
    line: int | None = None  # where it is in the objectives file

    @property
    def number(self) -> str:
        """The task's number within its exam: ``2.2``."""
        return self.id.removeprefix(self.exam + "-")

    @property
    def exam_domain(self) -> str:
        """The blueprint domain as labs name it in ``exam_domains``: ``NCP-AII: Physical Layer Management``."""
        return f"{self.exam}: {self.domain}"


@dataclass(frozen=True)
class ExamObjectives:
    """One exam's objectives and where they come from."""

    exam: str
    source: str  # URL
    document: str
    as_of: str  # when the list was last checked against the source
    numbering: str  # official | gpulab
    note: str | None
    objectives: tuple[Objective, ...]

    def domains(self) -> list[str]:
        """The exam's domains, in the file's order."""
        return list(dict.fromkeys(o.domain for o in self.objectives))


@dataclass(frozen=True)
class Objectives:
    """Every exam's objectives, by exam."""

    version: int
    file: str
    exams: dict[str, ExamObjectives]

    def all(self) -> list[Objective]:
        return [o for e in self.exams.values() for o in e.objectives]

    def get(self, objective_id: str) -> Objective | None:
        for o in self.all():
            if o.id == objective_id:
                return o
        return None

    def exam(self, name: str) -> ExamObjectives:
        """One exam's objectives (its name matched without regard to case); InputError naming the exams known."""
        for exam, listed in self.exams.items():
            if exam.casefold() == name.casefold():
                return listed
        raise InputError(f"{self.file}: no objectives for exam {name!r} (exams: {', '.join(self.exams)})")

    def unknown(self, objective_id: str) -> str:
        """Why ``objective_id`` is not an objective, with the closest ids as a hint."""
        import difflib

        close = difflib.get_close_matches(objective_id, [o.id for o in self.all()], n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else f" (see {self.file})"
        return f"unknown objective {objective_id!r}{hint}"


def default_path(root: Path | None = None) -> Path:
    """The objectives file of the labs tree at ``root``: its own, else the shipped one."""
    from assessor.labs.levels import data_file

    return data_file(OBJECTIVES, root)


def load(path: Path | str | None = None, blueprints: Blueprints | None = None) -> Objectives:
    """The objectives file (default: the labs tree's own, else the shipped one), checked against the
    blueprints; InputError naming the file, the line and the key when it is malformed."""
    from assessor import yamlio
    from assessor.labs.levels import BLUEPRINTS, data_file, load_blueprints

    path = Path(path) if path is not None else default_path()
    if blueprints is None:
        blueprints = load_blueprints(data_file(BLUEPRINTS, path.parent))
    return parse(yamlio.load(path), blueprints)


_CACHE: dict[tuple[Any, ...], Objectives] = {}


def cached(path: Path | None = None) -> Objectives:
    """:func:`load` of ``path``, kept while the file (and the blueprints beside it) are unchanged: a catalogue
    validates every lab against the same file."""
    from assessor.labs.levels import BLUEPRINTS, data_file

    path = path or default_path()
    stamps = []
    for p in (path, data_file(BLUEPRINTS, path.parent)):
        try:
            st = os.stat(p)
        except OSError:
            return load(path)  # missing or unreadable: load() says which, naming the file
        stamps.append((st.st_mtime_ns, st.st_size))
    key = (str(path), *stamps)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load(path)
    return _CACHE[key]


def parse(located: Located, blueprints: Blueprints) -> Objectives:
    """Objectives from a loaded file; InputError naming file, line and key at the first problem."""
    data = located.data
    if not isinstance(data, dict):
        raise located.error((), "an objectives file is a mapping (version, exams)")
    _only(located, (), data, {"version", "exams"})
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise located.error(("version",), f"version must be an integer, got {version!r}")
    exams = data.get("exams")
    if not isinstance(exams, dict) or not exams:
        raise located.error(("exams",), "exams: a mapping of exam (NCP-AII, ...) to its objectives")
    out: dict[str, ExamObjectives] = {}
    seen: dict[str, int | None] = {}
    for exam, spec in exams.items():
        if exam not in blueprints.exams:
            raise located.error(("exams", exam), f"unknown exam {exam!r} (blueprints: {', '.join(blueprints.exams)})")
        out[exam] = _exam(located, exam, spec, blueprints.exams[exam], seen)
    return Objectives(version, located.file, out)


def _only(located: Located, path: KeyPath, data: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise located.error(
            (*path, extra[0]), f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})"
        )


def _text(located: Located, path: KeyPath, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise located.error(path, f"{what} must be non-empty text, got {value!r}")
    return value.strip()


def _exam(
    located: Located, exam: str, spec: Any, weights: dict[str, Fraction], seen: dict[str, int | None]
) -> ExamObjectives:
    base: KeyPath = ("exams", exam)
    if not isinstance(spec, dict):
        raise located.error(base, f"{exam}: a mapping (source, document, as_of, numbering, domains)")
    _only(located, base, spec, _EXAM_KEYS)
    for key in ("source", "document", "as_of", "numbering", "domains"):
        if key not in spec:
            raise located.error(base, f"{exam}: missing key {key!r}")
    source = _text(located, (*base, "source"), spec["source"], "source")
    if not source.startswith("https://"):
        raise located.error((*base, "source"), f"source must be the public https:// address copied from: {source!r}")
    document = _text(located, (*base, "document"), spec["document"], "document")
    as_of = _text(located, (*base, "as_of"), spec["as_of"], 'as_of (a quoted date such as "2026-12-01")')
    if not DATE.match(as_of):
        raise located.error((*base, "as_of"), f"as_of must be a date YYYY-MM-DD, got {as_of!r}")
    numbering = spec["numbering"]
    if numbering not in NUMBERING:
        raise located.error((*base, "numbering"), f"numbering must be one of {', '.join(NUMBERING)}, not {numbering!r}")
    note = _text(located, (*base, "note"), spec["note"], "note") if "note" in spec else None
    domains = spec["domains"]
    if not isinstance(domains, dict):
        raise located.error((*base, "domains"), "domains: a mapping of blueprint domain to its objectives")
    known = {d.casefold(): d for d in weights}
    objectives: list[Objective] = []
    listed: set[str] = set()
    for name, items in domains.items():
        where: KeyPath = (*base, "domains", name)
        domain = known.get(str(name).casefold())
        if domain is None:
            raise located.error(where, f"{name!r} is not a domain of {exam} (blueprints: {', '.join(weights)})")
        if domain in listed:
            raise located.error(where, f"domain {domain!r} of {exam} is listed twice")
        listed.add(domain)
        objectives += _domain(located, where, exam, domain, items, weights[domain], seen)
    missing = [d for d in weights if d not in listed]
    if missing:
        raise located.error(
            (*base, "domains"), f"{exam} has no objectives for {', '.join(missing)}: every blueprint domain needs some"
        )
    return ExamObjectives(exam, source, document, as_of, str(numbering), note, tuple(objectives))


def _domain(
    located: Located,
    where: KeyPath,
    exam: str,
    domain: str,
    items: Any,
    weight: Fraction,
    seen: dict[str, int | None],
) -> list[Objective]:
    if not isinstance(items, list) or not items:
        raise located.error(where, f"{domain}: a list of objectives (id, title, reason)")
    rows: list[tuple[str, str, str | None, Fraction | None, int | None]] = []
    for i, item in enumerate(items):
        path: KeyPath = (*where, i)
        if not isinstance(item, dict):
            raise located.error(path, "an objective is a mapping (id, title, and reason when no lab trains it)")
        _only(located, path, item, _OBJECTIVE_KEYS)
        oid = _text(located, (*path, "id"), item.get("id"), "id")
        m = ID.match(oid)
        if m is None or m.group("exam") != exam:
            raise located.error((*path, "id"), f"id {oid!r} must be {exam}-<number>, e.g. {exam}-1.2")
        if oid in seen:
            raise located.error((*path, "id"), f"objective {oid} listed twice (first at line {seen[oid]})")
        seen[oid] = located.line((*path, "id"))
        title = _text(located, (*path, "title"), item.get("title"), "title")
        reason = _text(located, (*path, "reason"), item["reason"], "reason") if "reason" in item else None
        own: Fraction | None = None
        if "weight" in item:
            w = item["weight"]
            if isinstance(w, bool) or not isinstance(w, (int, float)) or w <= 0:
                raise located.error((*path, "weight"), f"weight must be a positive number (percent), got {w!r}")
            own = Fraction(str(w))
        rows.append((oid, title, reason, own, located.line(path)))
    given = [r[3] for r in rows if r[3] is not None]
    if given and len(given) != len(rows):
        raise located.error(where, f"{domain}: give every objective a weight, or none (split equally)")
    if given and sum(given) != weight:
        raise located.error(
            where, f"{domain}: objective weights add up to {float(sum(given)):g}, not the domain's {float(weight):g}"
        )
    equal = weight / len(rows)
    return [Objective(oid, exam, domain, title, own or equal, reason, line) for oid, title, reason, own, line in rows]
