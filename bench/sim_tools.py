"""What a simulated tool call costs a candidate: median wall time through the installed shims.

    PYTHONPATH=. .venv/bin/python bench/sim_tools.py [--runs 15] [--fixture hgx-h100]

Installs the shims and a node state the way a candidate does (``gpulab sim shims DIR``,
``gpulab sim init --state FILE``), then times ``nvidia-smi``, ``nvidia-smi -q -x`` and ``ibstat``
as separate processes with that directory first on PATH and GPULAB_SIM_STATE set. Each call is a
fresh interpreter, so the figure includes Python's start-up and the imports on the shim's path
(``python -X importtime -m assessor.sim.shim nvidia-smi`` shows which cost what). Target: about
60 ms or less per call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = (["nvidia-smi"], ["nvidia-smi", "-q", "-x"], ["ibstat"])


def gpulab(*args: str) -> None:
    """Run the gpulab CLI of this checkout with this interpreter."""
    code = "import sys; from assessor.cli import main; sys.exit(main())"
    subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True)


def median_ms(argv: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--fixture", default="hgx-h100")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        shims, state = Path(tmp) / "bin", Path(tmp) / "node.json"
        gpulab("sim", "shims", str(shims))
        gpulab("sim", "init", "--fixture", args.fixture, "--state", str(state))
        env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}", "GPULAB_SIM_STATE": str(state)}
        # As installed: compiled bytecode cached (here in a temporary prefix, not in the checkout).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        for argv in COMMANDS:
            subprocess.run(argv, env=env, capture_output=True, check=False)  # warm the bytecode cache
        baseline = median_ms([sys.executable, "-c", "pass"], env, args.runs)
        print(f"python start-up alone: median {baseline:.0f} ms ({args.runs} runs)")
        for argv in COMMANDS:
            ms = median_ms(argv, env, args.runs)
            print(f"{' '.join(argv)} through the shim ({args.fixture}): median {ms:.0f} ms ({args.runs} runs)")


if __name__ == "__main__":
    main()
