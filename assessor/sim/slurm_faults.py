"""A Slurm cluster on a simulated node, and what goes wrong with it, for :mod:`assessor.sim.faults`.

``slurm`` (a condition: nothing fails on it) makes the node a one-node Slurm cluster: the munge, slurmctld and
slurmd units, enabled and running (their daemons run for real inside the node, :mod:`assessor.sim.slurm_node`),
and the files they read. ``slurm-gres-short`` is the same cluster whose ``gres.conf`` names one GPU device file
fewer than ``slurm.conf``'s ``Gres=gpu:N`` (a range typed one short): slurmd reports fewer GPUs than configured
and slurmctld drains the node as INVALID_REG.
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
