"""The candidate's walk over SSH: every simulator lab, worked at the node's shell over real SSH, inside the node.

Each node of the bed is a simulated node served over SSH as docs/NODE.md says: its sessions land inside the
node (``gpulab sim login`` as sshd's forced command), as ``gpulab sim shell`` does, so what the candidate
types runs at the node, with the node's own files at their real paths and its tools at theirs. The
instructor's key (the bed's client key) starts the lab through the node's admin login (``gpulab-node start``,
the simulator's driver on the node's host): the labs whose faults only the simulator can inject run over SSH
too. Then, for every lab that claims real hardware and one simulator-only lab of each domain and fixture, the first
valid alternative and the first wrong fix of :mod:`tests.labs.walks` (test_walk.py walks every one in-process and
test_walk_shell.py types them inside the node) are typed with the
candidate's key through the OpenSSH client, in one session as at a prompt (each step its own command line,
files as heredocs: :mod:`tests.support.typed_steps`), a ticket (where the remedy is physical) is handed in on the
controller, and the grade is captured over SSH with host keys checked. Valid alternatives must pass; wrong
fixes must not. A "fixed but left broken" walk of :mod:`tests.labs.walks_left_broken` (the task done, the node
left worse than it was found) is typed for one lab of each lab domain (test_walk_shell.py types every one inside
the node): it must not pass, and the check it names must fail.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assessor.labs import capture as labcapture
from assessor.labs import grading
from assessor.labs.drivers import found_something, sim_ssh
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, load_catalogue
from assessor.labs.model import Lab
from assessor.targets import TargetOptions
from tests.labs.walks import WALKS, Ticket, Walk
from tests.labs.walks_left_broken import LEFT_BROKEN
from tests.support import typed_steps
from tests.support.sshbed import Node, SshBed, sshd_available

SIM_LABS = [
    lab
    for lab in load_catalogue(default_root()).labs
    if not lab.is_design and "simulator" in lab.runs_on and not lab.needs_running_node  # Slurm: test_walk_slurm
]


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """One strict node per fixture the real labs use; sessions act as root on the simulated tools."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("candidatebed")).setup(0)
    for fixture in sorted({lab.fixture for lab in SIM_LABS if lab.fixture}):
        bed.add_node(fixture, fixture, inside=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def started(bed: SshBed, lab: Lab) -> tuple[Node, str, TargetOptions]:
    """The lab's node, started by the instructor over SSH through the node's admin login."""
    node = next(n for n in bed.nodes if n.name == lab.fixture)
    opts = TargetOptions(identity=str(bed.client_key), known_hosts=str(bed.known_hosts))
    target = f"ssh://{bed.user}@127.0.0.1:{node.port}"
    sim_ssh.apply(lab, "start", target, opts)
    return node, target, opts


def act_over_ssh(bed: SshBed, node: Node, walk: Walk, *, must_work: bool) -> Any:
    """The candidate's steps typed at the node in one SSH session with their own key (files as heredocs), each
    as its own command line; the ticket they hand in."""
    handed_in = None
    lines = []
    for step in walk:
        if isinstance(step, Ticket):
            handed_in = step.as_answer()
        else:
            lines.append(typed_steps.typed(step))
    if not lines:
        return handed_in
    done = bed.at_shell(node, "bash -s", stdin=typed_steps.script(lines), key=bed.candidate_key)
    if must_work:
        steps = typed_steps.steps_of(lines, done.stdout)
        failed = [
            f"`{s.line}` exited {s.code}: {s.output}"
            for s in steps
            if s.code and not found_something(s.line, s.code, s.output)
        ]
        assert not failed, f"a step failed at the shell: {failed}\n{done.stderr}"
    return handed_in


def grade_over_ssh(lab: Lab, target: str, opts: TargetOptions, ticket: Any = None) -> Grade:
    from assessor.labs.designs import load_answer

    answer = None
    if ticket is not None:
        import yaml

        path = Path(opts.known_hosts or ".").with_name(f"ticket-{lab.id}.yaml")
        path.write_text(yaml.safe_dump(ticket, sort_keys=False), encoding="utf-8")
        answer = load_answer(str(path), lab.answer_check_ids)
    facts = labcapture.capture_facts(lab, target, timeout=60, options=opts)
    now = dt.datetime.now(dt.UTC)
    return grading.grade_facts(lab, facts, graded_at=now, started_at=now, answer=answer)


def explain(g: Grade) -> str:
    return "; ".join(f"{s.check} {s.status} {s.earned:g}/{s.points:g}: {s.message}" for s in g.scores)


def _over_ssh(labs: list[Lab]) -> list[Lab]:
    """The labs walked over SSH: every one that claims real hardware (its walk is what a candidate on a real node
    types), and of the simulator-only ones the first of each domain and fixture (test_walk_shell.py types every
    lab's walks inside the node; over SSH what is tested is the transport, once per kind of node and domain)."""
    chosen: dict[tuple[str, str | None], Lab] = {}
    for lab in sorted(labs, key=lambda x: x.id):
        chosen.setdefault((lab.domain, lab.fixture), lab)
    kept = {lab.id for lab in chosen.values()} | {lab.id for lab in labs if "real" in lab.runs_on}
    return [lab for lab in labs if lab.id in kept]


SSH_LABS = _over_ssh(SIM_LABS)


def _walks(kind: str) -> list[tuple[Lab, Walk]]:
    """The first walk of each kind per lab: test_walk.py walks them all in-process; here the transport counts."""
    return [(lab, WALKS[lab.id][kind][0]) for lab in SSH_LABS if WALKS[lab.id].get(kind)]


ALTERNATIVES = _walks("alternatives")
WRONG = _walks("wrong")


def test_every_real_lab_has_an_alternative_and_a_wrong_fix_to_walk_over_ssh() -> None:
    assert {lab.id for lab, _ in ALTERNATIVES} == {lab.id for lab in SSH_LABS} == {lab.id for lab, _ in WRONG}
    assert {lab.id for lab in SIM_LABS if "real" in lab.runs_on} <= {lab.id for lab in SSH_LABS}
    assert {(lab.domain, lab.fixture) for lab in SSH_LABS} == {(lab.domain, lab.fixture) for lab in SIM_LABS}
    assert all(WALKS[lab.id].get("alternatives") and WALKS[lab.id].get("wrong") for lab in SIM_LABS)


@pytest.mark.parametrize(
    ("lab", "walk"), ALTERNATIVES, ids=[f"{lab.id}-{i}" for i, (lab, _) in enumerate(ALTERNATIVES)]
)
def test_a_valid_alternative_typed_over_ssh_passes(bed: SshBed, lab: Lab, walk: Walk) -> None:
    node, target, opts = started(bed, lab)  # that a started lab does not pass: test_walk.py, and the wrong fixes
    ticket = act_over_ssh(bed, node, walk, must_work=True)
    g = grade_over_ssh(lab, target, opts, ticket)
    assert g.passed, f"{lab.id} valid alternative {walk} fails over SSH: {explain(g)}"


@pytest.mark.parametrize(("lab", "walk"), WRONG, ids=[f"{lab.id}-{i}" for i, (lab, _) in enumerate(WRONG)])
def test_a_wrong_fix_typed_over_ssh_does_not_pass(bed: SshBed, lab: Lab, walk: Walk) -> None:
    node, target, opts = started(bed, lab)
    ticket = act_over_ssh(bed, node, walk, must_work=False)
    g = grade_over_ssh(lab, target, opts, ticket)
    assert not g.passed, f"{lab.id} wrong fix {walk} passes over SSH: {explain(g)}"


def _left_broken_per_domain() -> list[tuple[Lab, Walk, str]]:
    """The first "fixed but left broken" walk of one lab per lab domain (the first by id that has one):
    test_walk_shell.py types every one of them inside the node and test_walk_left_broken.py walks them all
    in-process; over SSH what is tested is that the grade through the transport sees a node left broken."""
    chosen: dict[str, tuple[Lab, Walk, str]] = {}
    for lab in sorted(SIM_LABS, key=lambda x: x.id):
        walks = LEFT_BROKEN.get(lab.id, [])
        if walks and lab.domain not in chosen:
            chosen[lab.domain] = (lab, *walks[0])
    return list(chosen.values())


LEFT = _left_broken_per_domain()


def test_every_lab_domain_has_a_left_broken_walk_over_ssh() -> None:
    assert {lab.domain for lab, _, _ in LEFT} == {lab.domain for lab in SIM_LABS}
    assert {lab.id for lab in SIM_LABS} <= set(LEFT_BROKEN)  # every lab has them (walked elsewhere)


@pytest.mark.parametrize(
    ("lab", "walk", "check"), LEFT, ids=[f"{lab.id}-left-broken-{i}" for i, (lab, _, _) in enumerate(LEFT)]
)
def test_a_fix_over_ssh_that_leaves_the_node_broken_does_not_pass(
    bed: SshBed, lab: Lab, walk: Walk, check: str
) -> None:
    node, target, opts = started(bed, lab)
    ticket = act_over_ssh(bed, node, walk, must_work=False)
    g = grade_over_ssh(lab, target, opts, ticket)
    assert not g.passed, f"{lab.id} left broken {walk} passes over SSH: {explain(g)}"
    failed = [s for s in g.scores if s.check == check and s.credit < 1]
    assert failed and failed[0].message, f"{lab.id}: {check} does not fail over SSH: {explain(g)}"
