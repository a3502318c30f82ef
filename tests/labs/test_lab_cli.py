"""`gpulab lab ...` and `gpulab progress` end to end, on the example labs and a simulated node."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from assessor.sim import faults


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_list_groups_by_domain_and_filters(lab_env: Path):
    code, out, _ = gpulab("lab", "list", "--json")
    assert code == 0
    assert [x["id"] for x in json.loads(out)] == ["design-501", "ib-301", "nccl-301"]
    code, out, _ = gpulab("lab", "list", "--domain", "nccl", "--json")
    assert [x["id"] for x in json.loads(out)] == ["nccl-301"]
    code, out, _ = gpulab("lab", "list")
    assert code == 0 and out.index("infiniband") < out.index("ib-301") < out.index("design")


def test_list_reports_a_broken_lab_and_exits_2(monkeypatch, labs_copy: Path):
    monkeypatch.setenv("GPULAB_LABS", str(labs_copy))
    path = labs_copy / "infiniband" / "ib-301" / "lab.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("level: 3", "level: 0"), encoding="utf-8")
    code, out, err = gpulab("lab", "list")
    assert code == 2
    assert "nccl-301" in out  # the good labs still list
    assert f"{path}:4: 0 is less than the minimum of 1" in err and "(key level)" in err


def test_show_renders_the_readme_and_hint_keeps_check_order(lab_env: Path):
    code, out, _ = gpulab("lab", "show", "ib-301")
    assert code == 0 and "One compute port of this DGX A100 lost its link" in out and "level 3 (Professional)" in out
    code, out, _ = gpulab("lab", "hint", "nccl-301")
    assert out.splitlines()[0].startswith("1. nccl.busbw (50 points): all_reduce_perf")
    assert "nccl.transport" not in out and "hint 1 of 2 revealed" in out  # one hint at a time
    code, out, _ = gpulab("lab", "hint", "nccl-301")
    assert out.splitlines()[1].startswith("2. nccl.transport (50 points)")
    code, out, _ = gpulab("lab", "hint", "nccl-301")
    assert "all 2 hints of nccl-301 are shown" in out


def test_start_grade_solve_grade_records_every_attempt(lab_env: Path, tmp_path: Path):
    node = f"mock:{tmp_path / 'node.json'}"
    code, out, _ = gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")
    assert code == 0 and "ib-301 started for ana" in out
    code, out, _ = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "ana", "--json")
    first = json.loads(out)
    assert code == 1 and first["passed"] is False and first["started_at"] is not None and first["late"] is False
    assert [c["status"] for c in first["checks"]] == ["fail", "fail"]
    assert gpulab("lab", "solve", "ib-301", "--target", node)[0] == 0
    faults.repair(tmp_path / "node.json", "ib-port-down", ca="mlx5_3")  # the data centre's part
    code, out, _ = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "ana")
    assert code == 0 and "Score 100/100 (100 %): PASSED" in out
    with attempts.opened(lab_env) as conn:
        rows = attempts.attempts(conn, "ana")
    assert [(a.lab_id, a.passed) for a in rows] == [("ib-301", False), ("ib-301", True)]
    assert rows[0].lab_hash == first["lab_sha256"] and rows[0].host == "dgx-a100-01"
    assert len(rows[0].identity["gpu_uuids"]) == 8
    # the pass came from `lab solve`: recorded, flagged, and not counted
    assert rows[0].flags == () and any("reference solution applied" in f for f in rows[1].flags)
    assert attempts.best(rows)["ib-301"].passed is False


def test_grade_after_the_time_limit_is_marked_late(lab_env: Path):
    with attempts.opened(lab_env) as conn:
        attempts.record_start(
            conn,
            candidate="bo",
            lab_id="ib-301",
            target="mock:dgx-a100",
            lab_hash="h",
            started_at=attempts.now() - dt.timedelta(minutes=31),
        )
    code, out, _ = gpulab("lab", "grade", "ib-301", "--target", "mock:dgx-a100", "--candidate", "bo")
    assert code == 0  # a fresh fixture is healthy: passed, but late
    assert "LATE: graded 31 min after the start, limit 30 min" in out
    with attempts.opened(lab_env) as conn:
        assert attempts.attempts(conn, "bo")[0].late


def test_in_memory_start_is_refused_with_exit_2(lab_env: Path):
    code, _, err = gpulab("lab", "start", "ib-301", "--target", "mock:dgx-a100")
    assert code == 2 and "gpulab sim init --fixture dgx-a100" in err


def test_design_lab_solve_and_grade_answer(lab_env: Path, tmp_path: Path):
    answer = tmp_path / "answer.yaml"
    assert gpulab("lab", "solve", "design-501", "--out", str(answer))[0] == 0
    code, out, _ = gpulab("lab", "grade", "design-501", "--answer", str(answer), "--candidate", "cy", "--json")
    assert code == 0 and json.loads(out)["percent"] == 100.0
    code, _, err = gpulab("lab", "grade", "design-501", "--candidate", "cy")
    assert code == 2 and "--answer FILE" in err


def fix_ib301(state: Path) -> None:
    """What a candidate does with the node's own tools (and a reseated cable): port up, peermem loaded."""
    from assessor.labs.drivers.sim import run_line
    from assessor.sim import faults

    run_line("modprobe nvidia_peermem", state)
    faults.repair(state, "ib-port-down", ca="mlx5_3")


def test_progress_shows_levels_explained_and_flags_other_machines(lab_env: Path, tmp_path: Path):
    state = tmp_path / "node.json"
    node = f"mock:{state}"
    gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "dee")
    gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "dee")  # fails
    fix_ib301(state)
    code, out, _ = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "dee")
    assert code == 0 and "recorded as an attempt" in out
    with attempts.opened(lab_env) as conn:  # an attempt of another machine, as an older gpulab stored it
        other = attempts.attempts(conn, "dee")[0]
        attempts.record_attempt(
            conn,
            **{
                **{k: getattr(other, k) for k in ("candidate", "lab_id", "lab_domain", "lab_level", "lab_hash")},
                **{"target": "mock:hgx-h100", "identity": attempts.Identity("hgx", ("S1",), ("GPU-1",))},
                **{"graded_at": attempts.now(), "started_at": None, "late": False, "percent": 10.0},
                **{"points": 10.0, "max_points": 100.0, "passed": False, "checks": []},
            },
        )
    code, out, _ = gpulab("progress", "--candidate", "dee", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["passed"] == ["ib-301"]
    assert doc["labs"]["ib-301"]["best_percent"] == 100.0 and doc["labs"]["ib-301"]["attempts"] == 3
    assert isinstance(doc["labs"]["ib-301"]["time_taken_s"], int)
    assert doc["levels"]["infiniband"]["level"] == 3
    assert doc["levels"]["infiniband"]["explanation"].startswith(
        "Level 3 (Professional) in infiniband: passed 1 of 1 level-3 labs"
    )
    assert doc["levels"]["nccl"]["explanation"].endswith("pass nccl-301 (1 of 1 level-3 labs needed)")
    assert list(doc["machine_mismatches"]) == ["ib-301"]
    code, out, _ = gpulab("progress", "--candidate", "dee")
    assert "WARNING" in out and "different machines" in out and "Overall level" in out
    assert "time taken" in out


def test_names_from_candidates_and_nodes_are_printed_literally(lab_env: Path, tmp_path: Path):
    """Rich markup in a candidate's name or a node's output must not be interpreted."""
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import save_state

    state = tmp_path / "node.json"
    save_state(load_fixture("dgx-a100", host="[red]evil[/red]"), state)
    who = "[bold]mallory[/bold]"
    gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", who)
    gpulab("lab", "grade", "ib-301", "--target", f"mock:{state}", "--candidate", who)
    code, out, _ = gpulab("progress", "--candidate", who)
    assert code == 0
    assert "attempts of [bold]mallory[/bold]" in out
    assert "[red]evil[/red]" in out
