"""The check framework: specs, parameters, the registry, and missing-fact handling.

A check is a pure function ``(facts, params) -> Result``. It reads facts through
:func:`need`, which turns an absent fact into ``skip`` and a broken one into ``error``;
the runner does that conversion, so no check can fold missing data into ``pass``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assessor.checks.result import Result, Status
from assessor.facts import NodeFacts

CheckFunc = Callable[[NodeFacts, dict[str, Any]], Result]


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # int, float, str, bool, list, dict, or alternatives such as "list|dict"
    default: Any
    doc: str


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    facts: tuple[str, ...]  # NodeFacts fields it reads
    params: tuple[Param, ...]
    doc: str  # what it verifies and why
    remedy: str  # what to do when it fails
    func: CheckFunc = field(compare=False)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


class MissingFacts(Exception):
    """The snapshot did not hold what the check needs: the result is ``skip``."""


class BrokenFacts(Exception):
    """The source of a needed fact failed to capture or parse: the result is ``error``."""


REGISTRY: dict[str, CheckSpec] = {}


def fact_sources(name: str) -> str:
    """Which snapshot files give a facts field, best first, in words: what to capture to get it."""
    from assessor.capture.sources import FILES, named
    from assessor.parsers import KINDS

    files = [f.file for f in sorted(FILES, key=lambda f: f.priority) if name in KINDS[f.kind].fields]
    return " or ".join(named(f) for f in files) if files else name


def check(
    id: str,
    *,
    title: str,
    facts: tuple[str, ...],
    doc: str,
    remedy: str,
    params: tuple[Param, ...] = (),
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check function under a stable id."""

    def register(func: CheckFunc) -> CheckFunc:
        if id in REGISTRY:
            raise ValueError(f"check {id} registered twice")
        REGISTRY[id] = CheckSpec(id, title, facts, params, doc, remedy, func)
        return func

    return register


def need(facts: NodeFacts, name: str) -> Any:
    """The value of a facts field, or raise MissingFacts / BrokenFacts with a reason."""
    value = getattr(facts, name)
    if value is not None:
        return value
    problem = facts.problems.get(name)
    if problem:
        raise BrokenFacts(problem)
    if facts.partial.get(name):
        raise MissingFacts(f"no {name.replace('_', ' ')} facts: {facts.partial[name]}")
    raise MissingFacts(f"no {name.replace('_', ' ')} facts: the snapshot lacks {fact_sources(name)}")


def result(
    spec_id: str,
    status: Status,
    message: str,
    *,
    observed: Any = None,
    expected: Any = None,
    hint: str | None = None,
) -> Result:
    return Result(spec_id, status, message, observed=observed, expected=expected, hint=hint)


def run_check(spec: CheckSpec, facts: NodeFacts, params: dict[str, Any]) -> Result:
    """Run one check; never raises. Missing facts skip, broken ones and bugs error."""
    merged = {p.name: p.default for p in spec.params}
    merged.update(params)
    try:
        return spec.func(facts, merged)
    except MissingFacts as exc:
        return Result(spec.id, "skip", str(exc))
    except BrokenFacts as exc:
        return Result(
            spec.id, "error", str(exc), hint="recapture the source named above and check the tool runs on the node"
        )
    except Exception as exc:  # a check bug must not end the run
        return Result(spec.id, "error", f"internal error in check {spec.id}: {type(exc).__name__}: {exc}")
