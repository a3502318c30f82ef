"""One recorded attempt of ib-301 on node01, as ``attempts.record_attempt`` takes it: for tests of the
attempts database and of what reports say about it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from assessor.labs import attempts

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
NODE = attempts.Identity("node01", ("1650221000001",), ("GPU-aaaa",))


def attempt_fields(
    *, candidate: str = "ana", percent: float = 100.0, minutes: int = 0, note: str = ""
) -> dict[str, Any]:
    """An attempt graded ``minutes`` after T0 that earned ``percent`` of its one check."""
    return {
        "candidate": candidate,
        "lab_id": "ib-301",
        "lab_domain": "infiniband",
        "lab_level": 3,
        "lab_hash": "h",
        "target": "mock:node.json",
        "identity": NODE,
        "graded_at": T0 + dt.timedelta(minutes=minutes),
        "started_at": T0,
        "late": False,
        "percent": percent,
        "points": percent,
        "max_points": 100.0,
        "passed": percent >= 100.0,
        "checks": [
            {
                "check": "ib.ports_active",
                "role": "fix",
                "status": "pass" if percent >= 100.0 else "fail",
                "message": "all ports active" if percent >= 100.0 else "ports down",
                "points": 100.0,
                "earned": percent,
                "credit": percent / 100.0,
                "note": note,
            }
        ],
        "hints_used": 0,
        "time_taken_s": 60 * minutes,
    }
