"""gpulab benchmarks: `python bench/run.py` (after scripts/setup.sh) prints the figures.

- corpus: parse every supported corpus file 100 times (seconds per full pass)
- assess: capture-free assessment of one snapshot end to end, in-process (seconds per run)
- startup: `gpulab --help` wall time (median of 10 runs, a fresh process each)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bench_corpus(rounds: int) -> None:
    from assessor import parsers
    from tests.support.corpus import CORPUS
    from tests.support.corpus_kinds import corpus_files

    files = [(kind, path.read_text(encoding="utf-8", errors="replace")) for path, kind in corpus_files(CORPUS)]
    if not files:  # a figure over nothing would read as fast
        raise SystemExit(f"no corpus files under {CORPUS}: the benchmark has nothing to parse")
    start = time.perf_counter()
    for _ in range(rounds):
        for kind, text in files:
            parsers.parse(kind, text)
    elapsed = time.perf_counter() - start
    print(
        f"corpus: {len(files)} files x {rounds} rounds in {elapsed:.2f} s = {elapsed / rounds * 1000:.1f} ms per pass"
    )


def bench_assess(rounds: int) -> None:
    from assessor.assess import pipeline as runner
    from assessor.assess import profiles
    from tests.support.snapshots import BROKEN_H100, HEALTHY_A100, corpus_snapshot

    with tempfile.TemporaryDirectory() as tmp:
        snap = corpus_snapshot(
            Path(tmp) / "node", {**HEALTHY_A100, **{k: v for k, v in BROKEN_H100.items() if k == "dmesg.txt"}}
        )
        prof = profiles.load("hgx-h100")
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            runner.assess(f"snapshot:{snap}", prof)
            times.append(time.perf_counter() - start)
    print(
        f"assess snapshot (hgx-h100 profile, {len(prof.checks)} checks): "
        f"median {statistics.median(times) * 1000:.1f} ms per run over {rounds} runs"
    )


def bench_startup(rounds: int) -> None:
    exe = shutil.which("gpulab", path=str(Path(sys.executable).parent)) or "gpulab"
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([exe, "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(f"startup: gpulab --help median {statistics.median(times) * 1000:.0f} ms over {rounds} runs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", nargs="*", default=["corpus", "assess", "startup"])
    args = ap.parse_args()
    for name in args.which:
        {"corpus": lambda: bench_corpus(100), "assess": lambda: bench_assess(20), "startup": lambda: bench_startup(10)}[
            name
        ]()


if __name__ == "__main__":
    main()
