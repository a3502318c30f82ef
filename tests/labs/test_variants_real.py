"""Per-candidate variants on real nodes: the lab's playbooks get the candidate's variant as ``gpulab_variant``.

mig-101 picks per candidate which GPU was left in MIG mode. Over the loopback OpenSSH test bed
(tests/support/sshbed.py: each sshd serves a simulated H100 node, as in test_walk_ssh.py), two candidates whose
variants differ each get their own GPU put in MIG mode by setup.yml, on one node at a time and as a cohort,
and the solve playbook and the grade follow each candidate's variant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import lifecycle
from assessor.labs.drivers.ansible import lab_vars
from assessor.labs.loader import find_lab, pick_variant, with_variant
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import load_state, save_state
from assessor.targets import TargetOptions
from tests.support.sshbed import Node, SshBed, sshd_available

LAB = find_lab("mig-101")
# Two candidates whose GPUs differ, and differ from the GPU a lab built for nobody uses: a playbook that
# ignored gpulab_variant (and fell back to its default) would set up neither of them.
CANDIDATES = ("alice", "dave")
GPU = {c: pick_variant(LAB, c)["gpu"] for c in CANDIDATES}


def test_the_candidates_differ_from_each_other_and_from_the_default() -> None:
    assert GPU["alice"] != GPU["dave"] and LAB.variant["gpu"] not in GPU.values(), GPU


def test_a_playbook_gets_the_lab_id_and_the_variant_it_was_built_with() -> None:
    assert lab_vars(LAB) == {"gpulab_lab": "mig-101", "gpulab_variant": {"gpu": 3}}
    assert lab_vars(with_variant(LAB, {"gpu": 5})) == {"gpulab_lab": "mig-101", "gpulab_variant": {"gpu": 5}}
    assert lab_vars(find_lab("health-101"))["gpulab_variant"] == {}


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """One simulated H100 node behind its own sshd per candidate."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("variantbed")).setup(0)
    for name in CANDIDATES:
        bed.add_node(name, "hgx-h100", env={"GPULAB_SIM_EUID": "0"}, sim_root=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def pristine(node: Node) -> None:
    save_state(load_fixture("hgx-h100", host=node.name, in_use=True), node.state)


def mig_gpus(node: Node) -> list[int]:
    """The node's GPUs in MIG mode (current or pending)."""
    return [g.index for g in load_state(node.state).gpus if g.mig_mode_current or g.mig_mode_pending]


def options(bed: SshBed) -> TargetOptions:
    return TargetOptions(identity=str(bed.client_key), known_hosts=str(bed.known_hosts))


# root on a real node: the bed's sshd runs as the test user (see test_walk_ssh.py)
HOST_VARS: dict[str, Any] = {"ansible_become": False, "ansible_python_interpreter": sys.executable}


def test_each_candidate_gets_their_own_gpu_in_mig_mode_and_their_solve_and_grade_follow_it(
    bed: SshBed, tmp_path: Path
) -> None:
    db = str(tmp_path / "attempts.db")
    opts = options(bed)
    targets = {}
    for node in bed.nodes:
        pristine(node)
        who = node.name  # each candidate has the node of their name
        targets[who] = target = f"ssh://{bed.user}@127.0.0.1:{node.port}"
        _steps, begun = lifecycle.start_and_record(
            LAB, target, opts, candidate=who, db=db, host_vars=HOST_VARS, timeout=60
        )
        assert begun.variant == {"gpu": GPU[who]}
        assert mig_gpus(node) == [GPU[who]], who
        idle, _ = lifecycle.grade_and_record(LAB, candidate=who, spec=target, db=db, options=opts, timeout=60)
        assert idle.recorded and idle.percent == 0.0
    for node in bed.nodes:
        who = node.name
        lifecycle.solve_and_record(LAB, targets[who], opts, solved_by="instructor", db=db, host_vars=HOST_VARS)
        assert mig_gpus(node) == []  # the solve playbook turned MIG off on the candidate's GPU
        solved, _ = lifecycle.grade_and_record(LAB, candidate=who, spec=targets[who], db=db, options=opts, timeout=60)
        assert solved.recorded and solved.percent == 100.0


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_a_cohort_of_real_nodes_runs_the_setup_with_each_candidates_variant(bed: SshBed, tmp_path: Path) -> None:
    lines = ["all:", "  vars:", f"    ansible_user: {bed.user}", f"    ansible_ssh_private_key_file: {bed.client_key}"]
    lines += [f"    {k}: {json.dumps(v)}" for k, v in HOST_VARS.items()]
    lines += ["  hosts:"]
    for node in bed.nodes:
        pristine(node)
        lines.append(
            f"    {node.name}: {{ansible_host: 127.0.0.1, ansible_port: {node.port}, gpulab_candidate: {node.name}}}"
        )
    inventory = tmp_path / "inv.yml"
    inventory.write_text("\n".join(lines) + "\n")
    reach = ["-i", str(inventory), "--known-hosts", str(bed.known_hosts), "--db", str(tmp_path / "a.db")]

    code, out, err = gpulab("lab", "start", "mig-101", *reach)
    assert code == 0, out + err
    assert out.splitlines()[:3] == ["alice (alice): ready", "dave (dave): ready", "mig-101 start: 2 hosts: 2 ready"]
    assert {node.name: mig_gpus(node) for node in bed.nodes} == {c: [GPU[c]] for c in CANDIDATES}
    code, out, err = gpulab("lab", "grade", "mig-101", *reach, "--json")
    assert code == 1 and {g["candidate"]: g["percent"] for g in json.loads(out)} == {"alice": 0.0, "dave": 0.0}

    code, out, err = gpulab("lab", "solve", "mig-101", *reach[:-2])
    assert code == 0, out + err
    assert [mig_gpus(node) for node in bed.nodes] == [[], []]
    code, out, err = gpulab("lab", "grade", "mig-101", *reach, "--json")
    assert code == 0 and {g["candidate"]: g["percent"] for g in json.loads(out)} == {"alice": 100.0, "dave": 100.0}
