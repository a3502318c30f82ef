"""CSV of each report document (the csv module; every text cell neutralised for spreadsheets).

Cohort: the gradebook, one row per candidate (columns in docs/REPORTS.md). Candidate: one row per lab
attempted. Fleet: one row per host, one column per check.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from assessor.neutralise import csv_cell


def render(doc: dict[str, Any]) -> str:
    from assessor.reports.documents import kind_of

    kind = kind_of(doc)
    rows = {"cohort": gradebook, "candidate": candidate_rows, "fleet": fleet_rows, "results": _results_rows}[
        kind or "fleet"
    ](doc)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180, what spreadsheets and LMS imports expect
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return out.getvalue()


def gradebook(doc: dict[str, Any]) -> list[list[Any]]:
    """One row per candidate: levels, then best score / attempts / late / flags per lab."""
    domains = doc["domains"]
    labs = [lab["lab"] for lab in doc["labs"]]
    head = ["candidate", "overall_level", *(f"level_{d}" for d in domains), "labs_attempted", "labs_passed"]
    for lab in labs:
        head += [f"{lab}_best_percent", f"{lab}_attempts", f"{lab}_late", f"{lab}_flags"]
    head.append("flags")
    rows: list[list[Any]] = [head]
    for person in doc["candidates"]:
        cells = person["labs"]
        row: list[Any] = [
            person["candidate"],
            person["overall"],
            *(person["levels"].get(d, 0) for d in domains),
            len(cells),
            sum(1 for c in cells.values() if c["passed"]),
        ]
        for lab in labs:
            c = cells.get(lab)
            if c is None:
                row += [None, 0, None, None]
            else:
                row += [c["best"], c["attempts"], c["late"], "; ".join(c["flags"]) or None]
        row.append("; ".join(person["flags"]) or None)
        rows.append(row)
    return rows


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
            ]
        )
    return rows


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
