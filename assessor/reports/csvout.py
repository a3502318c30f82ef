"""CSV of each report document (the csv module; every text cell neutralised for spreadsheets).

Cohort: the gradebook, one row per candidate (columns in docs/REPORTS.md), or with ``lms`` the layout an
LMS's grade import reads (:data:`LMS`: Canvas, Moodle). Candidate: one row per lab attempted, its best attempt's
checks in words in the last column. Fleet: one row
per host, one column per check.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from assessor.neutralise import csv_cell

# The identity columns each LMS's gradebook import reads, in its order, and the identity key each shows
# (docs/REPORTS.md cites the documentation). Then one column per lab: the best score in percent that counts.
LMS: dict[str, tuple[tuple[str, str], ...]] = {
    # Canvas's gradebook CSV: the columns of its own gradebook export
    "canvas": (
        ("Student", "name"),
        ("ID", "lms_id"),
        ("SIS User ID", "sis_id"),
        ("SIS Login ID", "login"),
        ("Section", "section"),
    ),
    # Moodle's CSV grade import maps a user by a column the teacher picks: e-mail, username or ID number
    "moodle": (("Full name", "name"), ("Email address", "email"), ("Username", "login"), ("ID number", "sis_id")),
}
# What each LMS can match a row to a person by (the name column only shows who it is, except in Canvas).
MATCHED_BY = {"canvas": ("lms_id", "sis_id", "login", "name"), "moodle": ("email", "login", "sis_id")}


def render(doc: dict[str, Any], *, lms: str | None = None) -> str:
    from assessor.reports.documents import kind_of

    kind = kind_of(doc)
    if lms is not None:
        rows = lms_rows(doc, lms)
    else:
        rows = {"cohort": gradebook, "candidate": candidate_rows, "fleet": fleet_rows, "results": _results_rows}[
            kind or "fleet"
        ](doc)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180, what spreadsheets and LMS imports expect
    cells: dict[str, Any] = {}  # each text made safe once: a fleet's statuses repeat on every host
    for row in rows:
        writer.writerow([_cell(v, cells) for v in row])
    return out.getvalue()


def _cell(value: Any, cells: dict[str, Any]) -> Any:
    if type(value) is not str:
        return csv_cell(value)
    found = cells.get(value)
    if found is None:
        found = cells[value] = csv_cell(value)
    return found


def status_text(cell: dict[str, Any]) -> str:
    """A cell's status with why: ``passed``, ``flagged: reference solution applied ...``, ``unreachable: ...``."""
    return f"{cell['status']}: {cell['why']}" if cell.get("why") else str(cell["status"])


def gradebook(doc: dict[str, Any]) -> list[list[Any]]:
    """One row per candidate: levels, then per lab the best score that counts, passed, attempts, late, status
    (what counts, or why nothing does) and flags."""
    domains = doc["domains"]
    labs = [lab["lab"] for lab in doc["labs"]]
    head = ["candidate", "overall_level", *(f"level_{d}" for d in domains), "labs_attempted", "labs_passed"]
    for lab in labs:
        head += [
            f"{lab}_best_percent",
            f"{lab}_passed",
            f"{lab}_attempts",
            f"{lab}_late",
            f"{lab}_status",
            f"{lab}_flags",
        ]
    head.append("flags")
    rows: list[list[Any]] = [head]
    for person in doc["candidates"]:
        cells = person["labs"]
        row: list[Any] = [
            person["candidate"],
            person["overall"],
            *(person["levels"].get(d, 0) for d in domains),
            sum(1 for c in cells.values() if c["attempts"] or c["not_recorded"]),
            sum(1 for c in cells.values() if c["passed"]),
        ]
        for lab in labs:
            c = cells.get(lab)
            if c is None:
                row += [None, None, 0, None, None, None]
            else:
                row += [
                    c["best"],
                    c["passed"],
                    c["attempts"],
                    c["late"],
                    status_text(c),
                    "; ".join(c["flags"]) or None,
                ]
        row.append("; ".join(person["flags"]) or None)
        rows.append(row)
    return with_database_flags(doc, rows)


def with_database_flags(doc: dict[str, Any], rows: list[list[Any]]) -> list[list[Any]]:
    """The report-level flags of the attempts database (rows missing at its end: ``database_flags``) as a last
    column, ``database_flags``, the same in every row, so no row read on its own hides them; added only when
    there are some, and no comment line or extra header an import would choke on. With no row to carry them, one
    row holds them alone, its other cells empty. (The ``--lms`` layouts carry no column an LMS does not know:
    `gpulab report` warns on the terminal instead, docs/REPORTS.md.)"""
    flags = doc.get("database_flags") or []
    if not flags:
        return rows
    text = "; ".join(flags)
    head, body = rows[0], rows[1:] or [[None] * len(rows[0])]
    return [[*head, "database_flags"], *([*row, text] for row in body)]


def lms_rows(doc: dict[str, Any], lms: str) -> list[list[Any]]:
    """The cohort gradebook in an LMS's import layout (:data:`LMS`): the identity columns, from the candidates
    file (the name falls back to the candidate's gpulab name), then one column per lab with the best score in
    percent that counts (empty when none counts: not attempted, flagged, not recorded, unreachable)."""
    from assessor.errors import InputError

    if lms not in LMS:
        raise InputError(f"unknown LMS {lms!r} (layouts: {', '.join(LMS)})")
    labs = [lab["lab"] for lab in doc["labs"]]
    rows: list[list[Any]] = [[column for column, _ in LMS[lms]] + labs]
    for person in doc["candidates"]:
        who = {"name": person["candidate"], **person.get("identity", {})}
        row: list[Any] = [who.get(key) for _, key in LMS[lms]]
        for lab in labs:
            c = person["labs"].get(lab)
            row.append(c["best"] if c else None)
        rows.append(row)
    return rows


def unmatched(doc: dict[str, Any], lms: str) -> list[str]:
    """Candidates an LMS cannot match to a person: none of the identities it matches by was given."""
    return [p["candidate"] for p in doc["candidates"] if not any(p.get("identity", {}).get(k) for k in MATCHED_BY[lms])]


def candidate_rows(doc: dict[str, Any]) -> list[list[Any]]:
    head = [
        "candidate",
        "lab",
        "title",
        "domain",
        "level",
        "attempts",
        "passed",
        "best_percent",
        "latest_percent",
        "best_late",
        "time_taken_min",
        "hints_used",
        "flags",
        "best_checks",
    ]
    rows: list[list[Any]] = [head]
    for lab in doc["labs"]:
        rows.append(
            [
                doc["candidate"],
                lab["lab"],
                lab["title"],
                lab["domain"],
                lab["level"],
                lab["attempts"],
                lab["passed"],
                lab["best"]["percent"],
                lab["latest"]["percent"],
                lab["best"]["late"],
                lab["best"]["elapsed_min"],
                lab["hints_used"],
                "; ".join(lab["flags"]) or None,
                checks_in_words(lab["best"]["checks"]),
            ]
        )
    if len(rows) == 1 and doc.get("database_flags"):
        rows.append([doc["candidate"], *([None] * (len(head) - 1))])  # no lab row: the flags still show
    return with_database_flags(doc, rows)


def checks_in_words(checks: list[dict[str, Any]]) -> str | None:
    """A candidate's checks of one attempt in one cell: each check's label, result, and what it observed and
    expected in words (the report document already holds them in words), the checks parted by " | "."""
    parts = []
    for c in checks:
        text = f"{c.get('label', c['check'])}: {c['status']}"
        said = [f"{key} {c[key]}" for key in ("observed", "expected") if c.get(key)]
        parts.append(text + (f" ({'; '.join(said)})" if said else ""))
    return " | ".join(parts) or None


def fleet_rows(doc: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = [["host", "target", "state", "failures", *doc["checks"], "error"]]
    for h in doc["hosts"]:
        failing = sum(1 for c in h["cells"] if c in ("fail", "error"))
        rows.append([h["host"], h["target"], h["state"], failing, *h["cells"], None])
    for u in doc["unreachable"]:
        rows.append([u["host"], u["target"], "unreachable", None, *([None] * len(doc["checks"])), u["error"]])
    return rows


def _results_rows(doc: dict[str, Any]) -> list[list[Any]]:
    from assessor.reports import fleet

    return fleet_rows(fleet.build([doc]))
