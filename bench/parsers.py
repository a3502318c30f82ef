"""Parser benchmark: every parser kind on its worst hostile input (figures, never asserted).

    .venv/bin/python bench/parsers.py [--size 1000000] [--kinds nccl-tests,ibstat]

For each kind, every input of ``tests/parsers/hostile.py`` is parsed once (a ParseError is a
fine answer); the slowest input of the kind is printed, then the slowest kind overall.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assessor import parsers  # noqa: E402
from assessor.errors import ParseError  # noqa: E402
from tests.parsers.hostile import hostile_inputs  # noqa: E402


def time_kind(kind: str, size: int) -> tuple[float, float, str]:
    """The slowest (wall seconds, CPU seconds, input label) of ``kind`` over its hostile inputs.

    CPU time is this process's own: on a busy machine it is the figure to read, wall time includes waiting.
    """
    worst = (0.0, 0.0, "")
    for label, text in hostile_inputs(kind, size):
        start, cpu = time.perf_counter(), time.process_time()
        with contextlib.suppress(ParseError):
            parsers.parse(kind, text)
        worst = max(worst, (time.perf_counter() - start, time.process_time() - cpu, label))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="characters per input (default 1 MB)")
    parser.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k] or list(parsers.KINDS)
    results = []
    for kind in kinds:
        seconds, cpu, label = time_kind(kind, args.size)
        results.append((seconds, cpu, kind, label))
        print(f"{kind:24} {seconds * 1000:9.1f} ms wall {cpu * 1000:9.1f} ms CPU  worst input: {label}", flush=True)
    seconds, cpu, kind, label = max(results)
    print(f"slowest: {kind} {seconds * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU on {label} ({args.size} characters)")


if __name__ == "__main__":
    main()
