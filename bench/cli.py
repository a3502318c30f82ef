"""How fast the interactive commands answer: `python bench/cli.py` (after scripts/setup.sh).

Each command runs as a fresh process, as a person types it; the figure is the median wall time of
several runs, after one warm-up run (which also fills gpulab's validation cache, as a first use does).
`gpulab progress` reads an attempts database holding --attempts recorded attempts, all of the candidate it
shows (bench/attempts_db.py; the benchmark stops unless the database holds them). bench/scale.py measures
`progress` in a database of 10,000 attempts.
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

ROOT = Path(__file__).resolve().parents[1]
GPULAB = [sys.executable, "-m", "assessor.cli"]
AIM_S = 0.3


def timed(argv: list[str], env: dict[str, str], runs: int) -> float:
    warm = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)  # warm-up
    if warm.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])}: exit {warm.returncode}: {warm.stderr.strip()[-500:]}")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--attempts", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "attempts.db"
        env = {**os.environ, "GPULAB_DB": str(db), "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        # An installed package has its bytecode compiled; a shell that forbids writing it measures the compiler.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ.update(env)
        from bench import attempts_db

        attempts_db.fill(db, args.attempts, candidates=1)
        who = attempts_db.candidate_name(0)
        attempts_db.require(db, args.attempts, who)
        commands = {
            "gpulab --help": ["--help"],
            "gpulab lab list": ["lab", "list"],
            f"gpulab progress ({args.attempts} attempts)": ["progress", "--candidate", who],
            "gpulab checks list": ["checks", "list"],
        }
        for label, argv in commands.items():
            median = timed([*GPULAB, *argv], env, args.runs)
            verdict = "ok" if median < AIM_S else f"over the {AIM_S} s aim"
            print(f"{label:36} {median:.3f} s  ({verdict}; median of {args.runs})")


if __name__ == "__main__":
    main()
