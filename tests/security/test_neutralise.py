"""The one neutralising rule (assessor.neutralise): every invisible character shown, the same way in every format."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from assessor import neutralise
from tests.security.hostile import FORMULA, HOSTILE, SHOWN, URL, WWW, assert_inert

CATEGORIES = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}


def test_every_character_of_the_hidden_categories_is_shown_as_an_escape() -> None:
    missed = [
        f"U+{cp:04X}"
        for cp in range(sys.maxunicode + 1)
        if (unicodedata.category(chr(cp)) in CATEGORIES or (unicodedata.category(chr(cp)) == "Zs" and cp != 0x20))
        and neutralise.visible(chr(cp)) == chr(cp)
    ]
    assert not missed


@pytest.mark.parametrize(
    "ch", ["\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u180b", "\ufe0f", "\U000e0100", "\u2800", "\uffff"]
)
def test_invisible_look_alikes_outside_those_categories_are_shown_too(ch: str) -> None:
    assert neutralise.visible(ch) != ch and neutralise.visible(ch).startswith("\\")


def test_readable_text_is_left_as_it_is() -> None:
    text = "Zoë Ølsen — 80 GB · 100 % · 日本語 · Ελληνικά · emoji 🆎 · tab-free"
    assert neutralise.visible(text) == text


def test_each_hostile_piece_has_its_one_visible_form() -> None:
    shown = neutralise.visible(HOSTILE)
    assert_inert(shown)
    for ch, escape in SHOWN.items():
        assert escape in shown, (ch, escape)
    assert "\n" not in shown and "\\ngpulab: error: forged line" in shown


def test_a_message_of_several_lines_cannot_forge_a_line_of_gpulabs_own() -> None:
    out = neutralise.message(f"bad input{HOSTILE}", prefix="gpulab: error: ")
    lines = out.split("\n")
    assert lines[0].startswith("gpulab: error: bad input")
    assert all(line.startswith("  ") for line in lines[1:]) and len(lines) == 2
    assert_inert(out)


def test_markdown_makes_bare_urls_inert_and_keeps_them_readable() -> None:
    text = neutralise.md(HOSTILE)
    assert_inert(text)
    assert URL not in text and "https[:]//evil.example/x" in text
    assert WWW not in text and "www[.]evil.example" in text
    assert "ftp[:]//x" in neutralise.md("ftp://x") and "HTTP[:]//X" in neutralise.md("HTTP://X")
    assert "\\\\u202e" in text  # Markdown shows the backslash of the escape


def test_csv_cells_never_start_a_formula_and_show_invisible_characters() -> None:
    for start in ("=", "+", "-", "@", "\t", "\r"):
        assert str(neutralise.csv_cell(start + "1+1")).startswith("'")
    cell = str(neutralise.csv_cell(HOSTILE))
    assert cell.startswith("'" + FORMULA[:5])
    assert_inert(cell)
    assert neutralise.csv_cell(-3) == -3  # a number stays a number


def test_xml_text_is_inert_and_json_escapes_what_a_terminal_would_hide() -> None:
    assert_inert(neutralise.xml_text(HOSTILE))
    doc = {"name": HOSTILE, "plain": "Zoë"}
    text = neutralise.json_document(doc)
    assert_inert(text)
    assert "\\u202e" in text and "Zoë" in text
    assert json.loads(text) == doc  # JSON escapes: the data itself is unchanged
