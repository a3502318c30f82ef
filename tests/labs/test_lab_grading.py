"""Scoring: points per check, partial credit, warn and skip rules, pass mark, late marking, determinism."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

from assessor.checks.result import Result
from assessor.facts import Gpu, NcclDevice, NcclRow, NcclRun, NodeFacts
from assessor.labs import grading, loader
from assessor.labs.model import LabCheck, Partial
from tests.labs.conftest import DATA

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
A100 = "NVIDIA A100-SXM4-80GB"


def a100_facts(busbw: float) -> NodeFacts:
    """8x A100 with an all_reduce run whose largest size reaches ``busbw`` GB/s (hand-made for exact numbers)."""
    rows = [
        NcclRow(size_bytes=1 << 20, oop_busbw=40.0, ip_busbw=39.0, oop_wrong=0, ip_wrong=0),
        NcclRow(size_bytes=8 << 30, oop_busbw=busbw, ip_busbw=busbw - 0.5, oop_wrong=0, ip_wrong=0),
    ]
    run = NcclRun(
        test="all_reduce_perf", devices=[NcclDevice(rank=i, device=i, name=A100) for i in range(8)], rows=rows
    )
    return NodeFacts(host="node01", gpus=[Gpu(index=i, name=A100) for i in range(8)], nccl=run)


def busbw_only():
    """nccl-301 graded on busbw alone (the partial rule under test), 100 points."""
    lab = loader.find_lab("nccl-301", DATA)
    return replace(lab, checks=(replace(lab.checks[0], points=100.0),))


def test_busbw_190_against_228_with_factor_0_8_earns_half_the_points():
    g = grading.grade_facts(busbw_only(), a100_facts(190.0), graded_at=T0, started_at=None)
    (s,) = g.scores
    assert s.status == "fail"  # the check itself failed: 190 < 228
    assert s.credit == 0.5 and s.earned == 50.0
    assert "min_gbps=182.4" in (s.note or "")
    assert g.percent == 50.0 and not g.passed  # 50 % < 70 %


def test_busbw_below_the_relaxed_threshold_earns_nothing():
    g = grading.grade_facts(busbw_only(), a100_facts(170.0), graded_at=T0, started_at=None)
    assert g.scores[0].earned == 0 and g.scores[0].credit == 0
    assert g.scores[0].hint.startswith("all_reduce_perf")  # the lab's hint comes with a miss


def test_busbw_at_target_earns_full_points_and_passes():
    g = grading.grade_facts(busbw_only(), a100_facts(232.0), graded_at=T0, started_at=None)
    assert (g.scores[0].status, g.scores[0].earned, g.percent, g.passed) == ("pass", 100.0, 100.0, True)


def test_first_partial_rule_that_passes_wins():
    lab = busbw_only()
    rules = (Partial("min_gbps", 0.9, 0.75), Partial("min_gbps", 0.8, 0.5))
    lab = replace(lab, checks=(replace(lab.checks[0], partial=rules),))
    at_85 = grading.grade_facts(lab, a100_facts(210.0), graded_at=T0, started_at=None)  # 210 >= 205.2
    at_80 = grading.grade_facts(lab, a100_facts(190.0), graded_at=T0, started_at=None)  # only >= 182.4
    assert at_85.scores[0].credit == 0.75
    assert at_80.scores[0].credit == 0.5


def _fixed(status: str) -> grading.Evaluate:
    def evaluate(check_id: str, params: dict[str, Any]) -> Result:
        return Result(check_id, status, f"{status} by design")  # type: ignore[arg-type]

    return evaluate


def test_warn_is_not_a_pass_unless_the_lab_says_so():
    check = LabCheck("gpu.temperature", {}, 10.0, "cool it")
    assert grading.score_check(check, _fixed("warn")).earned == 0
    assert grading.score_check(check, _fixed("warn"), warn_counts=True).earned == 10.0


def test_skip_and_error_earn_nothing_with_the_reason():
    check = LabCheck("dcgm.diag", {}, 20.0, "run dcgmi")
    for status in ("skip", "error"):
        s = grading.score_check(check, _fixed(status))
        assert s.earned == 0
        assert s.note == f"{status}: no points ({status} by design)"


def test_missing_facts_skip_and_score_zero():
    lab = loader.find_lab("ib-301", DATA)
    g = grading.grade_facts(lab, NodeFacts(host="x"), graded_at=T0, started_at=None)
    assert [s.status for s in g.scores] == ["skip", "skip"]
    assert g.points == 0 and not g.passed


def test_pass_mark_is_inclusive_and_not_rounded_up():
    lab = replace(busbw_only(), pass_percent=50.0)
    g = grading.grade_facts(lab, a100_facts(190.0), graded_at=T0, started_at=None)
    assert g.percent == 50.0 and g.passed
    lab = replace(lab, pass_percent=50.01)
    assert not grading.grade_facts(lab, a100_facts(190.0), graded_at=T0, started_at=None).passed


def test_grade_after_the_time_limit_is_marked_late_not_refused():
    lab = busbw_only()  # 45 min limit
    on_time = grading.grade_facts(lab, a100_facts(232.0), graded_at=T0 + dt.timedelta(minutes=45), started_at=T0)
    late = grading.grade_facts(lab, a100_facts(232.0), graded_at=T0 + dt.timedelta(minutes=46), started_at=T0)
    unstarted = grading.grade_facts(lab, a100_facts(232.0), graded_at=T0, started_at=None)
    assert not on_time.late and late.late and not unstarted.late
    assert late.passed and late.points == on_time.points  # late does not change the score
    assert late.to_json()["late"] is True and late.to_json()["elapsed_min"] == 46.0


def test_grading_is_deterministic():
    lab = loader.find_lab("nccl-301", DATA)
    facts = a100_facts(190.0)
    first = grading.grade_facts(lab, facts, graded_at=T0, started_at=T0).to_json()
    for _ in range(3):
        assert grading.grade_facts(lab, facts, graded_at=T0, started_at=T0).to_json() == first


def test_active_tests_follow_the_checks():
    assert grading.active_tests(loader.find_lab("nccl-301", DATA)) == ("nccl",)
    assert grading.active_tests(loader.find_lab("ib-301", DATA)) == ()
    lab = loader.find_lab("ib-301", DATA)
    lab = replace(lab, checks=(*lab.checks, LabCheck("dcgm.diag", {}, 10.0, "h")))
    assert grading.active_tests(lab) == ("dcgm",)


def test_relaxed_keeps_int_params_integral():
    assert grading.relaxed(8, 0.75) == 6 and isinstance(grading.relaxed(8, 0.75), int)
    assert grading.relaxed(228.0, 0.8) == 182.4


def test_design_answer_grades_through_the_design_graders(tmp_path: Path):
    from assessor.labs import designs

    lab = loader.find_lab("design-501", DATA)
    good = designs.load_answer(lab.path / "solution.yaml", ["design.power"])
    bad = designs.load_answer(lab.path / "answer.example.yaml", ["design.power"])
    assert grading.grade_answer(lab, good, graded_at=T0, started_at=None).percent == 100.0
    wrong = grading.grade_answer(lab, bad, graded_at=T0, started_at=None)
    assert wrong.percent == 0 and wrong.scores[0].status == "fail"


def _lab_of(*checks: LabCheck):
    lab = loader.find_lab("nccl-301", DATA)
    return replace(lab, checks=checks)


def _by_id(results: dict[str, str]):
    """An evaluator answering each check id with a fixed status."""

    def evaluate(check_id: str, params: dict[str, Any]) -> Result:
        return Result(check_id, results[check_id], f"{check_id} is {results[check_id]}")

    return evaluate


TASK = LabCheck("ib.ports_active", {}, 60.0, "ports")
TASK2 = LabCheck("ib.peermem", {}, 40.0, "peermem")
GUARD = LabCheck("gpu.count", {}, 0.0, "keep every GPU", role="guard")


def test_a_failing_guard_fails_the_grade_but_earns_and_costs_no_points():
    lab = _lab_of(TASK, TASK2, GUARD)
    g = grading.score(
        lab,
        _by_id({"ib.ports_active": "pass", "ib.peermem": "pass", "gpu.count": "fail"}),
        graded_at=T0,
        started_at=None,
    )
    assert g.max_points == 100.0 and g.percent == 100.0  # a guard is not in the total
    assert not g.passed and [s.check for s in g.failed_guards] == ["gpu.count"]
    assert g.scores[2].earned == 0 and g.to_json()["checks"][2]["role"] == "guard"
    held = grading.score(
        lab,
        _by_id({"ib.ports_active": "pass", "ib.peermem": "pass", "gpu.count": "pass"}),
        graded_at=T0,
        started_at=None,
    )
    assert held.passed and held.points == 100.0


def test_a_guard_with_no_data_does_not_hold():
    lab = _lab_of(TASK, GUARD)
    g = grading.score(lab, _by_id({"ib.ports_active": "pass", "gpu.count": "skip"}), graded_at=T0, started_at=None)
    assert not g.passed and g.failed_guards


def test_doing_nothing_after_the_start_scores_zero():
    lab = _lab_of(TASK, TASK2, GUARD)
    healthy_before = _by_id({"ib.ports_active": "fail", "ib.peermem": "pass", "gpu.count": "pass"})
    base = grading.baseline(lab, healthy_before)
    assert base == {"0:ib.ports_active": 0.0, "1:ib.peermem": 1.0}  # guards have no baseline
    g = grading.score(lab, healthy_before, graded_at=T0, started_at=T0, baseline=base)
    assert g.points == 0 and g.percent == 0.0 and not g.passed
    assert g.scores[1].note == grading.ALREADY_TRUE and g.scores[1].status == "pass"


def test_the_task_done_after_the_start_earns_its_points_and_partial_credit_stays():
    lab = _lab_of(TASK, TASK2)
    base = {"0:ib.ports_active": 0.0, "1:ib.peermem": 0.0}
    g = grading.score(
        lab, _by_id({"ib.ports_active": "pass", "ib.peermem": "fail"}), graded_at=T0, started_at=T0, baseline=base
    )
    assert g.points == 60.0  # partly done: the part done earns
    nccl = loader.find_lab("nccl-301", DATA)
    busbw = replace(nccl, checks=(replace(nccl.checks[0], points=100.0),))
    before = grading.baseline(busbw, grading.facts_evaluator(a100_facts(100.0)))
    after = grading.grade_facts(busbw, a100_facts(190.0), graded_at=T0, started_at=T0, baseline=before)
    assert after.scores[0].credit == 0.5  # partial credit for a partly better node


def test_baseline_ok_keeps_the_points_of_a_check_already_true():
    lab = _lab_of(TASK, replace(TASK2, baseline_ok=True))
    evaluate = _by_id({"ib.ports_active": "pass", "ib.peermem": "pass"})
    g = grading.score(lab, evaluate, graded_at=T0, started_at=T0, baseline=grading.baseline(lab, evaluate))
    assert g.points == 40.0


def test_unrevealed_hints_are_left_out_of_the_grade():
    lab = _lab_of(TASK, TASK2)
    g = grading.score(lab, _by_id({"ib.ports_active": "fail", "ib.peermem": "fail"}), graded_at=T0, started_at=None)
    shown = grading.with_hints_revealed(g, 1).to_json()
    assert shown["checks"][0]["hint"] == "ports" and "hint" not in shown["checks"][1]
    assert shown["hints_used"] == 1
