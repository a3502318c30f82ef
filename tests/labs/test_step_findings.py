"""A lab's or a walk's step that ran a diagnostic which found the fault has done its job (assessor.labs.drivers
.found_something): dcgmi diag's 205/226 after its table. Any other non-zero status still refuses the step."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.labs.drivers import StepFailed, found_something
from assessor.labs.drivers.sim import run_line
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps
from assessor.sim.tools import Session, run_tool

TABLE = "Successfully ran diagnostic for group.\n+---------------------------+\n"


@pytest.mark.parametrize(
    ("line", "code", "output", "found"),
    [
        ("dcgmi diag -r 4", 205, TABLE, True),
        ("dcgmi diag -r long -i 0,1", 226, TABLE, True),
        ("/usr/bin/dcgmi diag -r 3", 226, TABLE, True),
        # 226 without a table: dcgmi could not run what was asked (an unknown test)
        ("dcgmi diag -r eud", 226, "Error: requested test(s): [eud] cannot find dependent package.\n", False),
        ("dcgmi diag -r 3", 254, TABLE, False),  # not a status dcgmi gives after a run
        ("dcgmi diag -r 3 | tee /root/diag.txt", 226, TABLE, False),  # a pipeline's status is tee's
        ("dcgmi health -c", 226, TABLE, False),
        ("nvidia-smi -r -i 3", 1, TABLE, False),
        ("dcgmi diag -r 'unbalanced", 226, TABLE, False),
    ],
)
def test_only_a_diagnostic_that_ran_and_found_something_is_a_finding(
    line: str, code: int, output: str, found: bool
) -> None:
    assert found_something(line, code, output) is found


def test_a_lab_step_that_runs_a_failing_diagnostic_is_not_refused_but_a_refused_one_is(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")
    state.gpu(6).ecc.volatile_uncorrected = 2
    path = tmp_path / "node.json"
    path.write_text(dumps(state), encoding="utf-8")
    assert run_tool(["dcgmi", "diag", "-r", "2"], Session(path=path)).exit_code == 205
    assert run_line("dcgmi diag -r 2", path) == "$ dcgmi diag -r 2"  # exits 205: the finding is the step's job
    with pytest.raises(StepFailed, match="exited 254"):
        run_line("dcgmi diag -r 9", path)
