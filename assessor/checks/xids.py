"""What an Xid means and what to do about it, for the Xids the readiness policy names.

The policy (THRESHOLDS.md, "Xid policy") follows Azure's HPC health checks: the critical
codes make a node unfit for work until acted on, the warn codes are usually an
application's fault or the echo of another error. Names follow NVIDIA's Xid catalogue
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, mnemonic in the
comment); the actions are our own short wording of its resolution buckets.

>>> describe(79).name
'GPU has fallen off the bus'
>>> severity(79), severity(13), severity(8)
('critical', 'warn', None)
"""

from __future__ import annotations

from typing import NamedTuple


class XidInfo(NamedTuple):
    name: str  # short human name
    action: str  # what an operator should do


CRITICAL_XIDS: frozenset[int] = frozenset({48, 56, 57, 58, 62, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 95, 119, 120})
WARN_XIDS: frozenset[int] = frozenset({13, 31, 43, 45, 63, 94, 109})

_RESET = "Drain the node and reset the GPU (nvidia-smi -r, or reboot)"
# The same words inside a sentence.
_RESET_MID = "drain the node and reset the GPU (nvidia-smi -r, or reboot)"
_SUPPORT = "if it comes back after the reset, open a case with the vendor (possible RMA)"

XID_CATALOG: dict[int, XidInfo] = {
    # ROBUST_CHANNEL_GR_EXCEPTION
    13: XidInfo(
        "graphics engine exception",
        "Usually the application (illegal instruction or address): restart it; "
        "if several applications hit it, run dcgmi diag -r 3.",
    ),
    # ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT
    31: XidInfo(
        "GPU memory page fault",
        "Usually an illegal memory access in the application: restart it and debug with compute-sanitizer; "
        "if unrelated jobs hit it, run dcgmi diag.",
    ),
    # ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR
    43: XidInfo(
        "GPU stopped processing (channel reset)",
        "The application was stopped after a fault; the GPU stays usable. Look for the Xid logged before it.",
    ),
    # ROBUST_CHANNEL_PREEMPTIVE_REMOVAL
    45: XidInfo(
        "preemptive cleanup after an earlier error",
        "A follow-on: act on the Xid that preceded it (often 48, 63 or 94). Alone, it means a job was killed.",
    ),
    # ROBUST_CHANNEL_GPU_ECC_DBE
    48: XidInfo(
        "double-bit ECC error",
        f"{_RESET}, then check row remapping (nvidia-smi -q -d ROW_REMAPPER); {_SUPPORT}.",
    ),
    # DISPLAY_CHANNEL_EXCEPTION
    56: XidInfo("display engine exception", f"{_RESET}; {_SUPPORT}."),
    # FB_LINK_TRAINING_FAILURE_ERROR
    57: XidInfo("GPU memory link training failure", f"{_RESET}; {_SUPPORT}."),
    # FB_MEMORY_ERROR
    58: XidInfo("GPU memory interface error", f"{_RESET}; {_SUPPORT}."),
    # PMU_HALT_ERROR
    62: XidInfo("internal micro-controller halt", f"{_RESET}; update the driver and firmware; {_SUPPORT}."),
    # INFOROM_DRAM_RETIREMENT_EVENT
    63: XidInfo(
        "GPU memory row remapping event",
        "A row was remapped successfully; reset the GPU when it is idle so the remap takes effect "
        "(gpu.row_remap reports the pending state).",
    ),
    # INFOROM_DRAM_RETIREMENT_FAILURE
    64: XidInfo(
        "GPU memory row remapping failure",
        f"{_RESET}; a remap failure means no spare rows are left: plan to replace the GPU.",
    ),
    # ROBUST_CHANNEL_NVENC1_ERROR
    65: XidInfo("video encoder (NVENC1) error", f"{_RESET}; {_SUPPORT}."),
    # ROBUST_CHANNEL_NVDEC0_ERROR
    68: XidInfo("video decoder (NVDEC0) exception", f"Restart the application; if it repeats, {_RESET_MID}."),
    # ROBUST_CHANNEL_GR_CLASS_ERROR
    69: XidInfo("graphics engine class error", f"Restart the application; if it repeats, {_RESET_MID}."),
    # ROBUST_CHANNEL_NVENC2_ERROR
    73: XidInfo("video encoder (NVENC2) error", f"{_RESET}; {_SUPPORT}."),
    # NVLINK_ERROR
    74: XidInfo(
        "NVLink error",
        "Check the links (nvidia-smi nvlink -s and -e), reset the GPU (and the fabric manager on NVSwitch systems); "
        "if a link stays down or keeps erroring, reseat or replace the GPU/baseboard.",
    ),
    # ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS
    79: XidInfo(
        "GPU has fallen off the bus",
        "Drain the node and power-cycle it (a warm reset is not enough); check the PCIe slot, "
        f"power and cooling; {_SUPPORT}.",
    ),
    # PBDMA_PUSHBUFFER_CRC_MISMATCH
    80: XidInfo(
        "corrupted data sent to the GPU",
        f"Check the PCIe link (gpu.pcie_link, AER messages in the log); {_RESET_MID}; {_SUPPORT}.",
    ),
    # ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR
    81: XidInfo("VGA subsystem error", f"{_RESET}; {_SUPPORT}."),
    # EXCESSIVE_SBE_INTERRUPTS
    92: XidInfo(
        "high single-bit ECC error rate",
        "Watch the corrected ECC counters; if they keep rising, drain the node and plan to replace the GPU.",
    ),
    # ROBUST_CHANNEL_CONTAINED_ERROR
    94: XidInfo(
        "contained memory error",
        "Only the affected application was stopped: restart it. Reset the GPU when idle to apply the row remap.",
    ),
    # ROBUST_CHANNEL_UNCONTAINED_ERROR
    95: XidInfo(
        "uncontained memory error",
        f"Every application on the GPU is affected: {_RESET_MID}; {_SUPPORT}.",
    ),
    # ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR
    109: XidInfo(
        "context switch timeout",
        f"Restart the application; if it repeats, {_RESET_MID} and check the driver version.",
    ),
    # GSP_RPC_TIMEOUT
    119: XidInfo(
        "GSP RPC timeout",
        f"{_RESET}; update the driver (GSP fixes land in newer releases); {_SUPPORT}.",
    ),
    # GSP_ERROR
    120: XidInfo("GSP firmware error", f"{_RESET}; update the driver; {_SUPPORT}."),
}


def severity(code: int) -> str | None:
    """``critical``, ``warn`` or None (not in the policy) for an Xid code."""
    if code in CRITICAL_XIDS:
        return "critical"
    if code in WARN_XIDS:
        return "warn"
    return None


def describe(code: int) -> XidInfo:
    """The catalogue entry, or a generic one for a code the policy does not name."""
    return XID_CATALOG.get(
        code,
        XidInfo(f"Xid {code}", "Look the code up in NVIDIA's Xid catalogue and act on its resolution."),
    )
