"""nccl-tests runs that stopped: the failure line is the fact, and nccl.errors fails with it.

Real outputs (tests/data/corpus/nccl_tests/06-08, SOURCES.md): CUDA that cannot initialise on an HGX H100
without its fabric manager (NVIDIA/nccl-tests#264), the same under mpirun pasted from '# Using devices' on
(NVIDIA/nccl-tests#338), NCCL that cannot start after the ranks were listed (NVIDIA/nccl#473). The simulated
all_reduce_perf prints its failures in the same form.
"""

from __future__ import annotations

import json

import pytest

from assessor.checks.base import REGISTRY, run_check
from assessor.checks.result import Result
from assessor.errors import ParseError
from assessor.facts import NcclRun, NodeFacts, from_jsonable, to_jsonable
from assessor.parsers import parse
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import read_corpus

H100_NOT_INITIALISED = "nccl_tests/06_cuda_failure_system_not_yet_initialized_8xH100_g8.txt"
H20_MPIRUN = "nccl_tests/07_cuda_failure_system_not_yet_initialized_2node_h20_mpirun.txt"
NCCL_SYSTEM_ERROR = "nccl_tests/08_nccl_failure_unhandled_system_error_4x2080ti_after_devices.txt"


def _run(text: str) -> NcclRun:
    facts = parse("nccl-tests", text)
    assert facts.nccl is not None
    return facts.nccl


def _check(check_id: str, run: NcclRun) -> Result:
    return run_check(REGISTRY[check_id], NodeFacts(nccl=run), {})


# ---- the parser --------------------------------------------------------------------------------------


def test_cuda_not_initialised_on_8_h100_keeps_the_failure_line() -> None:
    run = _run(read_corpus(H100_NOT_INITIALISED))
    assert run.failure == "Test CUDA failure common.cu:941 'system not yet initialized'"
    assert (run.test, run.ngpus, run.nranks, run.rows, run.tests_output) == ("all_reduce_perf", 8, 0, [], True)


def test_a_paste_from_using_devices_on_is_still_an_nccl_tests_run() -> None:
    """No '# nThread' header, mpirun's abort blocks after: before, 'no nccl-tests results found'."""
    run = _run(read_corpus(H20_MPIRUN))
    assert run.failure == "Test CUDA failure common.cu:1030 'system not yet initialized'"
    assert run.rows == [] and run.tests_output


def test_nccl_failure_after_the_ranks_were_listed() -> None:
    run = _run(read_corpus(NCCL_SYSTEM_ERROR))
    assert run.failure == "Test NCCL failure common.cu:777 'unhandled system error'"
    assert run.nranks == 4 and {d.host for d in run.devices} == {"fastmoe"}


@pytest.mark.parametrize(
    ("line", "failure"),
    [
        # NVIDIA/nccl-tests#66: an older release, no host prefix
        ("Test CUDA failure common.cu:730 'unknown error'", "Test CUDA failure common.cu:730 'unknown error'"),
        # NVIDIA/nccl-tests#6: nccl-tests 1.x, no "Test", a full stop after the quote
        ("NCCL failure common.cu:908 'unhandled cuda error'.", "NCCL failure common.cu:908 'unhandled cuda error'"),
        # NVIDIA/nccl-tests#166: NCCL's empty last-error suffix " / " is dropped
        (
            "ubuntu: Test NCCL failure common.cu:958 "
            "'unhandled system error (run with NCCL_DEBUG=INFO for details) / '",
            "Test NCCL failure common.cu:958 'unhandled system error (run with NCCL_DEBUG=INFO for details)'",
        ),
        # mpirun --tag-output
        (
            "[1,0]<stdout>:gpu: Test CUDA failure common.cu:1030 'system not yet initialized'",
            "Test CUDA failure common.cu:1030 'system not yet initialized'",
        ),
    ],
)
def test_failure_line_forms(line: str, failure: str) -> None:
    assert _run(line + "\n").failure == failure


def test_the_cause_wins_over_a_frame_printed_before_it() -> None:
    """Ranks print at once: another rank's frame line can come before the cause."""
    text = (
        " .. HCA-63 pid 1883216: Test failure common.cu:915\n"
        "HCA-14: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '\n"
        " .. HCA-14 pid 1015577: Test failure common.cu:915\n"
    )
    assert _run(text).failure == (
        "Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'"
    )
    assert _run(" .. HCA-63 pid 1883216: Test failure common.cu:915\n").failure == "Test failure common.cu:915"


def test_nccl_warn_cuda_failure_lines_are_not_the_run_failure() -> None:
    """NCCL's own "Cuda failure 'x'" WARN (no file:line) stays a WARN line (NVIDIA/nccl-tests#208)."""
    text = "noodle-4090-0:1896106:1896121 [1] enqueue.cc:47 NCCL WARN Cuda failure 'named symbol not found'\n"
    run = _run(text)
    assert run.failure is None and run.debug.warnings


def test_text_without_results_or_a_failure_is_still_an_error() -> None:
    with pytest.raises(ParseError, match="no nccl-tests results found"):
        _run("gpu: all fine here\n")


def test_the_failure_survives_the_json_round_trip() -> None:
    facts = parse("nccl-tests", read_corpus(H100_NOT_INITIALISED))
    back = from_jsonable(NodeFacts, json.loads(json.dumps(to_jsonable(facts))))
    assert back == facts and back.nccl is not None and back.nccl.failure == facts.nccl.failure  # type: ignore[union-attr]


def test_a_complete_run_has_no_failure() -> None:
    assert _run(read_corpus("nccl_tests/02_all_reduce_1node_8xA100_sxm4_80gb_g8.txt")).failure is None


# ---- the checks --------------------------------------------------------------------------------------


def test_nccl_errors_fails_with_the_quoted_cuda_reason() -> None:
    res = _check("nccl.errors", _run(read_corpus(H100_NOT_INITIALISED)))
    assert (res.status, res.message) == (
        "fail",
        "nccl-tests stopped: Test CUDA failure common.cu:941 'system not yet initialized'",
    )
    assert res.hint and "fabric manager" in res.hint
    assert res.evidence == ["Test CUDA failure common.cu:941 'system not yet initialized'"]


def test_nccl_errors_fails_with_the_quoted_nccl_reason() -> None:
    res = _check("nccl.errors", _run(read_corpus(NCCL_SYSTEM_ERROR)))
    assert (res.status, res.message) == (
        "fail",
        "nccl-tests stopped: Test NCCL failure common.cu:777 'unhandled system error'",
    )
    assert res.hint and "NCCL_DEBUG" in res.hint


def test_nccl_errors_names_the_failure_before_the_warn_that_came_with_it() -> None:
    text = (
        "ubuntu:9621:9685 [0] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-zTYolS (size 5967872)\n"
        "ubuntu: Test NCCL failure common.cu:958 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '\n"
        " .. ubuntu pid 9621: Test failure common.cu:842\n"
    )
    res = _check("nccl.errors", _run(text))
    assert res.status == "fail"
    assert res.message == (
        "nccl-tests stopped: Test NCCL failure common.cu:958 'unhandled system error "
        "(run with NCCL_DEBUG=INFO for details)'; NCCL WARN: Error while creating shared memory segment "
        "/dev/shm/nccl-zTYolS (size 5967872)"
    )


def test_nccl_busbw_fails_a_run_that_stopped_before_measuring() -> None:
    res = _check("nccl.busbw", _run(read_corpus(H20_MPIRUN)))
    assert (res.status, res.message) == (
        "fail",
        "nccl-tests stopped before measuring: Test CUDA failure common.cu:1030 'system not yet initialized'",
    )


# ---- the simulator prints what the real tool prints --------------------------------------------------


def test_the_simulated_failure_has_the_real_form_and_grades_the_same() -> None:
    state = load_fixture("hgx-h100")
    state.gpu(0).fabric_state = "In Progress"  # the fabric manager has not trained the fabric
    result = run_tool(["all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "8"], Session(state=state, env={}))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    host = state.host
    at = lines.index(f"{host}: Test CUDA failure common.cu:1030 'system not yet initialized'")
    # as in the real run: the header, '#', '# Using devices', no rank line, the failure, its frame
    assert lines[at - 3].startswith("# nThread 1 nGpus 8 ") and lines[at - 2 : at] == ["#", "# Using devices"]
    assert lines[at + 1].startswith(f" .. {host} pid ") and lines[at + 1].endswith(": Test failure common.cu:937")
    assert len(lines) == at + 2
    res = _check("nccl.errors", _run(result.stdout))
    assert res.message == "nccl-tests stopped: Test CUDA failure common.cu:1030 'system not yet initialized'"
