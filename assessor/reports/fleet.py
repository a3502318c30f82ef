"""The fleet readiness document (gpulab.fleet/1) from one or more results documents: host x check matrix,
failing hosts first, each failure with its evidence and hint, counts per check, unreachable hosts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from assessor.checks.result import STATUSES
from assessor.reports.documents import SCHEMA_IDS, validate

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
    unreachable: list[dict[str, Any]] = []
    for t in targets:
        name = t.get("host") or t["target"]
        if t.get("error"):
            unreachable.append({"host": name, "target": t["target"], "error": t["error"]})
            continue
        cells = [""] * len(columns)
        failures = []
        for r in t["results"]:
            status = r["status"]
            cells[index[r["check"]]] = status
            per_check[r["check"]][status] += 1
            if status in ("fail", "error", "warn"):
                failure: dict[str, Any] = {"check": r["check"], "status": status, "message": r["message"]}
                for key in ("hint", "evidence", "observed", "expected"):
                    if r.get(key) is not None:
                        failure[key] = r[key]
                failures.append(failure)
        # failures before warnings, so the first line of a host is what to fix first
        failures.sort(key=lambda f: (f["status"] == "warn", index[f["check"]]))
        state = "failing" if any(c in ("fail", "error") for c in cells) else "warning" if "warn" in cells else "passing"
        host = {"host": name, "target": t["target"], "state": state, "cells": cells, "failures": failures}
        if t.get("captured_at"):
            host["captured_at"] = t["captured_at"]
        hosts.append(host)
    hosts.sort(key=lambda h: (_RANK[h["state"]], -sum(c in ("fail", "error") for c in h["cells"]), h["host"]))
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
