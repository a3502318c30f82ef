"""Property tests: whatever text reaches a parser, only ParseError may come out of it.

Random text, and real corpus outputs mutated (a slice cut, a slice replaced by random text, a
line repeated), for every parser kind. The budget is fixed in tests/parsers/conftest.py.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assessor import parsers
from assessor.errors import ParseError
from tests.parsers.hostile import sample

KINDS = sorted(parsers.KINDS)
# Characters tool outputs are made of, weighted towards the structure parsers split on.
ALPHABET = st.sampled_from([*list(" \t\n:|+-=#[]()<>/.,_0123456789abcdefxyzGPUNICALnk'\"@$\\"), "�", "é", "●"])


def _parse(kind: str, text: str) -> None:
    with contextlib.suppress(ParseError):
        parsers.parse(kind, text)


@pytest.mark.parametrize("kind", KINDS)
@given(text=st.text(ALPHABET, max_size=400))
def test_random_text_parses_or_raises_parse_error(kind, text):
    _parse(kind, text)


ODD = ["nan", "inf", "-1", "1e400", "9" * 60, "N/A", "0x", "", "99999999999999999999"]


@st.composite
def _mutated(draw: st.DrawFn, base: str) -> str:
    text = base
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 200)))
        how = draw(st.sampled_from(["cut", "replace", "repeat", "number"]))
        if how == "cut":
            text = text[:start] + text[end:]
        elif how == "replace":
            text = text[:start] + draw(st.text(ALPHABET, max_size=60)) + text[end:]
        elif how == "repeat":
            text = text[:end] + text[start:end] * draw(st.integers(1, 5)) + text[end:]
        else:
            odd = draw(
                st.sampled_from(["nan", "inf", "-1", "1e400", "9" * 60, "N/A", "0x", "", "99999999999999999999"])
            )
            text = text[:start] + odd + text[end:]
    return text


@pytest.mark.parametrize("kind", [k for k in KINDS if sample(k)])
@given(data=st.data())
def test_mutated_real_output_parses_or_raises_parse_error(kind, data):
    base = sample(kind)
    assert base is not None
    _parse(kind, data.draw(_mutated(base)))
