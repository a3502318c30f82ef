"""Validating an answer file's sections against a small schema, with file, line and key in every error.

A schema is a dict of key -> type, nested for sub-mappings. Types: ``count`` (a whole number >= 0),
``number`` (int or float >= 0), ``str`` (non-empty text), ``words`` (a non-empty list of non-empty texts),
``[schema]`` (a non-empty list of mappings, each matching ``schema``). A key ending in ``?`` is optional. Keys not
in the schema are refused: in a graded answer an unknown key is nearly always a typo (``leafs:``), and
silently ignoring it would grade the candidate on a number they thought they gave.
"""

from __future__ import annotations

import re
from typing import Any

from assessor.yamlio import KeyPath, Located

Schema = dict[str, Any]  # key -> "count" | "number" | "str" | "words" | Schema | [Schema]

_WHAT = {
    "count": "a whole number >= 0",
    "number": "a number >= 0",
    "str": "text",
    "words": "a list of texts ([first, second, ...])",
}


def check_section(located: Located, section: str, schema: Schema) -> dict[str, Any]:
    """The mapping under top-level key ``section``, validated against ``schema``; InputError otherwise."""
    data = located.data if isinstance(located.data, dict) else {}
    if section not in data:
        have = ", ".join(str(k) for k in data) or "nothing"
        raise located.error((), f"the answer has no {section}: section (it has {have})")
    value = data[section]
    check_mapping(located, (section,), value, schema)
    return dict(value)


def check_mapping(located: Located, path: KeyPath, value: Any, schema: Schema) -> None:
    """Validate one mapping (recursively): required keys present, types right, no unknown keys."""
    if not isinstance(value, dict):
        raise located.error(path, f"expected a mapping of {', '.join(k.rstrip('?') for k in schema)}")
    known = {k.rstrip("?") for k in schema}
    for key in value:
        if key not in known:
            raise located.error((*path, key), f"unknown key {key!r} (expected: {', '.join(sorted(known))})")
    for raw_key, kind in schema.items():
        key = raw_key.rstrip("?")
        if key not in value:
            if raw_key.endswith("?"):
                continue
            raise located.error(path, f"missing key {key!r}")
        if kind in ("count", "number"):
            # YAML 1.1 reads 2.0944e3 and 1e3 as text; a number is a number however it is spelt
            value[key] = as_number(value[key])
        check_value(located, (*path, key), value[key], kind)


_NUMBER = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?")


def as_number(value: Any) -> Any:
    """``value`` as an int or float when it is a number in any YAML spelling (``2.0944e3``, ``1e3``,
    ``1_536``, ``16.0`` for a whole number); anything else unchanged, for :func:`check_value` to refuse."""
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        number = float(value.strip().replace("_", ""))
        value = number
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def check_value(located: Located, path: KeyPath, value: Any, kind: Any) -> None:
    """Validate one value against a schema type (or a nested schema)."""
    if isinstance(kind, dict):
        check_mapping(located, path, value, kind)
        return
    if isinstance(kind, list):
        if not isinstance(value, list) or not value:
            raise located.error(path, "expected a non-empty list of mappings")
        for i, item in enumerate(value):
            check_mapping(located, (*path, i), item, kind[0])
        return
    ok = False
    if kind == "count":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    elif kind == "str":
        ok = isinstance(value, str) and bool(value.strip())
    elif kind == "words":
        ok = bool(value) and isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    else:  # a schema bug, not the candidate's
        raise ValueError(f"unknown schema type {kind!r}")
    if not ok:
        raise located.error(path, f"expected {_WHAT[kind]}, got {value!r}")
