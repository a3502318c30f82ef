"""``gpulab report``'s library side: from inputs to a validated document, and from there to a file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.errors import InputError

KINDS = ("candidate", "cohort", "fleet")


@dataclass
class Report:
    kind: str
    document: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)  # what a fleet report was made from (JUnit)


def make(
    kind: str,
    inputs: list[str],
    *,
    candidates: list[str] | None = None,
    cohort: str | None = None,
    db: str | None = None,
    identities: dict[str, dict[str, str]] | None = None,
    exam: str | None = None,
) -> Report:
    """Read the inputs and build the report document of ``kind``.

    ``inputs``: results or grade JSON files, directories of them (gradebooks), attempts databases. With no
    input, candidate and cohort reports read the default attempts database (or ``db``). ``identities``: who
    each candidate is in the school's systems (:func:`read_candidates`), for a cohort's LMS import. ``exam``: a
    candidate report's readiness for that exam (as `gpulab progress --exam`), from the labs and the submitted
    sittings of it kept beside the attempts databases read (grade files alone bring none).
    """
    from assessor.reports import documents

    # reading, validating and building make millions of objects and no cycle: the collector waits
    with documents.no_cycle_collection():
        return _make(kind, inputs, candidates=candidates, cohort=cohort, db=db, identities=identities, exam=exam)


def _make(
    kind: str,
    inputs: list[str],
    *,
    candidates: list[str] | None,
    cohort: str | None,
    db: str | None,
    identities: dict[str, dict[str, str]] | None,
    exam: str | None,
) -> Report:
    from assessor.reports import documents

    if kind not in KINDS:
        raise InputError(f"unknown report {kind!r} (reports: {', '.join(KINDS)})")
    if exam is not None and kind != "candidate":
        raise InputError(f"--exam is for the candidate report (readiness for an exam), not a {kind} report")
    read = documents.read_inputs(inputs)
    if kind == "fleet":
        if read.records or read.databases or read.ungraded:
            raise InputError("a fleet report reads results documents (`gpulab assess --json FILE`), not grades")
        if not read.results:
            raise InputError("a fleet report needs results: gpulab report fleet RESULTS.json|DIR ...")
        from assessor.reports import fleet

        return Report(kind, fleet.build(read.results), read.results)
    if read.results:
        raise InputError(f"a {kind} report reads grades or the attempts database, not check results")
    records = list(read.records)
    databases: list[Path | None] = list(read.databases)
    if db is not None:
        databases.append(Path(db))
    if not inputs and db is None:
        databases.append(None)  # the default attempts database
    findings: list[str] = []  # the databases' own flags: rows missing, an edited head record (report-level)
    for path in databases:
        records += documents.records_from_db(path, candidates, cohort, findings=findings)
    if candidates:  # grade files may hold other people too
        records = [r for r in records if r.candidate in set(candidates)]
    from assessor.labs import levels
    from assessor.labs.loader import load_catalogue

    catalogue = load_catalogue()
    rules = levels.load_rules(catalogue.root)
    if kind == "candidate":
        names = sorted({r.candidate for r in records})
        who = candidates[0] if candidates else (names[0] if len(names) == 1 else None)
        if who is None:
            raise InputError(
                "a candidate report is about one person: give --candidate NAME"
                + (f" (these inputs hold {', '.join(names[:5])}{' ...' if len(names) > 5 else ''})" if names else "")
            )
        if candidates and len(candidates) > 1:
            raise InputError(
                "a candidate report is about one person: give --candidate once (a cohort report takes several)"
            )
        from assessor.labs.exam_session import domain_scores
        from assessor.reports import candidate

        # the exam sessions kept beside each attempts database read, as `gpulab progress --exam` reads them
        sessions = [s for path in dict.fromkeys(databases) for s in domain_scores(who, exam, path)] if exam else []
        return Report(
            kind,
            candidate.build(who, records, catalogue, rules, database_flags=findings, exam=exam, sessions=sessions),
        )
    from assessor.reports import cohort as cohort_report

    name = cohort or "cohort"
    doc = cohort_report.build(
        name,
        records,
        catalogue,
        rules,
        candidates=candidates,
        ungraded=read.ungraded,
        identities=identities,
        database_flags=findings,
    )
    return Report(kind, doc)


def write(report: Report, fmt: str, out: str | None, *, lms: str | None = None) -> str:
    """Render the report in ``fmt`` (a cohort CSV in an LMS's layout with ``lms``); write it to ``out``
    (returned) or return the text when ``out`` is None."""
    from assessor.reports import render
    from assessor.reports.documents import no_cycle_collection

    with no_cycle_collection():
        # make() validated the document as it built it (and each input as it read it): not again here
        text = render.render(report.document, fmt, results=report.results, lms=lms, validated=True)
    if out is None:
        return text
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return str(path)


def format_for(out: str | None) -> str:
    """The format an output file's suffix asks for (``.md``, ``.csv``, ``.xml``, ``.json``), else html."""
    suffix = Path(out).suffix.lower() if out else ""
    return {".md": "md", ".markdown": "md", ".csv": "csv", ".xml": "junit", ".json": "json"}.get(suffix, "html")


ROSTER_SUFFIXES = (".csv", ".yaml", ".yml")


def read_candidates(path: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The candidates of a cohort and who each is: a cohort's candidates file (``.csv``, ``.yaml``, ``.yml``;
    :mod:`assessor.labs.roster`, with optional e-mail, login, SIS id, section, name and LMS id), or a plain
    list, one name per line (blank lines and # comments ignored)."""
    if Path(path).suffix.lower() in ROSTER_SUFFIXES:
        from assessor.labs import roster

        members = roster.read(path)
        return [m.candidate for m in members], {m.candidate: m.identity for m in members if m.identity}
    from assessor.content import MAX_YAML_BYTES, read_text

    try:
        lines = read_text(path, limit=MAX_YAML_BYTES, what="a candidates file").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")], {}
