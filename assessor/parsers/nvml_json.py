"""``nvml.json``: the NVML collector's snapshot file (see :func:`assessor.capture.nvml.collect_json`)."""

from __future__ import annotations

import json

from assessor.errors import ParseError
from assessor.facts import DriverInfo, Gpu, GpuInstance, NodeFacts, from_jsonable


def parse(text: str) -> NodeFacts:
    """Facts (driver, gpus, mig_instances) from an ``nvml.json`` document."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON: {exc.msg}", line=exc.lineno) from None
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
