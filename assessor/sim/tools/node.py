"""Simulated ``kill``, ``reboot``, ``shutdown`` and ``uptime``: acting on the node's processes and power.

None of them ever reaches the host: the shim runs these functions, which change only the state file.
``kill`` knows the node's processes: compute processes on its GPUs and the main processes of its running
units (the PIDs ``systemctl status`` shows). Its messages are procps-ng ``kill``'s (an external command, as
the shim is; bash's builtin ``kill`` is found before any PATH entry, even through ``command kill``, so on a
simulated node turn the builtin off with ``enable -n kill`` or type ``env kill PID``).
"""

from __future__ import annotations

import signal

from assessor.sim import clock
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult

_USAGE_KILL = (
    "\nUsage:\n kill [options] <pid> [...]\n\nOptions:\n <pid> [...]            send signal to every <pid> listed\n"
    " -<signal>, -s, --signal <signal>\n                        specify the <signal> to be sent\n"
    " -l, --list=[<signal>]  list all signal names, or convert one to a name\n"
)


def _signal(name: str) -> int | None:
    """A signal number from ``9``, ``KILL`` or ``SIGKILL``; None for an unknown one."""
    if name.isdigit():
        return int(name) if 0 <= int(name) < 65 else None
    key = name.upper()
    key = key if key.startswith("SIG") else f"SIG{key}"
    member = getattr(signal.Signals, key, None) if key in signal.Signals.__members__ else None
    return int(member) if member is not None else None


def kill(args: list[str], session: Session) -> ToolResult:
    """``kill [-SIGNAL | -s SIGNAL] PID...``: end compute processes and unit main processes of the node.

    A compute process leaves its GPU (and its memory is freed); a unit's main process takes the unit down
    (``inactive`` on SIGTERM, ``failed`` with result ``signal`` on SIGKILL, as systemd records it).
    Non-root users may not signal these processes (they belong to root or service accounts).
    """
    sig = int(signal.SIGTERM)
    pids: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-s", "--signal", "-n"):
            if i + 1 >= len(args):
                return ToolResult(1, "", f"kill: option requires an argument -- '{arg.lstrip('-')[:1]}'{_USAGE_KILL}")
            number = _signal(args[i + 1])
            if number is None:
                return ToolResult(1, "", f"kill: unknown signal: {args[i + 1]}\n")
            sig = number
            i += 2
            continue
        if arg in ("-l", "--list"):
            names = " ".join(s.name[3:] for s in sorted(signal.Signals, key=int) if int(s) < 32)
            return ToolResult(0, names + "\n")
        if arg.startswith("-") and len(arg) > 1 and not pids:  # -9, -KILL, -SIGKILL
            number = _signal(arg[1:])
            if number is None:
                return ToolResult(1, "", f"kill: unknown signal: {arg[1:]}\n")
            sig = number
            i += 1
            continue
        pids.append(arg)
        i += 1
    if not pids:
        return ToolResult(1, "", "kill: not enough arguments" + _USAGE_KILL)
    errors: list[str] = []
    with session.update() as state:
        for raw in pids:
            if not raw.isdigit():
                errors.append(f"kill: failed to parse argument: '{raw}'\n")
                continue
            pid = int(raw)
            if not _exists(state, pid):
                errors.append(f"kill: ({pid}): No such process\n")
            elif session.euid != 0:
                errors.append(f"kill: ({pid}): Operation not permitted\n")
            elif sig != 0:
                deliver(state, pid, sig)
    return ToolResult(1 if errors else 0, "", "".join(errors))


def _unit_pids(state: NodeState) -> dict[int, str]:
    from assessor.sim.tools.system import main_pid

    return {
        main_pid(state, unit): unit
        for unit, s in state.services.items()
        if s.load_state != "not-found" and s.active_state == "active" and s.sub_state == "running"
    }


def _exists(state: NodeState, pid: int) -> bool:
    return any(p.pid == pid for g in state.gpus for p in g.processes) or pid in _unit_pids(state)


def deliver(state: NodeState, pid: int, sig: int) -> None:
    """What signal ``sig`` does to the node's process ``pid``: a job leaves its GPU, a unit goes down."""
    from assessor.sim.tools.system import stop_unit

    fatal = sig not in (int(signal.SIGHUP), int(signal.SIGUSR1), int(signal.SIGUSR2), int(signal.SIGCONT))
    if not fatal:
        return
    for gpu in state.gpus:
        gone = [p for p in gpu.processes if p.pid == pid]
        if gone:
            gpu.processes = [p for p in gpu.processes if p.pid != pid]
            gpu.memory_used_mib = max(0, gpu.memory_used_mib - sum(p.used_memory_mib for p in gone))
    unit = _unit_pids(state).get(pid)
    if unit is not None:
        service = state.services[unit]
        service.since_s = clock.advance(state, 1.0)
        stop_unit(state, unit, service)
        if sig == int(signal.SIGKILL):
            service.active_state, service.sub_state = "failed", "failed"
            service.result, service.exec_main_status = "signal", int(signal.SIGKILL)


_NOT_ROOT = (
    "Failed to set wall message, ignoring: Interactive authentication required.\n"
    "Failed to {verb} system via logind: Interactive authentication required.\n"
    "Failed to open initctl fifo: Permission denied\n"
    "Failed to talk to init daemon.\n"
)


def _reboot_now(session: Session, verb: str) -> ToolResult:
    from assessor.sim.tools.boot import reboot as reboot_node

    if session.euid != 0:
        return ToolResult(1, "", _NOT_ROOT.format(verb=verb))
    root = session.root()
    with session.update() as state:
        reboot_node(state, root)
    return ToolResult(0)


def reboot(args: list[str], session: Session) -> ToolResult:
    """``reboot``: the simulated node goes down and boots again at once (:mod:`assessor.sim.tools.boot`)."""
    if any(a in ("-p", "--poweroff", "--halt") for a in args):
        return _no_poweroff("reboot")
    return _reboot_now(session, "reboot")


def shutdown(args: list[str], session: Session) -> ToolResult:
    """``shutdown -r [now|+0|TIME]``: reboots the simulated node (any time is taken as now).

    Powering off (``-h``/``-P``/no ``-r``) is refused: a node that is off would need hands at the console,
    which the simulator does not model.
    """
    if "-c" in args:
        return ToolResult(0)  # nothing is ever scheduled
    if not any(
        a in ("-r", "--reboot") or (a.startswith("-") and "r" in a[1:] and not a.startswith("--")) for a in args
    ):
        return _no_poweroff("shutdown")
    return _reboot_now(session, "reboot")


def _no_poweroff(program: str) -> ToolResult:
    return ToolResult(
        1, "", f"{program}: powering the simulated node off is not simulated; use 'shutdown -r now' or 'reboot'\n"
    )


def uptime(args: list[str], session: Session) -> ToolResult:
    """``uptime`` (and ``uptime -s``, the boot time) from the node's clock."""
    state = session.read()
    if "-s" in args or "--since" in args:
        return ToolResult(0, clock.boot_time(state).strftime("%Y-%m-%d %H:%M:%S") + "\n")
    if "-p" in args or "--pretty" in args:
        up = int(clock.uptime(state))
        hours, minutes = divmod(up // 60, 60)
        parts = ([f"{hours} hour{'s' if hours != 1 else ''}"] if hours else []) + [
            f"{minutes} minute{'s' if minutes != 1 else ''}"
        ]
        return ToolResult(0, "up " + ", ".join(parts) + "\n")
    return ToolResult(0, clock.uptime_text(state))
