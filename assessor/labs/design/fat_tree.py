"""Sizing a rail-optimised, non-blocking InfiniBand fat tree for N GPUs from switches of radix k.

The model (and where each rule comes from):

- One NIC per rail per node; ``rails`` is the NICs per node (8 on DGX/HGX H100: one 400G NDR port per GPU).
  Every NIC port is one cable to a leaf switch: ``gpu_leaf = nodes x rails``.
- Non-blocking leaves: half the ports face the nodes, half face the spines (uplinks >= downlinks, so the
  bisection bandwidth equals the injection bandwidth).
- Rail optimisation: a *scalable unit* (SU) is ``radix/2`` nodes whose rail-r ports all land on the same
  leaf, so an SU has one leaf per rail. NVIDIA DGX SuperPOD reference architecture (DGX H100, "Network
  Fabrics": https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/
  network-fabrics.html): SUs of 32 nodes on 64-port QM9700 NDR switches, 8 leaves per SU, and the fabric is
  built for whole SUs (leaf switches and leaf-spine cables for the full SU even when fewer nodes are
  installed). The DGX A100 SuperPOD used 20-node SUs on 40-port QM8700 HDR switches: radix/2 again.
- Two tiers: every leaf spreads its ``radix/2`` uplinks evenly over every spine (the same number of links
  to each), so the spine count divides ``radix/2`` and gives at least ``leaves x radix/2`` spine ports.
  That is the smallest divisor of radix/2 that is >= leaves x (radix/2) / radix. It reproduces the RA's
  Table 4 ("Compute fabric component count"): 1 SU 8 leaf + 4 spine, 2 SU 16 + 8, 3 SU 24 + 16 (not 12:
  32 uplinks do not split evenly over 12 spines), 4 SU 32 + 16 with 1,024 spine-leaf cables. Two tiers hold
  at most ``radix`` leaves (radix/2 spines with one link to each leaf), i.e. ``radix^2/2`` endpoints.
- Three tiers: the k-ary fat tree of Al-Fares, Loukissas and Vahdat ("A Scalable, Commodity Data Center
  Network Architecture", SIGCOMM 2008): spines (aggregation) also split radix/2 down, radix/2 up, so there
  is one spine per leaf, and core switches use all their ports downwards: ``core = spine-core links /
  radix``. It holds ``radix^3/4`` endpoints (65,536 NDR ports with radix 64).

Counts are links (port-to-port). DGX H100 carries two NDR links per twin-port OSFP transceiver; the
answer counts links, as the RA's cable table does.

Carried error (:func:`assessor.labs.design.base.compare`'s ``follows``), within one graded part: scalable
units that follow from the candidate's own node count, and spine and core switches that follow from their own
leaf (and spine) count, are right. A part graded on its own is graded against the lab's cluster: switches and
cables that follow from a wrong node count in another part are wrong, so a consistent design for another
cluster (the example file's) earns nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.labs.design.answer import Schema, check_section
from assessor.labs.design.base import as_located, check_parts, compare, grader, parts_param
from assessor.yamlio import Located

SECTION = "fat_tree"

SCHEMA: Schema = {
    "tiers": "count",
    "nodes": "count",
    "scalable_units": "count",
    "leaf_ports": {"down": "count", "up": "count"},
    "switches": {"leaf": "count", "spine": "count", "core": "count"},
    "cables": {"gpu_leaf": "count", "leaf_spine": "count", "spine_core": "count"},
}

ANSWER_FORMAT = """\
fat_tree:
  tiers: <2 or 3>
  nodes: <GPU nodes>
  scalable_units: <SUs: radix/2 nodes, one leaf per rail>
  leaf_ports: {down: <ports to nodes>, up: <ports to spines>}
  switches: {leaf: <n>, spine: <n>, core: <n, 0 with two tiers>}
  cables: {gpu_leaf: <n>, leaf_spine: <n>, spine_core: <n, 0 with two tiers>}
"""

PARTS = ("tiers", "nodes", "scalable_units", "leaf_ports", "switches", "cables")

RULES = {
    "tiers": "2 while the leaves fit under one spine layer (leaves <= radix), else 3 (up to radix^3/4 endpoints)",
    "nodes": "GPUs / GPUs per node, rounded up",
    "scalable_units": "nodes / (radix/2), rounded up (an SU is radix/2 nodes, one leaf per rail)",
    "leaf_ports.down": "half the leaf's ports face the nodes",
    "leaf_ports.up": "non-blocking: uplinks >= downlinks, so the other half face the spines",
    "switches.leaf": "scalable units x rails (fabrics are built for whole SUs)",
    "switches.spine": "two tiers: the smallest divisor of radix/2 giving >= leaf uplinks / radix spines (each leaf "
    "spreads its uplinks evenly over every spine); three tiers: one spine per leaf",
    "switches.core": "spine-core links / radix, rounded up; 0 with two tiers",
    "cables.gpu_leaf": "one link per NIC port: nodes x rails",
    "cables.leaf_spine": "leaves x radix/2",
    "cables.spine_core": "three tiers: spines x radix/2; 0 with two tiers",
}


@dataclass(frozen=True)
class FatTree:
    """The computed fabric for one set of inputs."""

    gpus: int
    radix: int
    gpus_per_node: int
    rails: int
    tiers: int
    nodes: int
    scalable_units: int
    leaf_down: int
    leaf_up: int
    leaf: int
    spine: int
    core: int
    gpu_leaf: int
    leaf_spine: int
    spine_core: int

    @property
    def switches(self) -> int:
        return self.leaf + self.spine + self.core

    def answer(self) -> dict[str, Any]:
        """The numbers in the answer file's shape (flattened keys, as the grader compares them)."""
        return {
            "tiers": self.tiers,
            "nodes": self.nodes,
            "scalable_units": self.scalable_units,
            "leaf_ports.down": self.leaf_down,
            "leaf_ports.up": self.leaf_up,
            "switches.leaf": self.leaf,
            "switches.spine": self.spine,
            "switches.core": self.core,
            "cables.gpu_leaf": self.gpu_leaf,
            "cables.leaf_spine": self.leaf_spine,
            "cables.spine_core": self.spine_core,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _smallest_divisor_at_least(n: int, low: int) -> int:
    """The smallest divisor of ``n`` that is >= ``low`` (``n`` itself when none is smaller)."""
    for d in range(max(1, low), n + 1):
        if n % d == 0:
            return d
    return n


def compute(gpus: int, radix: int, gpus_per_node: int = 8, rails: int = 8) -> FatTree:
    """The rail-optimised non-blocking fat tree for ``gpus`` GPUs; ValueError for impossible inputs."""
    if gpus < 1 or gpus_per_node < 1 or rails < 1:
        raise ValueError(f"gpus, gpus_per_node and rails must be >= 1 (got {gpus}, {gpus_per_node}, {rails})")
    if radix < 4 or radix % 2:
        raise ValueError(f"a fat-tree switch radix must be even and >= 4, got {radix}")
    half = radix // 2
    nodes = math.ceil(gpus / gpus_per_node)
    sus = math.ceil(nodes / half)
    leaf = sus * rails
    gpu_leaf = nodes * rails
    if leaf == 1:
        # One leaf holds every port: no spine layer at all.
        return FatTree(gpus, radix, gpus_per_node, rails, 1, nodes, sus, half, 0, 1, 0, 0, gpu_leaf, 0, 0)
    leaf_spine = leaf * half
    if leaf <= radix:
        spine = _smallest_divisor_at_least(half, math.ceil(leaf_spine / radix))
        return FatTree(
            gpus, radix, gpus_per_node, rails, 2, nodes, sus, half, half, leaf, spine, 0, gpu_leaf, leaf_spine, 0
        )
    if leaf > radix * radix // 2:
        raise ValueError(
            f"{gpus} GPUs need {leaf} leaves: more than a three-tier fat tree of radix {radix} holds "
            f"({radix * radix // 2} leaves, {radix**3 // 4} endpoints)"
        )
    spine = math.ceil(leaf_spine / half)  # radix/2 down, radix/2 up: one spine per leaf
    spine_core = spine * half
    core = math.ceil(spine_core / radix)
    return FatTree(
        gpus,
        radix,
        gpus_per_node,
        rails,
        3,
        nodes,
        sus,
        half,
        half,
        leaf,
        spine,
        core,
        gpu_leaf,
        leaf_spine,
        spine_core,
    )


def validate(located: Located) -> None:
    """The fat_tree section has every key, each a whole number (InputError with file, line and key)."""
    check_section(located, SECTION, SCHEMA)


def flatten(section: dict[str, Any]) -> dict[str, Any]:
    """``{"switches": {"leaf": 32}}`` -> ``{"switches.leaf": 32}``."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        if isinstance(value, dict):
            for sub, inner in value.items():
                out[f"{key}.{sub}"] = inner
        else:
            out[key] = value
    return out


@grader(
    "design.fat_tree",
    title="Rail-optimised fat tree",
    section=SECTION,
    params=(
        Param("gpus", "int", None, "GPUs the fabric connects (required)"),
        Param("radix", "int", 64, "ports per switch (64: Quantum-2 QM9700 NDR; 40: QM8700 HDR)"),
        Param("gpus_per_node", "int", 8, "GPUs per node"),
        Param("rails", "int", 8, "compute NICs per node, one rail each"),
        parts_param(PARTS),
    ),
    doc=(
        "Computes the non-blocking, rail-optimised fat tree for the GPUs (tiers, nodes, scalable units, leaf "
        "port split, leaf/spine/core switches, GPU-leaf/leaf-spine/spine-core links) and compares the answer's "
        "numbers with it, exactly. Rules from the NVIDIA DGX SuperPOD reference architecture (32-node SUs on "
        "64-port QM9700 switches, its compute-fabric component table) and the k-ary fat tree (Al-Fares et al., "
        "SIGCOMM 2008) for three tiers."
    ),
    answer_format=ANSWER_FORMAT,
    validate=validate,
)
def grade_fat_tree(answer: dict[str, Any], params: dict[str, Any]) -> Result:
    """Grade the fat_tree section against :func:`compute` for the lab's params."""
    if params.get("gpus") is None:
        raise ValueError("design.fat_tree needs the gpus parameter")
    tree = compute(int(params["gpus"]), int(params["radix"]), int(params["gpus_per_node"]), int(params["rails"]))
    validate(as_located(answer))
    parts = check_parts("design.fat_tree", params.get("parts"), PARTS)
    got = flatten(answer[SECTION])
    extra: list[str] = []
    down, up = got.get("leaf_ports.down"), got.get("leaf_ports.up")
    bisection = parts is None or "leaf_ports" in parts
    if bisection and isinstance(down, int) and isinstance(up, int) and up < down:
        extra.append(f"leaf uplinks ({up}) < downlinks ({down}): the fabric blocks (bisection below injection)")
    return compare(
        "design.fat_tree",
        follows=carried(got, tree),
        got=got,
        want=tree.answer(),
        rules=RULES,
        reveal=bool(params.get("reveal")),
        ok=(
            f"{tree.tiers}-tier fat tree for {tree.gpus} GPUs: {tree.leaf} leaf + {tree.spine} spine"
            + (f" + {tree.core} core" if tree.core else "")
            + f" switches, {tree.gpu_leaf + tree.leaf_spine + tree.spine_core} links"
        ),
        hint=f"inputs: {tree.gpus} GPUs, radix {tree.radix}, {tree.gpus_per_node} GPUs and {tree.rails} rails per node",
        extra_fails=extra,
        parts=parts,
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def carried(got: dict[str, Any], tree: FatTree) -> dict[str, tuple[Any, str]]:
    """What each count computed from another count would be from the candidate's own value of it (the
    carried-error rule): key -> (value, the key it is computed from), where that value differs from the
    computed one."""
    half = tree.radix // 2
    out: dict[str, tuple[Any, str]] = {}
    nodes = _count(got.get("nodes"))
    if nodes is not None and nodes != tree.nodes:
        out["scalable_units"] = (math.ceil(nodes / half), "nodes")
    leaf = _count(got.get("switches.leaf"))
    if leaf is not None and leaf != tree.leaf and leaf > 1:
        if leaf <= tree.radix:  # two tiers: the spines take the leaves' uplinks evenly
            out["switches.spine"] = (
                _smallest_divisor_at_least(half, math.ceil(leaf * half / tree.radix)),
                "switches.leaf",
            )
            out["switches.core"] = (0, "switches.leaf")
        else:  # three tiers: one spine per leaf
            out["switches.spine"] = (leaf, "switches.leaf")
    spine = _count(got.get("switches.spine"))
    if spine is not None and spine != tree.spine and tree.tiers == 3:
        out.setdefault("switches.core", (math.ceil(spine * half / tree.radix), "switches.spine"))
    return out
