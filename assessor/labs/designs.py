"""The bridge to the ``design.*`` graders of design labs (:mod:`assessor.labs.design`).

A grader is agreed by signature, ``(answer, params) -> Result``, and registered in
``assessor.labs.design.GRADERS`` like a catalogue check; this module is the one place the lab framework
touches that package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assessor.checks.result import Result
from assessor.yamlio import Located


def ids() -> list[str]:
    """Known grader ids, sorted."""
    from assessor.labs.design import GRADERS

    return sorted(GRADERS)


def spec(grader_id: str) -> Any | None:
    """The grader's spec (id, params, func), or None for an unknown id."""
    from assessor.labs.design import GRADERS

    return GRADERS.get(grader_id)


def load_answer(path: Path | str, grader_ids: list[str]) -> Located:
    """Read a candidate's answer file and check the sections the graders read (InputError: file, line, key)."""
    from assessor.labs.design import load_answer as load
    from assessor.labs.design import validate_answer

    located = load(path)
    validate_answer(located, grader_ids)
    return located


def run(grader_id: str, answer: Located | dict[str, Any], params: dict[str, Any]) -> Result:
    """Run one design grader (defaults filled in). A malformed answer raises InputError; a bug is an ``error``."""
    from assessor.labs.design import run_grader

    found = spec(grader_id)
    if found is None:
        return Result(grader_id, "error", f"no design grader {grader_id!r} is installed")
    return run_grader(found, answer, params)
