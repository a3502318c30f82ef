"""Run a function with a deadline it cannot outlive: in a child process, in a process group of its own.

slurmd waits for its HealthCheckProgram (killing it after 60 s), its Prolog and its Epilog; a GPU that has
wedged makes ``nvidia-smi`` and NVML calls hang, in a tool or inside gpulab's own NVML collector, where no
thread can be interrupted. So the work runs in a forked child that leads a process group of its own, and sends
its answer (JSON) back through a pipe. At the deadline the whole group gets SIGKILL: the child and every tool it
started. The group is swept once more after a child that answered in time, so nothing it left behind lives on.
Should gpulab itself be killed first (slurmd kills its programs' process group, SIGTERM then SIGKILL 10 ms
later), a SIGTERM still ends in the sweep, and after a SIGKILL a thread of the child that watches its parent
kills the child's group within a fraction of a second.

POSIX only (``os.fork``), as slurmd is.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_ANSWER_BYTES = 16 << 20


@dataclass(frozen=True)
class Bounded:
    """What the call gave: its JSON value, or the error it raised, or ``stalled`` at the deadline."""

    value: Any = None
    error: str | None = None
    stalled: bool = False
    seconds: float = 0.0
    child: int | None = None  # the child's pid, which was also its process group


def call_within(fn: Callable[[], Any], deadline: float) -> Bounded:
    """``fn()`` in a child process group, its result (made of JSON types) back, or ``stalled`` after
    ``deadline`` seconds with the group killed."""
    start = time.monotonic()
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(fn, read_end, write_end, parent)
    os.close(write_end)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here, so the group exists before the first kill whatever the child's pace
    chunks: list[bytes] = []
    stalled = False
    try:
        size = 0
        while True:
            left = deadline - (time.monotonic() - start)
            if left <= 0:
                stalled = True
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            data = os.read(read_end, 65536)
            if not data:
                break
            size += len(data)
            if size > MAX_ANSWER_BYTES:
                return Bounded(error="the assessment's answer is too large", seconds=time.monotonic() - start)
            chunks.append(data)
    finally:
        os.close(read_end)
        _sweep(pid)
    seconds = time.monotonic() - start
    if stalled:
        return Bounded(stalled=True, seconds=seconds, child=pid)
    try:
        answer = json.loads(b"".join(chunks).decode("utf-8"))
    except ValueError:
        return Bounded(error="the assessment ended without an answer", seconds=seconds, child=pid)
    if "error" in answer:
        return Bounded(error=str(answer["error"]), seconds=seconds, child=pid)
    return Bounded(value=answer.get("value"), seconds=seconds, child=pid)


def _child(fn: Callable[[], Any], read_end: int, write_end: int, parent: int) -> None:
    code = 0
    try:
        os.close(read_end)
        os.setpgid(0, 0)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        _watch_parent(parent)
        try:
            payload: dict[str, Any] = {"value": fn()}
        except BaseException as exc:  # reported to the parent, never a traceback on slurmd's log
            payload = {"error": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(payload).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _watch_parent(parent: int, every: float = 0.2) -> None:
    """A thread that kills this process's group (this process and every tool it started) once the parent is
    gone; it runs even while the main thread waits in a tool or an NVML call."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="gpulab-orphan-watch", daemon=True).start()


def _sweep(pid: int) -> None:
    """SIGKILL the child's process group, then reap the child."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
