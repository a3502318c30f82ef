"""Reference numbers for the ``auto`` parameter defaults, keyed by GPU model family.

Every number comes from /wodocs/REFERENCES.md; its source is in the comment beside it.
The families are the 8-GPU SXM boards those sources measured (A100, H100, H200); any other
GPU has no reference, and a check whose default is ``auto`` then skips and asks for the
number instead of guessing one.
"""

from __future__ import annotations

from collections.abc import Sequence

from assessor.facts import Gpu

AUTO = "auto"

# nccl-tests all_reduce_perf busbw (GB/s) at the largest message size, one node, 8 GPUs.
NCCL_ALLREDUCE_BUSBW_GBPS: dict[str, float] = {
    "A100": 228.0,  # Azure/azurehpc-health-checks conf/nd96asr_v4.conf (8x A100 SXM4, NV12)
    "H100": 460.0,  # Azure conf/nd96isr_h100_v5.conf; NVIDIA/nccl-tests#212, #290 (NVLS on)
    "H200": 431.0,  # Azure conf/nd96isr_h200_v5.conf
}

# ibstat port rate (Gb/s) of each compute port.
IB_RATE_GBPS: dict[str, float] = {
    "A100": 200.0,  # HDR; Azure conf nd96asr_v4.conf
    "H100": 400.0,  # NDR; Azure conf (check_hw_ib 400); imbue-ai/cluster-health config.json
    "H200": 400.0,  # NDR; Azure conf nd96isr_h200_v5.conf
}

# perftest ib_write_bw with GPUDirect, one direction, Gb/s (--report_gbits).
IB_WRITE_BW_GBITS: dict[str, float] = {
    "A100": 180.0,  # HDR 200G, 8 MB messages; Azure nd96asr_v4.conf (check_ib_bw_gdr 180)
    "H100": 380.0,  # NDR 400G; Azure nd96isr_h100_v5.conf
    "H200": 360.0,  # NDR 400G; Azure nd96isr_h200_v5.conf
}

# Active NVLinks per SXM GPU.
NVLINK_LINKS: dict[str, int] = {
    "A100": 12,  # NVLink3, NV12 in nvidia-smi topo -m; scitix/sichek spec; corpus/nvidia_smi_topo/
    "H100": 18,  # NVLink4, NV18; scitix/sichek spec files
    "H200": 18,  # NVLink4, NV18; scitix/sichek spec files
}

# Volatile corrected ECC errors above which a GPU is worth a look.
ECC_MAX_CORRECTED = 20_000_000  # Azure customTests (Meta's facebookresearch/gcm uses 50M)

# Xid policy, used when assessor.xid_catalog cannot be imported.
# Azure customTests/azure_gpu_xid.nhc and the NVIDIA Xid catalogue (corpus/xid_catalog/).
XID_CRITICAL: frozenset[int] = frozenset({48, 56, 57, 58, 62, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 95, 119, 120})
XID_WARN: frozenset[int] = frozenset({13, 31, 43, 45, 63, 94, 109})

# Clock-throttle reasons (NVML clocksEventReasons without the prefix): 0x8, 0x40, 0x80 fail,
# 0x20 warns. NVML constants; facebookresearch/gcm.
THROTTLE_FAIL: tuple[str, ...] = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
THROTTLE_WARN: tuple[str, ...] = ("sw_thermal_slowdown",)

# Degrees below the GPU's own slowdown threshold at which gpu.temperature fails.
TEMPERATURE_MARGIN_C = 5
TEMPERATURE_FALLBACK_MAX_C = 85  # when the GPU does not report its slowdown threshold


def model_family(name: str | None) -> str | None:
    """``A100``, ``H100`` or ``H200`` from a GPU name; None for anything else.

    ``NVIDIA H100 80GB HBM3`` is H100; ``NVIDIA GH200 480GB`` is a Grace Hopper superchip,
    not an HGX board, and ``H800``/``H20`` are different parts: none has a reference.
    """
    if not name:
        return None
    upper = name.upper()
    if "GH200" in upper:
        return None
    for family in ("H200", "H100", "A100"):
        if family in upper:
            return family
    return None


def is_sxm(name: str | None) -> bool:
    """True for SXM parts: ``A100-SXM4-40GB``, ``H100 80GB HBM3``, ``H200`` (not NVL or PCIe)."""
    if not name:
        return False
    upper = name.upper()
    if "PCIE" in upper or "NVL" in upper:
        return False
    return "SXM" in upper or "HBM3" in upper or model_family(name) == "H200"


def node_family(gpus: Sequence[Gpu] | None) -> str | None:
    """The one model family every named GPU belongs to; None when unknown or mixed."""
    families = {model_family(g.name) for g in gpus or () if g.name}
    if len(families) != 1:
        return None
    return families.pop()


def family_of_names(names: Sequence[str | None]) -> str | None:
    """The one model family of a list of GPU names (e.g. from nccl-tests device lines)."""
    families = {model_family(n) for n in names if n}
    if len(families) != 1:
        return None
    return families.pop()


def is_nvswitch_system(gpus: Sequence[Gpu] | None) -> bool:
    """An HGX/DGX board with NVSwitches: the fabric manager must run there.

    Evidence: a GPU reports a fabric state other than Not Supported (drivers >= 530), or
    four or more GPUs all of an SXM model. PCIe boxes have no NVSwitch; there the fabric
    manager exits with NV_WARN_NOTHING_TO_DO, which is harmless.
    """
    gpus = list(gpus or ())
    states = [g.fabric_state for g in gpus if g.fabric_state]
    if any(s.strip().lower() not in ("not supported", "n/a") for s in states):
        return True
    if states and all(s.strip().lower() == "not supported" for s in states):
        return False
    return len(gpus) >= 4 and all(is_sxm(g.name) for g in gpus)
