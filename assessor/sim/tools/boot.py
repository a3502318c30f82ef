"""A reboot of a simulated node: what survives it and what starts over.

Survives: the hardware and cabling (IB ports, link rates, NVLinks' wiring, a GPU's temperature), the
installed software (driver packages, units' enabled/disabled state), the configuration files, and the
GPU settings kept in the GPU's InfoROM: MIG mode and ECC mode, whose *pending* values become current (MIG
User Guide: on Ampere "MIG mode setting is persistent across reboots"; nvidia-smi: a new ECC mode
applies at the next reboot).

Starts over: the clock (a new boot time, uptime from zero), the kernel log, the loaded modules (what the
node loads at boot, less what ``/etc/modprobe.d`` blacklists), the kernel module's version (the installed
one loads, so a driver upgraded without a reboot now matches), every process, MIG GPU and compute
instances (MIG User Guide: "the MIG configuration does not persist across reboots"), volatile ECC counts,
pending row remaps (applied), a GPU that fell off the bus, legacy persistence mode, power limits and locked
clocks set with nvidia-smi, an HCA's firmware (the image burned to flash runs) and its ports' physical
counters; enabled units start again in boot order and disabled ones stay down.
"""

from __future__ import annotations

import copy
from pathlib import Path

from assessor.sim import clock
from assessor.sim.config_root import modprobe_blacklist
from assessor.sim.state import ModuleState, NodeState

# The order systemd brings the GPU units up: persistenced before the fabric manager, DCGM after both.
_BOOT_ORDER = (
    "openibd.service",
    "nvidia-persistenced.service",
    "nvidia-fabricmanager.service",
    "nvidia-dcgm.service",
)
_NVIDIA_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem")
_NOUVEAU_SIZE = 2797568  # lsmod of Ubuntu 22.04's nouveau


def _boot_modules(state: NodeState, blacklist: set[str]) -> list[ModuleState]:
    """The modules loaded after boot: the fixture's set (or the present one), less the blacklisted."""
    from assessor.sim.fixtures import fixture_names, load_fixture

    modules = load_fixture(state.fixture).modules if state.fixture in fixture_names() else copy.deepcopy(state.modules)
    dropped = {m.name for m in modules if m.name in blacklist}
    nouveau = "nouveau" not in blacklist and bool(state.gpus)
    if nouveau:
        # Without the blacklist nouveau claims the GPUs first and the NVIDIA driver cannot bind.
        dropped |= set(_NVIDIA_MODULES)
    kept = [m for m in modules if m.name not in dropped]
    for m in kept:
        gone = [u for u in m.used_by if u in dropped]
        m.used_by = [u for u in m.used_by if u not in dropped]
        if m.used_by_count is not None:
            m.used_by_count = max(len(m.used_by), m.used_by_count - len(gone))
    if nouveau:
        kept.insert(0, ModuleState(name="nouveau", size=_NOUVEAU_SIZE, used_by=[]))
    return kept


def reboot(state: NodeState, root: Path | None = None) -> None:
    """Reboot ``state``'s node in place, reading its configuration files under ``root``."""
    from assessor.sim.fixtures import boot_kernel_log
    from assessor.sim.packages import boot_kernel, booted_log, module_version
    from assessor.sim.tools.nvidia_smi import await_fabric_registration, reset_gpu_state, sync_clock_setting_reason
    from assessor.sim.tools.system import start_unit

    clock.reboot(state)
    boot_kernel(state)  # the newest installed kernel boots (assessor.sim.packages)
    blacklist = modprobe_blacklist(root)
    if module_version(state) is None:  # DKMS built no nvidia module for this kernel: none loads
        blacklist |= set(_NVIDIA_MODULES)
    state.modules = _boot_modules(state, blacklist)
    driver = state.driver
    driver.kernel_module_version = module_version(state) or driver.version  # the installed module is the one that loads
    driver.loaded = state.module_loaded("nvidia")
    for gpu in state.gpus:
        reset_gpu_state(gpu)
        gpu.processes = []
        gpu.memory_used_mib = 0
        gpu.lost = False
        gpu.persistence_mode = False  # until nvidia-persistenced starts
        # nvidia-smi -pl and -lgc last until the driver unloads: the board's defaults come back at boot
        gpu.power_limit_w = gpu.power_default_limit_w or gpu.power_limit_w
        gpu.locked_gpu_clocks_mhz = None
        gpu.applications_clocks_mhz = {}  # -ac too: applications clocks go back to the default at a driver load
        sync_clock_setting_reason(gpu)
        for link in gpu.nvlinks:
            link.active = True
        if gpu.remapped_rows is not None:
            gpu.remapped_rows.pending = False
        await_fabric_registration(gpu, state)  # until the fabric manager starts below
    from assessor.sim.tools.mlxfw import activate_firmware

    for hca in state.ib_hcas:
        activate_firmware(hca)  # the image on flash runs; the port counters start over with the boot
    log = boot_kernel_log(state)
    if not driver.loaded:
        log = [line for line in log if "nvidia" not in line.lower() and "NVRM" not in line]
        if state.module_loaded("nouveau"):
            n = len(state.gpus)
            log += [
                f"[{6.1 + i * 0.0121:12.6f}] nouveau {g.bus_id[4:].lower()}: enabling device (0000 -> 0002)"
                for i, g in enumerate(state.gpus)
            ]
            log += [
                f"[{7.2:12.6f}] NVRM: The NVIDIA probe routine was not called for {n} device(s).",
                f"[{7.2:12.6f}] NVRM: This can occur when a driver such as: ",
                f"[{7.2:12.6f}] NVRM: nouveau, rivafb, nvidiafb or rivatv ",
                f"[{7.2:12.6f}] NVRM: was loaded and obtained ownership of the NVIDIA device(s).",
            ]
    state.kernel_log = booted_log(state, log)
    from assessor.sim.grub import boot as boot_cmdline

    boot_cmdline(state, root)  # the kernel command line grub.cfg gives, and its IOMMU lines
    ordered = [u for u in _BOOT_ORDER if u in state.services] + sorted(
        u for u in state.services if u not in _BOOT_ORDER
    )
    for unit in ordered:
        service = state.services[unit]
        if service.load_state == "not-found":
            continue
        service.since_s = None
        service.result, service.exec_main_status = "success", 0
        if service.unit_file_state == "enabled":
            start_unit(state, unit, service, root)
        else:
            service.active_state, service.sub_state = "inactive", "dead"
