"""The fleet readiness document (gpulab.fleet/1) from one or more results documents: host x check matrix,
failing hosts first, each failure with its evidence and hint, counts per check, unreachable hosts; and what a
readable report shows of it at any size (:func:`overview`: hosts grouped by failing check, the matrix and the
evidence up to a bound, the rest counted)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assessor.reports.documents import SCHEMA_IDS, validate

# A check's statuses, as assessor.checks.result.STATUSES and the results schema list them (a test holds the three
# together): importing that module would load every check, a third of a report command's start-up.
STATUSES = ("pass", "warn", "fail", "skip", "error")

_RANK = {"failing": 0, "warning": 1, "passing": 2}


def build(results: Sequence[dict[str, Any]], *, now: dt.datetime | None = None) -> dict[str, Any]:
    """The fleet document of every target in ``results`` (validated gpulab.results/1 documents), validated."""
    checks: dict[str, None] = {}
    targets = [t for doc in results for t in doc["targets"]]
    for t in targets:
        for r in t["results"]:
            checks.setdefault(r["check"], None)
    columns = list(checks)
    index = {c: i for i, c in enumerate(columns)}
    per_check = {c: dict.fromkeys(STATUSES, 0) for c in columns}
    hosts: list[dict[str, Any]] = []
    failing: dict[int, int] = {}  # id of a host -> its failed and erred checks, to sort by
    unreachable: list[dict[str, Any]] = []
    for t in targets:
        name = t.get("host") or t["target"]
        if t.get("error"):
            unreachable.append({"host": name, "target": t["target"], "error": t["error"]})
            continue
        cells = [""] * len(columns)
        failures = []
        bad = 0
        for r in t["results"]:
            status = r["status"]
            check = r["check"]
            cells[index[check]] = status
            per_check[check][status] += 1
            if status in ("fail", "error", "warn"):
                bad += status != "warn"
                failure: dict[str, Any] = {"check": check, "status": status, "message": r["message"]}
                for key in ("hint", "evidence", "observed", "expected"):
                    if r.get(key) is not None:
                        failure[key] = r[key]
                failures.append(failure)
        # failures before warnings, so the first line of a host is what to fix first
        failures.sort(key=lambda f: (f["status"] == "warn", index[f["check"]]))
        state = "failing" if bad else "warning" if failures else "passing"
        host = {"host": name, "target": t["target"], "state": state, "cells": cells, "failures": failures}
        if t.get("captured_at"):
            host["captured_at"] = t["captured_at"]
        failing[id(host)] = bad
        hosts.append(host)
    hosts.sort(key=lambda h: (_RANK[h["state"]], -failing[id(h)], h["host"]))
    summary: dict[str, int] = {
        "hosts": len(targets),
        "failing": sum(h["state"] == "failing" for h in hosts),
        "warning": sum(h["state"] == "warning" for h in hosts),
        "passing": sum(h["state"] == "passing" for h in hosts),
        "unreachable": len(unreachable),
        **{s: sum(c[s] for c in per_check.values()) for s in STATUSES},
    }
    doc = {
        "schema": SCHEMA_IDS["fleet"],
        "generated_at": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "profiles": sorted({str(d["profile"]) for d in results if d.get("profile")}),
        "summary": summary,
        "checks": columns,
        "hosts": hosts,
        "per_check": [{"check": c, **per_check[c]} for c in columns],
        "unreachable": unreachable,
    }
    return validate(doc, "fleet")


# What the HTML and Markdown reports show of a large fleet; the JSON and CSV reports always hold every host.
MATRIX_ROWS = 300  # hosts in the host x check matrix (failing and warning hosts come first)
EVIDENCE_HOSTS = 50  # hosts whose failures are shown with their evidence
GROUP_HOSTS = 20  # hosts named under each failing check
UNREACHABLE_ROWS = 50  # reasons hosts were unreachable (one row each, its hosts named up to GROUP_HOSTS)


@dataclass(frozen=True)
class Limits:
    """How much of a fleet a readable report shows: the rest is counted, and is in the JSON and CSV."""

    matrix_rows: int = MATRIX_ROWS
    evidence_hosts: int = EVIDENCE_HOSTS
    group_hosts: int = GROUP_HOSTS
    unreachable_rows: int = UNREACHABLE_ROWS


def overview(doc: dict[str, Any], limits: Limits = Limits()) -> dict[str, Any]:
    """What the HTML and Markdown reports show of a validated fleet document, whatever its size.

    ``groups``: one per check that failed, erred or warned anywhere, most hosts failing first, with its
    counts and the first hosts (their status and message, and the number of their evidence section when it
    is shown); ``matrix``: the first hosts of the matrix (failing and warning hosts first), each with the
    number of its evidence section when it is shown, and what is left out; ``evidence``: the first hosts
    with failures or warnings, shown with their evidence; ``unreachable``: the unreachable hosts by reason,
    most hosts first, each with its count and first hosts. Each ``..._more`` counts what is not shown.
    """
    hosts = doc["hosts"]
    flagged = [h for h in hosts if h["failures"]]  # failing, then warning hosts
    evidence = flagged[: limits.evidence_hosts]
    groups: dict[str, dict[str, Any]] = {}
    for number, h in enumerate(flagged, start=1):
        for f in h["failures"]:
            group = groups.get(f["check"])
            if group is None:
                group = groups[f["check"]] = {"check": f["check"], "fail": 0, "error": 0, "warn": 0, "hosts": []}
            group[f["status"]] += 1
            if len(group["hosts"]) < limits.group_hosts:
                group["hosts"].append(
                    {
                        "host": h["host"],
                        "status": f["status"],
                        "message": f["message"],
                        "anchor": number if number <= len(evidence) else None,
                    }
                )
    ordered = sorted(groups.values(), key=lambda g: (-(g["fail"] + g["error"]), -g["warn"], g["check"]))
    for group in ordered:
        group["more"] = group["fail"] + group["error"] + group["warn"] - len(group["hosts"])
    by_reason: dict[str, dict[str, Any]] = {}
    for u in doc["unreachable"]:
        reason = by_reason.setdefault(u["error"], {"error": u["error"], "count": 0, "hosts": []})
        reason["count"] += 1
        if len(reason["hosts"]) < limits.group_hosts:
            reason["hosts"].append({"host": u["host"], "target": u["target"]})
    reasons = sorted(by_reason.values(), key=lambda r: -r["count"])  # stable: first seen first among equals
    for reason in reasons:
        reason["more"] = reason["count"] - len(reason["hosts"])
    anchors = {id(h): number for number, h in enumerate(evidence, start=1)}
    matrix = [{"host": h, "anchor": anchors.get(id(h))} for h in hosts[: limits.matrix_rows]]
    left = hosts[limits.matrix_rows :]
    return {
        "groups": ordered,
        "matrix": matrix,
        "matrix_more": {
            "hosts": len(left),
            "flagged": sum(1 for h in left if h["failures"]),
            "passing": sum(1 for h in left if h["state"] == "passing"),
        },
        "evidence": evidence,
        "evidence_more": len(flagged) - len(evidence),
        "unreachable": reasons[: limits.unreachable_rows],
        "unreachable_more": sum(r["count"] for r in reasons[limits.unreachable_rows :]),
    }
