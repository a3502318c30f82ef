"""Check parameters: typing the values a profile or ``--check ID:key=value`` gives."""

from __future__ import annotations

from typing import Any

from assessor.checks.base import CheckSpec
from assessor.errors import InputError

_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}


def coerce(spec: CheckSpec, name: str, value: Any) -> Any:
    """Validate one parameter value against the check's declared type.

    Raises InputError (without a location: the caller adds file and line) for an unknown
    parameter or a value of the wrong type. ``auto`` is accepted where the default is auto.
    """
    param = spec.param(name)
    if param is None:
        known = ", ".join(p.name for p in spec.params) or "none"
        raise InputError(f"check {spec.id} has no parameter {name!r} (parameters: {known})")
    if value is None or (value == "auto" and param.default == "auto"):
        return value
    kinds = param.type.split("|")  # e.g. "list|dict": either form is accepted
    allowed = tuple(t for kind in kinds for t in _TYPES.get(kind, (object,)))
    if "list" in kinds and not isinstance(value, allowed):
        value = [value]  # a single value where a list is wanted: a list of one
    if isinstance(value, bool) and bool not in allowed:
        raise InputError(f"check {spec.id} parameter {name} must be {param.type}, got {value!r}")
    if not isinstance(value, allowed):
        raise InputError(f"check {spec.id} parameter {name} must be {param.type}, got {value!r}")
    if kinds == ["float"] and isinstance(value, int | float):
        value = float(value)
    return value


def parse_cli(option: str) -> tuple[str, dict[str, Any]]:
    """``gpu.count:expected=8,foo=bar`` -> (id, raw values typed as YAML scalars)."""
    import yaml

    check_id, _, rest = option.partition(":")
    params: dict[str, Any] = {}
    if rest:
        for item in _split_top_level(rest):
            key, eq, raw = item.partition("=")
            if not eq or not key.strip():
                raise InputError(f"--check {option}: expected key=value, got {item!r}")
            try:
                params[key.strip()] = yaml.safe_load(raw) if raw.strip() else None
            except yaml.YAMLError:
                params[key.strip()] = raw
    return check_id.strip(), params


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside [] or {} (so lists can be given inline)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p for p in parts if p.strip()]
