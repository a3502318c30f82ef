"""The node agent's spawn when PID 1 cannot give a process the PID its state names (another process took it)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from assessor.sim.machine.agent import Agent
from assessor.sim.machine.layout import NodeProcess


class TakenPids(Agent):
    """An agent whose PID 1 answers every spawn with the next free PID, never the one asked for first."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(paths=None, python="python3")  # type: ignore[arg-type]
        self.sent: list[dict[str, Any]] = []
        self.free = 1645

    def _send(self, command: dict[str, Any]) -> None:
        self.sent.append(command)
        if command["op"] == "spawn":
            # the first try lands on a free PID; a second try gets the PID asked for
            spawns = sum(1 for c in self.sent if c["op"] == "spawn")
            pid = self.free if spawns == 1 else command["pid"]
            self.events.append({"ev": "spawned", "id": command["id"], "pid": pid})

    def _wait_event(self, match: Any, timeout: float) -> dict[str, Any] | None:
        found = [e for e in self.events if match(e)]
        if found:
            self.events.remove(found[0])
        return found[0] if found else None


@pytest.mark.parametrize(("stop", "spawns", "kept"), [(signal.SIGKILL, 2, 1644), (signal.SIGTERM, 1, 1645)])
def test_a_real_daemon_keeps_the_pid_it_got_a_stand_in_is_started_again(
    tmp_path: Path, stop: int, spawns: int, kept: int
) -> None:
    agent = TakenPids(tmp_path)
    process = NodeProcess(1644, "slurmd", "/usr/sbin/slurmd", ("slurmd", "-D"), (), "slurmd.service", int(stop))
    agent._spawn(process)
    assert sum(1 for c in agent.sent if c["op"] == "spawn") == spawns
    assert list(agent.running) == [kept]
    # a stand-in on the wrong PID is ended; a real daemon is never ended and started again (two slurmd racing
    # over one pid file, the first "killed" by the second while the unit records the wrong one)
    assert [c["pid"] for c in agent.sent if c["op"] == "kill"] == ([1645] if spawns == 2 else [])
