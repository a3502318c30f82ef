"""Capture a node for grading, as `gpulab assess` does, and say which machine it is."""

from __future__ import annotations

from typing import Any

from assessor.facts import NodeFacts
from assessor.labs.attempts import Identity
from assessor.labs.model import Lab
from assessor.targets import TargetOptions
from assessor.targets.inventory import find_host


def capture_facts(
    lab: Lab,
    spec: str,
    *,
    timeout: float = 120.0,
    options: TargetOptions | None = None,
    inventory: str | None = None,
) -> NodeFacts:
    """Capture ``spec`` as `gpulab assess` does, with the active tests the lab's checks need.

    ``options`` are the SSH settings (key, known_hosts, new host keys); with ``inventory``, ``spec`` is one
    of its hosts, reached as the inventory says.
    """
    from assessor.capture import run as capture
    from assessor.labs.grading import active_tests
    from assessor.parsers.assemble import facts_from_snapshot
    from assessor.targets import open_target

    wanted = active_tests(lab)
    active: list[str] = []
    if "dcgm" in wanted:
        active.append(capture.dcgm_diag(lab.dcgm_level))
    target: Any
    if inventory is not None:
        host = find_host(inventory, spec)
        spec = host.target
        ssh = host.ssh if spec.startswith("ssh://") else None
        target = open_target(spec, options, name=host.name, ssh=ssh)
    else:
        target = open_target(spec, options)
    gpus: int | None = None
    if "nccl" in wanted and spec.startswith("mock:"):
        # NCCL_DEBUG=INFO so nccl.transport sees the network NCCL chose, as a candidate would run it
        target.env = {**target.env, "NCCL_DEBUG": "INFO"}
        gpus = len(target.session().read().gpus)
    if "nccl" in wanted and gpus is None:
        # other targets: learn the GPU count from a first capture, then run the test over every GPU
        first = facts_from_snapshot(target.snapshot(timeout=timeout, active=tuple(active)))
        gpus = len(first.gpus or ()) or 8
    if "nccl" in wanted:
        active.append(capture.nccl_test(max(gpus or 8, 1)))
    snap = target.snapshot(timeout=timeout, active=tuple(active))
    return facts_from_snapshot(snap)


def identity(facts: NodeFacts) -> Identity:
    """Which machine the facts came from: host, GPU serials and UUIDs."""
    gpus = facts.gpus or []
    return Identity(
        host=facts.host,
        serials=tuple(sorted(g.serial for g in gpus if g.serial)),
        uuids=tuple(sorted(g.uuid for g in gpus if g.uuid)),
    )
