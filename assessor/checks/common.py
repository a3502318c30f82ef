"""Helpers shared by the checks: naming devices, PCI bus keys, and per-device verdicts.

Checks aggregate many devices into one result. :func:`verdict` is the one place that
decides how failing, warning and unknown devices combine, so that no check can turn a
device it knows nothing about into a pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from assessor.checks.base import MissingFacts, need, result
from assessor.checks.result import Result
from assessor.facts import Gpu, NodeFacts

# How many device findings a message names before it says "and N more".
MESSAGE_LIMIT = 4


def gpu_label(gpu: Gpu) -> str:
    """``GPU 3 (00000000:44:00.0)``, or ``GPU 3`` when the bus id is unknown."""
    return f"GPU {gpu.index} ({gpu.bus_id})" if gpu.bus_id else f"GPU {gpu.index}"


def label_for_index(index: int, gpus: Sequence[Gpu] | None) -> str:
    """The label of GPU ``index``, with its bus id when the GPU facts know it."""
    for gpu in gpus or ():
        if gpu.index == index:
            return gpu_label(gpu)
    return f"GPU {index}"


def reading(value: float | None) -> float | None:
    """``value`` when it is a real number; None (unknown) for None, NaN and infinity.

    A NaN compares False with every limit, so a check that let one through would pass it.
    """
    if value is None or not math.isfinite(value):
        return None
    return value


def need_gpus(facts: NodeFacts) -> list[Gpu]:
    """The GPU list; skip (not pass) when the facts hold no GPU at all."""
    gpus: list[Gpu] = need(facts, "gpus")
    if not gpus:
        raise MissingFacts("no GPUs in the facts, so nothing to check (gpu.count reports that)")
    return gpus


def join_limited(items: Sequence[str], limit: int = MESSAGE_LIMIT) -> str:
    """Items joined with ``; ``, the tail summarised as ``and N more``."""
    if len(items) <= limit:
        return "; ".join(items)
    return "; ".join(items[:limit]) + f"; and {len(items) - limit} more"


def labels(items: Iterable[str]) -> str:
    """Device labels joined with commas (for the "unknown for" notes)."""
    listed = list(items)
    if len(listed) <= MESSAGE_LIMIT * 2:
        return ", ".join(listed)
    return ", ".join(listed[: MESSAGE_LIMIT * 2]) + f" and {len(listed) - MESSAGE_LIMIT * 2} more"


def verdict(
    check_id: str,
    *,
    fails: Sequence[str],
    warns: Sequence[str],
    unknown: Sequence[str],
    checked: int,
    ok: str,
    what: str,
    observed: Any = None,
    expected: Any = None,
    fail_hint: str,
    warn_hint: str | None = None,
    unknown_hint: str = "recapture with nvidia-smi -q -x or the NVML collector so every GPU reports it",
) -> Result:
    """Combine per-device findings into one result.

    ``checked`` counts devices whose value was known. None known: skip. Any failure: fail.
    Warnings or devices of unknown value: warn, naming them. Otherwise pass with ``ok``.
    """
    unknown_note = f"{what} unknown for {labels(unknown)}" if unknown else ""
    if checked == 0:
        if len(unknown) > 1:
            message = f"{what} not reported by any of the {len(unknown)} GPUs"
        else:
            message = unknown_note or f"no {what} to check"
        return result(check_id, "skip", message, expected=expected, hint=unknown_hint)
    if fails:
        message = join_limited(fails)
        if unknown_note:
            message += f" ({unknown_note})"
        return result(check_id, "fail", message, observed=observed, expected=expected, hint=fail_hint)
    if warns or unknown:
        parts = [*warns, unknown_note] if unknown_note else list(warns)
        hints = [h for h in ((warn_hint if warns else None), (unknown_hint if unknown else None)) if h]
        return result(
            check_id, "warn", join_limited(parts), observed=observed, expected=expected, hint="; ".join(hints)
        )
    return result(check_id, "pass", ok, observed=observed, expected=expected)
