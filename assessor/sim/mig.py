"""The MIG engine of the simulator: profiles, placements, creation rules and the ``nvidia-smi mig`` listings.

Pure: no I/O. The state is plain dataclasses (:class:`Placed`, :class:`ComputeInstance`) in the JSON shape
that :mod:`assessor.sim.state` stores; every function returns new objects and never changes its arguments.

What follows the NVIDIA MIG User Guide ("Supported MIG Profiles", "Getting Started with MIG") and real
``nvidia-smi`` captures (``corpus/nvml/mig_*``):

- A GPU has 8 memory slots and 7 compute slices. A GPU instance (GI) sits at one of its profile's
  placements ``{starts}:size`` on the memory axis; instances never overlap, use at most 7 compute slices in
  all, and respect the profile's instance limit (one ``+me`` instance: there is one media extension).
- ``-cgi`` handles its profile tuples in order and stops at the first failure, keeping what it already
  created. Without an explicit ``profile:start`` the driver picks, among the free valid starts, the one that
  rules out the fewest still-possible placements (lowest start on a tie). That is why ``-cgi 19,19,14,9``
  fails on an empty A100 while ``-cgi 9,19,14,19`` succeeds, exactly as the guide shows.
- A GI's ID follows its placement. Two numberings are seen on real GPUs: ``low-first`` (the guide's A100
  examples, an R460 A100 and an H100 80GB HBM3: a 1g at slot 0 is GI 7) and ``high-first`` (R510+ A100s,
  the H100 NVL and PCIe captures: the upper half of memory gets the lower IDs, a 1g at slot 4 is GI 7).
  Each model has a default; callers may override it.
- Listings come in two layouts: ``legacy`` (R450/R460, the guide's A100 ``-lgi``/``-lci`` examples) and
  ``current`` (R510 to R560: the H100 NVL ``-lgip`` capture). See :func:`style_for_driver`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

GiIdOrder = Literal["low-first", "high-first"]
Style = Literal["legacy", "current"]

COMPUTE_SLICES = 7  # every supported model here: 7 SM slices over 8 memory slots
MEMORY_SLOTS = 8

# NVML return-code texts as nvidia-smi prints them after a colon.
INSUFFICIENT_RESOURCES = "Insufficient Resources"
INVALID_ARGUMENT = "Invalid Argument"
IN_USE = "In use by another client"
NOT_FOUND = "Not Found"

# nvidia-smi's documented exit codes: 2 bad argument, 6 object not found, 255 other error. Which code a
# failed MIG call returns is not documented; this mapping is our reading of that list.
_EXIT_CODES = {INVALID_ARGUMENT: 2, NOT_FOUND: 6}
_OTHER_ERROR_EXIT = 255


# --- data -------------------------------------------------------------------------------------------------

# Placements on the 8-slot memory axis per GI profile id, identical on every 7-slice GPU below, in the order
# `nvidia-smi mig -lgip` lists the profiles. NVIDIA MIG User Guide, "Getting Started with MIG" (-lgipp);
# corpus/nvml/mig_lgipp_A100_guide.txt and mig_lgipp_H100_NVL.txt. Value: (starts, size, max instances).
_GI_LAYOUT: dict[int, tuple[tuple[int, ...], int, int]] = {
    19: ((0, 1, 2, 3, 4, 5, 6), 1, 7),  # 1g
    20: ((0, 1, 2, 3, 4, 5, 6), 1, 1),  # 1g+me: the single media extension
    15: ((0, 2, 4, 6), 2, 4),  # 1g with two memory slots
    14: ((0, 2, 4), 2, 3),  # 2g
    9: ((0, 4), 4, 2),  # 3g: four memory slots, three compute slices
    5: ((0,), 4, 1),  # 4g
    0: ((0,), 8, 1),  # 7g: the whole GPU
}

# Per-model GI profiles as `nvidia-smi mig -lgip` prints them. Names and hardware units: NVIDIA MIG User
# Guide, "Supported MIG Profiles" (tables "GPU Instance Profiles on A100 / H100 / H200 / B200"). Every 7-slice
# model has the same seven profiles (ids 19, 20, 15, 14, 9, 5, 0); a family shares their hardware units and a
# model adds its memory: the size label and the GiB -lgip prints for GIs of 1, 2, 4 and 8 memory slots.
# Row: (profile id, name, memory GiB, SM, DEC, ENC, CE, JPEG, OFA) - the -lgip columns in print order.
# gi_id_order: which GI numbering the model's captures show (see the module docstring).

# Compute slices of each 7-slice GI profile, in -lgip order ("+me" on 20: the single media extension).
_SEVEN_SLICE_PROFILES = ((19, 1), (20, 1), (15, 1), (14, 2), (9, 3), (5, 4), (0, 7))

# (SM, DEC, ENC, CE, JPEG, OFA) by GI profile id, per GPU family.
_A100_UNITS = {
    19: (14, 0, 0, 1, 0, 0),
    20: (14, 1, 0, 1, 1, 1),
    15: (14, 1, 0, 1, 0, 0),  # guide table (1 NVDEC); not in the R510 -lgip capture
    14: (28, 1, 0, 2, 0, 0),
    9: (42, 2, 0, 3, 0, 0),
    5: (56, 2, 0, 4, 0, 0),
    0: (98, 5, 0, 7, 1, 1),
}
_HOPPER_UNITS = {
    19: (16, 1, 0, 1, 1, 0),
    20: (16, 1, 0, 1, 1, 1),
    15: (26, 1, 0, 1, 1, 0),
    14: (32, 2, 0, 2, 2, 0),
    9: (60, 3, 0, 3, 3, 0),
    5: (64, 4, 0, 4, 4, 0),
    0: (132, 7, 0, 8, 7, 1),
}
# B200: 1g to 2g from the -lgip capture (SM 18, 18, 30, 36; CE 2, 2, 2, 4; DEC and JPEG one per slice). 3g, 4g,
# 7g: copy engines from the guide's B200 table (6, 8, 16); SMs estimated (4g: 4 x 18; 3g: 4g less two TPCs;
# 7g: all 148 SMs of a B200) and DEC/JPEG one per slice as in the captured rows. The guide prints 3 copy
# engines for 2g.45gb where the capture shows 4: the capture is kept.
_B200_UNITS = {
    19: (18, 1, 0, 2, 1, 0),
    20: (18, 1, 0, 2, 1, 1),
    15: (30, 1, 0, 2, 1, 0),
    14: (36, 2, 0, 4, 2, 0),
    9: (66, 3, 0, 6, 3, 0),
    5: (72, 4, 0, 8, 4, 0),
    0: (148, 7, 0, 16, 7, 1),
}


def _seven_slices(
    units: dict[int, tuple[int, int, int, int, int, int]], memory: dict[int, tuple[str, float]]
) -> list[tuple[Any, ...]]:
    """The -lgip rows of a 7-slice model: ``memory`` maps memory slots (1, 2, 4, 8) to (size label, GiB)."""
    rows: list[tuple[Any, ...]] = []
    for pid, slices in _SEVEN_SLICE_PROFILES:
        label, gib = memory[_GI_LAYOUT[pid][1]]
        name = f"{slices}g.{label}" + ("+me" if pid == 20 else "")
        rows.append((pid, name, gib, *units[pid]))
    return rows


_MODELS: dict[str, dict[str, Any]] = {
    "A100-SXM4-40GB": {
        # -lgip of an A100-PCIE-40GB on R510 (same GA100 40GB profiles). 1g.10gb (15) is not in that
        # capture: memory as 2g.10gb, units from the guide table.
        "gi_id_order": "low-first",  # the guide's -cgi examples and an R460 capture
        "profiles": _seven_slices(
            _A100_UNITS, {1: ("5gb", 4.75), 2: ("10gb", 9.75), 4: ("20gb", 19.62), 8: ("40gb", 39.50)}
        ),
    },
    "A100-SXM4-80GB": {
        # -lgip of an A100-SXM4-80GB on R550 (driver 550.54.14).
        "gi_id_order": "high-first",  # same capture: -cgi 2g.20gb,2g.20gb,1g.10gb gave GIs 3, 5, 9
        "profiles": _seven_slices(
            _A100_UNITS, {1: ("10gb", 9.50), 2: ("20gb", 19.50), 4: ("40gb", 39.25), 8: ("80gb", 78.75)}
        ),
    },
    "H100 80GB HBM3": {
        # -lgip of an H100 80GB HBM3 (H100 SXM).
        "gi_id_order": "low-first",  # same capture: -cgi 19 x7 gave GIs 13, 11, 12, 7, 8, 9, 10
        "profiles": _seven_slices(
            _HOPPER_UNITS, {1: ("10gb", 9.75), 2: ("20gb", 19.62), 4: ("40gb", 39.50), 8: ("80gb", 79.25)}
        ),
    },
    "H100 NVL": {
        # corpus/nvml/mig_lgip_H100_NVL_94GB.txt (driver 560).
        "gi_id_order": "high-first",  # corpus/nvml/nvidia_smi_mig_devices_H100_NVL.txt: -cgi 9,15,19 -> GIs 1, 5, 13
        "profiles": _seven_slices(
            _HOPPER_UNITS, {1: ("12gb", 10.75), 2: ("24gb", 21.62), 4: ("47gb", 46.38), 8: ("94gb", 93.12)}
        ),
    },
    "H200": {
        # NVIDIA/mig-parted#120: -lgip of an HGX H200 (device id 0x233510DE);
        # corpus nvml/lgip_H200_excerpt_cut_mid_row.txt.
        # Memory as captured: 16.00, 32.25, 69.50 and 139.75 GiB. The 2g.35gb row is not in the excerpt; it has
        # 1g.35gb's two memory slots, so its memory is that row's (as on every other model).
        "gi_id_order": "high-first",  # no H200 -cgi capture; the numbering R510+ drivers mostly show
        "profiles": _seven_slices(
            _HOPPER_UNITS, {1: ("18gb", 16.00), 2: ("35gb", 32.25), 4: ("71gb", 69.50), 8: ("141gb", 139.75)}
        ),
    },
    "B200": {
        # NVIDIA MIG User Guide, "Supported MIG Profiles", table "GPU Instance Profiles on B200": 1g.23gb x7,
        # 1g.23gb+me x1, 1g.45gb x4, 2g.45gb x3, 3g.90gb x2, 4g.90gb x1, 7g.180gb x1 (memory 1/8, 2/8, 4/8 and
        # the whole GPU). -lgip of a B200 in NVIDIA/gpu-operator#1242 and NVIDIA/mig-parted#166, excerpt in
        # corpus nvml/lgip_B200_excerpt_cut_after_2g.txt: IDs 19, 20, 15, 14, memory 22.00 and 44.25 GiB (a
        # later driver prints 20.50 for the 1g, gpu-operator#1351). No capture of the 3g, 4g and 7g rows was
        # found: their memory is an estimate after Hopper's captures, where the whole GPU gets about half a GiB
        # less than the board (B200: 183359 MiB, 179.06 GiB -> 178.50) and a 4-slot GI a little under half
        # of that (88.75).
        "gi_id_order": "low-first",  # NVIDIA/gpu-operator#2155: 3x 2g.45gb + 1g.23gb are GIs 3, 4, 5 and 13
        "profiles": _seven_slices(
            _B200_UNITS, {1: ("23gb", 22.00), 2: ("45gb", 44.25), 4: ("90gb", 88.75), 8: ("180gb", 178.50)}
        ),
    },
}

# nvidia-smi's product names (with or without the "NVIDIA " prefix that R510+ prints) -> model key.
_ALIASES = {
    "a100-sxm4-40gb": "A100-SXM4-40GB",
    "a100-pcie-40gb": "A100-SXM4-40GB",
    "a100-sxm4-80gb": "A100-SXM4-80GB",
    "a100 80gb pcie": "A100-SXM4-80GB",
    "h100 80gb hbm3": "H100 80GB HBM3",
    "h100 nvl": "H100 NVL",
    "h200": "H200",
    "h200 141gb hbm3e": "H200",
    "b200": "B200",
}

# Compute-instance profiles inside a GI, by the GI's compute slices (-lcip): (CI profile id, slices, max
# instances, starts on the GI's compute axis). The last row is the GI-wide default (`*`). IDs are NVML's
# COMPUTE_INSTANCE_PROFILE_* values; counts from real -lcip output (A100 3g and 4g: a 4g offers no 3c).
# Placements were not captured (-lcipp); these let 1c+2c share a 3g GI as the R550 capture shows.
_CI_LAYOUT: dict[int, tuple[tuple[int, int, int, tuple[int, ...]], ...]] = {
    1: ((0, 1, 1, (0,)),),
    2: ((0, 1, 2, (0, 1)), (1, 2, 1, (0,))),
    3: ((0, 1, 3, (0, 1, 2)), (1, 2, 1, (0, 1)), (2, 3, 1, (0,))),
    4: ((0, 1, 4, (0, 1, 2, 3)), (1, 2, 2, (0, 2)), (3, 4, 1, (0,))),
    7: ((0, 1, 7, (0, 1, 2, 3, 4, 5, 6)), (1, 2, 3, (0, 2, 4)), (2, 3, 2, (0, 4)), (3, 4, 1, (0,)), (4, 7, 1, (0,))),
}

# GI ID of each placement (size, start) under the two numberings seen on real GPUs.
_GI_IDS: dict[str, dict[tuple[int, int], int]] = {
    "low-first": {
        (8, 0): 0,
        (4, 0): 1,
        (4, 4): 2,
        **{(2, s): 3 + s // 2 for s in (0, 2, 4, 6)},
        **{(1, s): 7 + s for s in range(8)},
    },
    "high-first": {
        (8, 0): 0,
        (4, 4): 1,
        (4, 0): 2,
        **{(2, s): 3 + (s - 4) // 2 for s in (4, 6)},
        **{(2, s): 5 + s // 2 for s in (0, 2)},
        **{(1, s): 7 + (s - 4) for s in (4, 5, 6, 7)},
        **{(1, s): 11 + s for s in (0, 1, 2, 3)},
    },
}


# --- models with their own slice counts (A30) ----------------------------------------------------------------
# Kept apart from _MODELS: a model here carries its own placements ("layout": profile id -> (starts, size,
# max instances)) and GI numbering ("gi_ids": (size, start) -> GI id) instead of the 8-slot tables above.


def _extra_models() -> dict[str, dict[str, Any]]:
    return {
        "A30": {
            # corpus/nvml/mig_lgip_A30_24GB.txt, mig_lgipp_A30.txt and mig_lgi_A30_4x1g.txt: -lgip, -lgipp and
            # -lgi of an A30 (4 memory slices, 4 compute slices). Its 1g is profile 14 and its whole GPU
            # 4g.24gb. -lgi: 1g.6gb at 0,1,2,3 are GIs 3,4,5,6, the low-first numbering on half the slots.
            # 2g.12gb+me (profile 6) from R525 (MIG User Guide, A30 table; mig_lgip_A30_535_with_2g12gb_me.txt,
            # 535.183.01, which also prints the whole GPU as 23.44 GiB): the fixture's drivers are all R525+.
            "gi_id_order": "low-first",
            # An empty A30 puts a 2g.12gb in the upper half (GI 2), where both halves rule out as much:
            # nvidia_smi_default_A30_535_mig_idle.txt, -cgi 2g.12gb,1g.6gb,1g.6gb gave GIs 2, 3 and 4. Only the
            # 2g profiles: no capture shows where a lone 1g.6gb goes.
            "upper_on_tie": (5, 6),
            "profiles": [
                (14, "1g.6gb", 5.81, 14, 1, 0, 1, 0, 0),
                (21, "1g.6gb+me", 5.81, 14, 1, 0, 1, 1, 1),
                (5, "2g.12gb", 11.69, 28, 2, 0, 2, 0, 0),
                (6, "2g.12gb+me", 11.69, 28, 2, 0, 2, 1, 1),
                (0, "4g.24gb", 23.44, 56, 4, 0, 4, 1, 1),
            ],
            "layout": {
                14: ((0, 1, 2, 3), 1, 4),
                21: ((0, 1, 2, 3), 1, 1),
                5: ((0, 2), 2, 2),
                6: ((0, 2), 2, 1),
                0: ((0,), 4, 1),
            },
            "gi_ids": {(4, 0): 0, (2, 0): 1, (2, 2): 2, **{(1, s): 3 + s for s in range(4)}},
        },
    }


_MODELS.update(_extra_models())
_ALIASES.update({"a30": "A30", "a30 24gb": "A30"})


def _gi_ids(gpu_name: str, order: GiIdOrder | None) -> dict[tuple[int, int], int]:
    """GI id of each placement (size, start) on this model: its own table, else the numbering ``order``."""
    model = _MODELS[_model_key(gpu_name)]
    if "gi_ids" in model and order is None:
        ids: dict[tuple[int, int], int] = model["gi_ids"]
        return ids
    return _GI_IDS[order or default_gi_id_order(gpu_name)]


# --- types ------------------------------------------------------------------------------------------------


class MigUnsupported(KeyError):
    """The GPU has no MIG (L40S, V100, ...), or it is a model this simulator has no MIG table for."""

    def __str__(self) -> str:  # KeyError would quote its message
        return str(self.args[0]) if self.args else "MIG not supported"


class MigError(Exception):
    """A refused MIG request; ``reason`` is the NVML text nvidia-smi prints (``Invalid Argument``...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class GiProfile:
    """A GPU-instance profile of one GPU model, with the numbers ``nvidia-smi mig -lgip`` prints."""

    id: int
    name: str  # short name: 3g.20gb
    memory_gib: float
    sm: int
    dec: int
    enc: int
    ce: int
    jpeg: int
    ofa: int
    max_instances: int
    starts: tuple[int, ...]
    size: int  # memory slots
    p2p: bool = False

    @property
    def full_name(self) -> str:
        return f"MIG {self.name}"

    @property
    def slices(self) -> int:
        """Compute slices: the N of ``Ng``."""
        return int(self.name.split("g", 1)[0])


@dataclass(frozen=True)
class CiProfile:
    """A compute-instance profile inside one GI profile (``nvidia-smi mig -lcip``)."""

    id: int
    name: str  # 1c.3g.20gb, or 3g.20gb for the GI-wide default
    slices: int
    max_instances: int
    starts: tuple[int, ...]
    sm: int
    is_default: bool

    @property
    def full_name(self) -> str:
        return f"MIG {self.name}"


@dataclass
class ComputeInstance:
    """A created compute instance; start and size are on its GI's compute-slice axis."""

    ci_id: int
    profile_id: int
    name: str
    start: int
    size: int


@dataclass
class Placed:
    """A created GPU instance: JSON-friendly (:meth:`to_dict`, :meth:`from_dict`) for the node state file."""

    gi_id: int
    profile_id: int
    name: str
    start: int
    size: int
    compute_instances: list[ComputeInstance] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Placed:
        cis = [ComputeInstance(**ci) for ci in data.get("compute_instances", [])]
        return cls(
            gi_id=data["gi_id"],
            profile_id=data["profile_id"],
            name=data["name"],
            start=data["start"],
            size=data["size"],
            compute_instances=cis,
        )


@dataclass(frozen=True)
class Step:
    """One request of a command (a ``-cgi`` tuple, a GI to destroy...) and the lines it printed."""

    token: str
    ok: bool
    messages: tuple[str, ...]


@dataclass(frozen=True)
class MigResult:
    """What a MIG command did: the GPU's instances afterwards, and its output line by line.

    ``error`` is the NVML reason that stopped the command (None when every step succeeded); ``lines`` ends
    with nvidia-smi's summary line (``Failed to create GPU instances: ...``) in that case.
    """

    placed: list[Placed]
    steps: list[Step]
    error: str | None = None
    summary: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def lines(self) -> list[str]:
        out = [m for step in self.steps for m in step.messages]
        if self.summary:
            out.append(self.summary)
        return out

    @property
    def output(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    @property
    def exit_code(self) -> int:
        if self.error is None:
            return 0
        return _EXIT_CODES.get(self.error, _OTHER_ERROR_EXIT)


@dataclass
class MigGpu:
    """One GPU as the listings need it: nvidia-smi index, product name, and its GPU instances."""

    index: int
    name: str
    instances: list[Placed] = field(default_factory=list)


# --- profiles ---------------------------------------------------------------------------------------------


def _model_key(gpu_name: str) -> str:
    key = " ".join(gpu_name.split()).casefold()
    key = key.removeprefix("nvidia ")
    if key not in _ALIASES:
        raise MigUnsupported(f"{gpu_name} does not support MIG")
    return _ALIASES[key]


def profiles_for(gpu_name: str) -> list[GiProfile]:
    """The GI profiles of a GPU model in ``-lgip`` order; :class:`MigUnsupported` for GPUs without MIG."""
    model = _MODELS[_model_key(gpu_name)]
    out = []
    for pid, name, mem, sm, dec, enc, ce, jpeg, ofa in model["profiles"]:
        starts, size, max_instances = model.get("layout", _GI_LAYOUT)[pid]
        out.append(GiProfile(pid, name, mem, sm, dec, enc, ce, jpeg, ofa, max_instances, starts, size))
    return out


def _upper_on_tie(gpu_name: str, profile_id: int) -> bool:
    """Whether the driver puts this profile at the highest of equally good starts (see ``upper_on_tie``)."""
    return profile_id in _MODELS[_model_key(gpu_name)].get("upper_on_tie", ())


def default_gi_id_order(gpu_name: str) -> GiIdOrder:
    """The GI numbering this model's real captures show (see the module docstring)."""
    order: GiIdOrder = _MODELS[_model_key(gpu_name)]["gi_id_order"]
    return order


def style_for_driver(driver_version: str) -> Style:
    """The listing layout a driver prints: ``legacy`` before R510, ``current`` from R510."""
    try:
        major = int(driver_version.split(".", 1)[0])
    except ValueError:
        return "current"
    return "legacy" if major < 510 else "current"


def _profile_key(token: str) -> str:
    key = " ".join(token.split()).casefold()
    return key.removeprefix("mig ").strip()


def resolve_profile(gpu_name: str, token: str) -> GiProfile:
    """The GI profile a ``-cgi`` token names: an id (``9``), a short name (``3g.20gb``) or ``MIG 3g.20gb``.

    An unknown token raises :class:`MigError` with ``Invalid Argument``, the reason nvidia-smi prints.
    """
    key = _profile_key(token)
    for profile in profiles_for(gpu_name):
        if key == str(profile.id) or key == profile.name.casefold():
            return profile
    raise MigError(INVALID_ARGUMENT)


def ci_profiles_for(gpu_name: str, gi_profile_id: int) -> list[CiProfile]:
    """The compute-instance profiles of one GI profile, in ``-lcip`` order (the default last)."""
    gi = _gi_profile(gpu_name, gi_profile_id)
    sm_per_slice = profiles_for(gpu_name)[0].sm  # a 1g's SMs; a partial CI gets that many per slice
    out = []
    for ci_id, slices, max_instances, starts in _CI_LAYOUT[gi.slices]:
        full = slices == gi.slices
        name = gi.name if full else f"{slices}c.{gi.name}"
        sm = gi.sm if full else slices * sm_per_slice
        out.append(CiProfile(ci_id, name, slices, max_instances, starts, sm, is_default=full))
    return out


def _gi_profile(gpu_name: str, profile_id: int) -> GiProfile:
    for profile in profiles_for(gpu_name):
        if profile.id == profile_id:
            return profile
    raise MigError(INVALID_ARGUMENT)


def _resolve_ci_profile(gpu_name: str, gi: Placed, token: str) -> CiProfile:
    profiles = ci_profiles_for(gpu_name, gi.profile_id)
    key = _profile_key(token)
    if key == "":
        return profiles[-1]
    for profile in profiles:
        if key == str(profile.id) or key == profile.name.casefold():
            return profile
    raise MigError(INVALID_ARGUMENT)


# --- placement rules --------------------------------------------------------------------------------------


def _slots(start: int, size: int) -> set[int]:
    return set(range(start, start + size))


def _fits(profiles: Sequence[GiProfile], existing: Sequence[Placed], profile: GiProfile, start: int) -> bool:
    """Whether a GI of ``profile`` at ``start`` can be added to ``existing`` under every MIG rule."""
    if start not in profile.starts:
        return False
    taken = set().union(*(_slots(p.start, p.size) for p in existing)) if existing else set()
    if taken & _slots(start, profile.size):
        return False
    if sum(1 for p in existing if p.profile_id == profile.id) >= profile.max_instances:
        return False
    if profile.name.endswith("+me") and any(p.name.endswith("+me") for p in existing):
        return False  # one media extension per GPU: an A30's 1g.6gb+me and 2g.12gb+me exclude each other
    slices = {p.id: p.slices for p in profiles}
    used = sum(slices.get(p.profile_id, 0) for p in existing)
    return used + profile.slices <= COMPUTE_SLICES


def _choose_start(
    profiles: Sequence[GiProfile], existing: Sequence[Placed], profile: GiProfile, *, upper_on_tie: bool = False
) -> int | None:
    """The driver's auto-placement: the free start that rules out the fewest still-possible placements.

    On a tie the lowest start, or the highest where the model's captures show it (``upper_on_tie``).
    """
    candidates = [s for s in profile.starts if _fits(profiles, existing, profile, s)]
    if not candidates:
        return None

    def ruled_out(start: int) -> int:
        mine = _slots(start, profile.size)
        return sum(
            1
            for other in profiles
            for s in other.starts
            if mine & _slots(s, other.size) and _fits(profiles, existing, other, s)
        )

    return min(candidates, key=lambda s: (ruled_out(s), -s if upper_on_tie else s))


def remaining_capacity(gpu_name: str, existing: Sequence[Placed], profile_id: int) -> int:
    """How many more GIs of a profile fit now: the Free of ``-lgip``'s Free/Total."""
    profiles = profiles_for(gpu_name)
    profile = _gi_profile(gpu_name, profile_id)
    trial = list(existing)
    count = 0
    # Placements are aligned blocks, so filling the lowest free start first packs the most instances.
    while (start := next((s for s in profile.starts if _fits(profiles, trial, profile, s)), None)) is not None:
        trial.append(Placed(-1, profile.id, profile.name, start, profile.size))
        count += 1
    return count


def _ci_fits(profile: CiProfile, cis: Sequence[ComputeInstance], start: int) -> bool:
    if start not in profile.starts:
        return False
    taken = set().union(*(_slots(c.start, c.size) for c in cis)) if cis else set()
    if taken & _slots(start, profile.slices):
        return False
    return sum(1 for c in cis if c.profile_id == profile.id) < profile.max_instances


def _choose_ci_start(profiles: Sequence[CiProfile], cis: Sequence[ComputeInstance], profile: CiProfile) -> int | None:
    # The same rule as for GIs, on the GI's compute axis.
    candidates = [s for s in profile.starts if _ci_fits(profile, cis, s)]
    if not candidates:
        return None

    def ruled_out(start: int) -> int:
        mine = _slots(start, profile.slices)
        return sum(
            1 for other in profiles for s in other.starts if mine & _slots(s, other.slices) and _ci_fits(other, cis, s)
        )

    return min(candidates, key=lambda s: (ruled_out(s), s))


def ci_remaining_capacity(gpu_name: str, gi: Placed, ci_profile_id: int) -> int:
    """How many more CIs of a profile fit in a GI now: the Free of ``-lcip``'s Free/Total."""
    profile = next(p for p in ci_profiles_for(gpu_name, gi.profile_id) if p.id == ci_profile_id)
    trial = list(gi.compute_instances)
    count = 0
    while (start := next((s for s in profile.starts if _ci_fits(profile, trial, s)), None)) is not None:
        trial.append(ComputeInstance(-1, profile.id, profile.name, start, profile.slices))
        count += 1
    return count


def lgi_order(gpu_name: str, placed: Iterable[Placed]) -> list[Placed]:
    """GIs in the order ``-lgi`` lists them: by profile in ``-lgip`` order, then by GI ID."""
    rank = {p.id: i for i, p in enumerate(profiles_for(gpu_name))}
    return sorted(placed, key=lambda p: (rank.get(p.profile_id, len(rank)), p.gi_id))


# --- commands ---------------------------------------------------------------------------------------------


def _split_placement(token: str) -> tuple[str, int | None]:
    name, sep, start = token.rpartition(":")
    if sep and start.strip().isdigit():
        return name, int(start)
    return token, None


def _default_ci(gpu_name: str, gi: Placed, gpu_index: int) -> str:
    ci_profile = ci_profiles_for(gpu_name, gi.profile_id)[-1]
    ci = ComputeInstance(0, ci_profile.id, ci_profile.name, 0, ci_profile.slices)
    gi.compute_instances.append(ci)
    return (
        f"Successfully created compute instance ID {ci.ci_id:2d} on GPU {gpu_index:2d} GPU instance ID "
        f"{gi.gi_id:2d} using profile {ci_profile.full_name} (ID {ci_profile.id:2d})"
    )


def create_gpu_instances(
    gpu_name: str,
    existing: Sequence[Placed],
    tokens: Sequence[str],
    *,
    gpu_index: int = 0,
    default_ci: bool = False,
    gi_id_order: GiIdOrder | None = None,
) -> MigResult:
    """``nvidia-smi mig -cgi TOKENS [-C]`` on one GPU.

    Tokens are handled in order: a profile id, short or full name, optionally ``:start`` for an explicit
    placement. The first failure stops the command; instances created before it stay (as on a real GPU).
    ``default_ci`` (``-C``) adds each new GI's GI-wide compute instance.
    """
    profiles = profiles_for(gpu_name)
    ids = _gi_ids(gpu_name, gi_id_order)
    placed = copy.deepcopy(list(existing))
    steps: list[Step] = []
    for token in tokens:
        name, start = _split_placement(token)
        try:
            profile = resolve_profile(gpu_name, name)
            if start is not None and start not in profile.starts:
                raise MigError(INVALID_ARGUMENT)
            if start is None:
                start = _choose_start(profiles, placed, profile, upper_on_tie=_upper_on_tie(gpu_name, profile.id))
            if start is None or not _fits(profiles, placed, profile, start):
                raise MigError(INSUFFICIENT_RESOURCES)
        except MigError as err:
            line = f"Unable to create a GPU instance on GPU {gpu_index:2d} using profile {token}: {err.reason}"
            steps.append(Step(token, False, (line,)))
            summary = f"Failed to create GPU instances: {err.reason}"
            return MigResult(placed, steps, err.reason, summary)
        gi = Placed(ids[(profile.size, start)], profile.id, profile.name, start, profile.size)
        placed.append(gi)
        messages = [
            f"Successfully created GPU instance ID {gi.gi_id:2d} on GPU {gpu_index:2d} "
            f"using profile {profile.full_name} (ID {profile.id:2d})"
        ]
        if default_ci:
            messages.append(_default_ci(gpu_name, gi, gpu_index))
        steps.append(Step(token, True, tuple(messages)))
    return MigResult(placed, steps)


def create_compute_instances(
    gpu_name: str,
    existing: Sequence[Placed],
    gi_ids: Sequence[int] | None,
    tokens: Sequence[str],
    *,
    gpu_index: int = 0,
    style: Style = "current",
) -> MigResult:
    """``nvidia-smi mig -cci TOKENS [-gi IDS]``: each token on each selected GI (all GIs when None).

    An empty token means the GI-wide default profile. The ``legacy`` success line omits the new CI's ID, as
    the guide's R450 example does. The failure wording mirrors ``-cgi``'s (no real capture seen).
    """
    placed = copy.deepcopy(list(existing))
    targets = lgi_order(gpu_name, placed) if gi_ids is None else []
    if gi_ids is not None:
        by_id = {p.gi_id: p for p in placed}
        missing = [g for g in gi_ids if g not in by_id]
        if missing:
            line = f"Unable to find GPU instance ID {missing[0]:2d} on GPU {gpu_index:2d}: {NOT_FOUND}"
            return MigResult(
                placed,
                [Step(str(missing[0]), False, (line,))],
                NOT_FOUND,
                f"Failed to create compute instances: {NOT_FOUND}",
            )
        targets = [by_id[g] for g in gi_ids]
    steps: list[Step] = []
    for gi in targets:
        for token in tokens or [""]:
            try:
                profile = _resolve_ci_profile(gpu_name, gi, token)
                ci_profiles = ci_profiles_for(gpu_name, gi.profile_id)
                start = _choose_ci_start(ci_profiles, gi.compute_instances, profile)
                if start is None:
                    raise MigError(INSUFFICIENT_RESOURCES)
            except MigError as err:
                line = (
                    f"Unable to create a compute instance on GPU {gpu_index:2d} GPU instance ID {gi.gi_id:2d} "
                    f"using profile {token}: {err.reason}"
                )
                steps.append(Step(token, False, (line,)))
                return MigResult(placed, steps, err.reason, f"Failed to create compute instances: {err.reason}")
            used = {c.ci_id for c in gi.compute_instances}
            ci_id = next(i for i in range(len(used) + 1) if i not in used)
            gi.compute_instances.append(ComputeInstance(ci_id, profile.id, profile.name, start, profile.slices))
            what = "compute instance" if style == "legacy" else f"compute instance ID {ci_id:2d}"
            line = (
                f"Successfully created {what} on GPU {gpu_index:2d} GPU instance ID {gi.gi_id:2d} "
                f"using profile {profile.full_name} (ID {profile.id:2d})"
            )
            steps.append(Step(token, True, (line,)))
    return MigResult(placed, steps)


def destroy_compute_instances(
    gpu_name: str,
    existing: Sequence[Placed],
    gi_ids: Sequence[int] | None = None,
    ci_ids: Sequence[int] | None = None,
    *,
    gpu_index: int = 0,
) -> MigResult:
    """``nvidia-smi mig -dci [-ci IDS] [-gi IDS]``: destroy the matching CIs, GI by GI in ``-lgi`` order."""
    placed = copy.deepcopy(list(existing))
    steps: list[Step] = []
    for gi in lgi_order(gpu_name, placed):
        if gi_ids is not None and gi.gi_id not in gi_ids:
            continue
        for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id):
            if ci_ids is not None and ci.ci_id not in ci_ids:
                continue
            gi.compute_instances.remove(ci)
            line = (
                f"Successfully destroyed compute instance ID {ci.ci_id:2d} from GPU {gpu_index:2d} "
                f"GPU instance ID {gi.gi_id:2d}"
            )
            steps.append(Step(str(ci.ci_id), True, (line,)))
    if not steps:
        # Nothing matched; the wording is modelled on -lci's "No compute instances found: Not Found".
        return MigResult(placed, [], NOT_FOUND, f"Failed to destroy compute instances: {NOT_FOUND}")
    return MigResult(placed, steps)


def destroy_gpu_instances(
    gpu_name: str,
    existing: Sequence[Placed],
    gi_ids: Sequence[int] | None = None,
    *,
    gpu_index: int = 0,
) -> MigResult:
    """``nvidia-smi mig -dgi [-gi IDS]``: a GI that still holds compute instances is refused (In use)."""
    placed = copy.deepcopy(list(existing))
    if gi_ids is None:
        targets = lgi_order(gpu_name, placed)
    else:
        by_id = {p.gi_id: p for p in placed}
        missing = [g for g in gi_ids if g not in by_id]
        if missing:
            line = f"Unable to destroy GPU instance ID {missing[0]:2d} from GPU {gpu_index:2d}: {NOT_FOUND}"
            return MigResult(
                placed,
                [Step(str(missing[0]), False, (line,))],
                NOT_FOUND,
                f"Failed to destroy GPU instances: {NOT_FOUND}",
            )
        targets = [by_id[g] for g in gi_ids]
    if not targets:
        return MigResult(placed, [], NOT_FOUND, f"No GPU instances found: {NOT_FOUND}")
    steps: list[Step] = []
    for gi in targets:
        if gi.compute_instances:
            line = f"Unable to destroy GPU instance ID {gi.gi_id:2d} from GPU {gpu_index:2d}: {IN_USE}"
            steps.append(Step(str(gi.gi_id), False, (line,)))
            return MigResult(placed, steps, IN_USE, f"Failed to destroy GPU instances: {IN_USE}")
        placed.remove(gi)
        steps.append(
            Step(
                str(gi.gi_id), True, (f"Successfully destroyed GPU instance ID {gi.gi_id:2d} from GPU {gpu_index:2d}",)
            )
        )
    return MigResult(placed, steps)


# --- listings ---------------------------------------------------------------------------------------------


def _box(width: int, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """nvidia-smi's boxed table: title, header lines, a ``=`` rule, then each entry closed by a ``-`` rule."""
    rule = "+" + "-" * (width - 2) + "+"
    lines = [rule, f"| {title}".ljust(width - 1) + "|", *headers, "|" + "=" * (width - 2) + "|"]
    for row in rows:
        lines.extend(row)
        lines.append(rule)
    return "".join(line + "\n" for line in lines)


_LGIP_HEADERS: dict[str, tuple[int, list[str]]] = {
    "legacy": (
        76,
        [
            "| GPU   Name          ID    Instances   Memory     P2P    SM    DEC   ENC  |",
            "|                           Free/Total   GiB              CE    JPEG  OFA  |",
        ],
    ),
    "current": (
        79,
        [
            "| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |",
            "|                              Free/Total   GiB              CE    JPEG  OFA  |",
        ],
    ),
}


def _listed_profiles(gpu_name: str, style: Style) -> list[GiProfile]:
    profiles = profiles_for(gpu_name)
    if style == "legacy":
        # R450/R460 knew neither the media-extension profile nor the two-slot 1g (both came with R470).
        profiles = [p for p in profiles if p.id not in (15, 20)]
    return profiles


def render_lgip(gpus: Sequence[MigGpu], style: Style = "current") -> str:
    """``nvidia-smi mig -lgip``: the GI profiles of each GPU with Free/Total and their engines."""
    width, headers = _LGIP_HEADERS[style]
    name_width = 11 if style == "legacy" else 14
    rows = []
    for gpu in gpus:
        for p in _listed_profiles(gpu.name, style):
            free = f"{remaining_capacity(gpu.name, gpu.instances, p.id)}/{p.max_instances}"
            mem = f"{p.memory_gib:.2f}"
            p2p = "Yes" if p.p2p else "No"
            first = (
                f"|{gpu.index:>4}  {p.full_name:<{name_width}}{p.id:>6}{free:>8}        "
                f"{mem:<11}{p2p:<7}{p.sm:<6}{p.dec:>2}{p.enc:>6}   |"
            )
            second = "|" + " " * (name_width + 46) + f"{p.ce:>2}{p.jpeg:>6}{p.ofa:>6}   |"
            rows.append((first, second))
    return _box(width, "GPU instance profiles:", headers, rows)


def render_lgipp(gpus: Sequence[MigGpu], style: Style = "current") -> str:
    """``nvidia-smi mig -lgipp``: every possible placement of each GI profile (static, not the free ones)."""
    lines = []
    for gpu in gpus:
        for p in _listed_profiles(gpu.name, style):
            label = "Placements:" if len(p.starts) > 1 else "Placement :"
            starts = ",".join(str(s) for s in p.starts)
            lines.append(f"GPU {gpu.index:2d} Profile ID {p.id:2d} {label} {{{starts}}}:{p.size}\n")
    return "".join(lines)


def render_lgi(gpus: Sequence[MigGpu], style: Style = "current") -> str:
    """``nvidia-smi mig -lgi``: the GPU instances of each GPU with their placement."""
    if style == "legacy":
        width, name_width = 54, 13
        headers = [
            "| GPU   Name          Profile  Instance   Placement  |",
            "|                       ID       ID       Start:Size |",
        ]
    else:
        width, name_width = 57, 16
        headers = [
            "| GPU   Name             Profile  Instance   Placement  |",
            "|                          ID       ID       Start:Size |",
        ]
    rows = []
    for gpu in gpus:
        for gi in lgi_order(gpu.name, gpu.instances):
            placement = f"{gi.start}:{gi.size}"
            name = f"MIG {gi.name}"
            rows.append((f"|{gpu.index:>4}  {name:<{name_width}}{gi.profile_id:>6}{gi.gi_id:>9}{placement:>13}     |",))
    if not rows:
        return f"No GPU instances found: {NOT_FOUND}\n"
    return _box(width, "GPU instances:", headers, rows)


def render_lci(gpus: Sequence[MigGpu], gi_ids: Sequence[int] | None = None, style: Style = "current") -> str:
    """``nvidia-smi mig -lci [-gi IDS]``: the compute instances, GI by GI in ``-lgi`` order."""
    if style == "legacy":
        width = 57
        headers = [
            "| GPU     GPU       Name             Profile   Instance |",
            "|       Instance                       ID        ID     |",
            "|         ID                                            |",
        ]
    else:
        width = 70
        headers = [
            "| GPU     GPU       Name             Profile   Instance   Placement  |",
            "|       Instance                       ID        ID       Start:Size |",
            "|         ID                                                         |",
        ]
    rows = []
    for gpu in gpus:
        for gi in lgi_order(gpu.name, gpu.instances):
            if gi_ids is not None and gi.gi_id not in gi_ids:
                continue
            for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id):
                name = f"MIG {ci.name}"
                row = f"|{gpu.index:>4}{gi.gi_id:>7}       {name:<16}{ci.profile_id:>6}{ci.ci_id:>10}"
                if style == "current":
                    row += f"{ci.start}:{ci.size}".rjust(13)
                rows.append((row + "     |",))
    if not rows:
        return f"No compute instances found: {NOT_FOUND}\n"
    return _box(width, "Compute instances:", headers, rows)


def render_lcip(gpus: Sequence[MigGpu], gi_ids: Sequence[int] | None = None) -> str:
    """``nvidia-smi mig -lcip [-gi IDS]``: the CI profiles of each GI; ``*`` marks the default."""
    headers = [
        "| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |",
        "|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |",
        "|         ID                                                          CE    JPEG       |",
    ]
    rows = []
    for gpu in gpus:
        for gi in lgi_order(gpu.name, gpu.instances):
            if gi_ids is not None and gi.gi_id not in gi_ids:
                continue
            gi_profile = _gi_profile(gpu.name, gi.profile_id)
            for cp in ci_profiles_for(gpu.name, gi.profile_id):
                mark = "*" if cp.is_default else " "
                free = f"{ci_remaining_capacity(gpu.name, gi, cp.id)}/{cp.max_instances}"
                first = (
                    f"|{gpu.index:>4}{gi.gi_id:>7}       {cp.full_name:<16}{cp.id:>6}{mark}{free:>8}"
                    f"{cp.sm:>13}{gi_profile.dec:>9}{gi_profile.enc:>6}{gi_profile.ofa:>6}   |"
                )
                second = "|" + " " * 69 + f"{gi_profile.ce:>2}{gi_profile.jpeg:>6}" + " " * 9 + "|"
                rows.append((first, second))
    if not rows:
        return f"No GPU instances found: {NOT_FOUND}\n"
    return _box(88, "Compute instance profiles:", headers, rows)
