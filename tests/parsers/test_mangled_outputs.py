"""Real outputs mangled the ways captures get mangled (cut, reordered, overwritten, garbled,
missing lines) either parse or raise ParseError: never another exception, which would end a run."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import pytest

from assessor import parsers
from assessor.capture.snapshot import Snapshot, Source
from assessor.errors import ParseError
from assessor.parsers.assemble import facts_from_snapshot
from tests.support.corpus import CORPUS
from tests.support.corpus_kinds import corpus_files

FILES = corpus_files(CORPUS)
ODD = ["N/A", "-1", "999999999999999999999", "", "nan", "1e400", "x", "[N/A]", "0x"]


def mangled(text: str, rng: random.Random) -> list[str]:
    lines = text.splitlines(keepends=True) or [""]
    out = [text[: rng.randrange(len(text) + 1)]]  # cut anywhere
    shuffled = lines[:]
    rng.shuffle(shuffled)
    out.append("".join(shuffled))
    for _ in range(6):
        garbled = lines[:]
        i = rng.randrange(len(garbled))
        words = garbled[i].split()
        if words:
            words[rng.randrange(len(words))] = rng.choice(ODD)
        garbled[i] = " ".join(words) + "\n"
        out.append("".join(garbled))
        dropped = lines[:]
        del dropped[rng.randrange(len(dropped))]
        out.append("".join(dropped))
        noise = lines[:]
        noise.insert(
            rng.randrange(len(noise) + 1), "".join(rng.choice("ab 01:|/-.\t=[]()<>#") for _ in range(30)) + "\n"
        )
        out.append("".join(noise))
    return out


@pytest.mark.parametrize(("path", "kind"), FILES, ids=[f"{k}:{p.name}" for p, k in FILES])
def test_mangled_output_parses_or_raises_parse_error(path: Path, kind: str) -> None:
    rng = random.Random(path.name)  # deterministic per file
    for text in mangled(path.read_text(encoding="utf-8", errors="replace"), rng):
        with contextlib.suppress(ParseError):
            parsers.parse(kind, text)


def test_a_parser_bug_is_an_error_for_its_source_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from assessor.parsers import lsmod

    def broken(text: str) -> None:
        raise IndexError("list index out of range")

    monkeypatch.setattr(lsmod, "parse", broken)
    snap = Snapshot(
        sources={"lsmod.txt": Source("lsmod.txt", "nvidia 1 0\n"), "uname.txt": Source("uname.txt", "Linux n1 6.1\n")}
    )
    facts = facts_from_snapshot(snap)
    assert "could not be parsed (IndexError" in facts.problems["modules"]
    assert facts.uname == "Linux n1 6.1"
