"""The drain reason: gpulab's prefix, the check, what it saw, the other failing checks; at most 128 bytes."""

from __future__ import annotations

import pytest

from assessor.checks.result import Result, TargetResults
from assessor.slurm import reason
from assessor.slurm.reason import MAX_REASON_BYTES


def node(*results: Result, error: str | None = None) -> TargetResults:
    return TargetResults("local", "gpu-01", list(results), error=error)


PASS = Result("gpu.count", "pass", "8 GPUs")
WARN = Result("gpu.temperature", "warn", "GPU 3 at 84 C")
FAIL = Result("gpu.xid", "fail", "Xid 79 on GPU 3")
ERROR = Result("gpu.ecc_errors", "error", "nvidia-smi output cut short")
SKIP = Result("gpu.row_remap", "skip", "not reported")


def test_the_first_failed_check_names_the_reason_and_the_others_follow_it() -> None:
    found = reason.finding(node(PASS, ERROR, FAIL, Result("gpu.nvlink", "fail", "GPU 3: 0 of 18 links")))
    assert not found.healthy
    assert found.reason == "gpulab: gpu.xid Xid 79 on GPU 3 [+gpu.ecc_errors, gpu.nvlink]"
    assert found.passed == {"gpu.count"}
    assert found.lines == (
        "ERROR gpu.ecc_errors: nvidia-smi output cut short",
        "FAIL gpu.xid: Xid 79 on GPU 3",
        "FAIL gpu.nvlink: GPU 3: 0 of 18 links",
    )


def test_an_error_without_a_failure_is_a_problem_too_and_says_gpulab_cannot_tell() -> None:
    found = reason.finding(node(PASS, ERROR))
    assert not found.healthy
    assert found.reason == "gpulab: gpu.ecc_errors cannot tell: nvidia-smi output cut short"


def test_passes_and_warnings_are_healthy_and_skips_do_not_count_as_seen() -> None:
    found = reason.finding(node(PASS, WARN, SKIP))
    assert found.healthy and found.passed == {"gpu.count", "gpu.temperature"}
    assert found.reason == "ok: gpu.count, gpu.temperature"


def test_a_node_not_assessed_or_with_every_check_skipped_is_not_called_healthy() -> None:
    unreachable = reason.finding(node(error="no NVIDIA tools on gpu-01: nvidia-smi is not installed or not on PATH"))
    assert not unreachable.healthy
    assert unreachable.reason.startswith("gpulab: not assessed: no NVIDIA tools on gpu-01")
    blind = reason.finding(node(SKIP))
    assert not blind.healthy and blind.reason == "gpulab: nothing seen: gpu.row_remap skipped"
    assert not reason.finding(node()).healthy


@pytest.mark.parametrize("limit", [16, 40, 64, MAX_REASON_BYTES])
def test_a_long_reason_is_cut_to_the_limit_in_bytes_keeping_the_prefix_and_the_check(limit: int) -> None:
    saw = "Xid 79 on PCI 0000:5d:00: GPU has fallen off the bus " + "é€" * 80
    text = reason.reason("gpu.xid", saw, limit=limit)
    assert len(text.encode("utf-8")) <= limit
    text.encode("utf-8").decode("utf-8")  # cut at a character boundary
    assert text.startswith("gpulab: gpu.") and text.endswith("...")
    if limit >= 40:
        assert text.startswith("gpulab: gpu.xid Xid 79")


def test_what_the_check_saw_is_cut_before_the_list_of_the_other_failing_checks() -> None:
    others = ("gpu.count", "gpu.nvlink")
    text = reason.reason("gpu.xid", "Xid 79 " + "x" * 300, others)
    assert len(text.encode()) <= MAX_REASON_BYTES
    assert text.startswith("gpulab: gpu.xid Xid 79 xxx") and text.endswith("... [+gpu.count, gpu.nvlink]")
    many = tuple(f"check.number_{i}" for i in range(20))
    crowded = reason.reason("gpu.xid", "Xid 79 on GPU 3", many)
    assert len(crowded.encode()) <= MAX_REASON_BYTES
    assert crowded.startswith("gpulab: gpu.xid Xid 79") and crowded.endswith("[+20 more]")


def test_node_output_in_a_reason_is_one_visible_line_without_quotes_or_credentials() -> None:
    hostile = 'Xid 79\x1b[2J\ngpulab: ok\u202e "token=s3cret"'
    text = reason.reason("gpu.xid", hostile)
    assert "\x1b" not in text and "\n" not in text and "\u202e" not in text
    assert '"' not in text and "s3cret" not in text
    assert text == "gpulab: gpu.xid Xid 79\\e[2J\\ngpulab: ok\\u202e 'token=***"


def test_a_reason_is_gpulabs_by_its_prefix_and_names_a_check_only_when_gpulab_has_it() -> None:
    assert reason.is_gpulab("gpulab: gpu.xid Xid 79")
    assert not reason.is_gpulab("maintenance") and not reason.is_gpulab(None) and not reason.is_gpulab("")
    assert not reason.is_gpulab("Not responding: gpulab: gpu.xid")
    assert reason.check_named("gpulab: gpu.xid Xid 79 [+gpu.count]") == "gpu.xid"
    assert reason.check_named("gpulab: no verdict within 40s: a GPU tool hung") is None
    assert reason.check_named("maintenance gpu.xid") is None


def test_a_stalled_run_and_a_run_that_cannot_start_are_problems_with_their_own_reasons() -> None:
    assert reason.stalled(8).reason == "gpulab: no verdict within 8s: a GPU tool hung"
    bad = reason.broken("no profile 'hgx-h1000'", bad_input=True)
    assert not bad.healthy and bad.bad_input
    assert bad.reason == "gpulab: cannot run: no profile 'hgx-h1000'"
