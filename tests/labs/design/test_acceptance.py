"""design.acceptance and design-505: a scalable unit's bring-up and acceptance plan, graded on its stages, their
order, their thresholds against gpulab's references, and the burn-ins' durations."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from assessor.checks import references
from assessor.errors import InputError
from assessor.labs import grading
from assessor.labs.design import GRADERS, load_answer, run_grader
from assessor.labs.design.acceptance import STAGES, diag_level, tool_names, uses_tool
from assessor.labs.loader import default_root, find_lab

LAB = find_lab("design-505", default_root())
SOLUTION: dict[str, Any] = yaml.safe_load((LAB.path / "solution.yaml").read_text(encoding="utf-8"))
# every param the lab's four checks give (each check grades one part; here a plan is graded whole or by part)
PARAMS: dict[str, Any] = {k: v for c in LAB.checks for k, v in c.params.items() if k != "parts"}


def plan(**changes: dict[str, Any]) -> dict[str, Any]:
    """The reference plan with some stages' fields changed: ``plan(cabling={"nodes": 8})``."""
    answer = copy.deepcopy(SOLUTION)
    for row in answer["acceptance"]["stages"]:
        row.update(changes.get(row["stage"].replace("-", "_"), {}))
    return answer


def order(*stages: str) -> dict[str, Any]:
    """The reference plan's rows in another order."""
    answer = copy.deepcopy(SOLUTION)
    rows = {r["stage"]: r for r in answer["acceptance"]["stages"]}
    answer["acceptance"]["stages"] = [rows[s] for s in stages]
    return answer


def without(*stages: str) -> dict[str, Any]:
    answer = copy.deepcopy(SOLUTION)
    answer["acceptance"]["stages"] = [r for r in answer["acceptance"]["stages"] if r["stage"] not in stages]
    return answer


def grade(answer: dict[str, Any], *parts: str, **params: Any) -> Any:
    return run_grader(GRADERS["design.acceptance"], answer, {**PARAMS, "parts": list(parts) or None, **params})


SOLUTION_ORDER = [r["stage"] for r in SOLUTION["acceptance"]["stages"]]


def test_the_lab_reads_its_thresholds_from_the_references() -> None:
    assert PARAMS["nodes"] == 32
    assert PARAMS["single_node_busbw_gbps"] == references.NCCL_ALLREDUCE_BUSBW_GBPS["H100"] == 460
    assert PARAMS["east_west_busbw_gbps"] == references.resolve("ref:nccl_allreduce_busbw_multinode_gbps.H100")
    spec = GRADERS["design.acceptance"]
    assert spec.param("min_diag_level").default == references.resolve("ref:dcgm_diag_min_level") == 3
    assert spec.param("min_burn_in_hours").default == references.resolve("ref:burn_in_min_hours") == 24


def test_reference_plan_passes_every_part_and_scores_100() -> None:
    result = grade(SOLUTION)
    assert result.status == "pass", result.message
    assert "all 14 stages" in result.message
    now = dt.datetime.now(dt.UTC)
    graded = grading.grade_answer(LAB, load_answer(LAB.path / "solution.yaml"), graded_at=now, started_at=now)
    assert graded.percent == 100.0


def test_another_valid_order_and_tools_pass() -> None:
    # firmware before the BMC work, a level-3 diag by its alias, storage after the burn-ins, ClusterKit last
    stages = ["firmware", "bmc-oob", "os-driver", "cabling", *SOLUTION_ORDER[3:6], "east-west-nccl"]
    stages += ["nccl-burn-in", "hpl-burn-in", "nemo-burn-in", "storage", "clusterkit", "handover"]
    answer = order(*stages)
    rows = {r["stage"]: r for r in answer["acceptance"]["stages"]}
    rows["single-node-health"]["tool"] = "sudo dcgmi diag --run=long"
    rows["single-node-nccl"]["tool"] = "/opt/nccl-tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 8"
    rows["single-node-nccl"]["pass"] = {"min": 470, "unit": "GB/s"}
    rows["hpl-burn-in"]["pass"] = {"min": 10000, "unit": "TFLOPS"}  # the whole unit's Rmax
    rows["single-node-hpl"]["pass"] = {"min": 95, "unit": "%", "what": "of the unit's median node"}
    result = grade(answer)
    assert result.status == "pass", result.message


def test_burn_in_before_the_single_node_tests_fails_with_the_rule_named() -> None:
    moved = [s for s in SOLUTION_ORDER if s != "nccl-burn-in"]
    moved.insert(3, "nccl-burn-in")  # right after the OS, before dcgmi diag
    result = grade(order(*moved), "order")
    assert result.status == "fail"
    assert "nccl-burn-in (stage 4) runs before single-node-health (stage 5): burn-ins after the short tests" in (
        result.message
    )
    assert "single-node before multi-node" in result.message
    assert "burn-ins after the short tests" in result.hint
    # only the order part is graded: the same plan's stages, thresholds and durations are fine
    assert grade(order(*moved), "stages", "thresholds", "durations").status == "pass"


@pytest.mark.parametrize(
    ("first", "before", "rule"),
    [
        ("single-node-health", "firmware", "firmware before any test"),
        ("east-west-nccl", "cabling", "cabling before east-west"),
        ("clusterkit", "single-node-hpl", "single-node before multi-node"),
        ("storage", "os-driver", "OS and driver before any test"),
    ],
)
def test_each_order_rule_is_named(first: str, before: str, rule: str) -> None:
    stages = [s for s in SOLUTION_ORDER if s != first]
    stages.insert(stages.index(before), first)
    result = grade(order(*stages), "order")
    assert result.status == "fail" and rule in result.message, result.message
    assert f"{first} (stage " in result.message


def test_handover_before_a_stage_fails() -> None:
    stages = [s for s in SOLUTION_ORDER if s != "handover"]
    stages.insert(len(stages) - 1, "handover")
    result = grade(order(*stages), "order")
    assert result.status == "fail"
    assert "handover (stage 13) runs before nemo-burn-in (stage 14): handover last" in result.message


def test_missing_stages_are_named() -> None:
    result = grade(without("clusterkit", "storage"), "stages")
    assert result.status == "fail"
    assert "clusterkit is missing" in result.message and "storage is missing" in result.message
    assert "2 problems" in result.message
    # the other parts grade a whole plan: the order of what is there is not the order of a plan
    order_only = grade(without("clusterkit", "storage"), "order")
    assert order_only.status == "fail"
    assert order_only.message == "1 problem: order: 2 of 14 stages missing, and a part is graded on the whole plan"


def test_a_sample_of_the_nodes_is_not_an_acceptance() -> None:
    result = grade(plan(single_node_health={"nodes": 8}), "stages")
    assert result.status == "fail"
    assert "single-node-health covers 8 of the 32 nodes: every node before handover" in result.message


def test_a_tool_that_does_not_do_the_stage_fails() -> None:
    result = grade(plan(single_node_health={"tool": "nvidia-smi -q"}, cabling={"tool": "ping -c 3 node01"}))
    assert result.status == "fail"
    assert "single-node-health: 'nvidia-smi -q' does not run" in result.message
    assert "cabling: 'ping -c 3 node01' does not run" in result.message


def test_thresholds_too_lax_fail_without_giving_the_reference_away() -> None:
    answer = plan(
        single_node_nccl={"pass": {"min": 300, "unit": "GB/s"}},
        east_west_nccl={"pass": {"min": 200, "unit": "GB/s"}},
    )
    result = grade(answer, "thresholds")
    assert result.status == "fail"
    assert "single-node-nccl: min 300 GB/s is too lax" in result.message
    assert "east-west-nccl: min 200 GB/s is too lax" in result.message
    assert "460" not in result.message and "368" not in result.message
    revealed = grade(answer, "thresholds", reveal=True)
    assert "(reference: 460 GB/s)" in revealed.message and "(reference: 368 GB/s)" in revealed.message


def test_bandwidth_in_gigabits_is_refused() -> None:
    result = grade(plan(single_node_nccl={"pass": {"min": 3680, "unit": "Gb/s"}}), "thresholds")
    assert result.status == "fail"
    assert "busbw is in GB/s (gigabytes), not 'Gb/s'" in result.message


@pytest.mark.parametrize(
    ("tool", "words"), [("dcgmi diag -r 2", "level 2 is a quick check"), ("dcgmi diag", "no level")]
)
def test_dcgmi_diag_below_a_stress_level_fails(tool: str, words: str) -> None:
    result = grade(plan(single_node_health={"tool": tool}), "thresholds")
    assert result.status == "fail" and words in result.message, result.message


def test_a_baseline_with_exceptions_and_a_criterion_the_wrong_way_fail() -> None:
    answer = plan(
        firmware={"pass": {"max": 2, "unit": "nodes off the baseline"}},
        east_west_nccl={"pass": {"max": 400, "unit": "GB/s"}},
        single_node_hpl={"pass": {"min": 95, "unit": "points"}},
    )
    result = grade(answer, "thresholds")
    assert result.status == "fail"
    assert "firmware: max 2 nodes off the baseline lets faulty nodes through" in result.message
    assert "east-west-nccl: a max criterion points the wrong way" in result.message
    assert "single-node-hpl: HPL reports Gflops" in result.message


def test_hpl_per_node_against_the_reference_per_gpu() -> None:
    assert LAB.checks[2].params["hpl_min_tflops_per_gpu"] == references.resolve("ref:hpl_tflops_per_gpu.H100")
    params = PARAMS
    least = params["hpl_min_tflops_per_gpu"] * 8
    enough = plan(single_node_hpl={"pass": {"min": least * 1000, "unit": "GFLOPS"}})
    assert grade(enough, "thresholds", **params).status == "pass"
    lax = plan(single_node_hpl={"pass": {"min": least / 8, "unit": "TFLOPS"}})  # one GPU's figure for a node
    result = grade(lax, "thresholds", **params)
    assert result.status == "fail" and f"single-node-hpl: min {least / 8:g} TFLOPS is too lax" in result.message
    # without a reference only the unit and direction count
    assert grade(lax, "thresholds", **{**params, "hpl_min_tflops_per_gpu": None}).status == "pass"


def test_short_burn_ins_fail() -> None:
    answer = plan(nccl_burn_in={"duration_h": 2}, nemo_burn_in={"duration_h": 0.5})
    result = grade(answer, "durations")
    assert result.status == "fail"
    assert "nccl-burn-in: 2 h is too short for a burn-in" in result.message
    assert "nemo-burn-in: 0.5 h is too short" in result.message
    assert "hpl-burn-in" not in result.message
    assert "(reference: at least 24 h)" in grade(answer, "durations", reveal=True).message


def test_a_failing_part_fails_the_lab() -> None:
    now = dt.datetime.now(dt.UTC)
    graded = grading.grade_answer(LAB, plan(nccl_burn_in={"duration_h": 2}), graded_at=now, started_at=now)
    assert graded.percent == 80.0 and not graded.passed


def test_tool_words() -> None:
    assert tool_names("mpirun -np 256 /opt/nccl-tests/build/all_reduce_perf -b 8G")[3] == "all_reduce_perf"
    assert uses_tool(STAGES["nemo-burn-in"], "srun python /opt/NeMo/examples/megatron_gpt_pretraining.py")
    assert not uses_tool(STAGES["nemo-burn-in"], "srun python train.py")
    assert uses_tool(STAGES["handover"], "anything at all")
    assert [diag_level(c) for c in ("dcgmi diag -r 4", "dcgmi diag --run xlong", "dcgmi diag -r 3 -j")] == [4, 4, 3]


# Malformed answers: InputError naming file, line and key (exit 2 from the CLI).

GOOD = (LAB.path / "solution.yaml").read_text(encoding="utf-8")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "answer.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("stage: cabling", "stage: cables", r":36: unknown stage 'cables'.*acceptance\.stages\[6\]\.stage"),
        (
            "duration_h: 24\n",
            "duration_h: a day\n",
            r":60: expected a number >= 0.*acceptance\.stages\[10\]\.duration_h",
        ),
        ("stage: storage", "stage: clusterkit", r":51: clusterkit is named twice.*acceptance\.stages\[9\]\.stage"),
        ("{min: 460, unit", "{min: 460, max: 500, unit", r":29: give min .* or max .*acceptance\.stages\[4\]\.pass"),
        ("      nodes: 32\n      pass: {max: 0, unit: open", "      pass: {max: 0, unit: open", "missing key 'nodes'"),
    ],
)
def test_malformed_answers_name_file_line_and_key(tmp_path: Path, old: str, new: str, match: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(InputError, match=match):
        run_grader(GRADERS["design.acceptance"], load_answer(path), PARAMS)


def test_the_cli_refuses_a_malformed_answer_with_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assessor.cli import main

    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "attempts.db"))
    path = write(tmp_path, GOOD.replace("stage: cabling", "stage: cables"))
    result = CliRunner().invoke(main, ["lab", "grade", "design-505", "--answer", str(path)], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"{path}:36:" in result.stderr and "acceptance.stages[6].stage" in result.stderr
