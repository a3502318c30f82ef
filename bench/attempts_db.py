"""An attempts database of a given size for the benchmarks: attempts recorded straight through
``assessor.labs.attempts`` (``insert_attempt`` in gpulab's own write ``transaction``, as ``record_attempt``
does, a hundred to a transaction so that 10,000 take seconds, not minutes), spread over candidates, labs,
scores, days and machines; seeded, so runs compare. The rows, their hash chain and the head record are
those `gpulab lab grade` would have written.

A benchmark that says "N attempts" calls :func:`fill` and then :func:`count`: the database holds what the
label claims, or the benchmark stops.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path
from typing import Any

T0 = dt.datetime(2026, 9, 1, 8, 0, tzinfo=dt.UTC)
BATCH = 100  # attempts a transaction


def candidate_name(i: int) -> str:
    return f"cand-{i:04d}"


def fill(db: Path, attempts_count: int, candidates: int, seed: int = 11) -> dict[str, int]:
    """Record ``attempts_count`` attempts of ``candidates`` candidates (round robin) in ``db``; how many each
    candidate has."""
    from assessor.labs import attempts
    from assessor.labs.loader import load_catalogue

    rnd = random.Random(seed)
    labs = [lab for lab in load_catalogue().labs if lab.checks]
    per: dict[str, int] = {}
    with attempts.opened(db) as conn:
        for first in range(0, attempts_count, BATCH):
            with attempts.transaction(conn):
                for i in range(first, min(attempts_count, first + BATCH)):
                    who = candidate_name(i % candidates)
                    attempts.insert_attempt(conn, **_attempt(rnd, labs[rnd.randrange(len(labs))], who))
                    per[who] = per.get(who, 0) + 1
    return per


def _attempt(rnd: random.Random, lab: Any, who: str) -> dict[str, Any]:
    """One graded attempt of ``lab`` by ``who``, as ``insert_attempt`` takes it."""
    from assessor.labs import attempts

    node = int(who.rsplit("-", 1)[1]) % 64  # a candidate works on one machine, as at a bootcamp
    started = T0 + dt.timedelta(days=rnd.randrange(90), minutes=rnd.randrange(600))
    minutes = rnd.uniform(0.3, 1.3) * lab.time_limit_min
    checks = []
    for c in lab.checks:
        ok = rnd.random() < 0.7
        checks.append(
            {
                "check": c.id,
                "role": "fix",
                "status": "pass" if ok else "fail",
                "message": "as expected" if ok else "not as expected",
                "points": c.points,
                "earned": c.points if ok else 0.0,
                "credit": 1.0 if ok else 0.0,
            }
        )
    earned = sum(float(x["earned"]) for x in checks)
    percent = round(100.0 * earned / lab.total_points, 2) if lab.total_points else 0.0
    return {
        "candidate": who,
        "lab_id": lab.id,
        "lab_domain": lab.domain,
        "lab_level": lab.level,
        "lab_hash": "bench",
        "target": f"mock:node{node:02d}.json",
        "identity": attempts.Identity(f"node{node:02d}", (f"16502210{node:05d}",), (f"GPU-{node:04x}",)),
        "graded_at": started + dt.timedelta(minutes=minutes),
        "started_at": started,
        "late": minutes > lab.time_limit_min,
        "percent": percent,
        "points": earned,
        "max_points": float(lab.total_points),
        "passed": percent >= lab.pass_percent,
        "checks": checks,
        "hints_used": rnd.randrange(3),
        "time_taken_s": int(minutes * 60),
    }


def count(db: Path, candidate: str | None = None) -> int:
    """The attempts rows in ``db`` (of one candidate), read with plain SQLite."""
    with sqlite3.connect(db) as conn:
        if candidate is None:
            return int(conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        return int(conn.execute("SELECT COUNT(*) FROM attempts WHERE candidate = ?", (candidate,)).fetchone()[0])


def require(db: Path, expected: int, candidate: str | None = None) -> None:
    """Stop the benchmark unless ``db`` holds ``expected`` attempts (of ``candidate``)."""
    found = count(db, candidate)
    if found != expected:
        who = f" of {candidate}" if candidate else ""
        raise SystemExit(f"{db}: holds {found} attempts{who}, the benchmark claims {expected}")
