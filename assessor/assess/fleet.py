"""Assess many targets at once: bounded concurrency, progress, Ctrl-C that keeps what finished.

One unreachable or broken node is an error for that node; every other node's results are
complete. SSH targets run in threads (they wait on the network); a fleet of targets that only
compute (simulated nodes, snapshots) runs in one process per core.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from assessor.assess.pipeline import Job, assess_one
from assessor.assess.profiles import Profile
from assessor.checks.result import TargetResults


@dataclass
class FleetRun:
    results: list[TargetResults]
    interrupted: bool = False


def run(
    jobs: list[Job],
    profile: Profile,
    *,
    forks: int = 32,
    timeout: float = 30.0,
    out: Path | None = None,
    progress: Callable[[Job, TargetResults], None] | None = None,
    active: tuple[str, ...] = (),
) -> FleetRun:
    """Assess every job with at most ``forks`` at a time, results in job order."""
    done: dict[int, TargetResults] = {}
    lock = threading.Lock()
    pool = _pool(jobs, forks)
    futures: dict[Future[TargetResults], int] = {
        pool.submit(assess_one, job, profile, timeout=timeout, out=out, active=active): i for i, job in enumerate(jobs)
    }
    interrupted = False
    try:
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in finished:
                i = futures[future]
                with lock:
                    done[i] = future.result()
                if progress is not None:
                    progress(jobs[i], done[i])
    except KeyboardInterrupt:
        interrupted = True
        pool.shutdown(wait=False, cancel_futures=True)
    else:
        pool.shutdown(wait=True)
    results = []
    for i, job in enumerate(jobs):
        if i in done:
            results.append(done[i])
        elif interrupted:
            results.append(
                TargetResults(job.target.spec, job.target.name, [], error="interrupted (Ctrl-C) before it finished")
            )
    return FleetRun(results, interrupted)


def _pool(jobs: list[Job], forks: int) -> Executor:
    return pool_for(len(jobs), forks, cpu_bound=all(getattr(j.target, "cpu_bound", False) for j in jobs))


def pool_for(count: int, forks: int, *, cpu_bound: bool) -> Executor:
    """Threads for ``count`` targets that wait on the network; processes (one per core) for more targets than
    cores that only compute (simulated nodes, snapshots), which threads would serialise."""
    cores = os.cpu_count() or 1
    if count > cores > 1 and cpu_bound:
        return ProcessPoolExecutor(max_workers=min(forks, cores))
    return ThreadPoolExecutor(max_workers=max(1, min(forks, count)), thread_name_prefix="gpulab")


class Progress:
    """A rich progress bar over hosts on a terminal; plain lines otherwise (CI logs)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self.tty = sys.stderr.isatty()
        self._bar = None
        if self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("assessing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}", markup=False),  # host names are data, not markup
                transient=True,
            )
            self._task = self._bar.add_task("", total=total)
            self._bar.start()

    def __call__(self, job: Job, result: TargetResults) -> None:
        self.count += 1
        from assessor.neutralise import visible

        status = "error" if result.error else ("FAILED" if result.failed else "ok")
        label = visible(job.label)  # an inventory host name is data: no escape sequences, no markup
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=f"{label}: {status}")
        else:
            print(f"[{self.count}/{self.total}] {label}: {status}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
