"""The check framework: specs, parameters, the registry, and missing-fact handling.

A check is a pure function ``(facts, params) -> Result``. It reads facts through
:func:`need`, which turns an absent fact into ``skip`` and a broken one into ``error``;
the runner does that conversion, so no check can fold missing data into ``pass``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assessor.facts import NodeFacts
from assessor.results import Result, Status

CheckFunc = Callable[[NodeFacts, dict[str, Any]], Result]


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # int, float, str, bool, list, dict, or alternatives such as "list|dict"
    default: Any
    doc: str


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    facts: tuple[str, ...]  # NodeFacts fields it reads
    params: tuple[Param, ...]
    doc: str  # what it verifies and why
    remedy: str  # what to do when it fails
    func: CheckFunc = field(compare=False)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


class MissingFacts(Exception):
    """The snapshot did not hold what the check needs: the result is ``skip``."""


class BrokenFacts(Exception):
    """The source of a needed fact failed to capture or parse: the result is ``error``."""


REGISTRY: dict[str, CheckSpec] = {}

# Human words for each facts field: what to capture to get it.
FACT_SOURCES: dict[str, str] = {
    "driver": "driver-version.txt or nvidia-smi output",
    "gpus": "nvml.json, nvidia-smi-q.xml (nvidia-smi -q -x) or nvidia-smi-q.txt (nvidia-smi -q)",
    "mig_instances": "nvidia-smi-mig-lgi.txt (nvidia-smi mig -lgi) or nvml.json",
    "mig_profiles": "nvidia-smi-mig-lgip.txt (nvidia-smi mig -lgip)",
    "mig_devices": "nvidia-smi.txt (the default nvidia-smi table)",
    "gpu_processes": "nvidia-smi.txt (the default nvidia-smi table)",
    "nvlink_status": "nvidia-smi-nvlink.txt (nvidia-smi nvlink -s)",
    "topology": "nvidia-smi-topo.txt (nvidia-smi topo -m)",
    "ib_ports": "ibstat.txt (ibstat) or ibv_devinfo.txt",
    "ib_devices": "ibv_devinfo.txt (ibv_devinfo)",
    "modules": "lsmod.txt (lsmod)",
    "services": "services.txt (systemctl show of the NVIDIA services) or systemctl-status.txt",
    "kernel_events": "dmesg.txt (dmesg or journalctl -k)",
    "nccl": "nccl-tests.txt (an nccl-tests run such as all_reduce_perf)",
    "ib_write_bw": "ib_write_bw.txt (perftest ib_write_bw, client side)",
    "dcgm_diag": "dcgmi-diag.txt (dcgmi diag -r N)",
    "os_release": "os-release.txt",
    "uname": "uname.txt",
}


def check(
    id: str,
    *,
    title: str,
    facts: tuple[str, ...],
    doc: str,
    remedy: str,
    params: tuple[Param, ...] = (),
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check function under a stable id."""

    def register(func: CheckFunc) -> CheckFunc:
        if id in REGISTRY:
            raise ValueError(f"check {id} registered twice")
        REGISTRY[id] = CheckSpec(id, title, facts, params, doc, remedy, func)
        return func

    return register


def need(facts: NodeFacts, name: str) -> Any:
    """The value of a facts field, or raise MissingFacts / BrokenFacts with a reason."""
    value = getattr(facts, name)
    if value is not None:
        return value
    problem = facts.problems.get(name)
    if problem:
        raise BrokenFacts(problem)
    raise MissingFacts(f"no {name.replace('_', ' ')} facts: the snapshot lacks {FACT_SOURCES.get(name, name)}")


def result(
    spec_id: str,
    status: Status,
    message: str,
    *,
    observed: Any = None,
    expected: Any = None,
    hint: str | None = None,
) -> Result:
    return Result(spec_id, status, message, observed=observed, expected=expected, hint=hint)


def run_check(spec: CheckSpec, facts: NodeFacts, params: dict[str, Any]) -> Result:
    """Run one check; never raises. Missing facts skip, broken ones and bugs error."""
    merged = {p.name: p.default for p in spec.params}
    merged.update(params)
    try:
        return spec.func(facts, merged)
    except MissingFacts as exc:
        return Result(spec.id, "skip", str(exc))
    except BrokenFacts as exc:
        return Result(
            spec.id, "error", str(exc), hint="recapture the source named above and check the tool runs on the node"
        )
    except Exception as exc:  # a check bug must not end the run
        return Result(spec.id, "error", f"internal error in check {spec.id}: {type(exc).__name__}: {exc}")
