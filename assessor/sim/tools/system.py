"""Simulated system tools: ``lsmod``, ``modprobe``, ``rmmod``, ``dmesg``, ``journalctl``, ``systemctl``, ``cat``,
``uname``.

They read the modules, services, kernel log and host facts of the node state and change them as the real
commands would (``systemctl stop|enable``, ``modprobe -r``), refusing what the real ones refuse with the real
messages: a module in use (its use count includes the GPU daemons' and CUDA processes' open handles,
:mod:`assessor.sim.gpu_clients`), an unknown unit, a non-root user. Every time they print comes from the
node's one clock (:mod:`assessor.sim.clock`).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from assessor.sim import clock
from assessor.sim.config_root import (
    drop_in_files,
    fabric_manager_config_path,
    fabric_manager_configured,
    fabric_manager_error,
    persistenced_sets_persistence,
    read_config,
)
from assessor.sim.gpu_clients import cuda_processes, driver_handles
from assessor.sim.slurm_node import UNITS as SLURM_UNITS
from assessor.sim.state import ClockState, ModuleState, NodeState, ServiceState
from assessor.sim.tools import Session, ToolResult

# ---- kernel log helpers (faults use them too) ------------------------------------------------

_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\]")


def log_time(line: str) -> float | None:
    """Seconds since boot of a ``[  123.456789] ...`` kernel log line; None without a stamp."""
    m = _STAMP.match(line)
    return float(m.group(1)) if m else None


def last_log_time(state: NodeState) -> float:
    """The stamp of the newest kernel log line (0 on an empty log)."""
    for line in reversed(state.kernel_log):
        t = log_time(line)
        if t is not None:
            return t
    return 0.0


def append_kernel_log(state: NodeState, messages: list[str], *, after_s: float = 60.0) -> None:
    """Append kernel messages stamped ``after_s`` seconds from now on the node's clock, a few µs apart.

    The clock moves on to them (:func:`assessor.sim.clock.uptime` counts the newest line), so ``dmesg -T``,
    ``journalctl`` and ``systemctl status`` keep agreeing.
    """
    t = clock.uptime(state) + after_s
    for i, message in enumerate(messages):
        state.kernel_log.append(f"[{t + i * 0.000011:12.6f}] {message}")


# ---- lsmod / modprobe ------------------------------------------------------------------------

# Modules modprobe can load on these nodes when absent, with their sizes (lsmod of a DGX/HGX).
_KNOWN_MODULES = {
    "nvidia_peermem": 16384,
    "nvidia_uvm": 1437696,
    "nvidia_drm": 77824,
    "nvidia_modeset": 1306624,
    "nvidia": 56778752,
    "ib_core": 430080,
    "ib_uverbs": 163840,
    "mlx5_ib": 450560,
    "mlx5_core": 2060288,
    "ib_ipoib": 139264,
    "ib_umad": 28672,
    "rdma_ucm": 28672,
    "rdma_cm": 118784,
}
# What a module needs loaded first (only the dependencies the labs exercise).
_DEPENDS = {
    "nvidia_peermem": ("nvidia", "ib_core"),
    "nvidia_uvm": ("nvidia",),
    "nvidia_modeset": ("nvidia",),
    "nvidia_drm": ("nvidia_modeset",),
    "mlx5_ib": ("mlx5_core", "ib_core"),
    "ib_uverbs": ("ib_core",),
}
# The symbol the kernel names when a dependency is missing (dmesg "Unknown symbol ...").
_MISSING_SYMBOL = {
    "nvidia": "nvidia_p2p_get_pages",
    "ib_core": "ib_register_peer_memory_client",
    "nvidia_modeset": "nvKmsKapiGetFunctionsTable",
    "mlx5_core": "mlx5_core_create_mkey",
}


def use_count(state: NodeState, module: ModuleState) -> int:
    """lsmod's "Used by" count: named dependent modules plus open handles.

    ``nvidia`` is held open by every GPU daemon and compute process (:func:`.gpu_clients.driver_handles`),
    ``nvidia_uvm`` by every CUDA process. A fixture's stored count (27 on a DGX) stands for those handles
    while any remain; once the last one closes only the named users are left, so the module can go.
    """
    named = len(module.used_by)
    stored = module.used_by_count if module.used_by_count is not None else named
    if module.name == "nvidia":
        handles = len(driver_handles(state))
        return named + (max(stored - named, handles) if handles else 0)
    if module.name == "nvidia_uvm":
        cuda = len(cuda_processes(state))
        return named + (max(stored - named, cuda) if cuda else 0)
    return stored


def lsmod(args: list[str], session: Session) -> ToolResult:
    """``lsmod``: the loaded modules, most recently loaded first, as the state lists them."""
    state = session.read()
    lines = ["Module                  Size  Used by\n"]
    for m in state.modules:
        users = ",".join(m.used_by)
        line = f"{m.name:<19} {m.size:>8}  {use_count(state, m)}"
        lines.append(line + (f" {users}" if users else "") + "\n")
    return ToolResult(0, "".join(lines))


def _release(state: NodeState) -> str:
    parts = (state.uname or "").split()
    return parts[2] if len(parts) > 2 else "5.15.0-91-generic"


def machine(state: NodeState) -> str:
    """``uname -m`` of the node: the machine field of its ``uname -a`` (``aarch64`` on Grace), else ``x86_64``."""
    parts = (state.uname or "").split()
    return parts[-4] if len(parts) >= 8 and parts[-1] == "GNU/Linux" else "x86_64"


def modprobe(args: list[str], session: Session) -> ToolResult:
    """``modprobe [-r] MODULE...``: load or unload modules (root only), with modprobe's refusals.

    Loading a module loads what it depends on first (``modprobe nvidia_drm`` brings ``nvidia_modeset`` and
    ``nvidia``), except ``nvidia_peermem``, whose peer-memory symbols come from the MOFED ``ib_core`` that
    modprobe cannot know about (it fails with "Unknown symbol" instead). ``-r`` also removes the modules
    the named one depended on once nothing else uses them (man modprobe, ``--remove``).
    """
    remove = False
    names: list[str] = []
    for arg in args:
        if arg in ("-r", "--remove"):
            remove = True
        elif arg.startswith("-"):
            continue  # -v, -q, -a: no effect on the simulated result
        else:
            names.append(arg.replace("-", "_"))
    if not names:
        return ToolResult(1, "", "modprobe: ERROR: missing parameters. See -h.\n")
    if session.euid != 0:
        verb = "remove" if remove else "insert"
        return ToolResult(1, "", f"modprobe: ERROR: could not {verb} '{names[0]}': Operation not permitted\n")
    with session.update() as state:
        for name in names:
            result = _unload(state, name, cascade=True) if remove else _load(state, name)
            if result is not None:
                return result
    return ToolResult(0)


def rmmod(args: list[str], session: Session) -> ToolResult:
    """``rmmod MODULE...``: unload exactly the named modules (no dependencies), with rmmod's messages."""
    names = [a.replace("-", "_") for a in args if not a.startswith("-")]
    if not names:
        return ToolResult(1, "", "rmmod: ERROR: missing module name.\n")
    if session.euid != 0:
        return ToolResult(1, "", f"rmmod: ERROR: could not remove '{names[0]}': Operation not permitted\n")
    with session.update() as state:
        for name in names:
            module = next((m for m in state.modules if m.name == name), None)
            if module is None:
                return ToolResult(1, "", f"rmmod: ERROR: Module {name} is not currently loaded\n")
            if use_count(state, module) > 0:
                users = f" by: {' '.join(module.used_by)}" if module.used_by else ""
                return ToolResult(1, "", f"rmmod: ERROR: Module {name} is in use{users}\n")
            _unload(state, name, cascade=False)
    return ToolResult(0)


# Loading these loads their dependencies first, as modprobe does from modules.dep.
_AUTO_DEPENDENCIES = ("nvidia_uvm", "nvidia_modeset", "nvidia_drm", "mlx5_ib", "ib_uverbs")


def _load(state: NodeState, name: str) -> ToolResult | None:
    if state.module_loaded(name):
        return None  # already loaded: modprobe succeeds silently
    from assessor.sim.packages import nvidia_module_missing

    missing_build = nvidia_module_missing(state, name)  # DKMS never built the driver for the running kernel
    if missing_build is not None:
        return ToolResult(1, "", missing_build)
    if name not in _KNOWN_MODULES:
        where = f"/lib/modules/{_release(state)}"
        return ToolResult(1, "", f"modprobe: FATAL: Module {name} not found in directory {where}\n")
    if name in _AUTO_DEPENDENCIES:
        for dependency in _DEPENDS.get(name, ()):
            failed = _load(state, dependency)
            if failed is not None:
                return failed
    missing = [d for d in _DEPENDS.get(name, ()) if not state.module_loaded(d)]
    if missing:
        symbol = _MISSING_SYMBOL.get(missing[0], f"{missing[0]}_init")
        append_kernel_log(state, [f"{name}: Unknown symbol {symbol} (err -2)"], after_s=5.0)
        return ToolResult(
            1,
            "",
            f"modprobe: ERROR: could not insert '{name}': Unknown symbol in module, or unknown parameter (see dmesg)\n",
        )
    state.modules.insert(0, ModuleState(name=name, size=_KNOWN_MODULES[name], used_by=[]))
    holders = list(_DEPENDS.get(name, ()))
    # nvidia_peermem registers with ib_uverbs' peer-memory API on MOFED stacks (lsmod lists it there).
    if name == "nvidia_peermem" and state.module_loaded("ib_uverbs"):
        holders = ["nvidia", "ib_uverbs"]
    for holder in holders:
        for m in state.modules:
            if m.name == holder and name not in m.used_by:
                m.used_by.append(name)
                if m.used_by_count is not None:
                    m.used_by_count += 1
    if name == "nvidia":
        _driver_loaded(state)
    elif name == "nvidia_peermem":
        append_kernel_log(
            state, [f"nvidia-peermem nv_mem_client_init:{state.driver.kernel_module_version} loaded"], after_s=5.0
        )
    elif name == "nvidia_uvm":
        append_kernel_log(state, ["nvidia-uvm: Loaded the UVM driver, major device number 506."], after_s=1.0)
    elif name == "nvidia_modeset":
        drv = state.driver
        append_kernel_log(
            state,
            [
                "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  "
                f"{drv.kernel_module_version}  {drv.build_date or ''}".rstrip()
            ],
            after_s=1.0,
        )
    return None


def _driver_loaded(state: NodeState) -> None:
    """The kernel module that loads is the one installed on disk: the driver packages' version.

    So an upgrade without a reboot (library newer than the loaded module) is repaired by unloading and
    loading the driver, as on a real node. Loading resets every GPU: pending modes apply, MIG instances and
    processes are gone, and NVSwitch GPUs wait for the fabric manager to register them again.
    """
    from assessor.sim.packages import module_version
    from assessor.sim.tools.nvidia_smi import await_fabric_registration, reset_gpu_state

    drv = state.driver
    drv.loaded = True
    drv.kernel_module_version = module_version(state) or drv.version  # the build DKMS installed for this kernel
    for gpu in state.gpus:
        reset_gpu_state(gpu)
        gpu.processes = []
        gpu.lost = False
        await_fabric_registration(gpu, state)
    arch = machine(state)  # "for aarch64" on Grace (geerlingguy/raspberry-pi-pcie-devices#692)
    banner = (
        f"NVRM: loading NVIDIA UNIX Open Kernel Module for {arch}  {drv.kernel_module_version}  Release Build"
        if drv.open_kernel_module
        else f"NVRM: loading NVIDIA UNIX {arch} Kernel Module  {drv.kernel_module_version}"
    )
    lines = ["nvidia-nvlink: Nvlink Core is being initialized, major device number 508"]
    lines += [f"nvidia {g.bus_id[4:].lower()}: enabling device (0000 -> 0002)" for g in state.gpus]
    lines.append(f"{banner}  {drv.build_date or ''}".rstrip())
    append_kernel_log(state, lines, after_s=2.0)


def _unload(state: NodeState, name: str, *, cascade: bool) -> ToolResult | None:
    module = next((m for m in state.modules if m.name == name), None)
    if module is None:
        return ToolResult(1, "", f"modprobe: FATAL: Module {name} is not in kernel.\n")
    if use_count(state, module) > 0:
        return ToolResult(1, "", f"modprobe: FATAL: Module {name} is in use.\n")
    state.modules.remove(module)
    for m in state.modules:
        if name in m.used_by:
            m.used_by.remove(name)
            if m.used_by_count is not None:
                m.used_by_count = max(0, m.used_by_count - 1)
    if name == "nvidia":
        state.driver.loaded = False
        append_kernel_log(state, ["nvidia-nvlink: Unregistered Nvlink Core, major device number 508"], after_s=1.0)
    if cascade:
        for dependency in _DEPENDS.get(name, ()):
            dep = next((m for m in state.modules if m.name == dependency), None)
            if dep is not None and dependency.startswith("nvidia") and use_count(state, dep) == 0:
                _unload(state, dependency, cascade=True)
    return None


# ---- dmesg / journalctl ----------------------------------------------------------------------


def dmesg(args: list[str], session: Session) -> ToolResult:
    """``dmesg [-T]``: the kernel log; refused to non-root users as kernel.dmesg_restrict=1 does."""
    if session.euid != 0:
        return ToolResult(1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")
    state = session.read()
    human = any(a in ("-T", "--ctime") for a in args)
    lines = [_ctime_line(state, line) if human else line for line in state.kernel_log]
    return ToolResult(0, "".join(f"{line}\n" for line in lines))


def _ctime_line(state: NodeState, line: str) -> str:
    """``[   12.5] msg`` -> ``[Wed Jan 15 08:00:12 2025] msg`` (dmesg -T), from the node's boot time."""
    t = log_time(line)
    if t is None:
        return line
    when = clock.at(state, t)
    return f"[{when.strftime('%a %b %e %H:%M:%S %Y')}]" + line[line.index("]") + 1 :]


def journalctl(args: list[str], session: Session) -> ToolResult:
    """``journalctl -k`` (the kernel log with syslog prefixes) and ``journalctl -u UNIT`` (the unit's journal).

    ``-u`` without a unit is journalctl's getopt error (exit 1).
    """
    unit = None
    kernel = False
    quiet = False
    lines_wanted: int | None = None
    args = _split_short_options(args, takes_value="un")
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-k", "--dmesg"):
            kernel = True
        elif arg in ("-u", "--unit"):
            if i + 1 >= len(args):
                message = (
                    "option requires an argument -- 'u'" if arg == "-u" else "option '--unit' requires an argument"
                )
                return ToolResult(1, "", f"journalctl: {message}\n")
            i += 1
            unit = args[i]
        elif arg.startswith("--unit="):
            unit = arg.split("=", 1)[1]
        elif arg in ("-q", "--quiet"):
            quiet = True
        elif arg in ("-n", "--lines") and i + 1 < len(args) and args[i + 1].isdigit():
            i += 1
            lines_wanted = int(args[i])
        elif arg.startswith("--lines=") and arg[8:].isdigit():
            lines_wanted = int(arg[8:])
        i += 1
    state = session.read()
    host = state.host
    if unit is not None:
        entries = unit_journal(state, _unit_name(unit), session.root())
        if not entries:
            return ToolResult(0, "" if quiet else "-- No entries --\n")
        shown = entries[-lines_wanted:] if lines_wanted is not None else entries
        head = [] if quiet else [f"-- Logs begin at {_journal_time(state, 0.0, long=True)}. --\n"]
        return ToolResult(0, "".join(head) + "".join(f"{e}\n" for e in shown))
    if not kernel:
        kernel = True  # the simulated journal holds only the kernel's messages
    out = [] if quiet else [f"-- Logs begin at {_journal_time(state, 0.0, long=True)}. --\n"]
    for line in state.kernel_log:
        t = log_time(line)
        body = line[line.index("]") + 1 :].lstrip() if t is not None else line
        out.append(f"{_journal_time(state, t or 0.0)} {host} kernel: {body}\n")
    return ToolResult(0, "".join(out))


def _split_short_options(args: list[str], *, takes_value: str) -> list[str]:
    """getopt's clusters as separate options: ``-xeu UNIT`` -> ``-x -e -u UNIT``, ``-uUNIT`` -> ``-u UNIT``."""
    out: list[str] = []
    for arg in args:
        if not arg.startswith("-") or arg.startswith("--") or len(arg) <= 2:
            out.append(arg)
            continue
        for n, letter in enumerate(arg[1:], start=1):
            out.append(f"-{letter}")
            if letter in takes_value:
                if arg[n + 1 :]:
                    out.append(arg[n + 1 :])
                break
    return out


def _journal_time(state: NodeState, seconds: float, *, long: bool = False) -> str:
    when = clock.at(state, seconds)
    return when.strftime("%a %Y-%m-%d %H:%M:%S UTC") if long else when.strftime("%b %d %H:%M:%S")


BOOT_START_S = 12.0  # when systemd starts the units at boot
BOOT_FAIL_S = 14.0

# The IMEX daemon of a multi-node NVLink domain (a GB200 NVL72 compute tray). Its config names the file that lists
# the IP addresses of every node in the IMEX domain (IMEX_NODE_CONFIG_FILE, default below: NVIDIA IMEX guide,
# "IMEX Service Config Options"). At start it binds to the one of those addresses this node has, and exits
# logging "No matching network interface found for any IP addresses in the node configuration file PATH."
# when it has none of them (the daemon's message, quoted in kubernetes-sigs/dra-driver-nvidia-gpu#298). The
# node's addresses are its netplan configuration's; a node without one is not judged (its IMEX starts).
IMEX_UNIT = "nvidia-imex.service"
IMEX_CONFIG = "/etc/nvidia-imex/config.cfg"
IMEX_NODES_CONFIG = "/etc/nvidia-imex/nodes_config.cfg"
NETPLAN_CONFIG = "/etc/netplan/50-cloud-init.yaml"
_ADDRESS = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})/\d{1,2}\b")


def node_addresses(root: Path | None) -> set[str]:
    """The node's IPv4 addresses, as its netplan configuration gives them (``- 10.114.2.11/24``)."""
    return set(_ADDRESS.findall(read_config(root, NETPLAN_CONFIG) or ""))


def imex_nodes_config_path(root: Path | None) -> str:
    """The node list IMEX reads: ``IMEX_NODE_CONFIG_FILE`` of its config, else the default."""
    for line in (read_config(root, IMEX_CONFIG) or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "IMEX_NODE_CONFIG_FILE" and value.strip():
            return value.strip()
    return IMEX_NODES_CONFIG


def imex_error(root: Path | None, state: NodeState) -> str | None:
    """What the IMEX daemon logs as it exits on its node list, or None when it would start."""
    addresses = node_addresses(root)
    if not addresses:
        return None  # the node's addresses are not known: not judged
    path = imex_nodes_config_path(root)
    listed = {line.split("#", 1)[0].strip() for line in (read_config(root, path) or "").splitlines()}
    if addresses & listed:
        return None
    return f"No matching network interface found for any IP addresses in the node configuration file {path}."


def _imex_lines(state: NodeState, ok: bool, root: Path | None) -> list[str]:
    """The IMEX daemon's first line (``IMEX version V is running with the following configuration options``,
    kubernetes-sigs/dra-driver-nvidia-gpu#298), then why it exits when it does."""
    if not state.driver.loaded:
        return []
    lines = [f"IMEX version {state.driver.version} is running with the following configuration options"]
    error = None if ok else imex_error(root, state)
    return lines + ([error] if error else [])


def _daemon_lines(state: NodeState, unit: str, ok: bool, root: Path | None = None) -> list[str]:
    """What the daemon itself logs as it starts: the fabric manager's lines (its log file and the journal).

    ``root`` is the node's configuration root: a fabric manager that failed on its own configuration logs why.
    """
    if unit == IMEX_UNIT:
        return _imex_lines(state, ok, root)
    if unit == "docker.service":
        from assessor.sim.containers import docker_journal

        return docker_journal(state, ok, root)
    if unit != "nvidia-fabricmanager.service":
        return []
    drv = state.driver
    error = None if ok else fabric_manager_error(root, state)
    if not state.nvswitches:
        # corpus/fabricmanager/03: no NVSwitch on this machine.
        return [
            "request to query NVSwitch device information from NVSwitch driver failed with error:"
            "WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"
        ]
    if not drv.loaded:
        return ["fabric manager failed to open NVIDIA GPU driver: No such file or directory"]
    if drv.version != drv.kernel_module_version:
        return [
            f"fabric manager NVIDIA GPU driver interface version {drv.version} don't match with driver version "
            f"{drv.kernel_module_version}. Please update with matching NVIDIA driver package."
        ]
    if error is not None:
        return [error]
    lines = [
        f"Fabric Manager version {drv.version} is running with the following configuration options",
        "Connected to 1 node.",
    ]
    if any(g.architecture == "Ampere" for g in state.gpus):
        lines.append("Successfully configured all the available GPUs and NVSwitches to route NVLink traffic.")
    else:
        lines.append(
            "Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer "
            "support will be enabled once the GPUs are successfully registered with the NVLink fabric."
        )
    return lines


def _unit_events(
    state: NodeState, unit: str, service: ServiceState, root: Path | None = None
) -> list[tuple[float, str, str]]:
    """(seconds since boot, who, message) of the unit's journal since boot, as its state implies."""
    desc = service.description or _UNITS.get(unit, (unit,))[0]
    comm = _UNITS.get(unit, (unit, "", unit))[2] or unit
    pid = main_pid(state, unit)
    events: list[tuple[float, str, str]] = []

    def started(t: float, ok: bool) -> None:
        events.append((t, "systemd[1]", f"Starting {desc}..."))
        events.extend((t, f"{comm}[{pid}]", line) for line in _daemon_lines(state, unit, ok, root))
        if ok and unit == "nvidia-persistenced.service":
            events.append((t, f"{comm}[{pid}]", f"Started ({pid})"))  # the daemon's own line, without --verbose
        if ok:
            events.append((t, "systemd[1]", f"Started {desc}."))
        else:
            status = service.exec_main_status or 1
            events.append((t, "systemd[1]", f"{unit}: Control process exited, code=exited, status={status}/FAILURE"))
            events.append((t, "systemd[1]", f"{unit}: Failed with result '{service.result}'."))
            events.append((t, "systemd[1]", f"Failed to start {desc}."))

    def stopped(t: float) -> None:
        events.append((t, "systemd[1]", f"Stopping {desc}..."))
        events.append((t, "systemd[1]", f"{unit}: Deactivated successfully."))
        events.append((t, "systemd[1]", f"Stopped {desc}."))

    at_boot = service.unit_file_state == "enabled"
    since = service.since_s
    if service.active_state == "active":
        if since is not None and at_boot:
            started(BOOT_START_S, True)
            stopped(since)
        started(since if since is not None else BOOT_START_S, True)
    elif service.active_state == "failed":
        if since is not None and at_boot:
            started(BOOT_START_S, True)
        started(since if since is not None else BOOT_FAIL_S, False)
    elif since is not None:  # stopped after it ran
        started(BOOT_START_S, True)
        stopped(since)
    elif at_boot:  # stopped at some point nobody recorded: a fault, an older state file
        started(BOOT_START_S, True)
        stopped(BOOT_FAIL_S)
    return events


def unit_journal(state: NodeState, unit: str, root: Path | None = None) -> list[str]:
    """``journalctl -u UNIT`` lines (without the "Logs begin" header); empty when the unit never ran."""
    service = _service(state, unit)
    if service is None:
        return []
    events = _unit_events(state, unit, service, root)
    return [f"{_journal_time(state, t)} {state.host} {who}: {msg}" for t, who, msg in events]


def fabric_manager_log(state: NodeState, root: Path | None = None) -> str | None:
    """``/var/log/fabricmanager.log`` since boot (FM's own ``[Jan 15 2025 08:00:12] [INFO] [tid N]`` format,
    corpus/fabricmanager/01); None where the fabric manager is not installed."""
    unit = "nvidia-fabricmanager.service"
    service = _service(state, unit)
    if service is None:
        return None
    tid = 1000 + main_pid(state, unit) % 1000
    lines = []
    for t, who, message in _unit_events(state, unit, service, root):
        if who.startswith("systemd"):
            continue
        level = "INFO" if "Successfully" in message or "Connected" in message or "running" in message else "ERROR"
        lines.append(f"[{clock.at(state, t).strftime('%b %d %Y %H:%M:%S')}] [{level}] [tid {tid}] {message}")
    return "".join(f"{line}\n" for line in lines)


# ---- systemctl -------------------------------------------------------------------------------

# Units the simulator runs, with what systemd knows of them when the state does not say.
# Running Type=forking units whose status systemd prints with the Process line of the exited ExecStart: their
# Tasks, Memory and CPU lines (corpus/systemctl_status/06: nvidia-persistenced is one thread, about 1 MB).
_FORKING: dict[str, tuple[str, str, str]] = {"nvidia-persistenced.service": ("1", "944.0K", "328ms")}

_UNITS = {
    "nvidia-fabricmanager.service": (
        "NVIDIA fabric manager service",
        "/lib/systemd/system",
        "nv-fabricmanager",
        "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg",
    ),
    "nvidia-persistenced.service": (
        "NVIDIA Persistence Daemon",
        "/lib/systemd/system",
        "nvidia-persistenced",
        "/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode",
    ),
    "nvidia-dcgm.service": (
        "NVIDIA DCGM service",
        "/lib/systemd/system",
        "nv-hostengine",
        "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm",
    ),
    "openibd.service": (
        "openibd - configure Mellanox devices",
        "/lib/systemd/system",
        "openibd",
        "/etc/init.d/openibd start bootid=0",
    ),
    "opensm.service": ("OpenSM", "/lib/systemd/system", "opensm", "/usr/sbin/opensm"),
    "docker.service": (
        "Docker Application Container Engine",
        "/lib/systemd/system",
        "dockerd",
        "/usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock",
    ),
    "containerd.service": ("containerd container runtime", "/lib/systemd/system", "containerd", "/usr/bin/containerd"),
    IMEX_UNIT: ("NVIDIA IMEX service", "/lib/systemd/system", "nvidia-imex", f"/usr/bin/nvidia-imex -c {IMEX_CONFIG}"),
    **SLURM_UNITS,  # munge, slurmctld, slurmd: real daemons on the node (assessor.sim.slurm_node)
}
_PROPERTY_ORDER = (
    # systemctl show prints the Service interface's properties before the Unit's.
    "Type",
    "Result",
    "MainPID",
    "ExecMainPID",
    "ExecMainCode",
    "ExecMainStatus",
    "Id",
    "Names",
    "Description",
    "LoadState",
    "ActiveState",
    "SubState",
    "FragmentPath",
    "UnitFileState",
)


def _unit_name(name: str) -> str:
    return name if "." in name else f"{name}.service"


def main_pid(state: NodeState, unit: str) -> int:
    """The PID of a unit's main process, as ``systemctl status`` shows it.

    Stable for a host and unit while the unit runs; a restart or a reboot gives it a new one.
    """
    key = f"{state.host}:{unit}"
    service = state.services.get(unit)
    if service is not None and service.since_s is not None:
        key += f":{service.since_s}"
    if state.clock.boot_time != ClockState().boot_time:
        key += f":{state.clock.boot_time}"
    return 1500 + int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) % 3000


def _service(state: NodeState, unit: str) -> ServiceState | None:
    service = state.services.get(unit)
    if service is None or service.load_state == "not-found":
        return None
    return service


def _properties(state: NodeState, unit: str) -> dict[str, str]:
    service = _service(state, unit)
    if service is None:
        return {
            "Type": "simple",
            "Result": "success",
            "MainPID": "0",
            "ExecMainPID": "0",
            "ExecMainCode": "0",
            "ExecMainStatus": "0",
            "Id": unit,
            "Names": unit,
            "Description": unit,
            "LoadState": "not-found",
            "ActiveState": "inactive",
            "SubState": "dead",
            "FragmentPath": "",
            "UnitFileState": "",
        }
    desc, directory, _, _ = _UNITS.get(unit, (unit, "/etc/systemd/system", "", ""))
    running = service.active_state == "active" and service.sub_state == "running"
    pid = str(main_pid(state, unit)) if running else "0"
    ran = service.active_state != "inactive" or service.result != "success"
    return {
        "Type": "oneshot" if service.sub_state == "exited" else "forking",
        "Result": service.result,
        "MainPID": pid,
        "ExecMainPID": str(main_pid(state, unit)) if ran else "0",
        "ExecMainCode": "1" if ran and not running else "0",
        "ExecMainStatus": str(service.exec_main_status),
        "Id": unit,
        "Names": unit,
        "Description": service.description or desc,
        "LoadState": service.load_state,
        "ActiveState": service.active_state,
        "SubState": service.sub_state,
        "FragmentPath": f"{directory}/{unit}",
        "UnitFileState": service.unit_file_state,
    }


def systemctl(args: list[str], session: Session) -> ToolResult:
    """``systemctl status|is-active|is-enabled|is-failed|show|start|stop|restart|enable|disable|revert|
    daemon-reload|list-units|list-unit-files [UNIT...]``; without a verb, ``list-units``."""
    props: list[str] = []
    positional: list[str] = []
    flags: set[str] = set()
    it = iter(args)
    for arg in it:
        if arg in ("-p", "--property"):
            props.extend(p for p in next(it, "").split(",") if p)
        elif arg == "-P":  # -P NAME is --property=NAME --value
            props.extend(p for p in next(it, "").split(",") if p)
            flags.add("value")
        elif arg == "--value":
            flags.add("value")
        elif arg.startswith("--property="):
            props.extend(p for p in arg.split("=", 1)[1].split(",") if p)
        elif arg in ("-a", "--all", "--now", "--failed"):
            flags.add(arg.lstrip("-").replace("a", "all", 1) if arg == "-a" else arg.lstrip("-"))
        elif arg.startswith("--state="):
            flags.update(f"state={v}" for v in arg.split("=", 1)[1].split(","))
        elif arg.startswith("-"):
            continue  # --no-pager, -l, --quiet, --type=service: no effect on the simulated result
        else:
            positional.append(arg)
    if not positional:
        positional = ["list-units"]
    verb, units = positional[0], [_unit_name(u) for u in positional[1:]]
    if verb == "show":
        return _show(session.read(), units, props, values_only="value" in flags)
    if verb == "status":
        return _status(session.read(), units, session.root())
    if verb in ("is-active", "is-enabled", "is-failed"):
        return _is(session.read(), verb, units)
    if verb in ("start", "stop", "restart"):
        return _change(session, verb, units)
    if verb in ("enable", "disable"):
        return _enable(session, verb, units, now="now" in flags)
    if verb == "revert":
        return _revert(session, units)
    if verb == "daemon-reload":
        return ToolResult(0) if session.euid == 0 else ToolResult(1, "", "Failed to reload daemon: Access denied\n")
    if verb == "list-units":
        return _list_units(session.read(), positional[1:], flags)
    if verb == "list-unit-files":
        return _list_unit_files(session.read(), positional[1:])
    return ToolResult(1, "", f"Unknown command verb {verb}.\n")


def _matches(unit: str, patterns: list[str]) -> bool:
    import fnmatch

    return not patterns or any(fnmatch.fnmatch(unit, p) or fnmatch.fnmatch(unit, _unit_name(p)) for p in patterns)


def _list_units(state: NodeState, patterns: list[str], flags: set[str]) -> ToolResult:
    """``systemctl list-units``: loaded units that are active or failed (all of them with ``--all``)."""
    wanted_states = {f.split("=", 1)[1] for f in flags if f.startswith("state=")}
    if "failed" in flags:
        wanted_states.add("failed")
    rows = []
    for unit in sorted(state.services):
        service = _service(state, unit)
        if service is None or not _matches(unit, patterns):
            continue
        if wanted_states:
            if service.active_state not in wanted_states and service.sub_state not in wanted_states:
                continue
        elif service.active_state == "inactive" and "all" not in flags:
            continue
        desc = service.description or _UNITS.get(unit, (unit,))[0]
        rows.append((unit, service.load_state, service.active_state, service.sub_state, desc))
    if not rows:
        return ToolResult(0, "0 loaded units listed.\n")
    widths = [max(len(r[i]) for r in [*rows, ("UNIT", "LOAD", "ACTIVE", "SUB", "")]) for i in range(4)]
    header = ("UNIT", "LOAD", "ACTIVE", "SUB", "DESCRIPTION")
    lines = ["  " + " ".join(h.ljust(w) for h, w in zip(header[:4], widths, strict=True)) + " " + header[4]]
    for r in rows:
        dot = "●" if r[2] == "failed" else " "
        lines.append(f"{dot} " + " ".join(v.ljust(w) for v, w in zip(r[:4], widths, strict=True)) + " " + r[4])
    more = "" if "all" in flags else " Pass --all to see loaded but inactive units, too."
    lines += [
        "",
        "LOAD   = Reflects whether the unit definition was properly loaded.",
        "ACTIVE = The high-level unit activation state, i.e. generalization of SUB.",
        "SUB    = The low-level unit activation state, values depend on unit type.",
        "",
        f"{len(rows)} loaded units listed.{more}",
        "To show all installed unit files use 'systemctl list-unit-files'.",
    ]
    return ToolResult(0, "".join(f"{line}\n" for line in lines))


def _list_unit_files(state: NodeState, patterns: list[str]) -> ToolResult:
    rows = [
        (unit, s.unit_file_state or "disabled")
        for unit, s in sorted(state.services.items())
        if s.load_state != "not-found" and _matches(unit, patterns)
    ]
    width = max([len("UNIT FILE")] + [len(u) for u, _ in rows])
    lines = [f"{'UNIT FILE'.ljust(width)} STATE   VENDOR PRESET"]
    lines += [f"{u.ljust(width)} {st.ljust(7)} enabled" for u, st in rows]
    lines += ["", f"{len(rows)} unit files listed."]
    return ToolResult(0, "".join(f"{line}\n" for line in lines))


def _enable(session: Session, verb: str, units: list[str], *, now: bool) -> ToolResult:
    """``systemctl enable|disable [--now] UNIT...``: the symlink messages go to stderr, as systemctl prints them."""
    if not units:
        return ToolResult(1, "", "Too few arguments.\n")
    if session.euid != 0:
        return ToolResult(1, "", f"Failed to {verb} unit: Access denied\n")
    messages: list[str] = []
    with session.update() as state:
        for unit in units:
            if _service(state, unit) is None:
                return ToolResult(1, "", f"Failed to {verb} unit: Unit file {unit} does not exist.\n")
        for unit in units:
            service = state.services[unit]
            directory = _UNITS.get(unit, (unit, "/etc/systemd/system"))[1]
            link = f"/etc/systemd/system/multi-user.target.wants/{unit}"
            if verb == "enable" and service.unit_file_state != "enabled":
                service.unit_file_state = "enabled"
                messages.append(f"Created symlink {link} → {directory}/{unit}.")
            elif verb == "disable" and service.unit_file_state == "enabled":
                service.unit_file_state = "disabled"
                messages.append(f"Removed {link}.")
    err = "".join(f"{m}\n" for m in messages)
    if now:
        changed = _change(session, "start" if verb == "enable" else "stop", units)
        return ToolResult(changed.exit_code, changed.stdout, err + changed.stderr)
    return ToolResult(0, "", err)


def _revert(session: Session, units: list[str]) -> ToolResult:
    """``systemctl revert UNIT...``: the unit's drop-ins under /etc/systemd/system are removed (the vendor's unit
    file is what runs from now on), each removal printed as systemctl prints it; the unit keeps running as it
    was started until it is restarted."""
    if not units:
        return ToolResult(1, "", "Too few arguments.\n")
    if session.euid != 0:
        return ToolResult(1, "", "Failed to revert unit: Access denied\n")
    state = session.read()
    for unit in units:
        if _service(state, unit) is None:
            return ToolResult(1, "", f"Failed to revert unit: Unit file {unit} does not exist.\n")
    root = session.root()
    messages: list[str] = []
    for unit in units:
        folder = f"/etc/systemd/system/{unit}.d"
        for node_path in drop_in_files(root, unit):
            assert root is not None
            (root / node_path.lstrip("/")).unlink(missing_ok=True)
            messages.append(f'Removed "{node_path}".')
        directory = root / folder.lstrip("/") if root is not None else None
        if directory is not None and directory.is_dir() and not directory.is_symlink() and not any(directory.iterdir()):
            directory.rmdir()
            messages.append(f'Removed "{folder}".')
    return ToolResult(0, "", "".join(f"{m}\n" for m in messages))


def _show(state: NodeState, units: list[str], props: list[str], *, values_only: bool = False) -> ToolResult:
    """``systemctl show [-p NAME,...] [--value]``: NAME=VALUE lines per unit; ``--value`` prints values alone."""
    wanted = set(props)
    blocks = []
    for unit in units or ["nvidia-persistenced.service"]:
        values = _properties(state, unit)
        keys = [k for k in _PROPERTY_ORDER if not wanted or k in wanted]
        # Properties the simulator does not model print empty, as systemd does for unset ones.
        keys += [p for p in props if p not in values]
        if values_only:
            blocks.append("".join(f"{values.get(k, '')}\n" for k in keys))
        else:
            blocks.append("".join(f"{k}={values.get(k, '')}\n" for k in keys))
    return ToolResult(0, "\n".join(blocks))


def _is(state: NodeState, verb: str, units: list[str]) -> ToolResult:
    if not units:
        return ToolResult(1, "", "Too few arguments.\n")
    out: list[str] = []
    code = 0
    for unit in units:
        service = _service(state, unit)
        if verb == "is-enabled":
            if service is None:
                message = f"Failed to get unit file state for {unit}: No such file or directory\n"
                return ToolResult(1, "".join(out), message)
            word = service.unit_file_state or "disabled"
            ok = word == "enabled"
        elif verb == "is-failed":
            word = service.active_state if service else "inactive"
            ok = word == "failed"
        else:
            word = service.active_state if service else "inactive"
            ok = word == "active"
        out.append(f"{word}\n")
        if not ok:
            code = 1 if verb in ("is-enabled", "is-failed") else 3
    return ToolResult(code, "".join(out))


def _since(state: NodeState, seconds: float) -> str:
    """``since Wed 2025-01-15 08:00:12 UTC; 2h 2min ago`` from the node's clock."""
    when = clock.at(state, seconds).strftime("%a %Y-%m-%d %H:%M:%S UTC")
    return f"{when}; {clock.ago(clock.uptime(state) - seconds)}"


def _status(state: NodeState, units: list[str], root: Path | None = None) -> ToolResult:
    if not units:
        units = list(state.services)
    out: list[str] = []
    err: list[str] = []
    code = 0
    for unit in units:
        service = _service(state, unit)
        if service is None:
            err.append(f"Unit {unit} could not be found.\n")
            code = 4
            continue
        desc, directory, comm, cmdline = _UNITS.get(unit, (unit, "/etc/systemd/system", unit, unit))
        desc = service.description or desc
        active = service.active_state
        dot = {"active": "●", "failed": "×"}.get(active, "○")
        preset = "enabled"
        block = [
            f"{dot} {unit} - {desc}\n",
            f"     Loaded: {service.load_state} ({directory}/{unit}; {service.unit_file_state}; "
            f"vendor preset: {preset})\n",
        ]
        drop_ins = drop_in_files(root, unit)
        if drop_ins:
            # systemd names the drop-in folder, then each file in it
            block.append(f"    Drop-In: {drop_ins[0].rsplit('/', 1)[0]}\n")
            block.append("             └─" + ", ".join(d.rsplit("/", 1)[1] for d in drop_ins) + "\n")
        if unit == "nvidia-fabricmanager.service":
            cmdline = f"/usr/bin/nv-fabricmanager -c {fabric_manager_config_path(root)}"
        pid = main_pid(state, unit)
        if active == "active":
            since = service.since_s if service.since_s is not None else BOOT_START_S
            block.append(f"     Active: active ({service.sub_state}) since {_since(state, since)}\n")
            if service.sub_state == "running":
                forking = _FORKING.get(unit)
                if forking is not None:
                    # a Type=forking unit: the ExecStart process exited once its child, the main PID, ran
                    block.append(f"    Process: {pid - 1} ExecStart={cmdline} (code=exited, status=0/SUCCESS)\n")
                # systemd shows the kernel's comm, cut to 15 characters: "(nv-fabricmanage)" in
                # corpus/fabricmanager/02.
                block.append(f"   Main PID: {pid} ({comm[:15]})\n")
                tasks, memory, cpu = forking or ("18", None, None)
                block.append(f"      Tasks: {tasks} (limit: 629145)\n")
                if memory is not None:
                    block.append(f"     Memory: {memory}\n        CPU: {cpu}\n")
                block.append(f"     CGroup: /system.slice/{unit}\n")
                block.append(f"             └─{pid} {cmdline}\n")
            else:
                block.append(f"    Process: {pid} ExecStart={cmdline} (code=exited, status=0/SUCCESS)\n")
                block.append(f"   Main PID: {pid} (code=exited, status=0/SUCCESS)\n")
        elif active == "failed":
            status = service.exec_main_status or 1
            since = service.since_s if service.since_s is not None else BOOT_FAIL_S
            block.append(f"     Active: failed (Result: {service.result}) since {_since(state, since)}\n")
            block.append(f"    Process: {pid} ExecStart={cmdline} (code=exited, status={status}/FAILURE)\n")
            block.append(f"   Main PID: {pid} (code=exited, status={status}/FAILURE)\n")
        elif service.since_s is not None:
            block.append(f"     Active: {active} ({service.sub_state}) since {_since(state, service.since_s)}\n")
        else:
            block.append(f"     Active: {active} ({service.sub_state})\n")
        journal = unit_journal(state, unit, root)[-10:]
        if journal:
            block.append("\n" + "".join(f"{line}\n" for line in journal))
        out.append("".join(block))
        if active != "active":
            code = max(code, 3)
    return ToolResult(code, "\n".join(out), "".join(err))


def _change(session: Session, verb: str, units: list[str]) -> ToolResult:
    if not units:
        return ToolResult(1, "", "Too few arguments.\n")
    if session.euid != 0:
        return ToolResult(
            1,
            "",
            f"Failed to {verb} {units[0]}: Access denied\n"
            f"See system logs and 'systemctl status {units[0]}' for details.\n",
        )
    with session.update() as state:
        for unit in units:
            if _service(state, unit) is None:
                return ToolResult(5, "", f"Failed to {verb} {unit}: Unit {unit} not found.\n")
        failed = []
        for unit in units:
            service = state.services[unit]
            running = service.active_state == "active"
            if verb == "start" and running:
                continue  # starting a running unit does nothing
            since = clock.advance(state, 2.0)
            if verb in ("stop", "restart") and (running or verb == "stop"):
                if running:
                    service.since_s = since
                stop_unit(state, unit, service)
            if verb in ("start", "restart"):
                service.since_s = clock.advance(state, 1.0)
                if not start_unit(state, unit, service, session.root()):
                    failed.append(unit)
    if failed:
        unit = failed[0]
        return ToolResult(
            1,
            "",
            f"Job for {unit} failed because the control process exited with error code.\n"
            f'See "systemctl status {unit}" and "journalctl -xeu {unit}" for details.\n',
        )
    return ToolResult(0)


def stop_unit(state: NodeState, unit: str, service: ServiceState) -> None:
    """What stopping a unit does to the node (its processes end; persistenced turns persistence off)."""
    service.active_state, service.sub_state, service.result, service.exec_main_status = "inactive", "dead", "success", 0
    # The unit's processes end with it: a training job run as a service leaves its GPUs.
    for gpu in state.gpus:
        gone = [p for p in gpu.processes if p.unit == unit]
        if gone:
            gpu.processes = [p for p in gpu.processes if p.unit != unit]
            gpu.memory_used_mib = max(0, gpu.memory_used_mib - sum(p.used_memory_mib for p in gone))
    if unit == "nvidia-persistenced.service":
        # The daemon turns persistence mode off on every GPU as it exits.
        for gpu in state.gpus:
            gpu.persistence_mode = False


def start_unit(state: NodeState, unit: str, service: ServiceState, root: Path | None = None) -> bool:
    """Start a unit; False when it fails the way the real daemon does on this node.

    ``root`` is the node's configuration root: the fabric manager needs its config file there, and a
    persistenced drop-in with ``--no-persistence-mode`` leaves persistence mode off.
    """
    driver_ok = state.driver.loaded and state.driver.version == state.driver.kernel_module_version
    fm_unusable = (
        not state.nvswitches
        or not driver_ok
        or not fabric_manager_configured(root)
        or fabric_manager_error(root, state) is not None
    )
    if unit == "nvidia-fabricmanager.service" and fm_unusable:
        # No NVSwitch: NV_WARN_NOTHING_TO_DO (corpus/fabricmanager/03); or the driver stack is broken.
        _fail(service)
        return False
    if unit in ("nvidia-persistenced.service", "nvidia-dcgm.service") and not driver_ok:
        _fail(service)
        return False
    if unit == IMEX_UNIT and (not driver_ok or imex_error(root, state) is not None):
        # IMEX checks the loaded driver stack and aborts on a mismatch (IMEX guide); its node list, above
        _fail(service)
        return False
    if unit == "docker.service":
        from assessor.sim.containers import docker_started

        if docker_started(state, root) is not None:  # dockerd exits on a daemon.json it cannot read
            _fail(service)
            return False
    service.active_state, service.result, service.exec_main_status = "active", "success", 0
    service.sub_state = "exited" if unit == "openibd.service" else "running"
    if unit == "nvidia-persistenced.service":
        if persistenced_sets_persistence(root):
            for gpu in state.gpus:
                gpu.persistence_mode = True
    elif unit == "nvidia-fabricmanager.service":
        # The fabric manager trains the NVSwitch fabric: every GPU's registration completes.
        for gpu in state.gpus:
            if gpu.fabric_state is not None:
                gpu.fabric_state, gpu.fabric_status = "Completed", "Success"
    elif unit == "opensm.service":
        _subnet_manager_sweep(state)
    return True


def _fail(service: ServiceState) -> None:
    service.active_state, service.sub_state = "failed", "failed"
    service.result, service.exec_main_status = "exit-code", 1


def _subnet_manager_sweep(state: NodeState) -> None:
    """A subnet manager on this node configures every trained InfiniBand port: LIDs, then Active."""
    ports = [p for h in state.ib_hcas for p in h.ports if p.link_layer == "InfiniBand" and p.physical_state == "LinkUp"]
    if not ports:
        return
    state.sm_present = True
    sm_lid = ports[0].base_lid or 1
    for i, port in enumerate(ports, start=1):
        port.base_lid = port.base_lid or i
        port.sm_lid = sm_lid
        port.state = "Active"


# ---- cat / uname -----------------------------------------------------------------------------

# The compiler the distribution's kernel was built with (the second line of /proc/driver/nvidia/version).
_GCC = {
    "20.04": "gcc version 9.4.0 (Ubuntu 9.4.0-1ubuntu1~20.04.2)",
    "22.04": "gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)",
    "24.04": "gcc version 13.2.0 (Ubuntu 13.2.0-23ubuntu4)",
}
_UNQUOTED_OS_KEYS = {"ID", "ID_LIKE", "VERSION_CODENAME", "UBUNTU_CODENAME", "VERSION_ID_UNQUOTED"}


def driver_version_text(state: NodeState) -> str | None:
    """``/proc/driver/nvidia/version`` of the loaded kernel module; None when it is not loaded.

    The module's architecture is the node's: ``... Open Kernel Module for aarch64  580.95.05  Release Build ...``
    on an arm64 node (its load banner in geerlingguy/raspberry-pi-pcie-devices#692), ``NVIDIA UNIX aarch64 Kernel
    Module`` for the proprietary one (HeyMeco/Rockchip-pcie-devices#2).
    """
    drv = state.driver
    if not drv.loaded or not state.module_loaded("nvidia"):
        return None
    arch = machine(state)
    if drv.open_kernel_module:
        head = (
            f"NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {drv.kernel_module_version}  Release Build  "
            f"(dvs-builder@U22-I3-B10-02-5)  {drv.build_date or ''}"
        ).rstrip()
    else:
        head = f"NVRM version: NVIDIA UNIX {arch} Kernel Module  {drv.kernel_module_version}  {drv.build_date or ''}"
        head = head.rstrip()
    gcc = _GCC.get(state.os_release.get("VERSION_ID", ""), "gcc version 12.3.0 (GCC)")
    return f"{head}\nGCC version:  {gcc} \n"


def _os_release_text(state: NodeState) -> str | None:
    if not state.os_release:
        return None
    lines = []
    for key, value in state.os_release.items():
        lines.append(f"{key}={value}" if key in _UNQUOTED_OS_KEYS else f'{key}="{value}"')
    return "\n".join(lines) + "\n"


def cat(args: list[str], session: Session) -> ToolResult:
    """``cat FILE...``: the driver version, os-release, the fabric manager's log and the node's config files."""
    state = session.read()
    out: list[str] = []
    err: list[str] = []
    for path in (a for a in args if not a.startswith("-") or a == "-"):
        text: str | None
        if path == "/proc/driver/nvidia/version":
            text = driver_version_text(state)
        elif path in ("/etc/os-release", "/usr/lib/os-release"):
            text = _os_release_text(state)
        elif path == "/proc/sys/kernel/hostname" or path == "/etc/hostname":
            text = f"{state.host}\n"
        elif path == "/var/log/fabricmanager.log":
            text = fabric_manager_log(state, session.root())
        elif path == "/proc/cmdline":
            from assessor.sim.grub import booted_cmdline

            text = booted_cmdline(state) + "\n"
        elif path.startswith(("/etc/", "/usr/share/nvidia/", "/boot/grub/")):
            text = read_config(session.root(), path)  # the node's configuration files
        else:
            text = None
        if text is None:
            err.append(f"cat: {path}: No such file or directory\n")
        else:
            out.append(text)
    return ToolResult(1 if err else 0, "".join(out), "".join(err))


def uname(args: list[str], session: Session) -> ToolResult:
    """``uname [-a | -s -n -r -v -m]``."""
    state = session.read()
    full = state.uname or f"Linux {state.host} 5.15.0-91-generic #101-Ubuntu SMP x86_64 x86_64 x86_64 GNU/Linux"
    parts = full.split()
    if not args:
        return ToolResult(0, "Linux\n")
    if "-a" in args or "--all" in args:
        return ToolResult(0, full + "\n")
    kernel_version = " ".join(parts[3:-4]) if len(parts) > 7 else ""
    fields = {
        "-s": parts[0],
        "-n": state.host,
        "-r": parts[2] if len(parts) > 2 else "",
        "-v": kernel_version,
        "-m": machine(state),
        "-p": machine(state),
        "-i": machine(state),
        "-o": "GNU/Linux",
    }
    picked = []
    for arg in args:
        if arg not in fields:
            return ToolResult(
                1, "", f"uname: invalid option -- '{arg.lstrip('-')}'\nTry 'uname --help' for more information.\n"
            )
        picked.append(fields[arg])
    return ToolResult(0, " ".join(picked) + "\n")
