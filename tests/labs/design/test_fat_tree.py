"""design.fat_tree: the rail-optimised fat-tree calculation, checked against hand-worked cases and the
NVIDIA DGX SuperPOD reference architecture's compute-fabric component table."""

from __future__ import annotations

from typing import Any

import pytest

from assessor.labs.design import GRADERS, run_grader
from assessor.labs.design.fat_tree import compute


def answer_for(gpus: int, radix: int = 64, **changes: Any) -> dict[str, Any]:
    """The right fat_tree section for these inputs, with keys overridden as ``switches__spine=24``."""
    tree = compute(gpus, radix)
    section: dict[str, Any] = {
        "tiers": tree.tiers,
        "nodes": tree.nodes,
        "scalable_units": tree.scalable_units,
        "leaf_ports": {"down": tree.leaf_down, "up": tree.leaf_up},
        "switches": {"leaf": tree.leaf, "spine": tree.spine, "core": tree.core},
        "cables": {"gpu_leaf": tree.gpu_leaf, "leaf_spine": tree.leaf_spine, "spine_core": tree.spine_core},
    }
    for key, value in changes.items():
        top, _, sub = key.partition("__")
        if sub:
            section[top][sub] = value
        else:
            section[top] = value
    return {"fat_tree": section}


def test_1024_gpus_radix_64_eight_rails_by_hand() -> None:
    # 1,024 GPUs / 8 per node = 128 nodes. A non-blocking radix-64 leaf has 32 ports down, 32 up.
    # An SU is 32 nodes (one leaf per rail takes rail r of all 32) -> 128 / 32 = 4 SUs -> 4 x 8 = 32 leaves.
    # Uplinks: 32 leaves x 32 = 1,024 -> 1,024 / 64 ports = 16 spines; 16 divides 32, so each leaf sends
    # 2 links to every spine. Links: 128 nodes x 8 NICs = 1,024 GPU-leaf, 1,024 leaf-spine, no core.
    tree = compute(1024, 64, gpus_per_node=8, rails=8)
    assert (tree.tiers, tree.nodes, tree.scalable_units) == (2, 128, 4)
    assert (tree.leaf_down, tree.leaf_up) == (32, 32)
    assert (tree.leaf, tree.spine, tree.core) == (32, 16, 0)
    assert (tree.gpu_leaf, tree.leaf_spine, tree.spine_core) == (1024, 1024, 0)
    assert tree.switches == 48


@pytest.mark.parametrize(
    ("sus", "leaf", "spine"),
    [(1, 8, 4), (2, 16, 8), (3, 24, 16), (4, 32, 16)],
)
def test_superpod_compute_fabric_table(sus: int, leaf: int, spine: int) -> None:
    # DGX SuperPOD RA (DGX H100), Table 4: leaf/spine counts and spine-leaf cables of 1-4 SUs of 32 nodes.
    # 3 SUs: 768 uplinks need 12 spines' worth of ports, but 32 uplinks per leaf do not split evenly over 12:
    # the RA (and the rule) use 16.
    tree = compute(sus * 32 * 8, 64)
    assert (tree.leaf, tree.spine) == (leaf, spine)
    assert tree.leaf_spine == sus * 256


def test_1536_gpus_round_spines_up_to_a_divisor_of_the_uplinks() -> None:
    # 192 nodes -> 6 SUs -> 48 leaves; 1,536 uplinks / 64 = 24 spines by ports, but 32 uplinks split evenly
    # only over a divisor of 32 >= 24: 32 spines, one link from each leaf to each.
    tree = compute(1536, 64)
    assert (tree.leaf, tree.spine, tree.tiers) == (48, 32, 2)


def test_2048_gpus_is_the_largest_two_tier_fabric() -> None:
    # 64 leaves = radix: every one of 32 spines gives one port to each leaf (64 ports, all used).
    tree = compute(2048, 64)
    assert (tree.tiers, tree.leaf, tree.spine) == (2, 64, 32)
    # One more node needs a ninth SU: 72 leaves > 64, a third tier.
    assert compute(2056, 64).tiers == 3


def test_4096_gpus_need_a_core_tier_by_hand() -> None:
    # 512 nodes -> 16 SUs -> 128 leaves > 64: three tiers. Spines split 32 down / 32 up, so 128 x 32 uplinks
    # need 4,096 / 32 = 128 spines; their 4,096 uplinks need 4,096 / 64 = 64 core switches.
    tree = compute(4096, 64)
    assert (tree.tiers, tree.leaf, tree.spine, tree.core) == (3, 128, 128, 64)
    assert (tree.gpu_leaf, tree.leaf_spine, tree.spine_core) == (4096, 4096, 4096)


def test_partly_filled_su_is_built_whole() -> None:
    # 1,000 GPUs = 125 nodes: the fourth SU has 29 nodes but still gets 8 leaves and all their uplinks
    # (RA: "design the fabric to support the full SU"). GPU-leaf links count only the installed NICs.
    tree = compute(1000, 64)
    assert (tree.nodes, tree.scalable_units, tree.leaf) == (125, 4, 32)
    assert (tree.gpu_leaf, tree.leaf_spine) == (1000, 1024)


def test_hdr_radix_40_gives_20_node_sus() -> None:
    # DGX A100 SuperPOD on 40-port QM8700: 20 nodes per SU; 140 nodes = 7 SUs = 56 leaves > 40 -> 3 tiers.
    tree = compute(1120, 40)
    assert (tree.scalable_units, tree.leaf, tree.tiers) == (7, 56, 3)
    assert (tree.spine, tree.core) == (56, 28)


def test_one_leaf_needs_no_spine() -> None:
    tree = compute(16, 64, gpus_per_node=8, rails=1)
    assert (tree.tiers, tree.leaf, tree.spine, tree.leaf_spine) == (1, 1, 0, 0)


@pytest.mark.parametrize(("gpus", "radix"), [(1024, 63), (1024, 2), (0, 64), (4096, 16)])
def test_impossible_inputs_raise(gpus: int, radix: int) -> None:
    with pytest.raises(ValueError):
        compute(gpus, radix)


def test_grader_passes_the_right_answer() -> None:
    result = run_grader(GRADERS["design.fat_tree"], answer_for(1536), {"gpus": 1536, "radix": 64})
    assert result.status == "pass", result.message
    assert "48 leaf + 32 spine" in result.message


def test_grader_names_the_wrong_number_but_not_the_right_one() -> None:
    # The naive spine count (ports only) is the classic mistake.
    result = run_grader(GRADERS["design.fat_tree"], answer_for(1536, switches__spine=24), {"gpus": 1536})
    assert result.status == "fail"
    assert "switches.spine = 24 is wrong" in result.message
    assert "divisor" in (result.hint or "")
    assert isinstance(result.expected["switches.spine"], str)  # a rule, not the number
    revealed = run_grader(
        GRADERS["design.fat_tree"], answer_for(1536, switches__spine=24), {"gpus": 1536, "reveal": True}
    )
    assert revealed.expected["switches.spine"] == 32


def test_grader_parts_grade_only_their_keys() -> None:
    wrong_cables = answer_for(1024, cables__leaf_spine=512)
    switches = run_grader(GRADERS["design.fat_tree"], wrong_cables, {"gpus": 1024, "parts": ["switches"]})
    cables = run_grader(GRADERS["design.fat_tree"], wrong_cables, {"gpus": 1024, "parts": ["cables"]})
    assert switches.status == "pass"
    assert cables.status == "fail"
    assert "cables.leaf_spine" in cables.message


def test_grader_flags_a_blocking_leaf() -> None:
    blocking = answer_for(1024, leaf_ports={"down": 40, "up": 24})
    result = run_grader(GRADERS["design.fat_tree"], blocking, {"gpus": 1024})
    assert result.status == "fail"
    assert "uplinks (24) < downlinks (40)" in result.message


def test_grader_with_impossible_params_is_an_error_not_a_fail() -> None:
    result = run_grader(GRADERS["design.fat_tree"], answer_for(1024), {"gpus": 1024, "radix": 63})
    assert result.status == "error"
    unknown_part = run_grader(GRADERS["design.fat_tree"], answer_for(1024), {"gpus": 1024, "parts": ["leafs"]})
    assert unknown_part.status == "error"
    assert "leafs" in unknown_part.message
