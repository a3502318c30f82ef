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

from assessor.assess.profiles import Profile
from assessor.capture.snapshot import Snapshot
from assessor.checks.result import TargetResults
from assessor.targets import Target


@dataclass
class Job:
    label: str  # what the results call it: the inventory host name or the target spec
    target: Target


@dataclass
class FleetRun:
    results: list[TargetResults]
    interrupted: bool = False


def assess_one(
    job: Job, profile: Profile, *, timeout: float, out: Path | None = None, active: tuple[str, ...] = ()
) -> TargetResults:
    """Assess one target; any failure to reach or read it is an error for it alone."""
    from assessor.assess.pipeline import run_profile
    from assessor.capture import snapshot
    from assessor.errors import GpulabError
    from assessor.parsers.assemble import facts_from_snapshot

    try:
        snap = job.target.snapshot(timeout=timeout, active=active)
    except Exception as exc:  # a transport bug must not take the fleet down either
        why = str(exc) if isinstance(exc, GpulabError) else f"{type(exc).__name__}: {exc}"
        recorded = snapshot_error(job.target)
        if recorded is not None:  # a snapshot kept by --out for a host that was unreachable
            return TargetResults(job.target.spec, recorded[0] or job.target.name, [], error=recorded[1])
        if out is not None:
            write_error_record(out / dir_name(job.label), job.target.spec, job.target.name or job.label, why)
        return TargetResults(job.target.spec, job.target.name, [], error=why)
    if out is not None and snap.path is None:
        snapshot.write(snap, out / dir_name(job.label), {"target": job.target.spec, "time": now_iso()})
    when = str(snap.meta.get("time") or now_iso())
    timings = {n: float(s.duration_s) for n, s in snap.sources.items() if isinstance(s.duration_s, (int, float))}
    if snap.path is None and (missing := no_nvidia(snap)):
        return TargetResults(
            job.target.spec, job.target.name or snap.host, [], error=missing, captured_at=when, timings=timings
        )
    facts = facts_from_snapshot(snap)
    host = job.target.name or facts.host
    return TargetResults(job.target.spec, host, run_profile(facts, profile), captured_at=when, timings=timings)


def now_iso() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def write_error_record(directory: Path, spec: str, host: str, why: str) -> None:
    """Keep why a host could not be assessed (``meta.json`` with ``error``), so grading the kept
    snapshots offline reports the host as unreachable again, with the same counts."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    record = {"target": spec, "host": host, "error": why, "time": now_iso(), "files": {}}
    (directory / "meta.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def snapshot_error(target: Target) -> tuple[str | None, str] | None:
    """(host, why) when ``target`` is a snapshot directory holding an error record, else None."""
    import json

    path = getattr(target, "path", None)
    if not isinstance(path, Path) or not (path / "meta.json").is_file():
        return None
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("error"), str):
        return None
    host = meta.get("host")
    return (host if isinstance(host, str) else None), meta["error"]


def no_nvidia(snap: Snapshot) -> str | None:
    """Why a live node cannot be assessed at all: neither NVML nor nvidia-smi is there."""
    smi, nvml = snap.sources.get("nvidia-smi-q.xml"), snap.sources.get("nvml.json")
    if smi is None or smi.status != "missing" or (nvml is not None and nvml.status != "missing"):
        return None
    if nvml is not None and nvml.message:
        return nvml.message
    return f"no NVIDIA tools on {snap.host or 'the node'}: nvidia-smi is not installed or not on PATH"


def dir_name(label: str) -> str:
    """A host label as a safe directory name (snapshots under --out DIR/<host>/)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label) or "target"


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
    """Threads for targets that wait on the network; processes (one per core) for a fleet of
    targets that only compute (simulated nodes, snapshots), which threads would serialise."""
    cores = os.cpu_count() or 1
    if len(jobs) > cores and cores > 1 and all(getattr(j.target, "cpu_bound", False) for j in jobs):
        return ProcessPoolExecutor(max_workers=min(forks, cores))
    return ThreadPoolExecutor(max_workers=max(1, forks), thread_name_prefix="gpulab")


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
        from assessor.reports.safe import visible

        status = "error" if result.error else ("FAILED" if result.failed else "ok")
        label = visible(job.label)  # an inventory host name is data: no escape sequences, no markup
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=f"{label}: {status}")
        else:
            print(f"[{self.count}/{self.total}] {label}: {status}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
