"""How fast a simulated node answers: `python bench/node_shell.py` (after scripts/setup.sh).

Prints, each the median wall time of several runs after one warm-up:

- boot: `gpulab sim shell STATE -- true` on a node that is not running (namespaces made, root built, its GPU
  daemons started as processes, the command run, then `gpulab sim stop`);
- enter + one command: `gpulab sim shell STATE -- true` on a running node (what a candidate waits for at
  each `gpulab sim shell`, and what each SSH command to a node served over SSH costs);
- inside: `nvidia-smi`, `nvidia-smi -L`, `systemctl status nvidia-dcgm` and `ps -e` typed at the node's
  shell, timed inside the node (each an interactive command; the aim is under 0.3 s).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPULAB = [sys.executable, "-m", "assessor.cli"]
AIM_S = 0.3


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def median_of(runs: int, argv: list[str], before: list[str] | None = None) -> float:
    times = []
    for i in range(runs + 1):
        if before:
            subprocess.run(before, check=True, capture_output=True)
        t = wall(argv)
        if i:
            times.append(t)
    return statistics.median(times)


def verify(state: Path, commands: tuple[str, ...]) -> None:
    """What the figures claim: an isolated node (no fallback to shims) whose tools answer from its own paths."""
    from assessor.sim.machine.enter import running
    from assessor.sim.machine.layout import NodePaths
    from assessor.sim.state import load_state

    host = load_state(state).host
    probe = "hostname; command -v nvidia-smi; " + "; ".join(f"{c} >/dev/null || echo FAILED: {c}" for c in commands)
    done = subprocess.run(
        [*GPULAB, "sim", "shell", str(state), "--", "bash", "-c", probe], capture_output=True, text=True, check=True
    )
    assert "NOT isolated" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[:2] == [host, "/usr/bin/nvidia-smi"], done.stdout
    assert "FAILED" not in done.stdout, done.stdout
    assert running(NodePaths.of(state)) is not None
    subprocess.run([*GPULAB, "sim", "stop", str(state)], check=True, capture_output=True)
    assert running(NodePaths.of(state)) is None  # so "boot" below starts a stopped node


def inside(state: Path, command: str, runs: int) -> float:
    """The median wall time of ``command`` typed at the node's shell, timed inside the node."""
    script = (
        f"for i in $(seq {runs + 1}); do s=$(date +%s%N); {command} >/dev/null 2>&1; e=$(date +%s%N); "
        "echo $(( (e - s) / 1000 )); done"
    )
    out = subprocess.run(
        [*GPULAB, "sim", "shell", str(state), "--", "bash", "-c", script], check=True, capture_output=True, text=True
    ).stdout
    micros = [int(x) for x in out.split()][1:]
    return statistics.median(micros) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--fixture", default="hgx-h100")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "node.json"
        subprocess.run(
            [*GPULAB, "sim", "init", "--fixture", args.fixture, "--state", str(state)], check=True, capture_output=True
        )
        enter = [*GPULAB, "sim", "shell", str(state), "--", "true"]
        stop = [*GPULAB, "sim", "stop", str(state)]
        commands = ("nvidia-smi", "nvidia-smi -L", "systemctl status nvidia-dcgm", "ps -e")
        try:
            verify(state, commands)
            rows = [
                ("boot a stopped node + one command", median_of(args.runs, enter, before=stop), None),
                ("enter a running node + one command", median_of(args.runs, enter), None),
            ]
            for command in commands:
                rows.append((f"inside: {command}", inside(state, command, args.runs), AIM_S))
        finally:
            subprocess.run(stop, check=False, capture_output=True)
        for label, seconds, aim in rows:
            verdict = "" if aim is None else (" (ok)" if seconds < aim else f" (over the {aim} s aim)")
            print(f"{label:40} {seconds:.3f} s{verdict}  (median of {args.runs})")


if __name__ == "__main__":
    main()
