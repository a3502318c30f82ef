"""Attempts, grades and results for report tests, made from the shipped labs (ids, domains, levels, checks)."""

from __future__ import annotations

import datetime as dt
import json
from functools import cache
from pathlib import Path
from typing import Any

from assessor.labs import attempts
from assessor.labs.loader import load_catalogue

T0 = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)


@cache
def lab(lab_id: str) -> Any:
    return load_catalogue().get(lab_id)


def scores(lab_id: str, failing: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """The check scores of an attempt: the checks at these 1-based positions failed, the others passed."""
    out = []
    for position, check in enumerate(lab(lab_id).checks, 1):
        bad = position in failing
        out.append(
            {
                "check": check.id,
                "status": "fail" if bad else "pass",
                "message": f"{check.id} {'is off' if bad else 'is fine'}",
                "points": check.points,
                "earned": 0.0 if bad else check.points,
                "credit": 0.0 if bad else 1.0,
                "hint": check.hint,
                "observed": {"busbw": 120.5} if bad else {"busbw": 470.0},
                "expected": ">= 450 GB/s",
            }
        )
    return out


def add(
    conn: Any,
    candidate: str,
    lab_id: str,
    *,
    day: int = 0,
    failing: tuple[int, ...] = (),
    minutes: float = 10,
    late: bool = False,
    machine: str = "m1",
    host: str = "node01",
) -> None:
    """Record one attempt at ``lab_id``, graded ``minutes`` after its start on day ``day``."""
    x = lab(lab_id)
    checks = scores(lab_id, failing)
    points = sum(c["earned"] for c in checks)
    percent = round(100 * points / x.total_points, 2)
    started = T0 + dt.timedelta(days=day)
    attempts.record_attempt(
        conn,
        candidate=candidate,
        lab_id=lab_id,
        lab_domain=x.domain,
        lab_level=x.level,
        lab_hash=x.digest,
        target="mock:node.json",
        identity=attempts.Identity(host=host, serials=(machine,)),
        graded_at=started + dt.timedelta(minutes=minutes),
        started_at=started,
        late=late,
        percent=percent,
        points=points,
        max_points=x.total_points,
        passed=percent >= x.pass_percent,
        checks=checks,
    )


def grade_doc(candidate: str, lab_id: str, *, failing: tuple[int, ...] = (), **extra: Any) -> dict[str, Any]:
    """A gpulab.grade/1 document as `lab grade --json` prints it."""
    x = lab(lab_id)
    checks = scores(lab_id, failing)
    points = sum(c["earned"] for c in checks)
    percent = round(100 * points / x.total_points, 2)
    return {
        "schema": "gpulab.grade/1",
        "lab": lab_id,
        "candidate": candidate,
        "target": "mock:node.json",
        "host": "node01",
        "graded_at": (T0 + dt.timedelta(minutes=25)).isoformat(),
        "started_at": T0.isoformat(),
        "elapsed_min": 25.0,
        "time_limit_min": x.time_limit_min,
        "late": False,
        "points": points,
        "max_points": x.total_points,
        "percent": percent,
        "pass_percent": x.pass_percent,
        "passed": percent >= x.pass_percent,
        "checks": checks,
        **extra,
    }


def write_json(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def ada_db(path: Path) -> Path:
    """Ada: drivers to level 2 (three of its four level-2 labs), health-101 passed then failed on another
    machine, ib-201 passed late, ib-202 and ib-203 passed (infiniband level 2: three of its four level-2 labs),
    mig-101 failed; Bob: mig-201 failing its second mig.mode twice."""
    with attempts.opened(path) as conn:
        for lab_id in ("drv-101", "drv-201", "drv-202", "drv-203"):
            add(conn, "ada", lab_id)
        add(conn, "ada", "health-101", day=1, minutes=12)
        add(conn, "ada", "health-101", day=2, failing=(1, 2, 3), machine="m2", host="node02")
        add(conn, "ada", "ib-201", day=3, minutes=45, late=True)
        add(conn, "ada", "ib-202", day=3, minutes=20)
        add(conn, "ada", "ib-203", day=3, minutes=25)
        add(conn, "ada", "mig-101", day=3, failing=(1, 2))
        add(conn, "bob", "mig-201", day=1, failing=(2,))
        add(conn, "bob", "mig-201", day=2, failing=(2,))
        add(conn, "bob", "drv-101", day=2)
    return path
