"""Check results and the results document (schema ``gpulab.results/1``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["pass", "warn", "fail", "skip", "error"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "skip", "error")
SCHEMA_ID = "gpulab.results/1"


@dataclass
class Result:
    check: str
    status: Status
    message: str
    observed: Any = None
    expected: Any = None
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "status": self.status, "message": self.message}
        for key in ("observed", "expected", "hint"):
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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": self.target,
            "host": self.host,
            "results": [r.to_json() for r in self.results],
        }
        if self.error is not None:
            out["error"] = self.error
        return out

    @property
    def failed(self) -> bool:
        return self.error is not None or any(r.status in ("fail", "error") for r in self.results)


def document(targets: list[TargetResults], profile: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema": SCHEMA_ID}
    if profile is not None:
        doc["profile"] = profile
    doc["targets"] = [t.to_json() for t in targets]
    return doc


def exit_code(targets: list[TargetResults]) -> int:
    """0 when nothing failed or errored, 1 when something did."""
    return 1 if any(t.failed for t in targets) else 0
