"""Check results and the results document (schema ``gpulab.results/1``).

Exit codes of a run (``gpulab assess``): 0 every check passed or warned, 1 a check failed or
errored, 3 one or more hosts could not be assessed (with or without failures), 2 bad input
(raised before any result exists).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["pass", "warn", "fail", "skip", "error"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "skip", "error")
SCHEMA_ID = "gpulab.results/1"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 3


@dataclass
class Result:
    check: str
    status: Status
    message: str
    observed: Any = None
    expected: Any = None
    hint: str | None = None
    # the source lines that show the fault ("ibstat: CA 'mlx5_1' port 1: State: Down ..."), when a check quotes them
    evidence: list[str] | None = None
    duration_s: float | None = None  # capture time of the sources the check read (filled by the document)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "status": self.status, "message": self.message}
        for key in ("observed", "expected", "hint", "evidence", "duration_s"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass
class TargetResults:
    target: str
    host: str | None
    results: list[Result]
    error: str | None = None  # the whole target could not be assessed
    captured_at: str | None = None  # ISO 8601 UTC time of the capture
    timings: dict[str, float] = field(default_factory=dict)  # snapshot file -> seconds its command took
    notes: list[str] = field(default_factory=list)  # what could not be used, by name

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": self.target,
            "host": self.host,
            "results": [_with_duration(r, self.timings) for r in self.results],
        }
        if self.error is not None:
            out["error"] = self.error
        if self.notes:
            out["notes"] = list(self.notes)
        if self.captured_at is not None:
            out["captured_at"] = self.captured_at
        if self.timings:
            out["duration_s"] = round(sum(self.timings.values()), 3)
        out["summary"] = self.summary()
        return out

    def summary(self) -> dict[str, int]:
        """Results per status, with the total."""
        counts = Counter(r.status for r in self.results)
        return {**{s: counts.get(s, 0) for s in STATUSES}, "total": len(self.results)}

    @property
    def unreachable(self) -> bool:
        return self.error is not None

    @property
    def failed(self) -> bool:
        return self.error is not None or any(r.status in ("fail", "error") for r in self.results)


def _with_duration(result: Result, timings: dict[str, float]) -> dict[str, Any]:
    out = result.to_json()
    if result.duration_s is None and timings:
        spent = [timings[f] for f in source_files(result.check) if f in timings]
        if spent:
            out["duration_s"] = round(sum(spent), 3)
    return out


def source_files(check_id: str) -> tuple[str, ...]:
    """The snapshot files whose facts a check reads (its capture time is the check's duration)."""
    from assessor import checks
    from assessor.capture.sources import FILES
    from assessor.parsers import KINDS

    spec = checks.REGISTRY.get(check_id)
    if spec is None:
        return ()
    return tuple(f.file for f in FILES if set(KINDS[f.kind].fields) & set(spec.facts))


def summary(targets: list[TargetResults]) -> dict[str, int]:
    """Counts over a whole run: hosts, hosts unreachable, hosts failing, and results per status."""
    totals = Counter[str]()
    for t in targets:
        totals.update(t.summary())
    return {
        "hosts": len(targets),
        "unreachable": sum(1 for t in targets if t.unreachable),
        "failing_hosts": sum(1 for t in targets if not t.unreachable and t.failed),
        **{s: totals.get(s, 0) for s in STATUSES},
        "total": totals.get("total", 0),
    }


def document(targets: list[TargetResults], profile: str | None = None) -> dict[str, Any]:
    """The results document (``gpulab.results/1``) of a run."""
    doc: dict[str, Any] = {"schema": SCHEMA_ID}
    if profile is not None:
        doc["profile"] = profile
    doc["summary"] = summary(targets)
    doc["targets"] = [t.to_json() for t in targets]
    return doc


def exit_code(targets: list[TargetResults]) -> int:
    """3 when a host could not be assessed, else 1 when a check failed or errored, else 0."""
    if any(t.unreachable for t in targets):
        return EXIT_UNREACHABLE
    return EXIT_FAILED if any(t.failed for t in targets) else EXIT_OK


def exit_code_of(doc: dict[str, Any]) -> int:
    """:func:`exit_code` of a results document already built (or read back from a file)."""
    targets = doc.get("targets") or []
    if any(t.get("error") for t in targets):
        return EXIT_UNREACHABLE
    failing = any(r.get("status") in ("fail", "error") for t in targets for r in t.get("results") or [])
    return EXIT_FAILED if failing else EXIT_OK
