"""Every lab grades the end state a real operator must leave (issue #19, item 1).

In-process, on a strict node started as ``gpulab lab start`` starts it: each "fixed but left broken" walk of
:mod:`tests.labs.walks_left_broken` does not pass, the check it names fails, and when that check is a guard the
grade's verdict line names it with its reason (what ``gpulab lab grade`` prints). Then the pieces the walks
rest on, one by one: a drain undone halfway, persistence that does not survive a reboot, a fabric manager whose
cause is not fixed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.checks.base import REGISTRY, run_check
from assessor.facts import KernelModule, NodeFacts, Service
from assessor.labs.gradebook import verdict
from assessor.labs.grading import Grade
from assessor.labs.model import Lab
from tests.labs.test_walk import IDS, RUNNING_NODE_IDS, SIM_LABS, act, explain, grade, passes, started_node
from tests.labs.walks import (
    A100_DRAIN,
    A100_DRAIN_FM,
    A100_RESTORE,
    FM_FIXED_CFG,
    FM_TEST_CFG,
    H100_DRAIN,
    H100_RESTORE,
    Walk,
)
from tests.labs.walks_left_broken import LEFT_BROKEN

LABS = {lab.id: lab for lab in SIM_LABS}
LEFT = [(lab, walk, check) for lab in SIM_LABS for walk, check in LEFT_BROKEN.get(lab.id, [])]


def walked(lab_id: str, walk: Walk, tmp_path: Path) -> Grade:
    """``walk`` on a node that ``gpulab lab start LAB`` started, graded."""
    lab = LABS[lab_id]
    spec = started_node(lab, tmp_path)
    return grade(lab, spec, act(walk, spec, must_work=False))


def test_every_node_lab_declares_a_left_broken_walk() -> None:
    assert set(LEFT_BROKEN) - RUNNING_NODE_IDS == set(IDS)
    assert all(LEFT_BROKEN[i] for i in IDS)
    for lab_id, walks in LEFT_BROKEN.items():
        if lab_id in RUNNING_NODE_IDS:
            continue  # tests/labs/test_walk_slurm.py checks those
        lab = LABS[lab_id]
        for _, check in walks:
            assert check in {c.id for c in lab.checks}, f"{lab_id}: {check} is not one of its checks"


@pytest.mark.parametrize(("lab", "walk", "check"), LEFT, ids=[f"{lab.id}-{i}" for i, (lab, _, _) in enumerate(LEFT)])
def test_a_node_left_broken_does_not_pass_and_the_grade_says_why(
    lab: Lab, walk: Walk, check: str, tmp_path: Path
) -> None:
    spec = started_node(lab, tmp_path)
    g = grade(lab, spec, act(walk, spec, must_work=False))
    assert not passes(lab, g) and not g.passed, f"{lab.id} left broken {walk} passes: {explain(g)}"
    failed = [(c, s) for c, s in zip(lab.checks, g.scores, strict=True) if c.id == check and s.credit < 1]
    assert failed, f"{lab.id}: {check} does not fail on the node left broken: {explain(g)}"
    lab_check, score = failed[0]
    assert score.message
    if lab_check.is_guard:
        assert f"guard broken: {check}: {score.message}" in verdict(g)


# ---- a drain undone halfway: each guard names what is still down --------------------------------------


def test_a_drain_left_undone_names_every_daemon_still_down(tmp_path: Path) -> None:
    g = walked("mig-201", [*A100_DRAIN_FM, "nvidia-smi -i 0 -mig 1"], tmp_path)  # the fabric manager stopped too
    assert g.percent == 100.0  # the task itself is done ...
    assert not g.passed  # ... and the node is not in service
    broken = {s.check: s.message for s in g.failed_guards}
    assert broken["services.active"] == (
        "nvidia-persistenced is inactive (dead, success); nvidia-fabricmanager is inactive (dead, success); "
        "nvidia-dcgm is inactive (dead, success)"
    )
    assert broken["driver.loaded"].startswith("nvidia_modeset, nvidia_drm are not loaded (lsmod)")
    assert broken["fabric.state"].startswith("nvidia-fabricmanager is inactive")
    assert "guard broken: services.active: nvidia-persistenced is inactive" in verdict(g)


def test_the_drain_undone_in_full_passes(tmp_path: Path) -> None:
    g = walked("mig-201", [*A100_DRAIN, "nvidia-smi -i 0 -mig 1", *A100_RESTORE], tmp_path)
    assert g.passed and g.percent == 100.0, explain(g)


def test_a_reset_without_the_restore_fails_health_201_whose_workload_still_runs(tmp_path: Path) -> None:
    """On an HGX H100 the drain leaves the fabric manager up: all_reduce runs, yet the node is not in service."""
    g = walked("health-201", [*H100_DRAIN, "nvidia-smi -r -i 5"], tmp_path)
    scores = {s.check: s for s in g.scores}
    assert scores["nccl.errors"].credit == 1 and scores["gpu.row_remap"].earned == 100
    assert not g.passed
    assert [s.check for s in g.failed_guards] == ["services.active", "driver.loaded"]
    g = walked("health-201", [*H100_DRAIN, "nvidia-smi -r -i 5", *H100_RESTORE], tmp_path / "again")
    assert g.passed, explain(g)


def test_health_201_with_the_fabric_manager_left_stopped_says_cuda_cannot_initialise(tmp_path: Path) -> None:
    """The workload guard quotes the line nccl-tests stopped on, not a complaint about missing results."""
    walk = [
        "systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
        "modprobe -r nvidia_drm",
        "nvidia-smi -r -i 5",
        *H100_RESTORE,
    ]
    g = walked("health-201", walk, tmp_path)
    broken = {s.check: s.message for s in g.failed_guards}
    assert broken["nccl.errors"] == "nccl-tests stopped: Test CUDA failure common.cu:1030 'system not yet initialized'"
    assert broken["services.active"] == "nvidia-fabricmanager is inactive (dead, success)"
    assert "guard broken: nccl.errors: nccl-tests stopped: Test CUDA failure" in verdict(g)


# ---- a driver reloaded by hand (drv-201): the modules the unloading took with it -----------------------

DRV_201_RELOAD: Walk = [
    "systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
    "modprobe -r nvidia_drm",
    "modprobe -r nvidia_peermem",
    "modprobe -r nvidia_uvm",
    "modprobe nvidia",
]
DRV_201_DAEMONS: Walk = ["systemctl start nvidia-persistenced nvidia-dcgm nvidia-fabricmanager"]


@pytest.mark.parametrize(
    ("reload", "message"),
    [
        ([], "nvidia_modeset, nvidia_drm, nvidia_peermem are not loaded (lsmod)"),
        (["modprobe nvidia_drm"], "nvidia_peermem is not loaded (lsmod)"),  # GPUDirect RDMA forgotten
        (["modprobe nvidia_drm nvidia_peermem"], None),
    ],
)
def test_drv_201_a_reload_by_hand_must_bring_back_what_it_unloaded(
    reload: Walk, message: str | None, tmp_path: Path
) -> None:
    g = walked("drv-201", [*DRV_201_RELOAD, *reload, *DRV_201_DAEMONS], tmp_path)
    assert g.percent == 100.0  # the mismatch is fixed either way
    broken = {s.check: s.message for s in g.failed_guards}
    if message is None:
        assert g.passed and not broken, explain(g)
    else:
        assert not g.passed and list(broken) == ["driver.loaded"]
        assert broken["driver.loaded"].startswith(message)


# ---- persistence that survives a reboot (drv-202) -------------------------------------------------------


@pytest.mark.parametrize(
    ("walk", "percent", "passed"),
    [
        (["systemctl enable --now nvidia-persistenced"], 100.0, True),
        (["systemctl enable --now nvidia-persistenced", "reboot"], 100.0, True),
        (["systemctl start nvidia-persistenced"], 50.0, False),  # runtime only: disabled at boot
        (["nvidia-smi -pm 1"], 50.0, False),  # runtime only, and not the daemon
        (["systemctl start nvidia-persistenced", "reboot"], 0.0, False),  # what the runtime fix leaves
        (["nvidia-smi -pm 1", "reboot"], 0.0, False),
        (["systemctl enable nvidia-persistenced", "reboot"], 100.0, True),  # the boot starts it
    ],
)
def test_drv_202_grades_what_survives_a_reboot(walk: Walk, percent: float, passed: bool, tmp_path: Path) -> None:
    g = walked("drv-202", walk, tmp_path)
    assert (g.percent, g.passed) == (percent, passed), explain(g)


def test_drv_202_says_a_unit_started_but_disabled_does_not_start_at_boot(tmp_path: Path) -> None:
    g = walked("drv-202", ["systemctl start nvidia-persistenced"], tmp_path)
    service = next(s for s in g.scores if s.check == "services.active")
    assert service.message == "nvidia-persistenced is disabled: it does not start at boot"


# ---- a fault a reboot clears only when its cause is fixed (drv-301) --------------------------------------


@pytest.mark.parametrize(
    ("walk", "passed"),
    [
        (["reboot"], False),
        (["systemctl restart nvidia-fabricmanager"], False),
        (["systemctl restart nvidia-fabricmanager", "reboot"], False),
        (["systemctl revert nvidia-fabricmanager", "systemctl restart nvidia-fabricmanager"], True),
        (["systemctl revert nvidia-fabricmanager", "reboot"], True),
        ([{FM_TEST_CFG: FM_FIXED_CFG}, "reboot"], True),
    ],
)
def test_drv_301_passes_only_once_the_cause_is_fixed(walk: Walk, passed: bool, tmp_path: Path) -> None:
    g = walked("drv-301", walk, tmp_path)
    assert g.passed is passed, explain(g)
    if not passed:
        assert g.percent == 0.0
        fabric = next(s for s in g.scores if s.check == "fabric.state")
        assert fabric.message.startswith("nvidia-fabricmanager is failed (exit-code)")


# ---- the check parameters the guards use ----------------------------------------------------------------


def _facts(*, modules: list[str], unit_file_state: str = "enabled") -> NodeFacts:
    return NodeFacts(
        modules=[KernelModule(name=m) for m in modules],
        services=[
            Service(
                name="nvidia-persistenced.service",
                load_state="loaded",
                active_state="active",
                sub_state="running",
                unit_file_state=unit_file_state,
            )
        ],
    )


def test_driver_loaded_with_modules_names_the_ones_missing() -> None:
    spec = REGISTRY["driver.loaded"]
    bare = _facts(modules=["nvidia", "nvidia_uvm"])
    assert run_check(spec, bare, {}).status == "pass"  # without the parameter: nvidia alone
    missing = run_check(spec, bare, {"modules": ["nvidia_modeset", "nvidia-drm"]})
    assert (missing.status, missing.message) == (
        "fail",
        "nvidia_modeset, nvidia_drm are not loaded (lsmod): the driver stack is not back in service",
    )
    assert run_check(spec, _facts(modules=["nvidia", "nvidia_drm", "nvidia_modeset"]), {"modules": ["nvidia_drm"]})
    assert run_check(spec, NodeFacts(), {"modules": ["nvidia_drm"]}).status == "skip"


def test_services_active_with_enabled_fails_a_disabled_unit() -> None:
    spec = REGISTRY["services.active"]
    params = {"names": ["nvidia-persistenced"], "enabled": True}
    on = run_check(spec, _facts(modules=[]), params)
    assert (on.status, on.message) == ("pass", "nvidia-persistenced active and enabled")
    off = run_check(spec, _facts(modules=[], unit_file_state="disabled"), params)
    assert (off.status, off.message) == ("fail", "nvidia-persistenced is disabled: it does not start at boot")
    disabled = _facts(modules=[], unit_file_state="disabled")
    assert run_check(spec, disabled, {"names": ["nvidia-persistenced"]}).status == "pass"  # active is enough
