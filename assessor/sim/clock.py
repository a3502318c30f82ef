"""The one clock of a simulated node: what ``nvidia-smi``, ``dmesg -T``, ``journalctl`` and ``systemctl``
all tell time from.

The state stores when the node booted and how long it has been up (:class:`~assessor.sim.state.ClockState`);
now is their sum. Kernel log stamps are seconds since boot, so ``dmesg`` and the wall clock agree by
construction. The clock moves only when something happens (:func:`advance`), so one state always prints
the same times, which keeps the simulator's outputs reproducible.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from assessor.sim.state import ClockState, NodeState

_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\]")


def boot_time(state: NodeState) -> datetime:
    """When the node last booted (UTC); the default boot time when the stored one is not a date."""
    try:
        when = datetime.fromisoformat(state.clock.boot_time)
    except (TypeError, ValueError):
        when = datetime.fromisoformat(ClockState().boot_time)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def uptime(state: NodeState) -> float:
    """Seconds since boot: the stored uptime, or the newest kernel message when that is later."""
    newest = 0.0
    for line in reversed(state.kernel_log):
        m = _STAMP.match(line)
        if m:
            newest = float(m.group(1))
            break
    return max(float(state.clock.uptime_s), newest)


def now(state: NodeState) -> datetime:
    """The node's present time (UTC)."""
    return boot_time(state) + timedelta(seconds=uptime(state))


def at(state: NodeState, seconds_since_boot: float) -> datetime:
    """The wall-clock time ``seconds_since_boot`` after the last boot."""
    return boot_time(state) + timedelta(seconds=seconds_since_boot)


def advance(state: NodeState, seconds: float) -> float:
    """Move the clock ``seconds`` on; returns the new uptime."""
    state.clock.uptime_s = uptime(state) + max(seconds, 0.0)
    return state.clock.uptime_s


def reboot(state: NodeState, *, down_s: float = 95.0, up_s: float = 140.0) -> None:
    """A new boot ``down_s`` seconds from now (shutdown, firmware, POST), observed ``up_s`` seconds after it."""
    new_boot = now(state) + timedelta(seconds=down_s)
    state.clock.boot_time = new_boot.isoformat()
    state.clock.uptime_s = up_s


def ago(seconds: float) -> str:
    """systemd's relative time: ``2h 3min ago``, ``45s ago``, ``1 day 2h ago``."""
    s = int(max(seconds, 0))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        head = f"{days} day{'s' if days > 1 else ''}"
        return f"{head} {hours}h ago" if hours else f"{head} ago"
    if hours:
        return f"{hours}h {minutes}min ago" if minutes else f"{hours}h ago"
    if minutes:
        return f"{minutes}min {secs}s ago" if secs else f"{minutes}min ago"
    return f"{secs}s ago"


def uptime_text(state: NodeState) -> str:
    """``uptime``'s line: `` 10:03:00 up  2:03,  1 user,  load average: 0.08, 0.03, 0.01``."""
    up = int(uptime(state))
    days, rest = divmod(up, 86400)
    hours, minutes = divmod(rest // 60, 60)
    span = f"{hours:2d}:{minutes:02d}" if hours else f"{minutes} min"
    if days:
        span = f"{days} day{'s' if days > 1 else ''}, {span}"
    return f" {now(state).strftime('%H:%M:%S')} up {span},  1 user,  load average: 0.08, 0.03, 0.01\n"
