"""How fast the interactive commands answer: `python bench/cli.py` (after scripts/setup.sh).

Each command runs as a fresh process, as a person types it; the figures are the median wall time and the
median CPU time (user + system of the process: the steadier figure on a machine other jobs load) of several
runs, after one warm-up run (which also fills gpulab's validation cache, as a first use does). The load
average is printed with them.
`gpulab progress` and `gpulab lab list` read an attempts database holding --attempts recorded attempts, all of
one candidate, the one they show (bench/attempts_db.py): the benchmark stops unless the database holds them and
both commands count them all. bench/scale.py measures `progress` of a candidate with 100 attempts in databases
of other sizes.
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


def timed(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``runs`` runs of ``argv``, after a warm-up."""
    warm = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)  # warm-up
    if warm.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])}: exit {warm.returncode}: {warm.stderr.strip()[-500:]}")
    walls, cpus = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def require_shown(env: dict[str, str], who: str, expected: int) -> None:
    """Stop unless `gpulab lab list --json` counts ``expected`` attempts of ``who`` (the labs of the catalogue
    hold them all) and `gpulab progress` says it has that many."""
    import json

    listed = subprocess.run(
        [*GPULAB, "lab", "list", "--json", "--candidate", who], env=env, capture_output=True, text=True, check=False
    )
    counted = sum(int(x.get("attempts", 0)) for x in json.loads(listed.stdout or "[]"))
    if counted != expected:
        raise SystemExit(f"gpulab lab list counts {counted} attempts of {who}, the benchmark claims {expected}")
    shown = subprocess.run(
        [*GPULAB, "progress", "--candidate", who], env=env, capture_output=True, text=True, check=False
    ).stdout
    said = f" of {expected})" if expected > 20 else f"attempts of {who}"
    if said not in shown:
        raise SystemExit(f"gpulab progress does not show {expected} attempts of {who}")


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
        require_shown(env, who, args.attempts)
        mine = f"(1 candidate owns all {args.attempts} attempts)"
        commands = {
            "gpulab --help": ["--help"],
            f"gpulab lab list {mine}": ["lab", "list", "--candidate", who],
            f"gpulab progress {mine}": ["progress", "--candidate", who],
            "gpulab checks list": ["checks", "list"],
        }
        for label, argv in commands.items():
            wall, cpu = timed([*GPULAB, *argv], env, args.runs)
            verdict = "ok" if wall < AIM_S else f"over the {AIM_S} s aim"
            load = os.getloadavg()[0]
            print(f"{label:62} {wall:.3f} s, cpu {cpu:.3f} s  ({verdict}; median of {args.runs}; load {load:.2f})")


if __name__ == "__main__":
    main()
