"""A lab's life on a simulated node: start breaks it, grade fails, solve fixes it, grade passes, reset restores it."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.capture import run as capture
from assessor.errors import InputError
from assessor.labs import capture as labcapture
from assessor.labs import grading, lifecycle, loader
from assessor.labs.attempts import now
from assessor.labs.drivers import sim as sim_driver
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps, load_state, save_state
from tests.labs.conftest import DATA


def _grade(lab_id: str, spec: str) -> grading.Grade:
    lab = loader.find_lab(lab_id, DATA)
    return grading.grade_facts(lab, labcapture.capture_facts(lab, spec), graded_at=now(), started_at=None)


def test_ib_lab_start_fails_solve_passes_reset_restores(tmp_path: Path):
    node = tmp_path / "node.json"
    save_state(load_fixture("dgx-a100", host="lab07"), node)
    lab = loader.find_lab("ib-301", DATA)
    spec = f"mock:{node}"

    log = lifecycle.start(lab, spec)
    assert any("ib-port-down injected" in line for line in log)
    assert load_state(node).node_id  # the started node has an id of its own
    broken = _grade("ib-301", spec)
    assert [(s.check, s.status) for s in broken.scores] == [("ib.ports_active", "fail"), ("ib.peermem", "fail")]
    assert "mlx5_3" in broken.scores[0].message
    assert not broken.passed

    lifecycle.solve(lab, spec)
    half = _grade("ib-301", spec)  # the module is back; the port is the data centre's
    assert [(s.check, s.status) for s in half.scores] == [("ib.ports_active", "fail"), ("ib.peermem", "pass")]
    faults.repair(node, "ib-port-down", ca="mlx5_3")
    fixed = _grade("ib-301", spec)
    assert fixed.percent == 100.0 and fixed.passed

    lifecycle.reset(lab, spec)
    # host kept, strict (the daemons hold the GPUs), all else fresh
    assert dumps(load_state(node)) == dumps(load_fixture("dgx-a100", host="lab07", in_use=True))


def test_start_begins_from_the_fixture_even_on_a_changed_node(tmp_path: Path):
    node = tmp_path / "node.json"
    state = load_fixture("dgx-a100")
    state.gpu(2).persistence_mode = False  # leftover from an earlier lab
    save_state(state, node)
    lifecycle.start(loader.find_lab("ib-301", DATA), f"mock:{node}")
    assert load_state(node).gpu(2).persistence_mode is True


def test_start_creates_a_missing_state_file_from_the_lab_fixture(tmp_path: Path):
    node = tmp_path / "new" / "node.json"
    lifecycle.start(loader.find_lab("ib-301", DATA), f"mock:{node}")
    assert load_state(node).fixture == "dgx-a100"


def test_nccl_lab_solution_edits_the_nccl_environment(tmp_path: Path):
    node = tmp_path / "node.json"
    lab = loader.find_lab("nccl-301", DATA)
    lifecycle.start(lab, f"mock:{node}")
    assert load_state(node).nccl_env["NCCL_IB_HCA"] == "mlx5_99"
    broken = _grade("nccl-301", f"mock:{node}")
    assert {s.check: s.status for s in broken.scores} == {"nccl.busbw": "pass", "nccl.transport": "fail"}
    assert broken.percent == 50.0
    assert lifecycle.solve(lab, f"mock:{node}") == [
        "$ gpulab-env NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9"
    ]
    assert _grade("nccl-301", f"mock:{node}").percent == 100.0


def test_gpulab_env_unset_and_malformed(tmp_path: Path):
    node = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), node)
    sim_driver.run_line("gpulab-env -u NCCL_NVLS_ENABLE", node)
    sim_driver.run_line("gpulab-env NCCL_DEBUG=WARN", node)
    env = load_state(node).nccl_env
    assert "NCCL_NVLS_ENABLE" not in env and env["NCCL_DEBUG"] == "WARN"
    with pytest.raises(lifecycle.StepFailed, match=r"takes NAME=VALUE or -u NAME"):
        sim_driver.run_line("gpulab-env NCCL_DEBUG", node)


def test_a_refused_solution_command_says_the_lab_is_broken(tmp_path: Path):
    node = tmp_path / "node.json"
    save_state(load_fixture("dgx-a100"), node)
    with pytest.raises(lifecycle.StepFailed, match=r"`modprobe no_such_module` exited"):
        sim_driver.run_line("modprobe no_such_module", node)


def test_nccl_test_runs_over_every_gpu_of_a_four_gpu_node(tmp_path: Path, labs_copy: Path):
    lab_dir = labs_copy / "nccl" / "nccl-301"
    text = (lab_dir / "lab.yaml").read_text(encoding="utf-8")
    (lab_dir / "lab.yaml").write_text(text.replace("dgx-a100", "pcie-l40s"), encoding="utf-8")
    lab = loader.load_lab(lab_dir)
    node = tmp_path / "l40s.json"
    save_state(load_fixture("pcie-l40s"), node)
    facts = labcapture.capture_facts(lab, f"mock:{node}")
    assert facts.nccl is not None and facts.nccl.nranks == 4  # -g 4, not the capture default of 8
    assert capture.active_command(capture.nccl_test(4)).argvs[0][-2:] == ("-g", "4")


def test_identity_holds_host_serials_and_uuids(tmp_path: Path):
    facts = labcapture.capture_facts(loader.find_lab("ib-301", DATA), "mock:hgx-h100")
    ident = labcapture.identity(facts)
    fixture = load_fixture("hgx-h100")
    assert ident.host == fixture.host
    assert ident.serials == tuple(sorted(g.serial for g in fixture.gpus))
    assert ident.uuids == tuple(sorted(g.uuid for g in fixture.gpus))


def test_in_memory_node_cannot_be_started_and_says_what_to_do():
    with pytest.raises(InputError, match=r"gpulab sim init --fixture dgx-a100 --state node.json.*mock:node.json"):
        lifecycle.start(loader.find_lab("ib-301", DATA), "mock:dgx-a100")


@pytest.fixture
def real_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh://node01 answers as a real node does: no admin verb of a simulated one (no SSH connection made)."""
    from assessor.labs.drivers import sim_ssh

    monkeypatch.setattr(sim_ssh, "probe", lambda *_a, **_k: "`gpulab-node probe` answered: exit status 127")


def test_missing_playbook_on_ssh_target_is_an_input_error(real_node: None):
    lab = loader.find_lab("nccl-301", DATA)  # runs_on real, but no playbooks yet
    with pytest.raises(InputError, match=r"lab nccl-301 has no setup playbook yet"):
        lifecycle.start(lab, "ssh://node01")


def test_simulator_only_lab_refuses_a_real_node(real_node: None):
    with pytest.raises(InputError, match=r"runs on the simulator only"):
        lifecycle.start(loader.find_lab("ib-301", DATA), "ssh://node01")


def test_design_lab_has_no_node_to_solve():
    with pytest.raises(InputError, match=r"design lab: it has no node to solve"):
        lifecycle.solve(loader.find_lab("design-501", DATA), "mock:x.json")
