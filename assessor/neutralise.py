"""Neutralising data from nodes and candidates for each output format: one rule for every byte shown.

A host name, a GPU or CA name, a tool's message, a node's stderr, an answer file's key, a candidate's name
or what the user typed on the command line is data: it must never move a terminal's cursor, set its title,
write the reader's clipboard (OSC 52), reorder or hide what a reader sees, start a formula in a
spreadsheet, close an HTML tag, become a link or break a table. Each format has one function here,
applied to every value that came from outside; all of them start from :func:`visible`.

The rule (docs/THREAT_MODEL.md): every character that is not plainly visible is shown as an escape, the
same way everywhere: ``\\e`` for ESC, ``\\n`` ``\\r`` ``\\t``, ``\\xNN`` below U+0100, ``\\uNNNN``
in the basic plane, ``\\UNNNNNNNN`` above it. "Not plainly visible" is every character of the Unicode
categories Cc (controls, C0 and C1: so no ESC/CSI/OSC sequence survives), Cf (format: bidi overrides and
isolates, zero-width space/joiners, word joiner, BOM, soft hyphen, Arabic letter mark, tag characters),
Co (private use), Cs (surrogates), Zl and Zp (line and paragraph separators) and Zs other than the
space (no-break and other look-alike spaces), plus the invisible look-alikes outside those categories:
the Hangul fillers, the combining grapheme joiner, variation selectors, the Mongolian free variation
selectors, the Khmer inherent vowels, the Braille blank and the non-characters.
``tests/security/test_neutralise.py`` checks the set against :mod:`unicodedata`.
"""

from __future__ import annotations

import re
from typing import Any

# Every character :func:`visible` shows as an escape (see the module docstring for what and why).
_INVISIBLE_HIGH = (
    "\x7f-\xa0"  # DEL, C1, no-break space
    "\xad\u034f"  # soft hyphen, combining grapheme joiner
    "\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"  # Arabic/Syriac format marks, Arabic letter mark
    "\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f"  # Hangul fillers, Ogham space, Khmer vowels, Mongolian FVS
    "\u2000-\u200f"  # look-alike spaces, zero-width space/non-joiner/joiner, LRM, RLM
    "\u2028-\u202f"  # line/paragraph separators, bidi embeddings and overrides (RLO), narrow no-break space
    "\u205f-\u206f"  # medium space, word joiner, invisible operators, bidi isolates, deprecated formats
    "\u2800\u3000\u3164"  # Braille blank, ideographic space, Hangul filler
    "\ud800-\udfff\ue000-\uf8ff"  # surrogates, private use
    "\ufdd0-\ufdef\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\ufffe\uffff"  # non-chars, VS, BOM, fillers
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"  # tag characters, variation selectors supplement
    "\U000f0000-\U0010ffff"  # supplementary private use areas
)
_CONTROL = re.compile(f"[\\x00-\\x1f{_INVISIBLE_HIGH}]")  # C0 too
_JSON_INVISIBLE = re.compile(f"[{_INVISIBLE_HIGH}]")  # JSON escapes C0 itself
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def _escape_control(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    named = _NAMED.get(ch)
    if named:
        return named
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(value: Any) -> str:
    """The value as one line of plain text, every character that is not plainly visible shown as an escape.

    >>> visible("a\\x1b]52;c;aGk=\\x07b\\u202ecba\\u200b\\U000e0041\\nforged")
    'a\\\\e]52;c;aGk=\\\\x07b\\\\u202ecba\\\\u200b\\\\U000e0041\\\\nforged'
    """
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and text.isprintable():
        return text  # ASCII with no C0 control and no DEL: nothing to escape (a fleet report has millions)
    return _CONTROL.sub(_escape_control, text)


def visible_lines(value: Any) -> str:
    """Like :func:`visible` but keeps line feeds (for multi-line bodies such as evidence)."""
    text = value if isinstance(value, str) else str(value)
    return "\n".join(visible(line) for line in text.split("\n"))


def message(value: Any, *, prefix: str = "") -> str:
    """A message for a terminal (an error, a warning): ``prefix`` then the text made visible; a message of
    several lines keeps them, each after the first indented by two spaces, so no line of it can pass for a
    line of gpulab's own (a node's ``\\ngpulab: error: ...`` cannot forge one)."""
    lines = visible_lines(value).split("\n")
    return "\n".join([prefix + lines[0], *("  " + line for line in lines[1:])])


def _json_escape(match: re.Match[str]) -> str:
    data = match.group().encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(data[i : i + 2], 'big'):04x}" for i in range(0, len(data), 2))


def json_document(doc: Any, *, indent: int | None = 2) -> str:
    """``doc`` as JSON text that keeps readable characters as they are (``ensure_ascii=False``) but writes
    every character :func:`visible` would escape as a JSON ``\\uXXXX`` escape: the text shows nothing
    hidden on a terminal and loads back to exactly ``doc``."""
    import json

    return json_visible(json.dumps(doc, indent=indent, ensure_ascii=False))


def json_visible(text: str) -> str:
    """JSON text with every character :func:`visible` would escape written as a JSON escape such as ``\\u202e``
    (the same JSON value). Text that is ASCII without DEL has none of them: it is returned as it is, which
    saves scanning a 60 MB document character by character."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_INVISIBLE.sub(_json_escape, text)


# Characters XML 1.0 cannot carry at all (not even escaped): everything else is escaped by the writer.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any, *, lines: bool = False) -> str:
    """Text that is always well-formed XML 1.0 and shows control characters as escapes."""
    text = visible_lines(value) if lines else visible(value)
    if text.isascii():
        return text  # what visible() leaves of ASCII (no C0 control but the line feeds kept) is all XML
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


# A URL scheme followed by "//" (https://, ftp://, ssh://, file://...) and a "www." host: what Markdown
# renderers (GitHub's autolinks, GitLab, markdown-it's linkify) turn into links by themselves.
_MD_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}):(?=//)")
_MD_WWW = re.compile(r"(?<![A-Za-z0-9.-])([Ww][Ww][Ww])\.(?=\S)")


def md(value: Any) -> str:
    """Markdown-safe inline text: no HTML, no table-breaking pipes, no emphasis, links or mentions.

    A bare URL stays readable but inert: its ``:`` becomes ``[:]`` (``https[:]//example.com``) and a
    ``www.`` host's dot ``[.]`` (``www[.]example.com``), the usual way to defang a link; renderers link
    neither, and a reader can still copy it. ``@`` is written ``&#64;``, so it mentions nobody.

    >>> md("see https://evil.example/x or www.evil.example | *now*")
    'see https[:]//evil.example/x or www[.]evil.example \\\\| \\\\*now\\\\*'
    """
    if value is None:
        return ""
    text = visible(value)
    text = text.replace("&", "&amp;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # at the start of a line, # - + = and "1." would make a heading, a list or a rule
    text = _MD_LINE_START.sub(_escape_line_start, text, count=1)
    # bare URLs: renderers make links of them without any markup
    text = _MD_WWW.sub(r"\1[.]", _MD_SCHEME.sub(r"\1[:]", text))
    # "@user" would notify someone on GitHub; "&#64;" shows the same character
    return text.replace("@", "&#64;")
