"""Faults only an active DCGM diagnostic finds: the GPU looks healthy to every counter until a test exercises it.

``weak-hbm-row``: a GPU whose HBM has weak cells in a bank that has used up its spare rows. ECC counters, the
row remapper, ``dcgmi health`` and ``dcgmi diag -r 1..3`` all pass it: the memory plugin's patterns do not trip
those cells. Memtest's (``dcgmi diag -r 4``, or ``-r memtest``) do: memtest fails the GPU with a memory
mismatch, and the uncorrectable error its patterns provoke finds no spare row left, so the remap fails (Xid 48,
``Remapping Failure Occurred: Yes``; :func:`assessor.sim.tools.dcgmi_diag._memtest_aftermath`). Nothing on the
node repairs it: the GPU is returned (docs/TICKETS.md, ``row-remap-failure``). Reverting the fault is the
replacement GPU: the fixture's counters and no weak cells.

Registered in :data:`assessor.sim.faults.FAULTS` like the other fault modules: each entry is
``(name, description, check, apply, revert)``.
"""

from __future__ import annotations

import copy
from typing import Any

from assessor.errors import InputError
from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools.dcgmi_diag import WEAK_HBM_ROW


def _gpu(state: NodeState, gpu: Any) -> GpuState:
    if not state.gpus:
        raise InputError(f"{state.host} has no GPU")
    try:
        index = state.gpus[-1].index if gpu is None else int(gpu)
    except (TypeError, ValueError):
        raise InputError(f"option gpu must be a number, not {gpu!r}") from None
    try:
        return state.gpu(index)
    except IndexError:
        indices = ", ".join(str(g.index) for g in state.gpus)
        raise InputError(f"no GPU {index} on {state.host} (GPUs: {indices})") from None


def weak_hbm_row(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    if g.ecc_mode_current is None:
        raise InputError(f"GPU {g.index} ({g.name}) has no ECC memory: memtest's errors would not be counted")
    if WEAK_HBM_ROW not in g.latent_faults:
        g.latent_faults.append(WEAK_HBM_ROW)


def weak_hbm_row_replaced(state: NodeState, gpu: Any = None) -> None:
    """The returned GPU's replacement: no weak cells, the fixture's ECC and row remapping counters."""
    from assessor.sim.fixtures import fixture_names, load_fixture

    g = _gpu(state, gpu)
    g.latent_faults = [f for f in g.latent_faults if f != WEAK_HBM_ROW]
    fresh = load_fixture(state.fixture, host=state.host) if state.fixture in fixture_names() else None
    healthy = fresh.gpu(g.index) if fresh is not None else None
    g.ecc = copy.deepcopy(healthy.ecc) if healthy is not None else type(g.ecc)()
    if g.remapped_rows is not None:
        g.remapped_rows = copy.deepcopy(healthy.remapped_rows) if healthy is not None else type(g.remapped_rows)()


FAULTS = (
    (
        "weak-hbm-row",
        "a GPU's HBM has weak cells in a bank without spare rows: every counter and dcgmi diag -r 1..3 pass it; "
        "memtest (dcgmi diag -r 4) fails it, and the errors it provokes leave a failed row remap (option gpu, "
        "default the last GPU)",
        "dcgm.diag",
        weak_hbm_row,
        weak_hbm_row_replaced,
    ),
)
