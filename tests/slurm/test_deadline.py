"""A stalled tool never holds slurmd: the work runs in a process group of its own, killed at the deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from assessor.slurm.deadline import call_within
from tests.slurm.procs import alive, wait_gone


def test_the_value_comes_back_from_the_child() -> None:
    bounded = call_within(lambda: {"pid": os.getpid(), "checks": ["gpu.xid"]}, 5)
    assert not bounded.stalled and bounded.error is None
    assert bounded.value["checks"] == ["gpu.xid"] and bounded.value["pid"] != os.getpid()
    assert bounded.child == bounded.value["pid"] and not alive(bounded.child)


def test_an_exception_in_the_work_comes_back_as_an_error_not_a_traceback() -> None:
    def broken() -> None:
        raise RuntimeError("NVML: GPU is lost")

    bounded = call_within(broken, 5)
    assert bounded.error == "RuntimeError: NVML: GPU is lost" and bounded.value is None and not bounded.stalled


def test_a_tool_that_hangs_is_killed_with_the_child_at_the_deadline(tmp_path: Path) -> None:
    pids = tmp_path / "pids"

    def hang() -> None:
        tool = subprocess.Popen(["sleep", "300"])  # what a wedged GPU makes of nvidia-smi
        pids.write_text(f"{os.getpid()} {tool.pid}")
        tool.wait()

    start = time.monotonic()
    bounded = call_within(hang, 1.0)
    took = time.monotonic() - start
    assert bounded.stalled and bounded.value is None and 1.0 <= took < 3.0
    child, tool = map(int, pids.read_text().split())
    assert wait_gone(child) and wait_gone(tool)


def test_a_hang_inside_the_process_itself_is_ended_too() -> None:
    start = time.monotonic()
    bounded = call_within(lambda: time.sleep(300), 0.5)  # as a hung NVML call would, no thread can stop it
    assert bounded.stalled and time.monotonic() - start < 2.5
    assert bounded.child is not None and wait_gone(bounded.child)


def test_what_the_child_left_running_when_it_answered_is_swept(tmp_path: Path) -> None:
    def leave_one() -> int:
        return subprocess.Popen(["sleep", "300"]).pid  # started, never waited for

    bounded = call_within(leave_one, 5)
    assert not bounded.stalled and isinstance(bounded.value, int)
    assert wait_gone(bounded.value)


SCRIPT = """
import os, subprocess, sys
from assessor.slurm.deadline import call_within

def hang():
    tool = subprocess.Popen(["sleep", "300"])
    with open(sys.argv[1], "w") as f:
        f.write(f"{os.getpid()} {tool.pid}")
    tool.wait()

call_within(hang, 300)
"""


def test_when_gpulab_is_killed_outright_the_child_and_its_tools_die_too(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    gpulab = subprocess.Popen([sys.executable, "-c", SCRIPT, str(pids)])
    try:
        end = time.monotonic() + 20
        while not pids.exists() or not pids.read_text():
            assert time.monotonic() < end, "the work never started"
            time.sleep(0.05)
        child, tool = map(int, pids.read_text().split())
        assert alive(tool)
        gpulab.kill()  # SIGKILL: no handler runs, no sweep
        gpulab.wait(5)
        assert wait_gone(child) and wait_gone(tool)
    finally:
        if gpulab.poll() is None:
            gpulab.kill()
