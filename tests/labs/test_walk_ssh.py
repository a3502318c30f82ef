"""The lab walk over SSH: every lab that claims real hardware, run through its playbooks on loopback nodes.

Each node of the bed (tests/sshbed.py) is a real sshd on 127.0.0.1 whose sessions find the simulator's tool
shims first on their PATH; the files a real node keeps under / live in the node's own directory
(``GPULAB_SIM_ROOT``), which the playbooks reach through their ``nccl_conf`` variable. For each lab:

- the node goes back to the lab's fixture;
- ``lab start`` runs the setup playbook through ansible-runner over real SSH, host keys checked against the
  bed's known_hosts; the grade, captured over SSH, must not pass, and must fail check for check as the same
  lab started on the simulator does (so the playbook and the simulated scenario set up the same lab);
- the solve playbook must bring the grade to 100 %;
- the reset playbook must give back the fixture: the state file as a fresh one, the node's files as before.

The nodes are strict, as ``gpulab sim init`` makes them: their daemons and nvidia_drm hold the GPUs, so a
playbook that resets a GPU or changes an A100's MIG mode must drain first (playbooks/tasks/gpu_drain.yml).

One documented exception, the labs that reload a kernel module: nccl-402 (``modprobe -r`` then ``modprobe
nvidia_peermem``) and the labs whose playbooks drain the GPUs, drv-301, mig-201 and mig-302 (the drain
unloads nvidia_drm and loads it again). A reload puts the module back at the top of lsmod (the most recently
loaded first) and leaves its load line in the kernel log ("nvidia-peermem nv_mem_client_init:VERSION
loaded", "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver ..."). A real reload does both, and
nothing a playbook runs can remove a dmesg line; for those labs the modules are compared as a set and the
kernel log must be the fixture's plus only such lines. Nothing else is ignored.

The test inventory stands in for what root gives on a real node: ``ansible_become: false`` (the bed's sshd
runs as the test user; the simulated tools see root through ``GPULAB_SIM_EUID=0``), and the interpreter is
this venv's Python (interpreter discovery on a developer machine can pick a pyenv shim that does not run).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.labs import capture as labcapture
from assessor.labs import grading, lifecycle
from assessor.labs.drivers import ansible as ansible_driver
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, find_lab, load_catalogue
from assessor.labs.model import Lab
from assessor.sim import config_root, faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps, load_state, save_state, without_history
from assessor.targets import TargetOptions
from tests.support.sshbed import Node, SshBed, sshd_available

REAL_LABS = [lab for lab in load_catalogue(default_root()).labs if not lab.is_design and "real" in lab.runs_on]
# The node's own /etc/nccl.conf on the DGX A100 nodes: the playbooks must keep it and put it back. The H100
# nodes have none: there the playbooks must remove the file they created.
SITE_NCCL_CONF = "# NCCL settings of this site (the image's defaults apply)\n"
# Labs whose playbooks reload a kernel module, and the kernel log line each reload leaves.
RELOAD_LINES: dict[str, tuple[str, ...]] = {
    "nccl-402": ("nvidia-peermem nv_mem_client_init:",),
    "drv-301": ("nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver",),
    "mig-201": ("nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver",),
    "mig-302": ("nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver",),
}


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """One node per fixture the real labs use, plus one kept for host-key tests (no cached connection)."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("labbed")).setup(0)
    for fixture in sorted({lab.fixture for lab in REAL_LABS if lab.fixture}):
        bed.add_node(fixture, fixture, env={"GPULAB_SIM_EUID": "0"}, sim_root=True)
    bed.add_node("keys", "hgx-h100", env={"GPULAB_SIM_EUID": "0"}, sim_root=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def node_of(bed: SshBed, name: str) -> Node:
    return next(n for n in bed.nodes if n.name == name)


def spec(bed: SshBed, node: Node) -> str:
    return f"ssh://{bed.user}@127.0.0.1:{node.port}"


def options(bed: SshBed, **kw: Any) -> TargetOptions:
    return TargetOptions(identity=str(bed.client_key), known_hosts=str(bed.known_hosts), **kw)


def host_vars(node: Node) -> dict[str, Any]:
    assert node.root is not None
    return {
        "nccl_conf": str(node.root / "etc" / "nccl.conf"),
        "node_root": str(node.root),  # where the node's / is, for playbooks that write several of its files
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
    }


def pristine(node: Node) -> None:
    """The node as its fixture ships, with its own files (a site nccl.conf on the DGX A100 nodes)."""
    assert node.root is not None
    assert node.fixture is not None
    save_state(load_fixture(node.fixture, host=node.name, in_use=True), node.state)  # strict, as sim init makes it
    for path in sorted(node.root.rglob("*"), reverse=True):
        if path.is_file():
            path.unlink()
    if node.fixture == "dgx-a100":
        (node.root / "etc" / "nccl.conf").write_text(SITE_NCCL_CONF)
    state = load_state(node.state)
    if "nvidia-fabricmanager.service" in state.services:  # the package's config, as an installed node has it
        config = config_root.default_files(state)[config_root.FABRIC_MANAGER_CFG]
        config_root.write_node_file(node.root, config_root.FABRIC_MANAGER_CFG, config)


def files(root: Path | None) -> dict[str, str]:
    assert root is not None
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def grade(lab: Lab, target: str, opts: TargetOptions | None = None) -> Grade:
    facts = labcapture.capture_facts(lab, target, timeout=60, options=opts)
    now = dt.datetime.now(dt.UTC)
    return grading.grade_facts(lab, facts, graded_at=now, started_at=now)


def outcome(g: Grade) -> list[tuple[str, str, float]]:
    return [(s.check, s.status, s.earned) for s in g.scores]


def explain(g: Grade) -> str:
    return "; ".join(f"{s.check} {s.status} {s.earned:g}/{s.points:g}: {s.message}" for s in g.scores)


def simulated_start(lab: Lab, tmp_path: Path) -> Grade:
    """The same lab started on a simulated node through its scenario (faults and commands), graded."""
    assert lab.fixture is not None
    path = tmp_path / "sim-node.json"
    save_state(load_fixture(lab.fixture, host="sim-node", in_use=True), path)
    lifecycle.start(lab, f"mock:{path}")
    return grade(lab, f"mock:{path}")


def module_reloaded(state: dict[str, Any], fresh: dict[str, Any], lines: tuple[str, ...]) -> dict[str, Any]:
    """``state`` with what a real module reload leaves behind undone (see the module docstring)."""
    out = json.loads(json.dumps(state))
    extra = out["kernel_log"][len(fresh["kernel_log"]) :]
    assert out["kernel_log"][: len(fresh["kernel_log"])] == fresh["kernel_log"]
    assert extra and all(any(marker in line for marker in lines) for line in extra), extra
    out["kernel_log"] = fresh["kernel_log"]
    order = [m["name"] for m in fresh["modules"]]
    out["modules"] = sorted(out["modules"], key=lambda m: order.index(m["name"]))
    for module in out["modules"]:
        module["used_by"] = sorted(module["used_by"])
    return out


def assert_back_to_fixture(lab: Lab, node: Node) -> None:
    assert lab.fixture is not None
    fresh = dumps(load_fixture(lab.fixture, host=node.name, in_use=True))
    now = dumps(load_state(node.state))
    if lab.id in RELOAD_LINES:
        fresh_doc = without_history(json.loads(fresh))
        for module in fresh_doc["modules"]:
            module["used_by"] = sorted(module["used_by"])
        reloaded = module_reloaded(without_history(json.loads(now)), fresh_doc, RELOAD_LINES[lab.id])
        assert reloaded == fresh_doc
        return
    # The clock and units' "since" record when things happened, not what the node is (assessor.sim.state).
    assert without_history(json.loads(now)) == without_history(json.loads(fresh))


def test_the_labs_that_claim_real_hardware_are_walked() -> None:
    assert len(REAL_LABS) >= 13
    assert {lab.fixture for lab in REAL_LABS} == {"dgx-a100", "hgx-h100", "pcie-l40s"}


@pytest.mark.parametrize("lab", REAL_LABS, ids=[lab.id for lab in REAL_LABS])
def test_start_fails_solve_passes_reset_restores_over_ssh(bed: SshBed, lab: Lab, tmp_path: Path) -> None:
    assert lab.fixture is not None
    node = node_of(bed, lab.fixture)
    pristine(node)
    before = files(node.root)
    target, opts, hv = spec(bed, node), options(bed), host_vars(node)

    assert lifecycle.start(lab, target, opts, host_vars=hv) == [f"setup playbook {lab.id}/setup.yml ran on 127.0.0.1"]
    started = grade(lab, target, opts)
    assert not started.passed, f"{lab.id} passes at start over SSH: {explain(started)}"
    graded = {c.id for c in lab.checks}
    for check_id in {faults.get(step.fault).check for step in lab.faults} & graded:
        scores = [s for s in started.scores if s.check == check_id]
        assert any(s.credit < 1 for s in scores), f"{lab.id}: {check_id} does not fail at start: {explain(started)}"
    simulated = simulated_start(lab, tmp_path)
    assert outcome(started) == outcome(simulated), f"over SSH: {explain(started)}\nsimulated: {explain(simulated)}"

    lifecycle.solve(lab, target, opts, host_vars=hv)
    solved = grade(lab, target, opts)
    assert solved.percent == 100.0, f"{lab.id} after the solve playbook: {explain(solved)}"

    lifecycle.reset(lab, target, opts, host_vars=hv)
    assert files(node.root) == before
    assert_back_to_fixture(lab, node)


# ---- a start over SSH records the baseline, as on the simulator ---------------------------------


def with_held_task(lab: Lab) -> tuple[Lab, str]:
    """``lab`` with one more task check, worth 25 points, that already holds when the lab starts (its first
    guard made a task), and that check's id: the baseline must keep it from earning anything. Built from the
    lab's source too, so the candidate's variant (rebuilt from the source) keeps it."""
    import copy
    from dataclasses import replace

    first = next(i for i, c in enumerate(lab.checks) if c.is_guard)
    source = copy.deepcopy(lab.source)
    source["grading"]["checks"].append({**source["grading"]["checks"][first], "role": "task", "points": 25})
    held = replace(lab.checks[first], role="task", points=25.0)
    return replace(lab, source=source, checks=(*lab.checks, held)), held.id


# One lab: what records the baseline (lifecycle.start_and_record) is the same for every lab and playbook; the
# playbooks of every real lab run in the walk above.
@pytest.mark.parametrize("lab_id", ["drv-101"])
def test_a_start_over_ssh_records_a_baseline_so_doing_nothing_scores_0(
    bed: SshBed, lab_id: str, tmp_path: Path
) -> None:
    shipped = find_lab(lab_id)
    lab, held_id = with_held_task(shipped)
    assert lab.fixture is not None
    node = node_of(bed, lab.fixture)
    pristine(node)
    target, opts, hv, db = spec(bed, node), options(bed), host_vars(node), str(tmp_path / "attempts.db")
    held = grading.check_key(len(shipped.checks), lab.checks[-1])

    _steps, begun = lifecycle.start_and_record(lab, target, opts, candidate="alice", db=db, host_vars=hv, timeout=60)
    tasks = {grading.check_key(i, c): 0.0 for i, c in enumerate(shipped.checks) if not c.is_guard}
    assert begun.baseline == {**tasks, held: 1.0}

    idle, failure = lifecycle.grade_and_record(lab, candidate="alice", spec=target, db=db, options=opts, timeout=60)
    assert failure is None and idle.recorded and idle.started_at is not None
    assert idle.percent == 0.0, explain(idle)
    extra = idle.scores[-1]
    assert (extra.check, extra.status, extra.earned, extra.note) == (held_id, "pass", 0.0, grading.ALREADY_TRUE)

    lifecycle.solve_and_record(lab, target, opts, solved_by="instructor", db=db, host_vars=hv)
    solved, _ = lifecycle.grade_and_record(shipped, candidate="alice", spec=target, db=db, options=opts, timeout=60)
    assert solved.percent == 100.0, explain(solved)
    solved, _ = lifecycle.grade_and_record(lab, candidate="alice", spec=target, db=db, options=opts, timeout=60)
    assert solved.percent == 80.0 and solved.scores[-1].note == grading.ALREADY_TRUE, explain(solved)


# ---- the SSH settings reach Ansible ----------------------------------------------------------


def test_an_unknown_host_key_is_refused_and_accept_new_remembers_it(bed: SshBed, tmp_path: Path) -> None:
    node = node_of(bed, "keys")
    pristine(node)
    lab = find_lab("health-101")
    known = tmp_path / "known_hosts"
    known.write_text("")
    refused = TargetOptions(identity=str(bed.client_key), known_hosts=str(known))
    with pytest.raises(
        lifecycle.StepFailed, match=r"health-101/setup\.yml failed on 127\.0\.0\.1: task .*(?i:host key)"
    ):
        lifecycle.start(lab, spec(bed, node), refused, host_vars=host_vars(node))
    assert load_state(node.state).services["nvidia-dcgm.service"].active_state == "active"  # nothing ran

    accepting = TargetOptions(identity=str(bed.client_key), known_hosts=str(known), accept_new_host_keys=True)
    lifecycle.start(lab, spec(bed, node), accepting, host_vars=host_vars(node))
    assert load_state(node.state).services["nvidia-dcgm.service"].active_state == "inactive"
    # ssh wrote the node's key to the first known_hosts file named (the host part may be hashed)
    key = node.known_hosts_line().split()[1:]
    assert [line.split()[1:] for line in known.read_text().splitlines()] == [key]


def test_a_failed_task_is_named_with_its_message(bed: SshBed) -> None:
    node = node_of(bed, "hgx-h100")
    pristine(node)  # no MIG anywhere: the solution's first step has nothing to destroy
    with pytest.raises(lifecycle.StepFailed) as err:
        lifecycle.solve(find_lab("mig-402"), spec(bed, node), options(bed), host_vars=host_vars(node))
    assert str(err.value) == (
        "solve playbook mig-402/solve.yml failed on 127.0.0.1: "
        "task 'Destroy the compute instances on GPU 0': No MIG-enabled devices found. (exit 6)"
    )


def gpulab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr


def test_cli_starts_grades_and_resets_a_host_of_an_inventory(bed: SshBed, tmp_path: Path) -> None:
    node = node_of(bed, "hgx-h100")
    pristine(node)
    inventory = bed.inventory(tmp_path / "lab.yml", [node])
    hv = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in host_vars(node).items())
    inventory.write_text(inventory.read_text().replace("  children:\n", hv + "  children:\n"))
    reach = ["--inventory", str(inventory), "--target", node.name, "--known-hosts", str(bed.known_hosts)]
    db = ["--db", str(tmp_path / "attempts.db")]

    code, out = gpulab("lab", "start", "health-101", *reach, *db)
    assert code == 0, out
    code, out = gpulab("lab", "grade", "health-101", *reach, *db, "--json")
    assert code == 1, out
    doc = json.loads(out)
    assert {s["check"]: s["status"] for s in doc["checks"]}["services.active"] == "fail"
    assert doc["host"] == node.name

    code, out = gpulab("lab", "reset", "health-101", *reach)
    assert (code, out.strip()) == (0, "reset playbook health-101/reset.yml ran on hgx-h100")
    code, out = gpulab("lab", "grade", "health-101", *reach, *db, "--json")
    assert code == 0 and json.loads(out)["percent"] == 100.0


def test_cli_grade_over_ssh_uses_the_given_key_and_known_hosts(bed: SshBed, tmp_path: Path) -> None:
    node = node_of(bed, "hgx-h100")
    pristine(node)
    db = ["--db", str(tmp_path / "attempts.db")]
    target = ["--target", spec(bed, node), "--identity", str(bed.client_key)]
    code, out = gpulab("lab", "grade", "health-101", *target, "--known-hosts", str(bed.known_hosts), *db, "--json")
    assert code == 0 and json.loads(out)["percent"] == 100.0, out
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    code, out = gpulab("lab", "grade", "health-101", *target, "--known-hosts", str(empty), *db)
    assert code != 0 and "host key" in out.lower(), out


# ---- connection settings, no SSH needed ------------------------------------------------------


def test_ssh_target_becomes_ansible_connection_vars_with_strict_host_keys() -> None:
    opts = TargetOptions(identity="/keys/id_ed25519", known_hosts="/lab/known_hosts")
    host, hv = ansible_driver.ssh_host_vars("ssh://alice@gpu07.lab:2222", opts)
    assert host == "gpu07.lab"
    assert hv == {
        "ansible_host": "gpu07.lab",
        "ansible_port": 2222,
        "ansible_user": "alice",
        "ansible_ssh_private_key_file": "/keys/id_ed25519",
        "ansible_ssh_common_args": (
            "-o StrictHostKeyChecking=yes -o 'UserKnownHostsFile=/lab/known_hosts ~/.ssh/known_hosts'"
        ),
    }


def test_accept_new_host_keys_is_accept_new_not_no() -> None:
    args = ansible_driver.ssh_common_args(TargetOptions(accept_new_host_keys=True))
    assert args == "-o StrictHostKeyChecking=accept-new"


def test_a_password_in_the_target_is_refused_before_anything_runs() -> None:
    with pytest.raises(InputError, match=r"no passwords in a target"):
        lifecycle.start(find_lab("health-101"), "ssh://root:hunter2@gpu07.lab")


def test_an_inventory_target_must_be_one_of_its_hosts(tmp_path: Path) -> None:
    inventory = tmp_path / "lab.yml"
    inventory.write_text("all:\n  hosts:\n    gpu01: {ansible_host: 10.0.0.1}\n")
    with pytest.raises(InputError, match=r"gpu02"):
        lifecycle.start(find_lab("health-101"), "gpu02", inventory=str(inventory))
    with pytest.raises(InputError, match=r"--target names one host of the inventory, not ssh://gpu01"):
        lifecycle.start(find_lab("health-101"), "ssh://gpu01", inventory=str(inventory))
