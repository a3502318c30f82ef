"""What a candidate sees: `lab status`, `lab list` states, hints one at a time and recorded, and a start
on a node of another fixture refused."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from tests.labs.test_lab_cli import fix_ib301


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_status_shows_the_open_lab_time_left_and_hints_used(lab_env: Path, tmp_path: Path):
    code, out, _ = gpulab("lab", "status", "--candidate", "ana")
    assert code == 0 and "no open lab for ana" in out
    gpulab("lab", "start", "ib-301", "--target", f"mock:{tmp_path / 'n.json'}", "--candidate", "ana")
    gpulab("lab", "hint", "ib-301", "--candidate", "ana")
    code, out, _ = gpulab("lab", "status", "--candidate", "ana", "--json")
    (row,) = json.loads(out)["open"]
    assert row["lab"] == "ib-301" and row["hints_used"] == 1 and row["hints_available"] == 2
    assert 29 <= row["time_left_min"] <= 30
    code, out, _ = gpulab("lab", "status", "--candidate", "ana")
    assert "ib-301: on mock:" in out and "min left" in out and "hints used 1 of 2" in out


def test_list_shows_each_labs_state_and_best_score_for_the_candidate(lab_env: Path, tmp_path: Path):
    state = tmp_path / "n.json"
    gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", "ana")
    gpulab("lab", "start", "nccl-301", "--target", f"mock:{tmp_path / 'm.json'}", "--candidate", "ana")
    gpulab("lab", "grade", "nccl-301", "--target", f"mock:{tmp_path / 'm.json'}", "--candidate", "ana")
    gpulab("lab", "reset", "nccl-301", "--target", f"mock:{tmp_path / 'm.json'}")  # closed, not passed
    fix_ib301(state)
    gpulab("lab", "grade", "ib-301", "--target", f"mock:{state}", "--candidate", "ana")
    code, out, _ = gpulab("lab", "list", "--candidate", "ana", "--json")
    states = {x["id"]: (x["state"], x["best_percent"]) for x in json.loads(out)}
    assert states == {"design-501": ("not started", None), "ib-301": ("passed", 100.0), "nccl-301": ("not passed", 0.0)}
    code, out, _ = gpulab("lab", "list", "--candidate", "ana")
    assert code == 0 and "not started" in out and "passed" in out and "100 %" in out


def test_hints_come_one_at_a_time_and_their_use_is_recorded_with_the_grade(lab_env: Path, tmp_path: Path):
    node = f"mock:{tmp_path / 'n.json'}"
    gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")
    code, out, _ = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "ana", "--json")
    doc = json.loads(out)
    assert doc["hints_used"] == 0 and all("hint" not in c for c in doc["checks"])  # no free hints in a grade
    code, out, _ = gpulab("lab", "hint", "ib-301", "--candidate", "ana")
    assert "ibstat shows each port" in out and "lsmod" not in out
    code, out, _ = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "ana", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["hints_used"] == 1
    assert doc["checks"][0]["hint"].startswith("ibstat") and "hint" not in doc["checks"][1]
    with attempts.opened(lab_env) as conn:
        assert [a.hints_used for a in attempts.attempts(conn, "ana")] == [0, 1]


def test_start_on_a_node_of_another_fixture_is_refused_unless_replacing_it(lab_env: Path, tmp_path: Path):
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import load_state, save_state

    state = tmp_path / "h100.json"
    save_state(load_fixture("hgx-h100", host="gpu-07"), state)
    code, _, err = gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", "ana")
    assert code == 2 and "is a hgx-h100 node but lab ib-301 is written for dgx-a100" in err
    assert load_state(state).fixture == "hgx-h100"  # untouched
    code, out, _ = gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", "ana", "--replace-node")
    assert code == 0 and "the hgx-h100 node is replaced by a fresh dgx-a100 node" in out
    assert load_state(state).fixture == "dgx-a100"
