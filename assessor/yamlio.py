"""YAML with line numbers, so a malformed lab, profile or answer names file, line and key.

What gpulab reads as YAML comes from people (candidates' answers, instructors' labs and profiles), so
it is read defensively: at most 4 MiB (:data:`assessor.content.MAX_YAML_BYTES`, checked before parsing),
plain data only (strings, numbers, booleans, null, mappings, lists), no custom tags, no merge keys, no
duplicate or non-string keys, bounded nesting, and aliases only within a small budget (an alias bomb of a
few hundred bytes would otherwise expand to gigabytes). Every refusal is one InputError naming the file,
the line and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from assessor.errors import InputError

KeyPath = tuple[str | int, ...]

MAX_NODES = 100_000  # every node built, aliases expanded: far above any lab, far below a bomb
MAX_DEPTH = 64
MAX_DIGITS = 64  # an integer longer than this is not a count, a port or a score
_PLAIN = "tag:yaml.org,2002:"
# A float in YAML 1.2's spelling with an exponent (PyYAML's YAML 1.1 resolver wants a dot and a signed exponent).
_FLOAT_1_2 = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")
ALLOWED_TAGS = {_PLAIN + t for t in ("str", "int", "float", "bool", "null", "map", "seq")}


@dataclass
class Located:
    """Plain data loaded from YAML plus the 1-based line of every key path in it."""

    data: Any
    file: str
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line(self, path: KeyPath) -> int | None:
        """The line of ``path``, or of its closest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def error(self, path: KeyPath, message: str) -> InputError:
        line = self.line(path)
        where = f"{self.file}:{line}" if line else self.file
        key = format_path(path)
        return InputError(f"{where}: {message}" + (f" (key {key})" if key else ""))


def format_path(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load(path: Path | str, *, text: str | None = None) -> Located:
    """Load one YAML document; syntax errors and unsafe content become InputError naming file, line and key."""
    import yaml

    from assessor.content import MAX_YAML_BYTES, read_text, too_big

    name = str(path)
    if text is None:
        try:
            # the size is checked before a byte is parsed: a 50 MB answer is refused, not parsed then refused
            text = read_text(path, limit=MAX_YAML_BYTES, what="a YAML file")
        except FileNotFoundError:
            raise InputError(f"{name}: no such file") from None
        except IsADirectoryError:
            raise InputError(f"{name}: a directory, not a YAML file") from None
        except OSError as exc:
            raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from None
    elif len(text) > MAX_YAML_BYTES:  # read by the caller: at least not parsed
        raise too_big(name, len(text.encode("utf-8", "surrogatepass")), MAX_YAML_BYTES, "a YAML file")
    if "\x00" in text:
        raise InputError(f"{name}:{text[: text.index(chr(0))].count(chr(10)) + 1}: binary data (a NUL byte), not YAML")
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(exc, "problem", None) or str(exc)
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and mark is not None and start.line != mark.line:
            problem += f" ({context} that starts at line {start.line + 1})"
        raise InputError(f"{where}: invalid YAML: {problem}") from None
    located = Located(None, name)
    if node is not None:
        located.data = _Builder(located).build(node, (), 0)
    return located


class _Builder:
    """Turns a composed node tree into plain data, recording lines and refusing what is not plain data."""

    def __init__(self, located: Located) -> None:
        self.located = located
        self.nodes = 0

    def refuse(self, node: Any, path: KeyPath, message: str) -> InputError:
        key = format_path(path)
        key = key if len(key) <= 80 else key[:77] + "..."
        where = f"{self.located.file}:{node.start_mark.line + 1}"
        return InputError(f"{where}: {message}" + (f" (key {key})" if key else ""))

    def build(self, node: Any, path: KeyPath, depth: int) -> Any:
        import yaml

        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.refuse(node, path, f"more than {MAX_NODES} values (aliases expanding?): refused")
        if depth > MAX_DEPTH:
            raise self.refuse(node, path, f"nested more than {MAX_DEPTH} levels deep: refused")
        if node.tag not in ALLOWED_TAGS:
            tag = node.tag.removeprefix(_PLAIN)
            raise self.refuse(node, path, f"tag {tag!r} is not allowed: only plain strings, numbers, lists and maps")
        self.located.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _PLAIN + "merge":
                raise self.refuse(key_node, path, "merge keys (<<) are not allowed: write the keys out")
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _PLAIN + "str":
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a list or map"
                raise self.refuse(key_node, path, f"key {shown!r} is not a string: quote it")
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise self.refuse(key_node, (*path, key), f"duplicate key {key!r} (first at line {first_line[key]})")
            first_line[key] = line
            child = (*path, key)
            self.located.lines[child] = line
            out[key] = self.build(value_node, child, depth + 1)
            self.located.lines[child] = line
        return out

    def scalar(self, node: Any, path: KeyPath) -> Any:
        if node.tag == _PLAIN + "str" and not node.style and _FLOAT_1_2.fullmatch(node.value):
            return float(node.value)  # YAML 1.2 reads 2.0944e3 as a number; PyYAML's 1.1 rules say string
        if node.tag == _PLAIN + "int" and len(node.value.lstrip("+-").replace("_", "")) > MAX_DIGITS:
            raise self.refuse(node, path, f"a number of more than {MAX_DIGITS} digits: refused")
        try:
            return _constructor().construct_object(node, deep=True)
        except (ValueError, OverflowError, ArithmeticError) as exc:
            raise self.refuse(node, path, f"cannot read {node.value[:40]!r}: {exc}") from None
        except Exception as exc:  # yaml's ConstructorError: a value its tag cannot hold
            raise self.refuse(node, path, f"cannot read {node.value[:40]!r}: {exc}") from None


@cache
def _constructor() -> Any:
    import yaml

    return yaml.constructor.SafeConstructor()
