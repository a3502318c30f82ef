"""One run of a mode: assess the node's fast checks within the deadline, then drain, resume or leave it."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assessor.assess.profiles import Profile
from assessor.checks.result import Result, TargetResults
from assessor.slurm import reason
from assessor.slurm.hook import Action, Mode, act, exit_code
from assessor.slurm.reason import Finding
from assessor.slurm.scontrol import Scontrol, check_node_name
from assessor.targets import Target


@dataclass(frozen=True)
class Report:
    mode: Mode
    node: str
    finding: Finding
    action: Action | None  # None when the node's state was not looked at (bad input before a node name)
    exit_code: int
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """What gpulab prints: the outcome first (slurmd logs a failed health check's output), then each check
        that did not pass. Node output in it is already made visible (:func:`assessor.slurm.reason.clean`)."""
        outcome = self.action.message if self.action else self.finding.reason
        head = f"gpulab slurm {self.mode} on {self.node}: {outcome} ({self.seconds:.1f}s)"
        return [head, *(f"  {line}" for line in self.finding.lines)]


def node_name(given: str | None, env: Mapping[str, str]) -> str:
    """The Slurm node this runs on: ``--node``, else ``SLURMD_NODENAME`` (slurmd sets it for the
    HealthCheckProgram, Prolog and Epilog), else the short host name (``hostname -s``)."""
    name = given or env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    return check_node_name(name)


def _answer(target: TargetResults) -> dict[str, Any]:
    return {
        "host": target.host,
        "error": target.error,
        "results": [{"check": r.check, "status": r.status, "message": r.message} for r in target.results],
    }


def _results(spec: str, answer: dict[str, Any]) -> TargetResults:
    results = [Result(str(r["check"]), r["status"], str(r["message"])) for r in answer.get("results") or []]
    return TargetResults(spec, answer.get("host"), results, error=answer.get("error"))


def assess_within(target: Target, profile: Profile, *, timeout: float, deadline: float) -> Finding:
    """The finding on ``target`` for ``profile``, or a stalled one when no verdict came within ``deadline``."""
    from assessor.slurm.deadline import call_within

    def work() -> dict[str, Any]:
        from assessor.assess.pipeline import Job, assess_one

        return _answer(assess_one(Job(target.spec, target), profile, timeout=timeout))

    bounded = call_within(work, deadline)
    if bounded.stalled:
        return reason.stalled(deadline)
    if bounded.error is not None:
        return reason.broken(bounded.error)
    return reason.finding(_results(target.spec, bounded.value or {}))


def respond(mode: Mode, node: str, finding: Finding, scontrol: Scontrol, seconds: float = 0.0) -> Report:
    """Drain, resume or leave the node for ``finding``, and the exit code of ``mode``."""
    action = act(scontrol, node, finding)
    return Report(mode, node, finding, action, exit_code(mode, finding, action), seconds)
