"""Helpers shared by the nvidia-smi parsers: text hygiene and the driver-failure messages.

When the driver is broken nvidia-smi prints one of a few messages instead of its normal
output, whatever sub-command was asked for. The parsers raise a ParseError that carries that
message verbatim, so the snapshot loader can recognise it (see :func:`failure_message`) and
record a driver problem instead of a parse problem.
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.parsers._text import clean_lines

# Values nvidia-smi prints where it has no number or state to give; all mean "unknown".
NOT_AVAILABLE = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "not supported",
        "[not supported]",
        "unknown error",
        "[unknown error]",
        "insufficient permissions",
        "[insufficient permissions]",
        "gpu requires reset",
        "[gpu requires reset]",
        "requested functionality has been deprecated",
    }
)

# Starts of the lines nvidia-smi prints instead of its output when NVML or the driver fails.
_FAILURE_STARTS = (
    "failed to initialize nvml",
    "nvidia-smi has failed",
    "nvml library version",
    "unable to determine the device handle",
    "unable to determine",
    "failed to ",
    "driver/library version mismatch",
    "gpu access blocked by the operating system",
    "unable to load the nvidia driver",
)

NO_DEVICES = "no devices were found"


_LEADING_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_TRUE = frozenset({"enabled", "yes", "active", "on", "true"})
_FALSE = frozenset({"disabled", "no", "not active", "off", "false"})


def number_of(value: str | None) -> float | None:
    """The number a value starts with (``66.92 W``, ``36 C``, ``16x``, ``40960 MiB``); None when it has none."""
    if value is None:
        return None
    match = _LEADING_NUMBER.match(value)
    return float(match.group()) if match else None


def flag_of(value: str | None) -> bool | None:
    """``Enabled``/``Yes``/``Active`` and their opposites as a bool; a state not known here is unknown, not False."""
    if value is None:
        return None
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


def is_not_available(value: str | None) -> bool:
    """True for None and for nvidia-smi's spellings of "no value" (N/A, [Not Supported], ...)."""
    return value is None or value.strip().lower() in NOT_AVAILABLE


def failure_message(text: str) -> str | None:
    """The nvidia-smi driver/NVML failure text in ``text`` (verbatim, stripped), or None.

    Every line from the first failure line on is kept: NVML's version-mismatch message spans
    two lines ("Failed to initialize NVML: ..." then "NVML library version: ...").
    """
    found = _find_failure(text)
    return found[1] if found else None


_FAILURE_LINE = re.compile(
    r"^[ \t]*(?:" + "|".join(re.escape(start) for start in _FAILURE_STARTS) + ")", re.MULTILINE | re.IGNORECASE
)


def _find_failure(text: str) -> tuple[int, str] | None:
    if _FAILURE_LINE.search(text) is None:
        return None  # one search in C instead of a Python loop over every line
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().lower().startswith(_FAILURE_STARTS):
            return i + 1, "\n".join(x.strip() for x in lines[i:] if x.strip())
    return None


def says_no_devices(text: str) -> bool:
    """True when the whole output is nvidia-smi's "No devices were found" (NVML up, zero GPUs)."""
    return text.strip().lower().rstrip(".") == NO_DEVICES


def check_text(text: str) -> list[str]:
    """The lines of ``text`` cleaned of paste noise (see :mod:`assessor.parsers._text`), one per line.

    nvidia-smi underlines table headers with ANSI escapes when writing to a terminal, and a
    capture made through ``script`` or a pasted terminal keeps them; prompts, fences and
    launcher prefixes come with pasted transcripts. ParseError (with line) for binary data.
    """
    return clean_lines(text)


def is_shell_noise(line: str) -> bool:
    """A pasted shell prompt (``$ nvidia-smi -L``) or comment line, as captures by hand contain."""
    stripped = line.strip()
    return stripped.startswith(("$ ", "# ")) or stripped in ("$", "#")


def raise_on_failure(text: str) -> None:
    """ParseError carrying the failure text verbatim when ``text`` is an nvidia-smi failure."""
    found = _find_failure(text)
    if found is not None:
        raise ParseError(found[1], line=found[0])
