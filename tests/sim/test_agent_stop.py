"""The node agent's stop of a real daemon: it waits for the exit as systemd's stop job does, and ends one that
outlives its stop with SIGKILL. PID 1 is a small fake here (a real process speaking its pipe protocol): it
answers SIGTERM with the exit after a delay, and a stubborn daemon only SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from assessor.sim.machine.agent import Agent
from assessor.sim.machine.layout import NodeProcess

# PID 1's side of the pipe: every command echoed back as {"ev": "got", ...}; a kill answered with the exit
# (PID 700 exits 0.4 s after SIGTERM; PID 800 ignores SIGTERM and exits at once on SIGKILL)
_FAKE_PID1 = r"""
import json, sys, threading, time
def say(event):
    sys.stdout.write(json.dumps(event) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    cmd = json.loads(line)
    say({"ev": "got", **cmd})
    if cmd.get("op") != "kill":
        continue
    pid, sig = cmd["pid"], cmd["sig"]
    if sig == 9:
        say({"ev": "exit", "pid": pid, "signal": 9, "code": None})
    elif pid == 700:
        threading.Timer(0.4, say, [{"ev": "exit", "pid": pid, "signal": None, "code": 0}]).start()
"""


@pytest.fixture()
def agent() -> Iterator[Agent]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _FAKE_PID1], stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    node = Agent(paths=None, python=sys.executable, proc=proc)  # type: ignore[arg-type]
    yield node
    proc.kill()
    proc.wait()


def _daemon(pid: int, stop: int = int(signal.SIGTERM)) -> NodeProcess:
    return NodeProcess(pid, "slurmctld", "/usr/sbin/slurmctld", ("slurmctld", "-D"), (), "slurmctld.service", stop)


def _sent(agent: Agent, count: int) -> list[tuple[int, int]]:
    """The kills PID 1 got, once it has echoed ``count`` of them (3 s at most)."""
    deadline = time.monotonic() + 3.0
    while True:
        agent._read_events()
        kills = [(e["pid"], e["sig"]) for e in agent.events if e.get("ev") == "got" and e.get("op") == "kill"]
        if len(kills) >= count or time.monotonic() > deadline:
            return kills
        time.sleep(0.02)


def test_a_daemon_asked_to_stop_is_waited_for_until_it_exits(agent: Agent) -> None:
    agent.running[700] = _daemon(700)
    assert agent._kill(700) is True  # a real daemon: asked to stop, may take a while
    agent._await_ends({700}, timeout=10.0, grace=1.0)
    # it returned only once the exit was in (0.4 s after SIGTERM)
    assert [e["pid"] for e in agent.events if e.get("ev") == "exit"] == [700]
    assert _sent(agent, 2) == [(700, int(signal.SIGTERM))]  # never killed: it ended on its own
    agent._deaths()
    assert 700 not in agent.expected  # the exit the agent asked for is not delivered as an outside death


def test_a_daemon_that_outlives_its_stop_gets_sigkill(agent: Agent) -> None:
    agent.running[800] = _daemon(800)
    agent._kill(800)
    agent._await_ends({800}, timeout=0.3, grace=2.0)
    assert _sent(agent, 2) == [(800, int(signal.SIGTERM)), (800, int(signal.SIGKILL))]
    assert any(e.get("ev") == "exit" and e.get("pid") == 800 for e in agent.events)


def test_a_stand_in_ends_with_sigkill_and_is_not_waited_for(agent: Agent) -> None:
    agent.running[900] = _daemon(900, stop=int(signal.SIGKILL))
    assert agent._kill(900) is False
    assert _sent(agent, 1) == [(900, int(signal.SIGKILL))]
