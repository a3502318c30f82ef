"""How a grade reads in words: a check's label in its lab, and what it observed and expected.

One phrasing for every place a grade is shown: the terminal's `lab grade` table, `lab show`'s "graded by" line,
the candidate report in every format and the lab catalogue. Pure functions of plain data; what they return is
raw text (a node's or a candidate's strings inside it untouched), neutralised where it is printed.

Observed and expected values are whatever a check returned (JSON data). In words:

- nothing is an empty string ("unknown" inside a mapping); true and false are "yes" and "no"; numbers as
  written (``481.57``, ``8``);
- a list is its items joined by commas (an empty one is "none");
- a mapping is "key: value" pairs joined by "; ", an inner mapping "key value" pairs joined by ", ";
- keys that are all digits are GPU indices (the checks key per-GPU values by the GPU's index): GPUs whose
  values read the same are grouped, in ranges (``GPUs 0-3, 5-7: 18 NVLinks active; GPU 4: 17 NVLinks active``);
  so are other keys sharing a value in words, in a mapping of three or more (``nvidia-persistenced,
  nvidia-dcgm: active``), while numbers each keep their key;
- a snake_case key reads as words (``wrong_sizes`` is "wrong sizes"), except in a design answer's values,
  whose keys are those of the candidate's own answer file (``total_it_kw``) and are shown as written;
- mig.mode's per-GPU ``{"current": ..., "pending": ...}`` reads "MIG enabled", "MIG disabled, enable pending".

A check used more than once in a lab (mig.mode for GPU 0, then for GPUs 1-7) is labelled by what tells its
uses apart: the GPUs, the services, the modules or the answer parts it grades (``mig.mode (GPU 0)``,
``design.power (total_it_kw, cooling_kw, facility_kw)``); a use that leaves them at the check's defaults is
``(defaults)``; two uses that would still read the same are told apart by their place (``(part 2)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

_SNAKE = re.compile(r"[a-z]+(?:_[a-z]+)+")
_GPU_KEY = re.compile(r"\d+")

# How a per-GPU number of a check reads ("{}": the number).
_GPU_NUMBER = {"gpu.nvlink": "{} NVLinks active", "gpu.temperature": "{} C"}

# The parameters that tell two uses of one check apart, in the order they are preferred for a label.
_TELLING = ("gpus", "names", "modules", "parts")


def number(value: float | int) -> str:
    """A number as written: ``8``, ``481.57``, ``2094.4`` (never ``2094.4000000000001``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def ranges(indices: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 5, 6, 7]`` -> ``0-3, 5-7``; ``[4]`` -> ``4``."""
    ordered = sorted(set(indices))
    runs: list[tuple[int, int]] = []
    for i in ordered:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def gpus(indices: Iterable[int]) -> str:
    """``GPU 0`` or ``GPUs 1-7``."""
    listed = sorted(set(indices))
    return ("GPU " if len(listed) == 1 else "GPUs ") + ranges(listed)


def in_words(value: Any, check: str = "") -> str:
    """A check's observed or expected value in words (the module's rules); ``check`` is the check's id."""
    return _words(value, check, depth=0)


def _key(key: str, check: str) -> str:
    if check.startswith("design.") or not _SNAKE.fullmatch(key):
        return key
    return key.replace("_", " ")


def _scalar(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return number(value)
    return str(value)


def _mig_mode(value: Mapping[str, Any]) -> str | None:
    """mig.mode's ``{"current": bool, "pending": bool}`` for one GPU."""
    if set(value) != {"current", "pending"} or not all(isinstance(v, bool) for v in value.values()):
        return None
    now = "MIG enabled" if value["current"] else "MIG disabled"
    if value["pending"] == value["current"]:
        return now
    return now + (", enable pending (takes effect at the GPU's reset)" if value["pending"] else ", disable pending")


def _words(value: Any, check: str, depth: int) -> str:
    if value is None:
        return "" if depth == 0 else "unknown"
    if isinstance(value, Mapping):
        return _mapping(value, check, depth)
    if isinstance(value, (list, tuple)):
        if not value:
            return "none"
        if all(isinstance(v, Mapping) for v in value):  # records: each in parentheses inside a mapping
            return ("; " if depth == 0 else ", ").join(_words(v, check, depth + 1) for v in value)
        return ", ".join(_words(v, check, depth + 1) for v in value)
    return _scalar(value)


def _mapping(value: Mapping[str, Any], check: str, depth: int) -> str:
    if not value:
        return "none"
    if check == "mig.mode":
        mode = _mig_mode(value)
        if mode is not None:
            return mode
    per_gpu = {str(k): v for k, v in value.items() if _GPU_KEY.fullmatch(str(k))}
    rest = {str(k): v for k, v in value.items() if str(k) not in per_gpu}
    told = [_per_gpu(per_gpu, check, depth)] if per_gpu else []  # GPUs first, then the other keys
    pairs = [(_key(k, check), _words(v, check, depth + 1), v) for k, v in rest.items()]
    if depth > 0:
        body = ", ".join(told + [f"{key} {text}" for key, text, _ in pairs])
        return f"({body})" if depth > 1 else body
    groups: dict[tuple[str, str], list[str]] = {}  # keys that read the same value, in the order first seen
    for key, text, raw in pairs:
        # only words are grouped, in a mapping of three or more (services: active): numbers each keep their key
        alone = len(pairs) < 3 or not isinstance(raw, str)
        groups.setdefault((key if alone else "", text), []).append(key)
    return "; ".join(told + [f"{', '.join(keys)}: {text}" for (_, text), keys in groups.items()])


def _per_gpu(value: Mapping[str, Any], check: str, depth: int) -> str:
    template = _GPU_NUMBER.get(check)
    groups: dict[str, list[int]] = {}
    for key, item in value.items():
        if template and isinstance(item, (int, float)) and not isinstance(item, bool):
            text = template.format(number(item))
        else:
            text = _words(item, check, depth + 1)
        groups.setdefault(text, []).append(int(key))
    return "; ".join(f"{gpus(indices)}: {text}" for text, indices in groups.items())


# ---- labels of a lab's checks ----------------------------------------------------------------------------


class CheckLike(Protocol):
    """What a label needs of a lab's check."""

    @property
    def id(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...


def _telling(key: str, value: Any) -> str:
    if key == "gpus" and isinstance(value, (list, tuple)) and all(isinstance(i, int) for i in value):
        return gpus(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_scalar(v) for v in value)
    return f"{key} {_words(value, '', 1)}"


def labels(checks: Sequence[CheckLike]) -> list[str]:
    """Each check's label in its lab: its id, and for a check the lab uses more than once, what tells that
    use apart (the module's rules)."""
    by_id: dict[str, list[int]] = {}
    for i, c in enumerate(checks):
        by_id.setdefault(c.id, []).append(i)
    out = [c.id for c in checks]
    for check_id, places in by_id.items():
        if len(places) < 2:
            continue
        uses = [checks[i].params for i in places]
        differ = [k for k in dict.fromkeys(k for p in uses for k in p) if len({repr(p.get(k)) for p in uses}) > 1]
        chosen = [k for k in _TELLING if k in differ][:1] or differ
        for i, params in zip(places, uses, strict=True):
            told = [_telling(k, params[k]) for k in chosen if params.get(k) is not None]
            out[i] = f"{check_id} ({'; '.join(told) if told else 'defaults'})"
        if len(set(out[i] for i in places)) < len(places):  # two uses read the same: their places tell them apart
            for n, i in enumerate(places, 1):
                out[i] = f"{check_id} (part {n})"
    return out


def labels_for_scores(checks: Sequence[CheckLike], scored: Sequence[str]) -> list[str]:
    """The labels of a grade's checks (``scored``: the check ids in the grade's order) when they are the lab's
    checks in its order; else the ids as they are (a grade of an older version of the lab)."""
    if [c.id for c in checks] != list(scored):
        return list(scored)
    return labels(checks)
