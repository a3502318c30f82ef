"""The lab walk typed inside the node: every simulator lab entered with ``gpulab sim shell``, as a candidate does.

:mod:`tests.labs.test_walk` walks each lab by calling the simulator's Python functions on the state file. Here
the same walks are typed at the node's own shell (``gpulab sim shell STATE -- bash -c LINE``: the node in
namespaces of its own, its files at their real paths, its GPU daemons real processes): for each lab started
as ``gpulab lab start`` starts it (the lab's fixture, then :func:`assessor.labs.lifecycle.start`),

- the reference solution: its ``solution_files`` written with ``cat > PATH <<'EOF'``, then its
  ``solution_commands`` typed as they are, and its reference ticket (where the remedy is physical) handed in;
- the first valid alternative of :mod:`tests.labs.walks`;
- the first wrong but plausible fix of :mod:`tests.labs.walks`;
- every "fixed but left broken" walk of :mod:`tests.labs.walks_left_broken` (the task done, the node left worse:
  a drain not undone, a fix that does not outlive a reboot, a cause not fixed).

The node boots at the login that starts each walk and stays up; the steps are typed in one more login, each
as its own command line. Every step of
the reference and of an alternative must exit 0 and the grade must pass; a wrong fix's steps may fail (the
walk goes on, as the candidate would) and its grade must not pass; nor may a left-broken walk's, whose named check
must fail with its reason in the grade. A ticket is handed in outside the node,
written beside the state as ``lab grade --answer`` reads it. The grade is taken on the host while the node
still runs, exactly as :mod:`tests.labs.test_walk` grades; the node is stopped at the end of every walk.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from assessor.labs import lifecycle
from assessor.labs.drivers import found_something
from assessor.labs.drivers.sim import SETTLED
from assessor.labs.grading import Grade
from assessor.labs.loader import reference_answer
from assessor.labs.model import Lab
from assessor.sim.fixtures import load_fixture
from assessor.sim.machine.enter import running
from assessor.sim.machine.layout import NodePaths
from assessor.sim.state import dumps, load_state
from tests.labs.test_walk import IDS, SIM_LABS, explain, grade, passes, started_node
from tests.labs.walks import WALKS, Ticket, Walk
from tests.labs.walks_left_broken import LEFT_BROKEN
from tests.support import typed_steps
from tests.support.nodeshell import NodeShell
from tests.support.typed_steps import HEREDOC_END, typed


@dataclass
class Transcript:
    """What the candidate typed and what the node answered, for a failure message."""

    entries: list[str] = field(default_factory=list)

    def add(self, line: str, done: subprocess.CompletedProcess[str]) -> None:
        self.entries.append(
            f"$ {line}\n[exit {done.returncode}]\n--- stdout ---\n{done.stdout.rstrip()}\n"
            f"--- stderr ---\n{done.stderr.rstrip()}"
        )

    def __str__(self) -> str:
        return "\n".join(self.entries)


@dataclass
class Walked:
    spec: str
    shell: NodeShell
    transcript: Transcript = field(default_factory=Transcript)
    ticket: Path | None = None


def _retyped_once(line: str) -> str:
    """A valid walk's ``scontrol update`` typed again once when it fails, after the node has settled (its
    slurmctld answers and its slurmd has registered, 20 s at most). Slurm 22.05's scontrol exits 1 and prints
    nothing when the controller's reply is lost with errno 0 (scontrol/update_node.c returns
    slurm_get_errno()), which a loaded machine shows right after slurmctld restarts or reconfigures; and
    right after a reboot slurmctld refuses ``state=resume`` ("Invalid node state specified") until the node's
    slurmd has registered, which a loaded machine makes take seconds. A candidate who sees either waits and
    types it again; failing twice fails."""
    if not line.startswith("scontrol update ") or "\n" in line:
        return line
    return f"{line} || {{ {SETTLED}; {line}; }}"


def walk_inside(lab: Lab, steps: Walk, walked: Walked, *, must_work: bool) -> None:
    """Type ``steps`` inside the node in one login, each as its own command line (a failed one does not stop
    the others, as a candidate goes on); tickets are written beside the state."""
    state = walked.shell.state
    lines = []
    for step in steps:
        if isinstance(step, Ticket):
            walked.ticket = state.with_name("ticket.yaml")
            walked.ticket.write_text(yaml.safe_dump(step.as_answer(), sort_keys=False), encoding="utf-8")
        else:
            lines.append(_retyped_once(typed(step)) if must_work else typed(step))
    if not lines:
        return
    done = walked.shell.run(typed_steps.script(lines))
    steps = typed_steps.steps_of(lines, done.stdout)
    for step in steps:
        walked.transcript.add(step.line, subprocess.CompletedProcess(step.line, step.code, step.output, ""))
    walked.transcript.add("(stderr of the login)", subprocess.CompletedProcess("", done.returncode, "", done.stderr))
    if must_work and any(step.code and not found_something(step.line, step.code, step.output) for step in steps):
        pytest.fail(f"{lab.id}: a step of a valid walk failed inside the node:\n{walked.transcript}")


def start_lab(lab: Lab, tmp_path: Path) -> Walked:
    """The lab started as test_walk starts it, then the candidate logs in: the node boots (once per walk) and
    runs until the walk ends, so every grade is taken beside a running node, tickets-only walks included."""
    spec = started_node(lab, tmp_path)
    walked = Walked(spec, NodeShell(Path(spec.removeprefix("mock:"))))
    login = walked.shell.run("hostname")
    walked.transcript.add("hostname", login)
    if login.returncode != 0 or login.stdout != "lab-node\n":
        walked.shell.stop()
        pytest.fail(f"{lab.id}: the node did not come up as lab-node:\n{walked.transcript}")
    return walked


def graded(lab: Lab, walked: Walked) -> Grade:
    return grade(lab, walked.spec, walked.ticket)


def reference_walk(lab: Lab) -> Walk:
    """The lab's reference solution as a candidate would type it (files first, as ``lab solve`` writes them)."""
    steps: Walk = [{path: text} for path, text in lab.solution_files.items()]
    steps += list(lab.solution_commands)
    return steps


def first(kind: str) -> list[tuple[Lab, Walk]]:
    return [(lab, WALKS[lab.id][kind][0]) for lab in SIM_LABS if WALKS.get(lab.id, {}).get(kind)]


ALTERNATIVES = first("alternatives")
WRONG = first("wrong")


def test_every_lab_is_walked_inside() -> None:
    assert len(SIM_LABS) >= 20
    assert {lab.id for lab, _ in ALTERNATIVES} == set(IDS)
    assert {lab.id for lab, _ in WRONG} == set(IDS)


def test_a_file_step_is_typed_as_a_heredoc() -> None:
    line = typed({"/etc/nccl.conf": "# conf\nNCCL_DEBUG=INFO\n"})
    assert line == f"mkdir -p /etc &&\ncat > /etc/nccl.conf <<'{HEREDOC_END}'\n# conf\nNCCL_DEBUG=INFO\n{HEREDOC_END}"
    assert typed("nvidia-smi -L") == "nvidia-smi -L"


@pytest.mark.parametrize("lab", SIM_LABS, ids=IDS)
def test_reference_solution_typed_inside_passes(lab: Lab, tmp_path: Path) -> None:
    walked = start_lab(lab, tmp_path)
    try:
        walk_inside(lab, reference_walk(lab), walked, must_work=True)
        if lab.takes_answer:
            walked.ticket = tmp_path / "reference-ticket.yaml"
            walked.ticket.write_text(reference_answer(lab), encoding="utf-8")
        g = graded(lab, walked)
        assert g.percent == 100.0, f"{lab.id} after the reference typed inside: {explain(g)}\n{walked.transcript}"
        assert passes(lab, g)
        # `lab reset` re-images the running node: it is shut down, and the state is the fixture again
        lifecycle.reset(lab, walked.spec)
        assert running(NodePaths.of(walked.shell.state)) is None
        assert lab.fixture is not None
        fresh = load_fixture(lab.fixture, host="lab-node", in_use=True)
        assert dumps(load_state(walked.shell.state)) == dumps(fresh)
    finally:
        walked.shell.stop()


WALKED = [(lab, walk, True) for lab, walk in ALTERNATIVES] + [(lab, walk, False) for lab, walk in WRONG]


@pytest.mark.parametrize(
    ("lab", "walk", "valid"),
    WALKED,
    ids=[f"{lab.id}-{'alternative' if valid else 'wrong'}" for lab, _, valid in WALKED],
)
def test_a_walk_typed_inside_passes_only_when_valid(lab: Lab, walk: Walk, valid: bool, tmp_path: Path) -> None:
    """The first valid alternative must pass (every step working); the first wrong fix must not."""
    walked = start_lab(lab, tmp_path)
    try:
        walk_inside(lab, walk, walked, must_work=valid)
        g = graded(lab, walked)
        kind = "valid alternative" if valid else "wrong fix"
        assert passes(lab, g) is valid, f"{lab.id} {kind} {walk}: {explain(g)}\n{walked.transcript}"
    finally:
        walked.shell.stop()


LEFT = [(lab, walk, check) for lab in SIM_LABS for walk, check in LEFT_BROKEN.get(lab.id, [])]


def test_every_lab_has_a_left_broken_walk_typed_inside() -> None:
    assert {lab.id for lab, _, _ in LEFT} == set(IDS)


@pytest.mark.parametrize(
    ("lab", "walk", "check"),
    LEFT,
    ids=[f"{lab.id}-left-broken-{i}" for i, (lab, _, _) in enumerate(LEFT)],
)
def test_a_fix_typed_inside_that_leaves_the_node_broken_does_not_pass(
    lab: Lab, walk: Walk, check: str, tmp_path: Path
) -> None:
    """The task done, the node left worse than it was found: not passed, and the grade says why."""
    walked = start_lab(lab, tmp_path)
    try:
        walk_inside(lab, walk, walked, must_work=False)
        g = graded(lab, walked)
        assert not passes(lab, g), f"{lab.id} left broken {walk} passes: {explain(g)}\n{walked.transcript}"
        failed = [s for s in g.scores if s.check == check and s.credit < 1]
        assert failed and failed[0].message, f"{lab.id}: {check} does not fail: {explain(g)}\n{walked.transcript}"
    finally:
        walked.shell.stop()
