"""What every simulated ``nvidia-smi`` sub-command shares: the driver gate, GPU selection, messages.

Real nvidia-smi initialises NVML before it looks at its arguments' meaning, so a broken driver
answers every command the same way (:func:`driver_failure`). A GPU that fell off the bus is
reported on its own line and left out of what follows (:func:`lost_lines`).

Exit codes are nvidia-smi's documented return values (``man nvidia-smi``, RETURN VALUE), except
the version mismatch, where nvidia-smi passes NVML's own code (NVML_ERROR_LIB_RM_VERSION_MISMATCH).
"""

from __future__ import annotations

from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import ToolResult

EXIT_OK = 0
EXIT_INVALID_ARGUMENT = 2
EXIT_NOT_SUPPORTED = 3
EXIT_NO_PERMISSION = 4
EXIT_NOT_FOUND = 6
EXIT_DRIVER_NOT_LOADED = 9
EXIT_GPU_LOST = 15
EXIT_VERSION_MISMATCH = 18
EXIT_OTHER = 255

INVALID_COMBINATION = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
NO_DEVICES = "No devices were found"
TERMINATING = "Terminating early due to previous errors."
ALL_DONE = "All done."

# NVML's error strings (nvmlErrorString), as nvidia-smi appends them after a colon.
NVML_NO_PERMISSION = "Insufficient Permissions"
NVML_NOT_SUPPORTED = "Not Supported"
NVML_IN_USE = "In use by another client"
NVML_INSUFFICIENT_RESOURCES = "Insufficient Resources"
NVML_NOT_FOUND = "Not Found"
NVML_INVALID_ARGUMENT = "Invalid Argument"


def text(*lines: str) -> str:
    """Lines joined as a tool prints them: each ends with a newline."""
    return "".join(line + "\n" for line in lines)


def result(code: int, lines: list[str], err: list[str] | None = None) -> ToolResult:
    """A ToolResult from stdout lines (and stderr lines)."""
    return ToolResult(code, text(*lines), text(*(err or [])))


def usage_error() -> ToolResult:
    """nvidia-smi's answer to options it does not know or cannot combine."""
    return result(EXIT_INVALID_ARGUMENT, [INVALID_COMBINATION])


def nvml_library_version(version: str) -> str:
    """NVML's own version as the mismatch message gives it: major.minor of the driver (535.129)."""
    return ".".join(version.split(".")[:2])


def driver_failure(state: NodeState) -> ToolResult | None:
    """What nvidia-smi prints, whatever it was asked, when NVML cannot start; None when it can."""
    driver = state.driver
    if not driver.loaded:
        return result(
            EXIT_DRIVER_NOT_LOADED,
            [
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                "Make sure that the latest NVIDIA driver is installed and running.",
                "",
            ],
        )
    if driver.version != driver.kernel_module_version:
        lines = ["Failed to initialize NVML: Driver/library version mismatch"]
        # The second line appears in public captures from the R535 drivers on.
        if _major(driver.version) >= 535:
            lines.append(f"NVML library version: {nvml_library_version(driver.version)}")
        return result(EXIT_VERSION_MISMATCH, lines)
    return None


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def short_bus_id(bus_id: str) -> str:
    """0000:18:00.0 from 00000000:18:00.0 (the domain as the kernel writes it)."""
    domain, rest = bus_id.split(":", 1)
    return f"{domain[-4:]}:{rest}"


def lost_line(gpu: GpuState) -> str:
    """The line nvidia-smi prints for a GPU NVML cannot reach (fell off the bus, Xid 79)."""
    return (
        f"Unable to determine the device handle for GPU{gpu.index}: {short_bus_id(gpu.bus_id)}: "
        "GPU is lost.  Reboot the system to recover this GPU"
    )


def lost_lines(gpus: list[GpuState]) -> list[str]:
    """One :func:`lost_line` per lost GPU in ``gpus``."""
    return [lost_line(g) for g in gpus if g.lost]


class NoSuchGpu(Exception):
    """An ``-i`` value that names no GPU (nvidia-smi: "No devices were found", exit 6)."""


def select_gpus(state: NodeState, ids: str | None) -> list[GpuState]:
    """The GPUs an ``-i`` value names (index, PCI bus id or UUID; comma-separated), all when None.

    Raises :class:`NoSuchGpu` when an entry matches no GPU.
    """
    if ids is None:
        return list(state.gpus)
    chosen: list[GpuState] = []
    for raw in ids.split(","):
        token = raw.strip()
        gpu = _match(state, token)
        if gpu is None:
            raise NoSuchGpu(token)
        if gpu not in chosen:
            chosen.append(gpu)
    return chosen


def _match(state: NodeState, token: str) -> GpuState | None:
    if not token:
        return None
    for gpu in state.gpus:
        if token.isdigit() and int(token) == gpu.index:
            return gpu
        if token.upper() == gpu.uuid.upper() or token.upper() == gpu.uuid[4:].upper():
            return gpu
        if ":" in token and _same_bus(token, gpu.bus_id):
            return gpu
    return None


def _same_bus(token: str, bus_id: str) -> bool:
    """True when ``token`` is ``bus_id`` written with a shorter (or no) domain: 0000:18:00.0, 18:00.0."""
    want = token.upper().split(":")
    have = bus_id.upper().split(":")
    if len(want) == 2:
        return want == have[1:]
    if len(want) == 3:
        try:
            return want[1:] == have[1:] and int(want[0], 16) == int(have[0], 16)
        except ValueError:
            return False
    return False


def enabled(value: bool | None) -> str:
    """Enabled / Disabled / N/A, as nvidia-smi writes modes."""
    if value is None:
        return "N/A"
    return "Enabled" if value else "Disabled"


def visible(gpus: list[GpuState]) -> list[GpuState]:
    """The GPUs NVML can still reach."""
    return [g for g in gpus if not g.lost]
