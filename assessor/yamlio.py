"""YAML with line numbers, so a malformed lab, profile or inventory names file, line and key."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.errors import InputError

KeyPath = tuple[str | int, ...]


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
    """Load one YAML document; syntax errors become InputError naming file and line."""
    import yaml

    name = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"{name}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{name}: cannot read: {exc}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
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
        located.data = _build(node, (), located.lines)
    return located


def _build(node: Any, path: KeyPath, lines: dict[KeyPath, int]) -> Any:
    import yaml

    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            child = (*path, key if isinstance(key, (str, int)) else str(key))
            out[key] = _build(value_node, child, lines)
            lines[child] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: Any) -> Any:
    import yaml

    loader = yaml.SafeLoader("")
    return loader.construct_object(node, deep=True)
