"""Recognising a tool output by its content: every corpus file, ambiguity and the unknown said by name."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.parsers.detect import detect, detect_kind
from tests.support.corpus import CORPUS, read_corpus
from tests.support.corpus_kinds import corpus_files

KINDS_OF: dict[Path, set[str]] = defaultdict(set)
for _path, _kind in corpus_files(CORPUS):
    KINDS_OF[_path].add(_kind)
# Both an nccl-tests run and the NCCL_DEBUG lines inside it: the tests output explains the log.
for _path in KINDS_OF:
    if {"nccl-tests", "nccl-debug"} <= KINDS_OF[_path]:
        KINDS_OF[_path] = {"nccl-tests"}
    if {"systemctl-show", "systemctl-status"} <= KINDS_OF[_path]:
        KINDS_OF[_path] = {"systemctl-status"}
FILES = sorted(KINDS_OF)


def test_every_kind_with_a_corpus_sample_is_covered():
    covered = {k for kinds in KINDS_OF.values() for k in kinds}
    assert {"nvidia-smi-q", "nvidia-smi", "nvidia-smi-nvlink", "systemctl-status", "nvidia-smi-mig-lgip"} <= covered
    assert len(covered) >= 17


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CORPUS)) for p in FILES])
def test_corpus_file_is_recognised_as_its_kind(path):
    found = detect(path.read_text(encoding="utf-8", errors="replace"))
    assert found.kind in KINDS_OF[path], found.describe()


def test_a_file_holding_two_tools_outputs_is_ambiguous_naming_both():
    text = read_corpus("ibstat/01_h100_cx7_ndr400_ib_all_active.txt") + "\n" + read_corpus("nvml/mig_lgi_A100_40GB.txt")
    found = detect(text)
    assert found.kind is None and found.ambiguous
    assert set(found.matches) == {"ibstat", "nvidia-smi-mig-lgi"}
    assert "ibstat" in found.describe() and "nvidia-smi-mig-lgi" in found.describe()


def test_prose_is_unknown_and_parse_auto_says_so():
    assert detect_kind("Hello, my GPUs are slow. Any idea?\n") is None
    with pytest.raises(ParseError) as info:
        parsers.parse("auto", "Hello, my GPUs are slow. Any idea?\n", source="notes.txt")
    assert "unknown" in str(info.value) and "notes.txt" in str(info.value)


def test_parse_auto_returns_the_kind_it_found_and_its_facts():
    kind, facts = parsers.parse_auto(read_corpus("nvidia_smi_nvlink/01_v100_sxm2_two_links_inactive_excerpt.txt"))
    assert kind == "nvidia-smi-nvlink"
    assert facts.nvlink_status and facts.nvlink_status[0].gpu == 3


def test_detection_of_a_megabyte_of_noise_is_quick_and_unknown():
    import time

    start = time.perf_counter()
    assert detect_kind("[0]" * 350_000) is None
    assert time.perf_counter() - start < 5  # linear: well under a second on an idle core
