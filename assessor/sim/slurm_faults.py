"""A Slurm cluster on a simulated node, and what goes wrong with it, for :mod:`assessor.sim.faults`.

``slurm`` (a condition: nothing fails on it) makes the node a one-node Slurm cluster: the munge, slurmctld and
slurmd units, enabled and running (their daemons run for real inside the node, :mod:`assessor.sim.slurm_node`),
and the files they read. ``slurm-gres-short`` is the same cluster whose ``gres.conf`` names one GPU device file
fewer than ``slurm.conf``'s ``Gres=gpu:N`` (a range typed one short): slurmd reports fewer GPUs than configured
and slurmctld drains the node as INVALID_REG. ``slurm-mig-untyped`` is the same cluster after two of its GPUs
were put in MIG mode and split (the last but one into seven of the smallest MIG devices, the last into two of
the half-GPU ones, as an inference team asked): Slurm's files still describe eight whole GPUs
(``Gres=gpu:8``, ``File=/dev/nvidia[0-7]``), so no job can ask for a MIG device (``--gres=gpu:1g.10gb:1`` is
refused: "Requested node configuration is not available") and a job given one of those GPUs whole gets a GPU
it cannot run on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from assessor.sim.slurm_node import GRES_CONF, HEALTH_CHECK, MUNGE_KEY, UNITS
from assessor.sim.state import NodeState, ServiceState


def _slurm(state: NodeState) -> None:
    for unit, (description, *_rest) in UNITS.items():
        state.services[unit] = ServiceState(description=description)


def _no_slurm(state: NodeState) -> None:
    for unit in UNITS:
        state.services.pop(unit, None)


def _slurm_files(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file
    from assessor.sim.slurm_node.config import files

    for node_path, text in files(state).items():
        target = write_node_file(root, node_path, text)
        if node_path == MUNGE_KEY:  # munged refuses a key others can read, in a folder others can enter
            target.chmod(0o400)
            target.parent.chmod(0o700)
        elif node_path == HEALTH_CHECK:
            target.chmod(0o755)


def _slurm_files_gone(state: NodeState, root: Path) -> None:
    from assessor.sim.slurm_node.config import files

    for node_path in files(state):
        target = root / node_path.lstrip("/")
        if target.is_file() and not target.is_symlink():
            target.chmod(0o600)
            os.unlink(target)


def _gres_short(state: NodeState) -> None:
    _slurm(state)


def _gres_short_cause(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file
    from assessor.sim.slurm_node.config import gpu_minors, gres_conf

    _slurm_files(state, root)
    text = gres_conf(state)
    minors = gpu_minors(state)
    if len(minors) > 1:
        first, last = minors[0], minors[-1]
        text = text.replace(f"[{first}-{last}]", f"[{first}-{last - 1}]")
    write_node_file(root, GRES_CONF, text)


def _gres_right(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file
    from assessor.sim.slurm_node.config import gres_conf

    write_node_file(root, GRES_CONF, gres_conf(state))


# slurm-mig-untyped: the GPU instance profiles of each split GPU, counted from the last GPU back (profile IDs:
# the same layout on every 7-slice model, whatever its memory size names them).
MIG_SPLIT = ((-2, "19,19,19,19,19,19,19"), (-1, "9,9"))


def _mig_split(state: NodeState) -> None:
    """The split of :data:`MIG_SPLIT`, made as an admin makes it, with the node's own ``nvidia-smi``."""
    from assessor.errors import InputError
    from assessor.sim.tools import Session, run_tool

    if len(state.gpus) < len(MIG_SPLIT) or not all(state.gpus[i].mig_supported for i, _ in MIG_SPLIT):
        raise InputError(f"{state.host} has no two MIG-capable GPUs to split")
    session = Session(state=state)
    for position, profiles in MIG_SPLIT:
        index = str(state.gpus[position].index)
        for argv in (
            ["nvidia-smi", "-i", index, "-mig", "1"],
            ["nvidia-smi", "mig", "-i", index, "-cgi", profiles, "-C"],
        ):
            done = run_tool(argv, session)
            if done.exit_code != 0 or not state.gpus[position].mig_mode_current:
                raise InputError(f"{state.host}: {' '.join(argv)}: {(done.stdout + done.stderr).strip()}")


def _mig_untyped(state: NodeState) -> None:
    _slurm(state)
    _mig_split(state)


def _mig_untyped_gone(state: NodeState) -> None:
    _no_slurm(state)
    for position, _ in MIG_SPLIT:
        gpu = state.gpus[position]
        gpu.mig_instances = []
        gpu.mig_mode_current = gpu.mig_mode_pending = False


def _whole_gpus(state: NodeState) -> NodeState:
    """The node as it was before the split: what its Slurm files were written for."""
    import copy

    before = copy.deepcopy(state)
    for gpu in before.gpus:
        gpu.mig_instances = []
        gpu.mig_mode_current = gpu.mig_mode_pending = False
    return before


def _mig_untyped_cause(state: NodeState, root: Path) -> None:
    _slurm_files(_whole_gpus(state), root)


def _mig_typed(state: NodeState, root: Path) -> None:
    """Slurm's files as the split node wants them (typed GRES, a MultipleFiles= line per MIG device)."""
    _slurm_files(state, root)


def _gpu_removed(state: NodeState, gpu: Any = 3) -> None:
    """The GPU is out of the node (pulled for an RMA): the driver numbers the others from 0, as at a probe."""
    from assessor.errors import InputError

    index = int(gpu)
    if not any(g.index == index for g in state.gpus):
        raise InputError(f"{state.host} has no GPU {index}")
    state.gpus = [g for g in state.gpus if g.index != index]
    for number, g in enumerate(state.gpus):
        g.index = number
        g.minor_number = number


def _gpu_back(state: NodeState, gpu: Any = 3) -> None:
    """The replacement is in: the fixture's GPUs again."""
    from assessor.sim.fixtures import fixture_names, load_fixture

    if state.fixture in fixture_names():
        state.gpus = load_fixture(state.fixture, host=state.host).gpus


FAULTS: tuple[tuple[Any, ...], ...] = (
    (
        "slurm-gres-short",
        "a one-node Slurm cluster whose gres.conf names one GPU fewer than slurm.conf's Gres=gpu:N (File= range "
        "typed one short): the node is drained as INVALID_REG, 'gres/gpu count reported lower than configured'",
        "slurm.node_state",
        _gres_short,
        _no_slurm,
        _gres_short_cause,
        _gres_right,
    ),
    (
        "slurm-mig-untyped",
        "a one-node Slurm cluster whose last two GPUs were put in MIG mode and split (7x 1g, 2x 3g) after its "
        "Slurm files were written: slurm.conf still says Gres=gpu:8 and gres.conf File=/dev/nvidia[0-7], so "
        "no job can ask for a MIG device (--gres=gpu:1g.10gb:1: 'Requested node configuration is not available')",
        "slurm.gres",
        _mig_untyped,
        _mig_untyped_gone,
        _mig_untyped_cause,
        _mig_typed,
    ),
    (
        "gpu-removed",
        "a GPU is out of the node, pulled for an RMA (option gpu): the node boots with one GPU fewer, the others "
        "numbered from 0 (/dev/nvidia0 up), so configuration written for the whole node names one too many",
        "gpu.count",
        _gpu_removed,
        _gpu_back,
    ),
)

CONDITIONS: tuple[tuple[Any, ...], ...] = (
    (
        "slurm",
        "the node is a one-node Slurm cluster: munge, slurmctld and slurmd enabled and running (real daemons "
        "inside the node), /etc/slurm/slurm.conf, gres.conf with the node's GPUs, the site's health check",
        "",
        _slurm,
        _no_slurm,
        _slurm_files,
        _slurm_files_gone,
    ),
)
