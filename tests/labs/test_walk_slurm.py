"""The Slurm labs walked typed inside the running node, where their real munged, slurmctld and slurmd run.

As :mod:`tests.labs.test_walk_shell` walks every other simulator lab: the lab started as ``gpulab lab start``
starts it, the candidate's steps typed at the node's shell (``gpulab sim shell STATE -- bash -c LINE``), and the
grade taken on the host while the node runs (the capture asks the node's own slurmctld). For each Slurm lab:
doing nothing does not pass; the reference solution scores 100 %; every valid alternative passes; every wrong
fix and every "fixed but left broken" walk does not, the latter naming its check. Skipped, with the reason,
only where the machine lacks Slurm's programs (scripts/setup.sh installs them) or user namespaces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.labs.drivers.sim import SETTLED
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, load_catalogue
from assessor.labs.model import Lab
from assessor.sim.machine.enter import isolation_problem
from assessor.sim.slurm_node import missing_binaries
from tests.labs.test_walk import explain, passes
from tests.labs.test_walk_shell import Walked, graded, reference_walk, start_lab, walk_inside
from tests.labs.walks import WALKS, Walk
from tests.labs.walks_left_broken import LEFT_BROKEN  # every walks_*.py merged, as WALKS is

LABS = [lab for lab in load_catalogue(default_root()).labs if lab.needs_running_node]
MISSING = missing_binaries()
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"Slurm is not installed here (missing: {', '.join(MISSING)})"),
    pytest.mark.skipif(isolation_problem() is not None, reason=f"no node namespaces: {isolation_problem()}"),
]


def settled_grade(lab: Lab, walked: Walked) -> Grade:
    """The grade once the node's slurmd has registered (at most 20 s): what the daemons do after the candidate's
    last step (a health check that drains the node at slurmd's start) is in it, as by the time a candidate grades."""
    walked.shell.run(SETTLED)
    return graded(lab, walked)


def test_the_slurm_labs_are_all_walked() -> None:
    assert {lab.id for lab in LABS} >= {"slurm-101", "slurm-201", "slurm-301", "slurm-401"}
    assert all(lab.domain == "slurm" for lab in LABS)
    for lab in LABS:
        assert WALKS[lab.id]["alternatives"] and len(WALKS[lab.id]["wrong"]) >= 2, lab.id
        assert LEFT_BROKEN[lab.id], lab.id


@pytest.mark.parametrize("lab", LABS, ids=[lab.id for lab in LABS])
def test_nothing_fails_and_the_reference_typed_inside_passes(lab: Lab, tmp_path: Path) -> None:
    walked = start_lab(lab, tmp_path)
    try:
        walked.shell.run("sleep 2")  # the node's slurmd registers with its controller
        g = settled_grade(lab, walked)
        assert not passes(lab, g), f"{lab.id}: doing nothing passes: {explain(g)}"
        walk_inside(lab, reference_walk(lab), walked, must_work=True)
        g = settled_grade(lab, walked)
        assert g.percent == 100.0, f"{lab.id} after the reference typed inside: {explain(g)}\n{walked.transcript}"
    finally:
        walked.shell.stop()


WALKED = [
    (lab, walk, kind == "alternatives")
    for lab in LABS
    for kind in ("alternatives", "wrong")
    for walk in WALKS[lab.id][kind]
]


@pytest.mark.parametrize(
    ("lab", "walk", "valid"),
    WALKED,
    ids=[f"{lab.id}-{'alternative' if valid else 'wrong'}-{i}" for i, (lab, _, valid) in enumerate(WALKED)],
)
def test_a_walk_typed_inside_passes_only_when_valid(lab: Lab, walk: Walk, valid: bool, tmp_path: Path) -> None:
    walked = start_lab(lab, tmp_path)
    try:
        walked.shell.run("sleep 2")
        walk_inside(lab, walk, walked, must_work=valid)
        g = settled_grade(lab, walked)
        kind = "valid alternative" if valid else "wrong fix"
        assert passes(lab, g) is valid, f"{lab.id} {kind} {walk}: {explain(g)}\n{walked.transcript}"
    finally:
        walked.shell.stop()


LEFT = [(lab, walk, check) for lab in LABS for walk, check in LEFT_BROKEN[lab.id]]


@pytest.mark.parametrize(
    ("lab", "walk", "check"), LEFT, ids=[f"{lab.id}-left-broken-{i}" for i, (lab, _, _) in enumerate(LEFT)]
)
def test_a_fix_that_leaves_the_node_broken_does_not_pass(lab: Lab, walk: Walk, check: str, tmp_path: Path) -> None:
    walked = start_lab(lab, tmp_path)
    try:
        walked.shell.run("sleep 2")
        walk_inside(lab, walk, walked, must_work=False)
        g = settled_grade(lab, walked)
        assert not passes(lab, g), f"{lab.id} left broken {walk} passes: {explain(g)}\n{walked.transcript}"
        failing = {s.check: s for s in g.scores if s.credit < 1}
        assert check in failing, f"{lab.id}: {check} should fail: {explain(g)}"
    finally:
        walked.shell.stop()
