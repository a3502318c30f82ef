"""``nvml.json``: the NVML collector's snapshot file (see :func:`assessor.capture.nvml.collect_json`)."""

from __future__ import annotations

import json

from assessor.errors import ParseError
from assessor.facts import DriverInfo, Gpu, GpuInstance, NodeFacts, from_jsonable
from assessor.parsers._text import check_input

# The collector writes four levels (document, gpus, gpu, nvlinks/errors); far deeper is hostile.
MAX_DEPTH = 32


def parse(text: str) -> NodeFacts:
    """Facts (driver, gpus, mig_instances) from an ``nvml.json`` document."""
    check_input(text, what="nvml.json")
    _check_depth(text)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON: {exc.msg}", line=exc.lineno) from None
    except (RecursionError, ValueError) as exc:  # NaN/Infinity, or what _check_depth should prevent
        raise ParseError(f"not an nvml.json document: {exc}", line=1) from None
    if not isinstance(data, dict):
        raise ParseError(f"nvml.json holds a JSON object, not {type(data).__name__}", line=1)
    facts = NodeFacts()
    try:
        if data.get("driver") is not None:
            facts.driver = from_jsonable(DriverInfo, data["driver"])
        if data.get("gpus") is not None:
            facts.gpus = [from_jsonable(Gpu, g) for g in data["gpus"]]
        if data.get("mig_instances") is not None:
            facts.mig_instances = [from_jsonable(GpuInstance, g) for g in data["mig_instances"]]
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise ParseError(f"not an nvml.json document: {exc}") from None
    for field, why in (data.get("problems") or {}).items():
        facts.problems[str(field)] = str(why)
    return facts


def _check_depth(text: str) -> None:
    """ParseError naming the line where arrays/objects nest deeper than MAX_DEPTH (linear scan)."""
    depth = 0
    in_string = escaped = False
    line = 1
    for char in text:
        if char == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep: not an nvml.json document", line=line)
        elif char in "]}":
            depth -= 1


def _no_constant(name: str) -> None:
    """JSON has no NaN or Infinity; the collector never writes them, so a file that does is refused."""
    raise ValueError(f"{name} is not a JSON number")
