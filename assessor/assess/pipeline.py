"""Assess: target -> snapshot -> facts -> check results, for one target."""

from __future__ import annotations

from typing import Any

from assessor.errors import GpulabError
from assessor.facts import NodeFacts
from assessor.assess.profiles import Profile
from assessor.checks.result import Result, TargetResults


def run_profile(facts: NodeFacts, profile: Profile) -> list[Result]:
    """Every check of the profile on these facts; a check never ends the run."""
    from assessor import checks

    out = []
    for ref in profile.checks:
        out.append(checks.run_check(checks.REGISTRY[ref.id], facts, dict(ref.params)))
    return out


def assess(spec: str, profile: Profile, *, timeout: float = 30.0) -> TargetResults:
    """Assess one target by its spec; a target that cannot be read is an error for it only."""
    from assessor.assess.fleet import Job, assess_one
    from assessor.targets import open_target

    return assess_one(Job(spec, open_target(spec)), profile, timeout=timeout)


def with_overrides(profile: Profile, options: list[str]) -> Profile:
    """Add or override checks from ``--check ID[:key=value,...]`` options."""
    from assessor import checks
    from assessor.checks import params
    from assessor.assess.profiles import CheckRef

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
