"""DCGM diagnostics check."""

from __future__ import annotations

from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.common import join_limited
from assessor.checks.result import Result
from assessor.facts import DcgmDiag, DcgmTest, NodeFacts


def _name(test: DcgmTest) -> str:
    return f"{test.category}/{test.name}" if test.category else test.name


def _first_detail(test: DcgmTest) -> str:
    """The detail that explains the result: a failed row's cell lists passing GPUs first
    ("Pass - GPUs: 1, 2, ..."), so those are left out and the failing GPU and its warning kept."""
    details = [d.strip() for d in test.details if d.strip()]
    if test.result.strip().lower() != "pass":
        details = [d for d in details if not d.lower().startswith("pass")] or details
    shown = "; ".join(details[:2])
    return f" ({shown})" if shown else ""


@check(
    "dcgm.diag",
    title="DCGM diagnostics",
    facts=("dcgm_diag",),
    params=(Param("allow_skip", "bool", False, "treat skipped tests as fine (Skip is not a pass by default)"),),
    doc=(
        "Reads `dcgmi diag -r N`: every test must Pass. A Fail is a hardware or configuration fault; Warn and "
        "Skip are not passes (DCGM skips level 2/3 tests it is not allowed to run, NVIDIA/DCGM#55). Note that "
        "dcgmi diag passes with every NVLink down (NVIDIA/DCGM#198): gpu.nvlink checks that."
    ),
    remedy=(
        "Rerun the failing plugin alone (`dcgmi diag -r <plugin> -j` shows details); reset the GPU and rerun; "
        "a GPU that keeps failing memory or stress tests is an RMA candidate."
    ),
)
def dcgm_diag(facts: NodeFacts, params: dict[str, Any]) -> Result:
    diag: DcgmDiag = need(facts, "dcgm_diag")
    if not diag.tests:
        return result(
            "dcgm.diag",
            "error",
            "dcgmi diag output holds no test results",
            hint="rerun dcgmi diag -r 2 (as root, with nvidia-dcgm running) and capture its whole output",
        )
    allow_skip = bool(params.get("allow_skip"))
    by_result: dict[str, list[DcgmTest]] = {}
    for test in diag.tests:
        by_result.setdefault(test.result.strip().lower(), []).append(test)
    failed = by_result.get("fail", [])
    warned = by_result.get("warn", [])
    skipped = [t for key, ts in by_result.items() if key not in ("pass", "fail", "warn") for t in ts]
    observed = {key: len(ts) for key, ts in sorted(by_result.items())}
    expected = "every test Pass" + (" or Skip" if allow_skip else "")
    if failed:
        names = join_limited([_name(t) + _first_detail(t) for t in failed])
        return result(
            "dcgm.diag",
            "fail",
            f"failed: {names}",
            observed=observed,
            expected=expected,
            hint="rerun the failing plugin alone (dcgmi diag -r <plugin> -j); reset the GPU and rerun; "
            "repeated memory or stress failures mean RMA",
        )
    problems = [f"warn: {_name(t)}{_first_detail(t)}" for t in warned]
    if skipped and not allow_skip:
        problems.append("skipped (Skip is not a pass): " + ", ".join(_name(t) for t in skipped))
    if {t.category.strip().lower() for t in diag.tests} <= {"deployment", ""}:
        # Level 1 (or an output cut short) runs only the software checks: no GPU hardware was tested.
        problems.append("only Deployment tests present: no GPU hardware was tested (dcgmi diag -r 1, or cut output)")
    if problems:
        return result(
            "dcgm.diag",
            "warn",
            join_limited(problems),
            observed=observed,
            expected=expected,
            hint="skipped tests did not run: run as root with the test allowed (or pass allow_skip); "
            "read each warning's detail",
        )
    return result(
        "dcgm.diag", "pass", f"{len(by_result.get('pass', []))} tests passed", observed=observed, expected=expected
    )
