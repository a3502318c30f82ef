"""node-problem-detector's custom-plugin protocol: one verdict, one exit code, one short line.

NPD runs a plugin, reads its exit code (0 OK, 1 NonOK: the problem is there, anything else Unknown) and
keeps at most ``max_output_length`` bytes of its standard output (80 by default; NPD trims white space,
then cuts by bytes) as the condition's or event's message.

A verdict over the checks asked for, from their results:

- **problem** (exit 1): a check failed; the message names it and what it saw;
- **unknown** (exit 2): a check errored, the node could not be assessed, or every check was skipped (gpulab
  saw none of the facts, so it cannot say the GPUs are fine);
- **ok** (exit 0): everything else (passes, warnings, some skips).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assessor.assess.profiles import Profile
from assessor.checks.result import Result, TargetResults
from assessor.errors import InputError
from assessor.neutralise import visible

State = Literal["ok", "problem", "unknown"]

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_UNKNOWN = 2
EXIT_CODES: dict[State, int] = {"ok": EXIT_OK, "problem": EXIT_PROBLEM, "unknown": EXIT_UNKNOWN}

MAX_OUTPUT_LENGTH = 80  # NPD's default max_output_length, in bytes
ELLIPSIS = "..."


@dataclass(frozen=True)
class Verdict:
    state: State
    message: str  # plain text, already neutralised; not yet cut to NPD's length

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]


def _first(results: list[Result], status: str) -> list[Result]:
    return [r for r in results if r.status == status]


def _more(found: list[Result]) -> str:
    return f" (+{len(found) - 1} more)" if len(found) > 1 else ""


def verdict(target: TargetResults) -> Verdict:
    """The verdict of one node's results (see the module docstring)."""
    if target.error is not None:
        return Verdict("unknown", visible(f"gpulab: not assessed: {target.error}"))
    results = target.results
    failed = _first(results, "fail")
    if failed:
        # the message comes before the list of others: NPD keeps only the first bytes
        return Verdict("problem", visible(f"{failed[0].check}: {failed[0].message}{_more(failed)}"))
    errors = _first(results, "error")
    if errors:
        return Verdict("unknown", visible(f"{errors[0].check}: cannot tell: {errors[0].message}{_more(errors)}"))
    if not results or all(r.status == "skip" for r in results):
        checks = ", ".join(r.check for r in results) or "no checks"
        return Verdict("unknown", visible(f"gpulab: nothing to go on: {checks} skipped (facts not captured)"))
    warned = _first(results, "warn")
    if warned:
        return Verdict("ok", visible(f"ok with warnings: {warned[0].check}: {warned[0].message}{_more(warned)}"))
    skipped = _first(results, "skip")
    seen = f"ok: {', '.join(r.check for r in results if r.status == 'pass')}"
    return Verdict("ok", visible(seen + (f"; not seen: {', '.join(r.check for r in skipped)}" if skipped else "")))


def cut(message: str, limit: int = MAX_OUTPUT_LENGTH) -> str:
    """``message`` in at most ``limit`` bytes of UTF-8, as NPD keeps it: white space trimmed, a longer one
    cut at a character boundary and ended with "..." so a reader sees it was cut."""
    text = message.strip()
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    if limit < len(ELLIPSIS):
        return data[: max(0, limit)].decode("utf-8", "ignore")
    return data[: limit - len(ELLIPSIS)].decode("utf-8", "ignore").rstrip() + ELLIPSIS


def checks_of(text: str) -> tuple[str, ...]:
    """``CHECK[,CHECK...]`` as check ids, each one gpulab has (InputError naming the first it has not)."""
    from assessor import checks

    ids = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not ids:
        raise InputError("give the checks to run: CHECK[,CHECK...] (see `gpulab checks list`)")
    for check_id in ids:
        checks.get(check_id)
    return ids


def profile_for(ids: tuple[str, ...], base: Profile | None) -> Profile:
    """The checks ``ids`` with the parameters ``base`` gives them (the defaults for a check it has not)."""
    from assessor.assess.profiles import CheckRef

    given = {ref.id: ref for ref in (base.checks if base else ())}
    refs = tuple(given.get(check_id) or CheckRef(check_id) for check_id in ids)
    name = base.name if base else "npd"
    return Profile(name, f"gpulab npd {','.join(ids)}", refs, base.file if base else None)
