"""The candidate's walk over SSH: every lab that claims real hardware, worked at the node's shell over real SSH.

:mod:`tests.labs.test_walk_ssh` proves that a lab's setup playbook leaves a node graded check for check as the
simulator's start does, and that its solve and reset playbooks work. Here the candidate's side of the
three-way walk runs over the same transport a real node has: the lab is started on the node's state (the
simulator's driver, the equivalent start), then every valid alternative and every wrong fix of
:mod:`tests.labs.walks` is typed at the node's shell through the OpenSSH client (``ssh node 'nvidia-smi ...'``)
and the grade is captured over SSH with host keys checked. Valid alternatives must pass; wrong fixes must not.

The bed's sessions run the simulator's tool shims as root (``GPULAB_SIM_EUID=0``, what sudo gives on a real
node). A node keeps the files a real one has under / in its configuration root (``<state>.d``): a candidate's
edit of ``/etc/nccl.conf`` is written there through the same SSH session.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Iterator

import pytest

from assessor.labs import capture as labcapture
from assessor.labs import grading, lifecycle
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, load_catalogue
from assessor.labs.model import Lab
from assessor.sim.config_root import populate, root_for_state
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from assessor.targets import TargetOptions
from tests.labs.walks import WALKS, Ticket, Walk
from tests.support.sshbed import Node, SshBed, sshd_available

REAL_LABS = [lab for lab in load_catalogue(default_root()).labs if not lab.is_design and "real" in lab.runs_on]


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """One strict node per fixture the real labs use; sessions act as root on the simulated tools."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("candidatebed")).setup(0)
    for fixture in sorted({lab.fixture for lab in REAL_LABS if lab.fixture}):
        bed.add_node(fixture, fixture, env={"GPULAB_SIM_EUID": "0"})
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def started(bed: SshBed, lab: Lab) -> tuple[Node, str, TargetOptions]:
    """The lab's node as ``gpulab sim init`` makes it (strict), then ``lab start`` on it."""
    node = next(n for n in bed.nodes if n.name == lab.fixture)
    assert lab.fixture is not None
    state = load_fixture(lab.fixture, host=node.name, in_use=True)
    save_state(state, node.state)
    populate(root_for_state(node.state), state)
    lifecycle.start(lab, f"mock:{node.state}")
    opts = TargetOptions(identity=str(bed.client_key), known_hosts=str(bed.known_hosts))
    return node, f"ssh://{bed.user}@127.0.0.1:{node.port}", opts


def act_over_ssh(bed: SshBed, node: Node, walk: Walk, *, must_work: bool) -> None:
    for step in walk:
        assert not isinstance(step, Ticket), "labs with a ticket run on the simulator only"
        if isinstance(step, dict):
            for path, text in step.items():
                # the node's / is its configuration root in the bed
                where = shlex.quote(str(root_for_state(node.state)) + path)
                done = bed.at_shell(node, f"cat > {where}", stdin=text)
                assert done.returncode == 0, done.stderr
            continue
        done = bed.at_shell(node, step)
        if must_work:
            assert done.returncode == 0, f"`{step}` failed at the shell: {done.stdout}{done.stderr}"


def grade_over_ssh(lab: Lab, target: str, opts: TargetOptions) -> Grade:
    facts = labcapture.capture_facts(lab, target, timeout=60, options=opts)
    now = dt.datetime.now(dt.UTC)
    return grading.grade_facts(lab, facts, graded_at=now, started_at=now)


def explain(g: Grade) -> str:
    return "; ".join(f"{s.check} {s.status} {s.earned:g}/{s.points:g}: {s.message}" for s in g.scores)


def _walks(kind: str) -> list[tuple[Lab, Walk]]:
    return [(lab, walk) for lab in REAL_LABS for walk in (WALKS[lab.id].get(kind) or [])]


ALTERNATIVES = _walks("alternatives")
WRONG = _walks("wrong")


def test_every_real_lab_has_an_alternative_and_a_wrong_fix_to_walk_over_ssh() -> None:
    assert {lab.id for lab, _ in ALTERNATIVES} == {lab.id for lab in REAL_LABS} == {lab.id for lab, _ in WRONG}


@pytest.mark.parametrize(
    ("lab", "walk"), ALTERNATIVES, ids=[f"{lab.id}-{i}" for i, (lab, _) in enumerate(ALTERNATIVES)]
)
def test_a_valid_alternative_typed_over_ssh_passes(bed: SshBed, lab: Lab, walk: Walk) -> None:
    node, target, opts = started(bed, lab)
    assert not grade_over_ssh(lab, target, opts).passed
    act_over_ssh(bed, node, walk, must_work=True)
    g = grade_over_ssh(lab, target, opts)
    assert g.passed, f"{lab.id} valid alternative {walk} fails over SSH: {explain(g)}"


@pytest.mark.parametrize(("lab", "walk"), WRONG, ids=[f"{lab.id}-{i}" for i, (lab, _) in enumerate(WRONG)])
def test_a_wrong_fix_typed_over_ssh_does_not_pass(bed: SshBed, lab: Lab, walk: Walk) -> None:
    node, target, opts = started(bed, lab)
    act_over_ssh(bed, node, walk, must_work=False)
    g = grade_over_ssh(lab, target, opts)
    assert not g.passed, f"{lab.id} wrong fix {walk} passes over SSH: {explain(g)}"
