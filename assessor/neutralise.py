"""Neutralising data from nodes and candidates for each output format.

A host name, a GPU or CA name, a tool's message or a candidate's name is data: it must never
move a terminal's cursor, set its title, start a formula in a spreadsheet, close an HTML tag or
break a table. Each format has one function here, applied to every value that came from outside.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls (tab, LF and CR included), DEL, C1 controls, line/paragraph separators and the bidi
# controls that can reorder what a reader sees ("Trojan Source").
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def _escape_control(match: re.Match[str]) -> str:
    ch = match.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def visible(value: Any) -> str:
    """The value as one line of plain text with every control character shown as an escape (ESC as ``\\e``)."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(_escape_control, text)


def visible_lines(value: Any) -> str:
    """Like :func:`visible` but keeps line feeds (for multi-line bodies such as evidence)."""
    text = value if isinstance(value, str) else str(value)
    return "\n".join(visible(line) for line in text.split("\n"))


# Characters XML 1.0 cannot carry at all (not even escaped): everything else is escaped by the writer.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any, *, lines: bool = False) -> str:
    """Text that is always well-formed XML 1.0 and shows control characters as escapes."""
    text = visible_lines(value) if lines else visible(value)
    return _NOT_XML.sub("\ufffd", text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not evaluate: text starting with = + - @ or a tab gets a leading quote.

    Numbers stay numbers (a negative number is not a formula); None is an empty cell.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if text.startswith(_FORMULA_START):
        text = "'" + text
    return visible(text)


_MD_LINE_START = re.compile(r"^(\s*)([#+=-])|^(\s*\d+)([.)])(?=\s|$)")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~])")


def _escape_line_start(m: re.Match[str]) -> str:
    lead, mark = (m.group(1), m.group(2)) if m.group(2) is not None else (m.group(3), m.group(4))
    return f"{lead}\\{mark}"


def md(value: Any) -> str:
    """Markdown-safe inline text: no HTML, no table-breaking pipes, no emphasis, links or mentions."""
    if value is None:
        return ""
    text = visible(value)
    text = text.replace("&", "&amp;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # at the start of a line, # - + = and "1." would make a heading, a list or a rule
    text = _MD_LINE_START.sub(_escape_line_start, text, count=1)
    # "@user" would notify someone on GitHub; "&#64;" shows the same character
    return text.replace("@", "&#64;")
