"""The firmware the fabric's switches run, and what ``flint -d lid-N q`` answers for one of them.

MFT reaches a switch in-band, through the node's HCA, by its LID: ``ibswitches`` lists each switch with its
``lid``, and ``flint -d lid-0x5 q`` (or ``lid-5``) queries its flash as ``flint -d mlx5_0 q`` queries an
adapter's. Every switch of the simulated fabric runs :data:`SWITCH_FIRMWARE` unless the state says otherwise
(``NodeState.switch_firmware``: switch name -> the version it runs), as the ``switch-firmware-old`` fault does
for one leaf.

Real values: PSID ``MT_0000000579`` and firmware ``31.2012.1024`` are a Quantum-2 switch's, as ``ibswinfo``
read them in-band (``tests/data/corpus/ibswinfo/01_quantum2_inband.txt``); the simulator gives that PSID to
all its Quantum-2 leaves and spines. :data:`OLDER_SWITCH_FIRMWARE` is an older 31.x number chosen for the
labs, not a release we have a real query of. The query's layout is flint's (``Key:`` padded to column 23,
``tests/data/corpus/flint``); a switch has no expansion ROM, so its query has no ``Rom Info`` lines.

A switch's firmware is not changed from a compute node here: a burn on a ``lid-`` device is refused (the
images on a node are adapters' and their PSID does not match the switch's); the fabric team updates it.
"""

from __future__ import annotations

import re
from typing import Any

from assessor.errors import InputError
from assessor.sim.fabric import Switch, compute_hcas, fabric
from assessor.sim.state import NodeState

SWITCH_PSID = "MT_0000000579"
SWITCH_FIRMWARE = "31.2012.1024"
OLDER_SWITCH_FIRMWARE = "31.2010.1064"
_LID = re.compile(r"^lid-(0x[0-9a-f]+|\d+)$", re.IGNORECASE)


def is_lid_device(device: str) -> bool:
    """``lid-0x5``, ``lid-5``: an in-band device name (a switch, reached through the fabric)."""
    return bool(_LID.match(device))


def switch_at(state: NodeState, device: str) -> Switch | None:
    """The switch whose LID ``device`` (``lid-0x5``, ``lid-5``) names; None when no switch has it."""
    m = _LID.match(device)
    if m is None or not state.sm_present:
        return None
    lid = int(m.group(1), 0)
    return next((s for s in fabric(state).switches if s.lid == lid and lid), None)


def running_firmware(state: NodeState, switch: str) -> str:
    return state.switch_firmware.get(switch, SWITCH_FIRMWARE)


def query_lines(state: NodeState, switch: Switch) -> list[str]:
    """``flint -d lid-N q`` for ``switch``."""
    version = running_firmware(state, switch.name)
    guid = switch.guid.removeprefix("0x").rjust(16, "0")
    return [
        "Image type:            FS4",
        f"FW Version:            {version}",
        f"Product Version:       {version}",
        "Description:           UID                GuidsNumber",
        f"Base GUID:             {guid}        128",
        "Image VSD:             N/A",
        "Device VSD:            N/A",
        f"PSID:                  {SWITCH_PSID}",
        "Security Attributes:   secure-fw",
    ]


# ---- the fault ----------------------------------------------------------------------------------


def _switch_name(state: NodeState, switch: Any) -> str:
    names = [s.name for s in fabric(state).switches]
    if not compute_hcas(state):
        raise InputError(f"{state.host} has no InfiniBand fabric: no switch runs firmware here")
    name = str(switch) if switch is not None else names[-1]
    if name not in names:
        raise InputError(f"no switch {name} on {state.host}'s fabric (switches: {', '.join(names)})")
    return name


def switch_firmware_old(state: NodeState, switch: Any = None, version: Any = None) -> None:
    """One switch (a leaf by default: the last one) runs older firmware than the rest of the fabric."""
    state.switch_firmware[_switch_name(state, switch)] = str(version) if version else OLDER_SWITCH_FIRMWARE


def switch_firmware_restored(state: NodeState, switch: Any = None, version: Any = None) -> None:
    state.switch_firmware.pop(_switch_name(state, switch), None)
