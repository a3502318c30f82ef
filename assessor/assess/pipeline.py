"""Assess: target -> snapshot -> facts -> check results, for one target."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assessor.assess.profiles import Profile
from assessor.capture.snapshot import Snapshot
from assessor.checks.result import Result, TargetResults
from assessor.errors import GpulabError
from assessor.facts import NodeFacts
from assessor.targets import Target


def run_profile(facts: NodeFacts, profile: Profile) -> list[Result]:
    """Every check of the profile on these facts; a check never ends the run."""
    from assessor import checks

    out = []
    for ref in profile.checks:
        out.append(checks.run_check(checks.REGISTRY[ref.id], facts, dict(ref.params)))
    return out


def assess(spec: str, profile: Profile, *, timeout: float = 30.0) -> TargetResults:
    """Assess one target by its spec; a target that cannot be read is an error for it only."""
    from assessor.targets import open_target

    return assess_one(Job(spec, open_target(spec)), profile, timeout=timeout)


def with_overrides(profile: Profile, options: list[str]) -> Profile:
    """Add or override checks from ``--check ID[:key=value,...]`` options."""
    from assessor import checks
    from assessor.assess.profiles import CheckRef
    from assessor.checks import params

    refs = list(profile.checks)
    for option in options:
        check_id, raw = params.parse_cli(option)
        spec = checks.get(check_id)
        typed: dict[str, Any] = {}
        for key, value in raw.items():
            try:
                typed[key] = params.coerce(spec, key, value)
            except GpulabError as exc:
                raise type(exc)(f"--check {option}: {exc}") from None
        existing = next((i for i, r in enumerate(refs) if r.id == check_id), None)
        if existing is None:
            refs.append(CheckRef(check_id, typed))
        else:
            refs[existing] = CheckRef(check_id, {**refs[existing].params, **typed})
    return Profile(profile.name, profile.description, tuple(refs), profile.file)


@dataclass
class Job:
    label: str  # what the results call it: the inventory host name or the target spec
    target: Target


def assess_one(
    job: Job, profile: Profile, *, timeout: float, out: Path | None = None, active: tuple[str, ...] = ()
) -> TargetResults:
    """Assess one target; any failure to reach or read it is an error for it alone.

    With ``out``, the snapshot is kept under ``out/<host>/``; for a host that could not be reached, an error
    record is kept instead, so grading the kept snapshots offline reports it unreachable again.
    """
    from assessor.capture import snapshot
    from assessor.errors import GpulabError
    from assessor.parsers.assemble import facts_from_snapshot

    try:
        snap = job.target.snapshot(timeout=timeout, active=active)
    except Exception as exc:  # a transport bug must not take the fleet down either
        why = str(exc) if isinstance(exc, GpulabError) else f"{type(exc).__name__}: {exc}"
        recorded = snapshot.error_record(getattr(job.target, "path", None))
        if recorded is not None:  # a snapshot kept by --out for a host that was unreachable
            return TargetResults(job.target.spec, recorded[0] or job.target.name, [], error=recorded[1])
        if out is not None:
            snapshot.write_error_record(
                out / snapshot.dir_name(job.label), job.target.spec, job.target.name or job.label, why
            )
        return TargetResults(job.target.spec, job.target.name, [], error=why)
    if out is not None and snap.path is None:
        snapshot.write(
            snap, out / snapshot.dir_name(job.label), {"target": job.target.spec, "time": snapshot.now_iso()}
        )
    when = str(snap.meta.get("time") or snapshot.now_iso())
    timings = {n: float(s.duration_s) for n, s in snap.sources.items() if isinstance(s.duration_s, (int, float))}
    if snap.path is None and (missing := no_nvidia(snap)):
        return TargetResults(
            job.target.spec, job.target.name or snap.host, [], error=missing, captured_at=when, timings=timings
        )
    facts = facts_from_snapshot(snap)
    host = job.target.name or facts.host
    notes = [f"{name}: not used: {why}" for name, why in snap.unused.items()]
    notes += list(dict.fromkeys(facts.notes))  # what assembly says: excerpts, sources that disagreed
    return TargetResults(
        job.target.spec, host, run_profile(facts, profile), captured_at=when, timings=timings, notes=notes
    )


def no_nvidia(snap: Snapshot) -> str | None:
    """Why a live node cannot be assessed at all: neither NVML nor nvidia-smi is there."""
    smi, nvml = snap.sources.get("nvidia-smi-q.xml"), snap.sources.get("nvml.json")
    if smi is None or smi.status != "missing" or (nvml is not None and nvml.status != "missing"):
        return None
    if nvml is not None and nvml.message:
        return nvml.message
    return f"no NVIDIA tools on {snap.host or 'the node'}: nvidia-smi is not installed or not on PATH"
