"""The documents every report is rendered from, their published JSON Schemas, and reading report inputs.

Documents: ``results`` (gpulab.results/1, what ``assess`` writes), ``grade`` (gpulab.grade/1, one lab
attempt), ``progress`` (gpulab.progress/1), and the report documents ``candidate``, ``cohort`` and
``fleet``. Renderers only ever see a document that passed :func:`validate`.

Inputs (``gpulab report KIND INPUT...``): a results or grade JSON file, a directory of them (a gradebook:
``lab grade --out DIR`` keeps every grade there, and a gpulab.ungraded/1 document for each candidate a run
could not grade), or the attempts database (SQLite). :func:`read_inputs` sorts them into results documents,
attempt records, ungraded records and databases.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from assessor.errors import InputError

SCHEMA_IDS = {
    "results": "gpulab.results/1",
    "grade": "gpulab.grade/1",
    "progress": "gpulab.progress/1",
    "candidate": "gpulab.candidate/1",
    "cohort": "gpulab.cohort/1",
    "fleet": "gpulab.fleet/1",
    "ungraded": "gpulab.ungraded/1",
}
NAMES = tuple(SCHEMA_IDS)


def schema_path(name: str) -> Path:
    """The file of a published schema (``results`` lives with the checks' other schemas)."""
    from importlib import resources

    if name not in SCHEMA_IDS:
        raise InputError(f"unknown schema {name!r} (schemas: {', '.join(NAMES)})")
    if name == "results":
        return Path(str(resources.files("assessor") / "schemas" / "results.schema.json"))
    return Path(str(resources.files("assessor.reports") / "schemas" / f"{name}.schema.json"))


@cache
def schema(name: str) -> dict[str, Any]:
    """A published JSON Schema as a dict."""
    loaded: dict[str, Any] = json.loads(schema_path(name).read_text(encoding="utf-8"))
    return loaded


class Checker(Protocol):
    """A schema's yes-or-no check of a document: fast, and never the one that says why a document is wrong."""

    def is_valid(self, instance: Any) -> bool: ...


@cache
def _validator(name: str) -> Any:
    """The reference validator of a schema (the jsonschema package), built once: the one that says why."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema(name))
    return cls(schema(name))


@cache
def _checker(name: str) -> Checker:
    """A compiled checker of a schema (jsonschema-rs, some hundred times faster on a 10,000-host document),
    built once; the reference validator where it is not installed."""
    try:
        import jsonschema_rs
    except ImportError:
        checker: Checker = _validator(name)
        return checker
    compiled: Checker = jsonschema_rs.validator_for(schema(name))
    return compiled


def _passes(name: str, doc: Any) -> bool:
    try:
        return _checker(name).is_valid(doc)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return False  # what the compiled checker cannot take in (a key not a string): the reference decides


def validate(doc: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The document, after checking it against its schema (named, or found from its ``schema`` key).

    A document the compiled checker passes is valid; any other goes to the reference validator, which has
    the last word (so a document is never refused that the jsonschema package accepts) and names the problem.

    InputError naming the first problem and where it is in the document.
    """
    if name is None:
        name = kind_of(doc)
        if name is None:
            raise InputError(f"not a gpulab document: schema {doc.get('schema')!r}")
    if _passes(name, doc):
        return doc
    error = next(iter(_validator(name).iter_errors(doc)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise InputError(f"not a valid {SCHEMA_IDS[name]} document at {where}: {error.message[:300]}")
    return doc


def kind_of(doc: Any) -> str | None:
    """Which document this is, from its ``schema`` key."""
    if not isinstance(doc, dict):
        return None
    ident = doc.get("schema")
    return next((k for k, v in SCHEMA_IDS.items() if v == ident), None)


@dataclass(frozen=True)
class AttemptRecord:
    """One graded attempt, from the attempts database or a grade JSON: what reports need of it."""

    candidate: str
    lab_id: str
    graded_at: str
    started_at: str | None
    late: bool
    percent: float
    passed: bool
    checks: tuple[dict[str, Any], ...]
    host: str | None = None
    machine: str = ""
    flags: tuple[str, ...] = ()
    hints_used: int | None = None
    domain: str | None = None
    level: int | None = None
    recorded: bool = True  # a grade document may say it was shown but not recorded as an attempt
    not_recorded_because: str | None = None

    @property
    def counts(self) -> bool:
        """Whether it counts towards a best, a pass and a level: the rule `gpulab progress` applies."""
        from assessor.labs.attempts import counts

        return counts(self)

    @property
    def elapsed_min(self) -> float | None:
        if not self.started_at:
            return None
        from assessor.labs.attempts import parse_time

        try:
            return round((parse_time(self.graded_at) - parse_time(self.started_at)).total_seconds() / 60.0, 1)
        except ValueError:
            return None


def flags_of(value: Any) -> tuple[str, ...]:
    """Flags however a grader stored them: a list, a JSON list, a comma-separated text, a dict of flag -> detail."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return tuple(s.strip() for s in value.split(",") if s.strip())
    if isinstance(value, dict):
        return tuple(f"{k}: {v}" if v not in (None, True, "") else str(k) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(str(v) if not isinstance(v, dict) else json.dumps(v, sort_keys=True) for v in value)
    return (str(value),)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def record_from_attempt(a: Any) -> AttemptRecord:
    """From an :class:`assessor.labs.attempts.Attempt` (columns added later, such as flags, are read if there)."""
    return AttemptRecord(
        candidate=a.candidate,
        lab_id=a.lab_id,
        graded_at=a.graded_at,
        started_at=a.started_at,
        late=bool(a.late),
        percent=float(a.percent),
        passed=bool(a.passed),
        checks=tuple(c for c in (a.checks or []) if isinstance(c, dict)),
        host=a.host,
        machine=a.machine or "",
        flags=flags_of(getattr(a, "flags", None)),
        hints_used=_int_or_none(getattr(a, "hints_used", None)),
        domain=a.lab_domain,
        level=a.lab_level,
    )


def record_from_grade(doc: dict[str, Any], source: str = "") -> AttemptRecord:
    """From a validated gpulab.grade/1 document."""
    if not doc.get("candidate"):
        raise InputError(f"{source}: grade document has no candidate (grade with `gpulab lab grade --json`)")
    return AttemptRecord(
        candidate=str(doc["candidate"]),
        lab_id=str(doc["lab"]),
        graded_at=str(doc["graded_at"]),
        started_at=doc.get("started_at"),
        late=bool(doc["late"]),
        percent=float(doc["percent"]),
        passed=bool(doc["passed"]),
        checks=tuple(doc["checks"]),
        host=doc.get("host"),
        flags=flags_of(doc.get("flags")),
        hints_used=_int_or_none(doc.get("hints_used")),
        # a document of a gpulab that did not say is taken as recorded, as it was then
        recorded=doc.get("recorded") is not False,
        not_recorded_because=(
            (str(doc.get("not_recorded_because") or "") or NO_START) if doc.get("recorded") is False else None
        ),
    )


NO_START = "no matching start"


@dataclass(frozen=True)
class UngradedRecord:
    """A candidate a grade run could not grade (gpulab.ungraded/1): the host was unreachable or its capture
    failed. Shown in the cohort report, never an attempt."""

    candidate: str
    lab_id: str
    at: str
    status: str  # "unreachable" or "failed"
    message: str
    host: str | None = None


def record_from_ungraded(doc: dict[str, Any]) -> UngradedRecord:
    """From a validated gpulab.ungraded/1 document."""
    return UngradedRecord(
        candidate=str(doc["candidate"]),
        lab_id=str(doc["lab"]),
        at=str(doc["at"]),
        status=str(doc["status"]),
        message=str(doc.get("message") or ""),
        host=doc.get("host"),
    )


@dataclass
class Inputs:
    results: list[dict[str, Any]] = field(default_factory=list)
    records: list[AttemptRecord] = field(default_factory=list)
    databases: list[Path] = field(default_factory=list)
    ungraded: list[UngradedRecord] = field(default_factory=list)


SQLITE_MAGIC = b"SQLite format 3\x00"


def read_inputs(paths: list[str]) -> Inputs:
    """Sort report inputs: results/grade JSON files, directories of them, attempts databases."""
    out = Inputs()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = gradebook_files(path)
            if not found:
                raise InputError(f"{path}: no .json results or grades in this directory")
            for p in found:
                _read_json(p, out, strict=False)
        elif path.is_file():
            with path.open("rb") as f:
                head = f.read(16)
            if head == SQLITE_MAGIC:
                out.databases.append(path)
            else:
                _read_json(path, out, strict=True)
        else:
            raise InputError(f"{path}: no such file or directory")
    return out


# A gradebook is DIR/<lab>/<candidate>/<entry>.json (a fleet's snapshots DIR/<host>/): far fewer levels and
# files than these bounds, which a folder must keep to be walked at all (checked while walking, one level at
# a time, so a folder 1,200 levels deep is refused at level 17, never a RecursionError).
MAX_FOLDER_DEPTH = 16
MAX_FOLDER_FILES = 200_000


def gradebook_files(root: Path) -> list[Path]:
    """The ``*.json`` files under ``root`` (``meta.json`` aside), sorted; links to folders are not followed.

    InputError (naming the folder and the bound) for folders nested more than :data:`MAX_FOLDER_DEPTH`
    levels or holding more than :data:`MAX_FOLDER_FILES` JSON files."""
    import os

    found: list[Path] = []
    pending: list[tuple[str, int]] = [(str(root), 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            raise InputError(f"{folder}: cannot read the folder: {exc.strerror or exc}") from None
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 > MAX_FOLDER_DEPTH:
                        raise InputError(
                            f"{entry.path}: folders nested more than {MAX_FOLDER_DEPTH} levels below {root}: "
                            "refused (a gradebook is DIR/<lab>/<candidate>/<grade>.json)"
                        )
                    pending.append((entry.path, depth + 1))
                elif entry.name.endswith(".json") and entry.name != "meta.json" and entry.is_file():
                    found.append(Path(entry.path))
            except OSError:
                continue  # gone, or a link to nothing: not an input
            if len(found) > MAX_FOLDER_FILES:
                raise InputError(f"{root}: more than {MAX_FOLDER_FILES:,} JSON files: refused")
    return sorted(found)


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused: parsing JSON makes millions of objects and no cycle, and the
    collector, run again and again as they are made, takes more than half the time of parsing a 60 MB
    results file."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _read_json(path: Path, out: Inputs, *, strict: bool) -> None:
    from assessor.content import MAX_DOCUMENT_BYTES, read_bytes

    try:
        # the size is checked before anything is read: a 1 GB file in a gradebook is one line of error
        data = read_bytes(path, limit=MAX_DOCUMENT_BYTES, what="a report input").decode("utf-8")
        with no_cycle_collection():
            doc = json.loads(data)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deep to be a gpulab document: refused") from None
    kind = kind_of(doc)
    if kind is None:
        if strict:
            raise InputError(f"{path}: not a gpulab results or grade document (no known `schema` key)")
        return  # a directory may hold other JSON files
    try:
        validate(doc, kind)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deep to be a gpulab document: refused") from None
    if kind == "results":
        out.results.append(doc)
    elif kind == "grade":
        out.records.append(record_from_grade(doc, str(path)))
    elif kind == "ungraded":
        out.ungraded.append(record_from_ungraded(doc))
    elif strict:
        raise InputError(f"{path}: a {SCHEMA_IDS[kind]} document is a report, not a report input")


def records_from_db(
    path: Path | None,
    candidates: list[str] | None = None,
    cohort: str | None = None,
    *,
    findings: list[str] | None = None,
) -> list[AttemptRecord]:
    """Attempt records from the attempts database: some candidates, one cohort (when the database knows
    cohorts), or everyone.

    ``findings``, when given, receives what the database tells of itself as a whole
    (:func:`database_findings`): report-level flags, since a row that is gone belongs to nobody's record."""
    from assessor.labs import attempts

    with attempts.opened(path) as conn:
        if findings is not None:
            findings += database_findings(conn, path)
        rows = attempts.attempts(conn)
        if cohort is not None:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(attempts)")}
            if "cohort" in columns:
                members = {
                    r[0] for r in conn.execute("SELECT DISTINCT candidate FROM attempts WHERE cohort = ?", (cohort,))
                }
                rows = [a for a in rows if a.candidate in members]
    if candidates:
        wanted = set(candidates)
        rows = [a for a in rows if a.candidate in wanted]
    return [record_from_attempt(a) for a in rows]


def database_findings(conn: Any, path: Path | None) -> list[str]:
    """The attempts database's whole-database findings (:func:`assessor.labs.attempts.head_findings`: rows
    missing at its end since gpulab last wrote it, an edited head record), each naming the database. Rows
    edited by hand are not here: each is a flag of its own attempt."""
    from assessor.labs import attempts

    where = path if path is not None else attempts.default_path()
    return [f"attempts database {where}: {why}" for why in attempts.head_findings(conn)]


def grade_document(grade_json: dict[str, Any]) -> dict[str, Any]:
    """A grade as printed by ``lab grade --json``, validated."""
    return validate(grade_json, "grade")


def progress_document(
    candidate: str,
    history: list[Any],
    levels: Any,
    passed: set[str],
    mismatches: dict[str, list[str]],
    *,
    labs: dict[str, dict[str, Any]] | None = None,
    flags: list[str] | None = None,
    study_plan: dict[str, Any] | None = None,
    readiness: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The gpulab.progress/1 document of ``gpulab progress --json``: ``labs`` is each lab's best score,
    time taken and hints used; ``flags`` says where the attempts database was edited by hand; ``study_plan``
    and ``readiness`` (``--exam``) as :mod:`assessor.labs.study_plan` and :mod:`assessor.labs.readiness` give
    them."""
    doc = {
        "schema": SCHEMA_IDS["progress"],
        "candidate": candidate,
        "attempts": [a.to_json() for a in history],
        "passed": sorted(passed),
        "levels": {
            d: {"level": v.level, "name": v.name, "explanation": v.explanation} for d, v in levels.domains.items()
        },
        "overall": {"level": levels.overall, "name": levels.overall_name, "explanation": levels.explanation},
        "weights": {d: round(float(w) * 100, 2) for d, w in levels.weights.items()},
        "rule": levels.rule,
        "machine_mismatches": mismatches,
        "labs": labs or {},
        "flags": list(flags or []),
    }
    if study_plan is not None:
        doc["study_plan"] = study_plan
    if readiness is not None:
        doc["readiness"] = readiness
    return validate(doc, "progress")
