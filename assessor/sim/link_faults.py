"""Faults of an adapter's firmware, a GPU's VBIOS and a link's signal, for :mod:`assessor.sim.faults`.

Each sets what the real node shows: an adapter running older firmware than its fleet shows it in ``ibstat``,
``flint q`` and ``mlxfwmanager`` alike (and on flash: nothing is pending); a GPU with another VBIOS shows it in
``nvidia-smi -q``; a marginal cable or transceiver keeps its link Active at full rate while ``mlxlink -c``
counts pre-FEC errors near the FEC limit, errors FEC could not correct and link error recoveries, and its
troubleshooting opcode says ``Bad signal integrity``. A link that flapped and recovered keeps its old error counts
until they are cleared (``mlxlink --pc``, a reboot), with a clean channel behind them.
"""

from __future__ import annotations

from typing import Any

from assessor.errors import InputError
from assessor.sim.state import CableModuleState, GpuState, IbHcaState, NodeState, PortPhyState

OLDER_HCA_FIRMWARE = "28.39.1002"  # a ConnectX-7 release before the fixtures' 28.41.1000
OTHER_VBIOS = "96.00.61.00.01"  # an earlier H100 SXM5 VBIOS than the fixture's 96.00.74.00.01


def _hca(state: NodeState, ca: Any) -> IbHcaState:
    """The HCA ``ca`` names (default: the last compute HCA, as the other IB faults pick)."""
    hcas = [h for h in state.ib_hcas if h.role == "compute"] or list(state.ib_hcas)
    if not hcas:
        raise InputError(f"{state.host} has no InfiniBand HCA")
    if ca is None:
        return hcas[-1]
    try:
        return state.hca(str(ca))
    except KeyError:
        names = ", ".join(h.name for h in state.ib_hcas)
        raise InputError(f"no HCA {ca} on {state.host} (HCAs: {names})") from None


def _gpu(state: NodeState, gpu: Any) -> GpuState:
    if not state.gpus:
        raise InputError(f"{state.host} has no GPU")
    try:
        return state.gpu(state.gpus[0].index if gpu is None else int(gpu))
    except (IndexError, TypeError, ValueError):
        indices = ", ".join(str(g.index) for g in state.gpus)
        raise InputError(f"no GPU {gpu} on {state.host} (GPUs: {indices})") from None


def _fresh(state: NodeState) -> NodeState | None:
    from assessor.sim.fixtures import fixture_names, load_fixture

    return load_fixture(state.fixture, host=state.host) if state.fixture in fixture_names() else None


def hca_firmware_old(state: NodeState, ca: Any = None, version: Any = None) -> None:
    hca = _hca(state, ca)
    hca.firmware = str(version) if version else OLDER_HCA_FIRMWARE
    hca.firmware_next = None


def hca_firmware_restored(state: NodeState, ca: Any = None, version: Any = None) -> None:
    hca = _hca(state, ca)
    fresh = _fresh(state)
    if fresh is not None:
        hca.firmware = fresh.hca(hca.name).firmware
    hca.firmware_next = None


def vbios_mismatch(state: NodeState, gpu: Any = None, version: Any = None) -> None:
    _gpu(state, gpu).vbios = str(version) if version else OTHER_VBIOS


def vbios_restored(state: NodeState, gpu: Any = None, version: Any = None) -> None:
    g = _gpu(state, gpu)
    fresh = _fresh(state)
    if fresh is not None:
        g.vbios = fresh.gpu(g.index).vbios


def ber_high(state: NodeState, ca: Any = None) -> None:
    hca = _hca(state, ca)
    for port in hca.ports:
        phy = port.phy
        phy.raw_ber = "4E-5"  # pre-FEC, near what RS(544,514) can still correct
        phy.effective_ber = "3E-11"  # post-FEC: errors reach the link layer
        phy.effective_errors_per_min = 720.0
        phy.link_down = 1
        phy.link_recovery = 37
        phy.status_opcode = 15  # Bad signal integrity
        phy.module.rx_power_dbm = [-7.912, 1.989, 2.281, 1.976]  # one lane barely lit: a dirty or failing optic
        phy.module.temperature_c = 58


def link_flapped(state: NodeState, ca: Any = None) -> None:
    hca = _hca(state, ca)
    for port in hca.ports:
        # Last week's maintenance: the link went down twice and retrained; the channel is clean again, but the
        # counters (never cleared since) still hold the errors of those hours.
        port.phy.link_down = 2
        port.phy.link_recovery = 9
        port.phy.past_effective_errors = 41300


def ber_restored(state: NodeState, ca: Any = None) -> None:
    hca = _hca(state, ca)
    for port in hca.ports:
        port.phy = PortPhyState(module=CableModuleState())
