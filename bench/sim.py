"""Simulator benchmarks.

    .venv/bin/python bench/sim.py [--nodes 1024]

- one node: `gpulab assess --target mock:hgx-h100 --profile hgx-h100` end to end (a fresh
  process each run, median of 5)
- a fleet: an inventory of N hosts, each `gpulab_target: mock:hgx-h100`, assessed in one
  `gpulab assess -i` run: wall time and peak resident memory of the process
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def run(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--forks", type=int, default=32)
    args = ap.parse_args()
    gpulab = str(BIN / "gpulab")
    one = [run([gpulab, "assess", "-t", "mock:hgx-h100", "-p", "hgx-h100", "-f", "json"]) for _ in range(5)]
    print(f"one node: gpulab assess --target mock:hgx-h100 --profile hgx-h100: median {statistics.median(one):.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "fleet.yml"
        hosts = "".join(f"    sim{i:04d}: {{gpulab_target: 'mock:hgx-h100'}}\n" for i in range(args.nodes))
        inv.write_text("all:\n  hosts:\n" + hosts)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        elapsed = run([gpulab, "assess", "-i", str(inv), "-p", "hgx-h100", "-f", "json", "--forks", str(args.forks)])
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        f"fleet: {args.nodes} mock:hgx-h100 nodes from an inventory, forks {args.forks}: {elapsed:.2f} s, "
        f"{elapsed / args.nodes * 1000:.1f} ms per node, peak RSS {max(peak_kib, before) / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
