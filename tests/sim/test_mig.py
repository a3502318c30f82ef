"""The MIG engine against the NVIDIA MIG User Guide and real nvidia-smi output (corpus/nvml/mig_*)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from assessor.sim import mig
from assessor.sim.mig import MigGpu, Placed
from tests.support.corpus import read_corpus

A100 = "NVIDIA A100-SXM4-40GB"
H100 = "NVIDIA H100 80GB HBM3"


def corpus_commands(rel: str) -> list[tuple[str, str]]:
    """(command, output) pairs of a corpus transcript: ``$ cmd`` lines, output up to the next blank line."""
    pairs: list[tuple[str, str]] = []
    for block in read_corpus(rel).split("\n\n"):
        lines = [line for line in block.splitlines() if not line.startswith("#")]
        if lines and lines[0].startswith("$ "):
            pairs.append((lines[0][2:], "".join(line.rstrip() + "\n" for line in lines[1:])))
    return pairs


def strip_trailing(text: str) -> str:
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def cgi(gpu: str, tokens: str, existing: list[Placed] | None = None, **kwargs: Any) -> mig.MigResult:
    return mig.create_gpu_instances(gpu, existing or [], tokens.split(","), **kwargs)


def layout(result: mig.MigResult) -> list[tuple[str, int, int]]:
    return sorted((p.name, p.start, p.size) for p in result.placed)


# --- profiles -------------------------------------------------------------------------------------------

A100_PROFILES = [
    # id, name, max instances, starts, size: -lgipp in corpus/nvml/mig_lgipp_A100_guide.txt, names from the guide
    (19, "1g.5gb", 7, (0, 1, 2, 3, 4, 5, 6), 1),
    (20, "1g.5gb+me", 1, (0, 1, 2, 3, 4, 5, 6), 1),
    (15, "1g.10gb", 4, (0, 2, 4, 6), 2),
    (14, "2g.10gb", 3, (0, 2, 4), 2),
    (9, "3g.20gb", 2, (0, 4), 4),
    (5, "4g.20gb", 1, (0,), 4),
    (0, "7g.40gb", 1, (0,), 8),
]
H100_PROFILES = [
    (19, "1g.10gb", 7, (0, 1, 2, 3, 4, 5, 6), 1),
    (20, "1g.10gb+me", 1, (0, 1, 2, 3, 4, 5, 6), 1),
    (15, "1g.20gb", 4, (0, 2, 4, 6), 2),
    (14, "2g.20gb", 3, (0, 2, 4), 2),
    (9, "3g.40gb", 2, (0, 4), 4),
    (5, "4g.40gb", 1, (0,), 4),
    (0, "7g.80gb", 1, (0,), 8),
]


@pytest.mark.parametrize(("gpu", "expected"), [(A100, A100_PROFILES), (H100, H100_PROFILES)])
def test_profiles_have_guide_ids_names_limits_and_placements(gpu: str, expected: list[tuple]) -> None:
    got = [(p.id, p.name, p.max_instances, p.starts, p.size) for p in mig.profiles_for(gpu)]
    assert got == expected


def test_profile_names_per_model_follow_thresholds_table() -> None:
    names = {gpu: [p.name for p in mig.profiles_for(gpu)] for gpu in ("A100-SXM4-80GB", "NVIDIA H200")}
    assert names["A100-SXM4-80GB"] == ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    assert names["NVIDIA H200"] == ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]


@pytest.mark.parametrize("gpu", ["NVIDIA L40S", "Tesla V100-SXM2-32GB"])
def test_gpus_without_mig_raise_mig_unsupported(gpu: str) -> None:
    with pytest.raises(KeyError) as err:
        mig.profiles_for(gpu)
    assert isinstance(err.value, mig.MigUnsupported)
    assert gpu in str(err.value)


@pytest.mark.parametrize("token", ["9", "3g.20gb", "MIG 3g.20gb", "mig 3G.20GB", " 3g.20gb "])
def test_resolve_profile_accepts_id_short_and_full_name(token: str) -> None:
    assert mig.resolve_profile(A100, token).id == 9


@pytest.mark.parametrize("token", ["99", "3g.40gb", "3g", ""])
def test_resolve_profile_refuses_unknown_with_invalid_argument(token: str) -> None:
    with pytest.raises(mig.MigError) as err:
        mig.resolve_profile(A100, token)
    assert err.value.reason == "Invalid Argument"


def test_3g_has_no_placement_at_start_2() -> None:
    for gpu in (A100, H100):
        assert 2 not in mig.resolve_profile(gpu, "9").starts


# --- creation rules -------------------------------------------------------------------------------------


def test_cgi_ordering_failure_matches_the_guide_transcript() -> None:
    pairs = dict(corpus_commands("nvml/mig_cgi_create_messages_A100_40GB.txt"))
    result = cgi(A100, "19,19,14,9")
    assert result.output == pairs["sudo nvidia-smi mig -cgi 19,19,14,9"]
    assert result.exit_code != 0
    # the three instances created before the failure stay, as on a real GPU
    assert layout(result) == [("1g.5gb", 4, 1), ("1g.5gb", 6, 1), ("2g.10gb", 0, 2)]


def test_cgi_3g_first_succeeds_and_matches_the_guide_transcript() -> None:
    pairs = dict(corpus_commands("nvml/mig_cgi_create_messages_A100_40GB.txt"))
    result = cgi(A100, "9,19,14,19")
    assert result.output == pairs["sudo nvidia-smi mig -cgi 9,19,14,19"]
    assert result.exit_code == 0
    assert layout(result) == [("1g.5gb", 0, 1), ("1g.5gb", 1, 1), ("2g.10gb", 2, 2), ("3g.20gb", 4, 4)]


def test_cgi_with_default_ci_matches_the_guide_transcript() -> None:
    pairs = dict(corpus_commands("nvml/mig_cgi_create_messages_A100_40GB.txt"))
    result = cgi(A100, "9,3g.20gb", default_ci=True)
    assert result.output == pairs["sudo nvidia-smi mig -cgi 9,3g.20gb -C"]
    assert [[ci.name for ci in p.compute_instances] for p in result.placed] == [["3g.20gb"], ["3g.20gb"]]


def test_cgi_2g_then_five_1g_matches_guide_example_3() -> None:
    # MIG User Guide, "Creating GPU Instances", example 3: GI IDs 5, 13, 7, 8, 9, 10
    result = cgi(A100, "14,19,19,19,19,19")
    assert [p.gi_id for p in result.placed] == [5, 13, 7, 8, 9, 10]


def test_h100_nvl_cgi_matches_the_captured_gi_ids() -> None:
    # corpus/nvml/nvidia_smi_mig_devices_H100_NVL.txt: after `-cgi 9,15,19 -C`, GI -> memory and SMs
    rows = re.findall(
        r"\|\s+0\s+(\d+)\s+0\s+\d+\s+\|\s+\d+MiB / (\d+)MiB\s+\|\s+(\d+)",
        read_corpus("nvml/nvidia_smi_mig_devices_H100_NVL.txt"),
    )
    result = cgi("NVIDIA H100 NVL", "9,15,19", default_ci=True)
    profiles = {p.id: p for p in mig.profiles_for("H100 NVL")}
    got = {p.gi_id: p for p in result.placed}
    assert sorted(got) == sorted(int(gi) for gi, _, _ in rows)
    for gi, mib, sm in rows:
        profile = profiles[got[int(gi)].profile_id]
        assert f"{int(mib) / 1024:.2f}" == f"{profile.memory_gib:.2f}"
        assert profile.sm == int(sm)


def test_h100_seven_1g_get_ids_of_the_real_capture() -> None:
    # A public H100 80GB HBM3 transcript of `-cgi 19,19,19,19,19,19,19 -C`
    assert [p.gi_id for p in cgi(H100, ",".join(["19"] * 7)).placed] == [13, 11, 12, 7, 8, 9, 10]


def test_high_first_numbering_matches_an_r510_a100_capture() -> None:
    # An A100-PCIE-40GB on driver 510.47.03: `-cgi 9,19,14,19` gave GIs 1, 11, 6, 12 at the same placements
    result = cgi(A100, "9,19,14,19", gi_id_order="high-first")
    assert [p.gi_id for p in result.placed] == [1, 11, 6, 12]
    assert layout(result) == [("1g.5gb", 0, 1), ("1g.5gb", 1, 1), ("2g.10gb", 2, 2), ("3g.20gb", 4, 4)]


VALID_LAYOUTS = [
    "19,19,19,19,19,19,19",
    "9,9",
    "5,9",
    "9,5",
    "5,14,19",
    "14,14,14,19",
    "20,19,19,19,19,19,19",
    "15,15,15,15",
    "0",
]


@pytest.mark.parametrize("gpu", [A100, H100])
@pytest.mark.parametrize("tokens", VALID_LAYOUTS)
def test_valid_layouts_are_accepted(gpu: str, tokens: str) -> None:
    result = cgi(gpu, tokens)
    assert result.ok, result.output
    assert len(result.placed) == len(tokens.split(","))
    slots = [s for p in result.placed for s in range(p.start, p.start + p.size)]
    assert len(slots) == len(set(slots))


INVALID_LAYOUTS = [
    ("5,5", "5"),  # 4g+4g
    ("9,9,9", "9"),  # three 3g
    ("0,19", "19"),  # 7g plus anything
    ("19,0", "0"),
    ("14,14,14,14", "14"),  # four 2g
    ("20,20", "20"),  # one media extension
    ("19,19,19,19,19,19,19,19", "19"),  # eight 1g
    ("9,9,19", "19"),  # two 3g fill all 8 memory slots
    ("15,15,15,15,19", "19"),
]


@pytest.mark.parametrize("gpu", [A100, H100])
@pytest.mark.parametrize(("tokens", "failing"), INVALID_LAYOUTS)
def test_invalid_layouts_fail_with_insufficient_resources(gpu: str, tokens: str, failing: str) -> None:
    result = cgi(gpu, tokens)
    assert result.lines[-2:] == [
        f"Unable to create a GPU instance on GPU  0 using profile {failing}: Insufficient Resources",
        "Failed to create GPU instances: Insufficient Resources",
    ]
    assert result.error == "Insufficient Resources"
    assert len(result.placed) == len(tokens.split(",")) - 1


def test_explicit_placement_is_honoured_and_checked() -> None:
    first = cgi(A100, "9:0")
    assert layout(first) == [("3g.20gb", 0, 4)]
    assert first.placed[0].gi_id == 1
    again = cgi(A100, "3g.20gb:0", first.placed)
    assert again.lines[0] == "Unable to create a GPU instance on GPU  0 using profile 3g.20gb:0: Insufficient Resources"


def test_3g_at_start_2_is_an_invalid_argument() -> None:
    result = cgi(A100, "9:2")
    assert result.output == (
        "Unable to create a GPU instance on GPU  0 using profile 9:2: Invalid Argument\n"
        "Failed to create GPU instances: Invalid Argument\n"
    )
    assert result.exit_code == 2
    assert result.placed == []


def test_unknown_profile_stops_the_command_with_invalid_argument() -> None:
    result = cgi(A100, "19,99,19", gpu_index=3)
    assert result.lines == [
        "Successfully created GPU instance ID 13 on GPU  3 using profile MIG 1g.5gb (ID 19)",
        "Unable to create a GPU instance on GPU  3 using profile 99: Invalid Argument",
        "Failed to create GPU instances: Invalid Argument",
    ]
    assert [s.ok for s in result.steps] == [True, False]


def test_create_does_not_change_its_input() -> None:
    existing = cgi(A100, "9").placed
    before = [p.to_dict() for p in existing]
    cgi(A100, "19", existing, default_ci=True)
    mig.create_compute_instances(A100, existing, None, ["0"])
    assert [p.to_dict() for p in existing] == before


def test_remaining_capacity_follows_free_slots_and_limits() -> None:
    placed = cgi(A100, "9").placed  # 3g at 4:4
    free = {p.id: mig.remaining_capacity(A100, placed, p.id) for p in mig.profiles_for(A100)}
    assert free == {19: 4, 20: 1, 15: 2, 14: 2, 9: 1, 5: 1, 0: 0}


# --- compute instances and destroy ----------------------------------------------------------------------


def test_cci_lci_dci_dgi_match_the_guide_transcript() -> None:
    pairs = corpus_commands("nvml/mig_cci_lci_dci_dgi_A100_40GB.txt")
    placed = cgi(A100, "9,9").placed  # GIs 2 (4:4) and 1 (0:4), no CIs yet

    cci = mig.create_compute_instances(A100, placed, [1], ["0", "0", "0"], style="legacy")
    assert (pairs[0][0], cci.output) == pairs[0]

    lci = mig.render_lci([MigGpu(0, A100, cci.placed)], gi_ids=[1], style="legacy")
    assert (pairs[1][0], strip_trailing(lci)) == pairs[1]

    dci = mig.destroy_compute_instances(A100, cci.placed, gi_ids=[1], ci_ids=[0, 1, 2])
    assert (pairs[2][0], dci.output) == pairs[2]

    dgi = mig.destroy_gpu_instances(A100, dci.placed)
    assert (pairs[3][0], dgi.output) == pairs[3]
    assert dgi.placed == []


def test_current_cci_message_names_the_new_ci() -> None:
    placed = cgi(A100, "9").placed
    result = mig.create_compute_instances(A100, placed, [2], ["1c.3g.20gb", "MIG 2c.3g.20gb"])
    assert result.lines == [
        "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  2 using profile MIG 1c.3g.20gb (ID  0)",
        "Successfully created compute instance ID  1 on GPU  0 GPU instance ID  2 using profile MIG 2c.3g.20gb (ID  1)",
    ]
    assert [(c.start, c.size) for c in result.placed[0].compute_instances] == [(0, 1), (1, 2)]


def test_cci_beyond_the_gi_compute_slices_is_refused() -> None:
    placed = cgi(A100, "14", default_ci=True).placed  # 2g with its 2g CI
    result = mig.create_compute_instances(A100, placed, None, ["0"])
    assert result.error == "Insufficient Resources"
    assert result.lines[-1] == "Failed to create compute instances: Insufficient Resources"


def test_dgi_is_refused_while_compute_instances_exist() -> None:
    placed = cgi(A100, "9,19", default_ci=True).placed
    result = mig.destroy_gpu_instances(A100, placed, [2])
    assert result.output == (
        "Unable to destroy GPU instance ID  2 from GPU  0: In use by another client\n"
        "Failed to destroy GPU instances: In use by another client\n"
    )
    assert result.exit_code != 0
    assert len(result.placed) == 2


def test_default_ci_of_each_gi_size_is_the_gi_wide_profile() -> None:
    expected = {
        19: (0, "1g.5gb"),
        20: (0, "1g.5gb+me"),
        15: (0, "1g.10gb"),
        14: (1, "2g.10gb"),
        9: (2, "3g.20gb"),
        5: (3, "4g.20gb"),
        0: (4, "7g.40gb"),
    }
    for gi_profile, (ci_id, name) in expected.items():
        default = mig.ci_profiles_for(A100, gi_profile)[-1]
        assert (default.id, default.name, default.is_default) == (ci_id, name, True)


def test_placed_round_trips_through_json() -> None:
    placed = cgi(A100, "9,19", default_ci=True).placed
    restored = [Placed.from_dict(d) for d in json.loads(json.dumps([p.to_dict() for p in placed]))]
    assert restored == placed


# --- listings -------------------------------------------------------------------------------------------


def test_lgi_legacy_renders_both_guide_listings() -> None:
    pairs = corpus_commands("nvml/mig_lgi_A100_40GB.txt")
    # the first listing's GIs as the guide shows them (numbered as a newer driver would)
    two_3g = [Placed(1, 9, "3g.20gb", 4, 4), Placed(2, 9, "3g.20gb", 0, 4)]
    assert strip_trailing(mig.render_lgi([MigGpu(0, A100, two_3g)], style="legacy")) == pairs[0][1]
    after = cgi(A100, "9,19,14,19").placed
    assert strip_trailing(mig.render_lgi([MigGpu(0, A100, after)], style="legacy")) == pairs[1][1]


def test_lgi_current_layout_matches_an_r510_capture() -> None:
    placed = cgi(A100, "9,19,14,19", gi_id_order="high-first").placed
    assert mig.render_lgi([MigGpu(0, A100, placed)]).splitlines()[5::2] == [
        "|   0  MIG 1g.5gb          19       11          0:1     |",
        "|   0  MIG 1g.5gb          19       12          1:1     |",
        "|   0  MIG 2g.10gb         14        6          2:2     |",
        "|   0  MIG 3g.20gb          9        1          4:4     |",
    ]


def test_lgi_without_instances_says_not_found() -> None:
    assert mig.render_lgi([MigGpu(0, A100, [])]) == "No GPU instances found: Not Found\n"


def test_lgip_matches_the_h100_nvl_capture() -> None:
    ((_, expected),) = corpus_commands("nvml/mig_lgip_H100_NVL_94GB.txt")
    assert strip_trailing(mig.render_lgip([MigGpu(0, "NVIDIA H100 NVL", [])])) == expected


def test_lgip_free_counts_drop_as_instances_are_created() -> None:
    placed = cgi(H100, "9").placed
    rows = [line for line in mig.render_lgip([MigGpu(0, H100, placed)]).splitlines() if "MIG" in line]
    assert [row.split()[5] for row in rows] == ["4/7", "1/1", "2/4", "2/3", "1/2", "1/1", "0/1"]


def test_lgip_legacy_matches_an_r460_a100_capture() -> None:
    # An A100-PCIE-40GB on driver 460.91.03 (R460 knew neither 1g.5gb+me nor 1g.10gb)
    expected = """\
+--------------------------------------------------------------------------+
| GPU instance profiles:                                                   |
| GPU   Name          ID    Instances   Memory     P2P    SM    DEC   ENC  |
|                           Free/Total   GiB              CE    JPEG  OFA  |
|==========================================================================|
|   2  MIG 1g.5gb     19     7/7        4.75       No     14     0     0   |
|                                                          1     0     0   |
+--------------------------------------------------------------------------+
|   2  MIG 2g.10gb    14     3/3        9.75       No     28     1     0   |
|                                                          2     0     0   |
+--------------------------------------------------------------------------+
|   2  MIG 3g.20gb     9     2/2        19.62      No     42     2     0   |
|                                                          3     0     0   |
+--------------------------------------------------------------------------+
|   2  MIG 4g.20gb     5     1/1        19.62      No     56     2     0   |
|                                                          4     0     0   |
+--------------------------------------------------------------------------+
|   2  MIG 7g.40gb     0     1/1        39.50      No     98     5     0   |
|                                                          7     1     1   |
+--------------------------------------------------------------------------+
"""
    assert mig.render_lgip([MigGpu(2, "A100-PCIE-40GB", [])], style="legacy") == expected


@pytest.mark.parametrize(
    ("gpu", "rel"),
    [("A100-SXM4-40GB", "nvml/mig_lgipp_A100_guide.txt"), ("NVIDIA H100 NVL", "nvml/mig_lgipp_H100_NVL.txt")],
)
def test_lgipp_matches_the_captures(gpu: str, rel: str) -> None:
    ((_, expected),) = corpus_commands(rel)
    assert mig.render_lgipp([MigGpu(0, gpu, [])]) == expected


def test_lgipp_is_static_whatever_is_created() -> None:
    full = cgi(A100, "0").placed
    assert mig.render_lgipp([MigGpu(0, A100, full)]) == mig.render_lgipp([MigGpu(0, A100, [])])


def test_lci_current_shows_placements() -> None:
    placed = cgi(H100, "19,19", default_ci=True).placed
    assert mig.render_lci([MigGpu(0, H100, placed)]).splitlines()[6::2] == [
        "|   0     11       MIG 1g.10gb          0         0          0:1     |",
        "|   0     13       MIG 1g.10gb          0         0          0:1     |",
    ]


def test_lcip_matches_the_guide_after_three_1c() -> None:
    # MIG User Guide, "Compute Instances": `-lcip -gi 1` after `-cci 0,0,0 -gi 1` on a 3g.20gb GI
    placed = cgi(A100, "9", gi_id_order="high-first").placed  # GI 1 at 4:4
    placed = mig.create_compute_instances(A100, placed, [1], ["0", "0", "0"]).placed
    expected = """\
+--------------------------------------------------------------------------------------+
| Compute instance profiles:                                                           |
| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |
|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |
|         ID                                                          CE    JPEG       |
|======================================================================================|
|   0      1       MIG 1c.3g.20gb       0      0/3           14        2     0     0   |
|                                                                      3     0         |
+--------------------------------------------------------------------------------------+
|   0      1       MIG 2c.3g.20gb       1      0/1           28        2     0     0   |
|                                                                      3     0         |
+--------------------------------------------------------------------------------------+
|   0      1       MIG 3g.20gb          2*     0/1           42        2     0     0   |
|                                                                      3     0         |
+--------------------------------------------------------------------------------------+
"""
    assert mig.render_lcip([MigGpu(0, A100, placed)], gi_ids=[1]) == expected


@pytest.mark.parametrize(
    ("driver", "style"), [("460.91.03", "legacy"), ("510.47.03", "current"), ("560.35.03", "current")]
)
def test_style_for_driver(driver: str, style: str) -> None:
    assert mig.style_for_driver(driver) == style


def test_h200_profile_memory_is_what_nvidia_smi_mig_lgip_prints_on_an_hgx_h200() -> None:
    # corpus nvml/lgip_H200_excerpt_cut_mid_row.txt (NVIDIA/mig-parted#120):
    # rows "|   2  MIG 3g.71gb   9  2/2  69.50 ...".
    captured = {
        m.group(1): float(m.group(2))
        for m in re.finditer(
            r"MIG (\S+)\s+\d+\s+\d+/\d+\s+([\d.]+)", read_corpus("nvml/lgip_H200_excerpt_cut_mid_row.txt")
        )
    }
    assert captured["7g.141gb"] == 139.75  # the capture holds what the table must match
    memory = {p.name: p.memory_gib for p in mig.profiles_for("NVIDIA H200")}
    for name, gib in captured.items():
        assert memory[name] == gib, name
    assert memory["2g.35gb"] == captured["1g.35gb"]  # not in the excerpt: same two memory slots as 1g.35gb
