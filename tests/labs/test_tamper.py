"""The seven ways a pass was faked (issue 11), each refused or flagged; and idle candidates score 0.

Each test plays the candidate: `lab start` on a simulated node in a state file, then the trick, then
`lab grade`. A grade that does not belong to the start is shown but not recorded; tamper evidence is
recorded as a flag and a flagged attempt never counts towards a level.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from assessor.labs.capture import node_flags
from assessor.sim import faults
from tests.labs.test_lab_cli import fix_ib301


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def grade_json(lab: str, target: str, who: str) -> tuple[int, dict]:
    code, out, _ = gpulab("lab", "grade", lab, "--target", target, "--candidate", who, "--json")
    return code, json.loads(out)


@pytest.fixture
def started(lab_env: Path, tmp_path: Path) -> Path:
    """ib-301 started by ana on a simulated node in node.json; returns the state file."""
    state = tmp_path / "node.json"
    code, _, err = gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", "ana")
    assert code == 0, err
    return state


def recorded(db: Path, who: str = "ana") -> list[attempts.Attempt]:
    with attempts.opened(db) as conn:
        return attempts.attempts(conn, who)


def test_a_candidate_who_does_nothing_scores_zero(started: Path, lab_env: Path):
    code, doc = grade_json("ib-301", f"mock:{started}", "ana")
    assert code == 1 and doc["points"] == 0 and doc["recorded"] is True and doc["flags"] == []


def test_a_correct_fix_with_the_nodes_own_tools_is_recorded_unflagged(started: Path, lab_env: Path):
    fix_ib301(started)
    code, doc = grade_json("ib-301", f"mock:{started}", "ana")
    assert code == 0 and doc["percent"] == 100.0 and doc["recorded"] and doc["flags"] == []
    assert isinstance(doc["time_taken_s"], int) and doc["hints_used"] == 0
    assert attempts.best(recorded(lab_env))["ib-301"].passed


def test_route_1_hand_edited_state_file_is_flagged(started: Path, lab_env: Path):
    data = json.loads(started.read_text(encoding="utf-8"))
    for hca in data["ib_hcas"]:
        for port in hca["ports"]:
            port.update(state="Active", phys_state="LinkUp")
    data["modules"].append({"name": "nvidia_peermem", "size": 16384, "used_by": []})
    started.write_text(json.dumps(data, indent=2), encoding="utf-8")
    code, doc = grade_json("ib-301", f"mock:{started}", "ana")
    assert code == 0 and doc["percent"] == 100.0  # the edit "worked" ...
    assert any(f.startswith("state file edited by hand") for f in doc["flags"])  # ... and shows
    (attempt,) = recorded(lab_env)
    assert attempt.flags and not attempt.counts and "ib-301" not in attempts.best([attempt])
    _code, out, _ = gpulab("progress", "--candidate", "ana")
    assert "state file edited by hand" in out


def test_route_2_lab_solve_on_the_node_marks_later_grades(started: Path, lab_env: Path):
    assert gpulab("lab", "solve", "ib-301", "--target", f"mock:{started}")[0] == 0
    faults.repair(started, "ib-port-down", ca="mlx5_3")  # the data centre's part
    _code, doc = grade_json("ib-301", f"mock:{started}", "ana")
    assert doc["percent"] == 100.0  # the solution works ...
    assert any("reference solution applied on this node" in f for f in doc["flags"])  # ... and says so
    assert attempts.best(recorded(lab_env)) == {}
    # copying the solved state to a fresh file does not lose the mark: it travels in the stamped state
    other = started.with_name("copy.json")
    shutil.copy(started, other)
    assert any("reference solution applied" in f for f in node_flags(f"mock:{other}"))


def test_route_3_grading_a_fresh_healthy_node_instead_of_the_started_one_is_not_recorded(started: Path, lab_env: Path):
    _code, doc = grade_json("ib-301", "mock:dgx-a100", "ana")
    assert doc["passed"] is True  # shown as it is ...
    assert (
        doc["recorded"] is False
        and "graded mock:dgx-a100, but ana started ib-301 on mock:" in doc["not_recorded_because"]
    )
    assert recorded(lab_env) == []
    _code, out, _ = gpulab("lab", "grade", "ib-301", "--target", "mock:dgx-a100", "--candidate", "ana")
    assert "NOT RECORDED" in out


def test_route_4_a_replayed_snapshot_or_another_nodes_state_does_not_match_the_start(
    started: Path, lab_env: Path, tmp_path: Path
):
    from assessor.capture import snapshot
    from assessor.targets import open_target

    # another node, properly solved by someone else, replayed as a snapshot ...
    elsewhere = tmp_path / "elsewhere.json"
    gpulab("lab", "start", "ib-301", "--target", f"mock:{elsewhere}", "--candidate", "zed")
    fix_ib301(elsewhere)
    snap = snapshot.write(open_target(f"mock:{elsewhere}").snapshot(timeout=30), tmp_path / "snap")
    _code, doc = grade_json("ib-301", f"snapshot:{snap}", "ana")
    assert doc["recorded"] is False and "started ib-301 on mock:" in doc["not_recorded_because"]
    # ... or copied over the started node's state file: same path, same host, another node
    shutil.copy(elsewhere, started)
    _code, doc = grade_json("ib-301", f"mock:{started}", "ana")
    assert doc["percent"] == 100.0 and doc["recorded"] is False
    assert "not the node ib-301 was started on" in doc["not_recorded_because"]
    assert "replaced or replayed state" in doc["not_recorded_because"]
    assert recorded(lab_env) == []


def test_route_5_a_second_start_does_not_clear_late(lab_env: Path, tmp_path: Path):
    state = tmp_path / "node.json"
    node = f"mock:{state}"
    gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")
    with sqlite3.connect(lab_env) as raw:  # the start was 40 minutes ago (the limit is 30)
        past = attempts.iso(attempts.now() - dt.timedelta(minutes=40))
        raw.execute("UPDATE starts SET started_at = ?", (past,))
        raw.commit()
    with attempts.opened(lab_env) as conn:  # (re-chain, so this test is about the clock, not the edit)
        attempts._rechain(conn, "starts")
    code, out, _ = gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")
    assert code == 0 and "that clock keeps running" in out
    fix_ib301(state)
    _code, doc = grade_json("ib-301", node, "ana")
    assert doc["late"] is True and doc["started_at"] == past and doc["recorded"]
    # an instructor's reset closes the start: the next start has a clock of its own
    assert gpulab("lab", "reset", "ib-301", "--target", node)[0] == 0
    gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")
    fix_ib301(state)
    _code, doc = grade_json("ib-301", node, "ana")
    assert doc["late"] is False


def test_route_6_an_edited_attempts_database_is_flagged(started: Path, lab_env: Path):
    grade_json("ib-301", f"mock:{started}", "ana")  # 0 points, recorded
    with sqlite3.connect(lab_env) as raw:
        raw.execute("UPDATE attempts SET passed = 1, percent = 100.0, points = 100.0")
        raw.commit()
    (attempt,) = recorded(lab_env)
    assert any(f.startswith("attempts database edited by hand: attempts row 1: edited") for f in attempt.flags)
    assert attempts.best([attempt]) == {}  # never counted
    _code, out, _ = gpulab("progress", "--candidate", "ana", "--json")
    doc = json.loads(out)
    assert doc["passed"] == [] and doc["flags"] and "edited" in doc["attempts"][0]["flags"][0]
    _code, out, _ = gpulab("progress", "--candidate", "ana")
    assert "FLAG" in out and "attempts database edited by hand" in out


def test_route_6_a_removed_attempt_breaks_the_chain(started: Path, lab_env: Path):
    for _ in range(3):
        grade_json("ib-301", f"mock:{started}", "ana")
    with sqlite3.connect(lab_env) as raw:  # the first (failed) attempt disappears
        raw.execute("DELETE FROM attempts WHERE id = 1")
        raw.commit()
    with attempts.opened(lab_env) as conn:
        assert attempts.chain_breaks(conn) == {
            ("attempts", 2): "attempts row 2: a row before it was removed or changed"
        }
    assert [bool(a.flags) for a in recorded(lab_env)] == [True, False]


def test_route_7_grading_as_another_candidate_is_not_recorded_without_their_start(started: Path, lab_env: Path):
    fix_ib301(started)
    _code, doc = grade_json("ib-301", f"mock:{started}", "bob")
    assert doc["recorded"] is False and "no open `gpulab lab start ib-301` by bob" in doc["not_recorded_because"]
    assert recorded(lab_env, "bob") == []
    # bob's own start on another node does not make ana's node his
    gpulab("lab", "start", "ib-301", "--target", f"mock:{started.with_name('bob.json')}", "--candidate", "bob")
    _code, doc = grade_json("ib-301", f"mock:{started}", "bob")
    assert doc["recorded"] is False and "but bob started ib-301 on" in doc["not_recorded_because"]
    assert recorded(lab_env, "bob") == []


def test_no_start_no_attempt(lab_env: Path, tmp_path: Path):
    _code, doc = grade_json("ib-301", "mock:dgx-a100", "cy")
    assert doc["passed"] and doc["recorded"] is False and "no open" in doc["not_recorded_because"]
    assert recorded(lab_env, "cy") == []


def test_a_design_grade_belongs_to_a_start_and_a_shown_reference_answer_is_flagged(
    lab_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from assessor.reports.documents import grade_document

    monkeypatch.setattr("getpass.getuser", lambda: "ana")
    answer = tmp_path / "answer.yaml"
    assert gpulab("lab", "start", "design-501")[0] == 0
    shutil.copy(Path(__file__).parent / "data" / "design" / "design-501" / "solution.yaml", answer)
    code, out, _ = gpulab("lab", "grade", "design-501", "--answer", str(answer), "--json")
    doc = grade_document(json.loads(out))  # a valid gpulab.grade/1 document
    assert code == 0 and doc["recorded"] is True and doc["flags"] == []
    assert gpulab("lab", "solve", "design-501", "--out", str(answer))[0] == 0  # the answer shown to ana
    code, out, _ = gpulab("lab", "grade", "design-501", "--answer", str(answer), "--json")
    doc = grade_document(json.loads(out))
    assert doc["recorded"] is True and any("reference answer of design-501 shown to ana" in f for f in doc["flags"])
    assert [bool(a.flags) for a in recorded(lab_env)] == [False, True]


def test_a_simulator_command_marked_on_the_node_is_flagged(started: Path, lab_env: Path):
    from assessor.sim.state import updating

    fix_ib301(started)
    with updating(started) as state:  # what `gpulab sim repair` leaves on the node it changes
        state.marks.append("sim repair ib-port-down")
    _code, doc = grade_json("ib-301", f"mock:{started}", "ana")
    assert (
        "simulator command used on this node instead of the node's tools (`gpulab sim repair ib-port-down`)"
        in (doc["flags"])
    )


def test_a_cohort_host_backed_by_a_state_file_is_held_to_its_start(lab_env: Path, tmp_path: Path):
    """What a cohort does per host: set up, record_started, capture, grade_captured on one connection."""
    from assessor.labs import capture as labcapture
    from assessor.labs import lifecycle
    from assessor.labs.loader import find_lab

    lab = find_lab("ib-301")
    state = tmp_path / "gpu01.json"
    inventory = tmp_path / "lab.yml"
    inventory.write_text(f"all:\n  hosts:\n    gpu01: {{gpulab_target: 'mock:{state}'}}\n", encoding="utf-8")
    lifecycle.start(lab, f"mock:{state}")
    with attempts.opened(lab_env) as conn:
        begun = lifecycle.record_started(conn, lab, "gpu01", candidate="ana", inventory=str(inventory))
        assert begun.identity.node_id and begun.target.endswith("lab.yml#gpu01")
        fix_ib301(state)
        facts = labcapture.capture_facts(lab, "gpu01", inventory=str(inventory))
        grade, failure = lifecycle.grade_captured(
            lab, facts, candidate="ana", spec="gpu01", inventory=str(inventory), conn=conn
        )
        assert failure is None and grade.recorded and grade.percent == 100.0
        lifecycle.start(lab, f"mock:{state}")  # the node is set up again outside this start: a new node id
        fix_ib301(state)
        facts = labcapture.capture_facts(lab, "gpu01", inventory=str(inventory))
        grade, _ = lifecycle.grade_captured(
            lab, facts, candidate="ana", spec="gpu01", inventory=str(inventory), conn=conn
        )
        assert not grade.recorded and "replaced or replayed state" in (grade.not_recorded_because or "")
