"""nvbandwidth checks: every GPU's copies to and from host memory against the reference of its PCIe link."""

from __future__ import annotations

from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import Param, check, need, result
from assessor.checks.common import join_limited, label_for_index
from assessor.checks.hpl import family_reference
from assessor.checks.result import Result
from assessor.facts import NodeFacts, NvbandwidthRun, NvbandwidthTest

HOST_DEVICE = ("host_to_device_memcpy", "device_to_host_memcpy")


def host_device_tests(run: NvbandwidthRun) -> list[NvbandwidthTest]:
    """The one-direction host<->device tests of a run (CE or SM; bidirectional ones measure something else)."""
    return [t for t in run.tests if t.name and t.name.startswith(HOST_DEVICE) and "bidirectional" not in t.name]


@check(
    "nvbandwidth.host_device",
    title="Host-device copy bandwidth per GPU",
    facts=("nvbandwidth", "gpus"),
    params=(
        Param(
            "min_gbps",
            "float",
            ref.AUTO,
            "lowest acceptable copy bandwidth of each GPU, GB/s one way ('auto': A100 23 on Gen4 x16, H100 and "
            "H200 48 on Gen5 x16)",
        ),
    ),
    doc=(
        "Reads nvbandwidth's host_to_device and device_to_host tests (copy engine or SM) and compares each GPU's "
        "column with the reference for its PCIe link. A GPU at half the others' figure has a link trained at "
        "half its lanes or a generation down: a seating, riser or slot problem that no software setting fixes."
    ),
    remedy=(
        "Read the GPU's link (nvidia-smi -q -d PCIE: Link Width and Generation, current against max, under load; "
        "lspci -vv LnkSta) and the kernel's 'limited by ... PCIe' line; a link that trains narrow is a case for "
        "the data centre (reseat the GPU)."
    ),
)
def nvbandwidth_host_device(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: NvbandwidthRun = need(facts, "nvbandwidth")
    tests = host_device_tests(run)
    broken = [t for t in run.tests if t.error and t.name and t.name.startswith(HOST_DEVICE)]
    measured = [t for t in tests if t.rows]
    if not measured:
        if broken:
            return result(
                "nvbandwidth.host_device",
                "error",
                f"{broken[0].name} stopped: {broken[0].error}",
                hint="a copy that fails its data check is a fault of its own: run dcgmi diag -r 2",
            )
        return result(
            "nvbandwidth.host_device",
            "skip",
            "the nvbandwidth output holds no host_to_device or device_to_host result",
            hint="run nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce",
        )
    wanted = params.get("min_gbps", ref.AUTO)
    minimum = (
        family_reference(facts, ref.NVBANDWIDTH_HOST_DEVICE_GBPS, "min_gbps", run.devices)
        if wanted in (None, ref.AUTO)
        else float(wanted)
    )
    slow: list[str] = []
    observed: dict[str, dict[str, float]] = {}
    for test in measured:
        per_gpu = test.per_column()
        observed[str(test.name)] = {str(k): v for k, v in sorted(per_gpu.items())}
        for index, value in sorted(per_gpu.items()):
            if value < minimum:
                slow.append(f"{label_for_index(index, facts.gpus)}: {value:g} GB/s in {test.name}")
    expected = f">= {minimum:g} GB/s per GPU"
    if slow:
        return result(
            "nvbandwidth.host_device",
            "fail",
            join_limited(slow) + f" (expected {expected})",
            observed=observed,
            expected=expected,
            hint="a GPU at about half the others' figure trained its PCIe link narrow or a generation down: read "
            "nvidia-smi -q -d PCIE for that GPU and the kernel log's 'limited by' line",
        )
    gpus = len({i for t in measured for i in t.per_column()})
    names = ", ".join(str(t.name) for t in measured)
    return result(
        "nvbandwidth.host_device",
        "pass",
        f"{gpus} GPU(s) at {expected} in {names}",
        observed=observed,
        expected=expected,
    )
