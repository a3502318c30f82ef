"""DCGM diagnostics check."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.common import join_limited
from assessor.checks.result import Result
from assessor.facts import DcgmDiag, DcgmTest, NodeFacts


def _name(test: DcgmTest) -> str:
    return f"{test.category}/{test.name}" if test.category else test.name


# The lowest run level whose suite holds a test (DCGM 3.x row names and 4.x plugin names, lower case):
# nvvs FillTestVectors. A test not listed here (a plugin run by name that no level runs) says nothing of the level.
_TEST_LEVEL: dict[str, int] = {
    **dict.fromkeys(("pcie", "gpu memory", "memory"), 2),
    **dict.fromkeys(
        (
            "diagnostic",
            "targeted stress",
            "targeted_stress",
            "targeted power",
            "targeted_power",
            "memory bandwidth",
            "memory_bandwidth",
            "eud test",
            "eud",
            "nvbandwidth",
            "sm stress",
        ),
        3,
    ),
    **dict.fromkeys(("memtest", "pulse test", "pulse_test"), 4),
}


def run_level(diag: DcgmDiag) -> int:
    """The run level the output shows: the highest level among its tests (1 when only the Deployment checks
    ran). ``dcgmi diag -r memtest`` reads as level 4 too: it ran level 4's test."""
    return max((_TEST_LEVEL.get(t.name.strip().lower(), 1) for t in diag.tests), default=1)


_PASSING = re.compile(r"^(?:pass\b|gpu\s?\d+\s*:\s*pass\b)", re.IGNORECASE)


def _first_detail(test: DcgmTest) -> str:
    """The detail that explains the result: a failed row lists passing GPUs first ("Pass - GPUs: 1, 2, ...",
    or a ``GPUn: Pass`` row each in DCGM 4), so those are left out and the failing GPU and its warning kept."""
    details = [d.strip() for d in test.details if d.strip()]
    if test.result.strip().lower() != "pass":
        # "Pass - GPUs: 1, 2" (3.x) and "GPU0: Pass" (4.x) are the GPUs that did not fail
        details = [d for d in details if not _PASSING.match(d)] or details
    shown = "; ".join(details[:2])
    return f" ({shown})" if shown else ""


@check(
    "dcgm.diag",
    title="DCGM diagnostics",
    facts=("dcgm_diag",),
    params=(
        Param("allow_skip", "bool", False, "treat skipped tests as fine (Skip is not a pass by default)"),
        Param(
            "min_level",
            "int",
            None,
            "the run level the output must reach (4: memtest and the pulse test ran); None: any level",
        ),
    ),
    doc=(
        "Reads `dcgmi diag -r N`: every test must Pass. A Fail is a hardware or configuration fault; Warn and "
        "Skip are not passes (DCGM skips level 2/3 tests it is not allowed to run, NVIDIA/DCGM#55). The run "
        "level is read from the tests present (level 4 runs memtest and the pulse test); with `min_level`, a "
        "lower run that passes is not enough: only `-r 4` finds a GPU whose memory fails memtest alone. Note "
        "that dcgmi diag passes with every NVLink down (NVIDIA/DCGM#198): gpu.nvlink checks that."
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
    level = run_level(diag)
    by_result: dict[str, list[DcgmTest]] = {}
    for test in diag.tests:
        by_result.setdefault(test.result.strip().lower(), []).append(test)
    failed = by_result.get("fail", [])
    warned = by_result.get("warn", [])
    skipped = [t for key, ts in by_result.items() if key not in ("pass", "fail", "warn") for t in ts]
    observed = {key: len(ts) for key, ts in sorted(by_result.items())}
    min_level = params.get("min_level")
    expected = "every test Pass" + (" or Skip" if allow_skip else "")
    if min_level is not None:
        expected += f", run level {min_level} or higher"
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
    if min_level is not None and level < int(min_level):
        problems.append(
            f"a level-{level} run: level {min_level} was asked for (dcgmi diag -r {min_level}); tests it adds "
            "did not run"
        )
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
        "dcgm.diag",
        "pass",
        f"{len(by_result.get('pass', []))} tests passed (a level-{level} run)",
        observed=observed,
        expected=expected,
    )
