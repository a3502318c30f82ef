"""Topology check: every GPU has a NIC close to it on PCIe."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.common import join_limited, label_for_index
from assessor.checks.result import Result
from assessor.facts import NodeFacts, Topology

# Path types of `nvidia-smi topo -m`, nearest first (NV# is GPU-GPU and never appears to a NIC).
HOPS = ("X", "PIX", "PXB", "PHB", "NODE", "SYS")

_GPU_RE = re.compile(r"^GPU(\d+)$")


def _nic_columns(topology: Topology) -> list[str]:
    """Every device that is not a GPU: NIC0.. on current drivers, mlx5_0.. on older ones."""
    return [d for d in topology.devices if not _GPU_RE.match(d)]


@check(
    "topo.nic_affinity",
    title="GPU-NIC PCIe affinity",
    facts=("topology", "gpus"),
    params=(Param("max_hop", "str", "PXB", "farthest acceptable path to the nearest NIC: PIX, PXB, PHB, NODE or SYS"),),
    doc=(
        "Verifies from `nvidia-smi topo -m` that each GPU has at least one NIC behind the same PCIe switch "
        "(PIX or PXB). GPUDirect RDMA across the CPU's root complex (PHB) or between sockets (NODE, SYS) is "
        "slow or disabled by NCCL, so a GPU without a near NIC drags inter-node collectives down."
    ),
    remedy=(
        "Move the HCA to the PCIe switch of the GPU (the server's slot map says which), enable the missing "
        "HCA, or check that ACS/IOMMU settings do not hide the PCIe switch."
    ),
)
def topo_nic_affinity(facts: NodeFacts, params: dict[str, Any]) -> Result:
    topology: Topology = need(facts, "topology")
    max_hop = str(params.get("max_hop") or "PXB").upper()
    if max_hop not in HOPS:
        return result(
            "topo.nic_affinity",
            "error",
            f"max_hop {max_hop!r} is not one of {', '.join(HOPS[1:])}",
            hint="set max_hop to PIX, PXB, PHB, NODE or SYS",
        )
    limit = HOPS.index(max_hop)
    nics = _nic_columns(topology)
    gpu_rows = [d for d in topology.devices if _GPU_RE.match(d)]
    if not nics:
        return result(
            "topo.nic_affinity",
            "skip",
            "no NICs in the topology matrix",
            hint="nvidia-smi topo -m lists NICs only when their driver (mlx5_core) is loaded",
        )
    if not gpu_rows:
        return result(
            "topo.nic_affinity", "skip", "no GPUs in the topology matrix", hint="recapture nvidia-smi topo -m"
        )
    fails: list[str] = []
    unknown: list[str] = []
    observed: dict[str, str] = {}
    for row in gpu_rows:
        label = label_for_index(int(row[3:]), facts.gpus)
        cells = topology.matrix.get(row, {})
        paths = [(HOPS.index(cells[n].strip().upper()), n) for n in nics if cells.get(n, "").strip().upper() in HOPS]
        if not paths:
            unknown.append(label)
            continue
        rank, nic = min(paths)
        name = topology.nic_names.get(nic)
        shown = f"{nic} ({name})" if name and name != nic else nic
        observed[row] = f"{HOPS[rank]} {shown}"
        if rank > limit:
            fails.append(f"{label}: nearest NIC {shown} is {HOPS[rank]}")
    expected = f"a NIC at {max_hop} or nearer for every GPU"
    if fails:
        return result(
            "topo.nic_affinity",
            "fail",
            join_limited(fails),
            observed=observed,
            expected=expected,
            hint="move or enable an HCA on the GPU's PCIe switch; NCCL will otherwise cross the CPU for "
            "RDMA (or disable GPUDirect for that GPU)",
        )
    if unknown and not observed:
        return result(
            "topo.nic_affinity",
            "skip",
            f"no GPU-NIC paths for {', '.join(unknown)}",
            hint="recapture nvidia-smi topo -m",
        )
    if unknown:
        return result(
            "topo.nic_affinity",
            "warn",
            f"no GPU-NIC paths for {', '.join(unknown)}",
            observed=observed,
            expected=expected,
            hint="recapture nvidia-smi topo -m",
        )
    return result(
        "topo.nic_affinity",
        "pass",
        f"{len(observed)} GPUs have a NIC at {max_hop} or nearer",
        observed=observed,
        expected=expected,
    )
