"""nvidia-smi mig -lgi / -lgip / -lgipp. Fixtures: corpus/nvml/mig_* (NVIDIA MIG User Guide and
github.com/AlizeeChen11/mig-and-mps, see SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assessor.errors import ParseError
from assessor.facts import GpuInstance, MigProfile, NodeFacts
from assessor.parsers import nvidia_smi_mig
from tests.support.corpus import read_corpus

LGI_A100 = "nvml/mig_lgi_A100_40GB.txt"
LGIP_H100_NVL = "nvml/mig_lgip_H100_NVL_94GB.txt"
LGIPP_A100 = "nvml/mig_lgipp_A100_guide.txt"
LGIPP_H100_NVL = "nvml/mig_lgipp_H100_NVL.txt"


def instances(text: str) -> list[GpuInstance]:
    found = nvidia_smi_mig.parse_lgi(text).mig_instances
    assert found is not None
    return found


def profiles(text: str) -> list[MigProfile]:
    found = nvidia_smi_mig.parse_lgip(text).mig_profiles
    assert found is not None
    return found


def placements(text: str) -> list[MigProfile]:
    found = nvidia_smi_mig.parse_lgipp(text).mig_profiles
    assert found is not None
    return found


def summary(found: list[GpuInstance]) -> list[tuple[int, int, int | None, str, int | None, int | None]]:
    return [(i.gpu, i.gi_id, i.profile_id, i.name, i.placement_start, i.placement_size) for i in found]


# -lgi ------------------------------------------------------------------------------------


def test_lgi_first_capture_shows_two_3g_20gb_instances() -> None:
    first = read_corpus(LGI_A100).split("# after:")[0]
    assert summary(instances(first)) == [(0, 1, 9, "3g.20gb", 4, 4), (0, 2, 9, "3g.20gb", 0, 4)]


def test_lgi_transcript_gives_the_state_after_the_last_listing() -> None:
    assert summary(instances(read_corpus(LGI_A100))) == [
        (0, 7, 19, "1g.5gb", 0, 1),
        (0, 8, 19, "1g.5gb", 1, 1),
        (0, 4, 14, "2g.10gb", 2, 2),
        (0, 2, 9, "3g.20gb", 4, 4),
    ]


@pytest.mark.parametrize("message", ["No GPU instances found: Not Found", "No MIG-enabled devices found."])
def test_lgi_nothing_to_list_is_an_empty_list(message: str) -> None:
    assert instances(message + "\n") == []


def test_lgi_row_cut_short_is_a_parse_error_with_line() -> None:
    text = read_corpus(LGI_A100).split("# after:")[0]
    text = text.replace("|   0  MIG 3g.20gb       9        2          0:4     |", "|   0  MIG 3g.20gb       9  ")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgi(text)
    assert caught.value.line == 9


def test_lgi_unknown_row_inside_the_box_is_a_parse_error() -> None:
    text = read_corpus(LGI_A100).replace("|   0  MIG 1g.5gb       19        7          0:1     |", "| garbage here |")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgi(text)
    assert caught.value.line == 19


def test_lgi_driver_failure_is_carried_verbatim() -> None:
    message = "Failed to initialize NVML: Driver/library version mismatch"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgi(message)
    assert caught.value.reason == message


# -lgip -----------------------------------------------------------------------------------


def test_lgip_h100_nvl_reads_both_lines_of_each_profile() -> None:
    found = profiles(read_corpus(LGIP_H100_NVL))
    assert [(p.name, p.profile_id) for p in found] == [
        ("1g.12gb", 19),
        ("1g.12gb+me", 20),
        ("1g.24gb", 15),
        ("2g.24gb", 14),
        ("3g.47gb", 9),
        ("4g.47gb", 5),
        ("7g.94gb", 0),
    ]
    first, media, full = found[0], found[1], found[6]
    assert (first.instances_free, first.instances_total, first.memory_gib, first.p2p) == (7, 7, 10.75, False)
    assert (first.sm, first.dec, first.enc, first.ce, first.jpeg, first.ofa) == (16, 1, 0, 1, 1, 0)
    assert media.ofa == 1  # the +me profile takes the OFA
    assert (full.sm, full.dec, full.ce, full.jpeg, full.ofa, full.memory_gib) == (132, 7, 8, 7, 1, 93.12)
    assert {p.gpu for p in found} == {0}
    assert all(p.placements is None for p in found)


def test_lgip_profile_without_its_second_line_is_a_parse_error() -> None:
    lines = read_corpus(LGIP_H100_NVL).splitlines()
    del lines[7]  # the CE/JPEG/OFA line of 1g.12gb
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgip("\n".join(lines))
    assert caught.value.line == 7


def test_lgip_cut_after_a_first_line_is_a_parse_error() -> None:
    lines = read_corpus(LGIP_H100_NVL).splitlines()
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgip("\n".join(lines[:7]))
    assert caught.value.line == 7


def test_lgip_mig_disabled_is_an_empty_list() -> None:
    assert profiles("No MIG-enabled devices found.\n") == []


def test_lgip_failure_message_is_carried_verbatim() -> None:
    message = "Failed to display GPU instance profiles: Unknown Error"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgip(message + "\n")
    assert caught.value.reason == message


# -lgipp ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", [LGIPP_A100, LGIPP_H100_NVL])
def test_lgipp_placements_per_profile(rel: str) -> None:
    found = {p.profile_id: p for p in placements(read_corpus(rel))}
    assert list(found) == [19, 20, 15, 14, 9, 5, 0]
    assert found[19].placements == [(start, 1) for start in range(7)]  # 1g: any of 7 slices
    assert found[15].placements == [(0, 2), (2, 2), (4, 2), (6, 2)]
    assert found[14].placements == [(0, 2), (2, 2), (4, 2)]
    assert found[9].placements == [(0, 4), (4, 4)]  # two 3g instances at most
    assert found[5].placements == [(0, 4)]  # "Placement :" singular
    assert found[0].placements == [(0, 8)]  # 7g takes all 8 memory slices
    profile = found[9]
    assert (profile.gpu, profile.name, profile.instances_total, profile.sm) == (0, "", None, None)


def test_lgipp_merges_into_lgip_profiles_by_gpu_and_id() -> None:
    merged = nvidia_smi_mig.merge_placements(
        profiles(read_corpus(LGIP_H100_NVL)), placements(read_corpus(LGIPP_H100_NVL))
    )
    by_name = {p.name: p for p in merged}
    assert by_name["3g.47gb"].placements == [(0, 4), (4, 4)]
    assert by_name["7g.94gb"].placements == [(0, 8)]
    assert by_name["1g.12gb+me"].sm == 16


def test_lgipp_garbage_line_is_a_parse_error_with_line() -> None:
    text = read_corpus(LGIPP_A100).replace("GPU  0 Profile ID 14 Placements: {0,2,4}:2", "GPU  0 Profile ID 14 Plac")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgipp(text)
    assert caught.value.line == 5


def test_lgipp_bad_placement_list_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_mig.parse_lgipp("GPU  0 Profile ID 19 Placements: {0,,1}:1\n")
    assert caught.value.line == 1


@pytest.mark.parametrize("parse", [nvidia_smi_mig.parse_lgi, nvidia_smi_mig.parse_lgip, nvidia_smi_mig.parse_lgipp])
def test_binary_and_empty_outputs_are_parse_errors(parse: Callable[[str], NodeFacts]) -> None:
    with pytest.raises(ParseError) as caught:
        parse("+----+\n\x00\x00\x00\x01")
    assert caught.value.line == 2
    with pytest.raises(ParseError):
        parse("")
