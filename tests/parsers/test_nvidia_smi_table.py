"""The default ``nvidia-smi`` table, in the layouts of drivers 450 to 575, as people paste it."""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from tests.support.corpus import read_corpus


def _facts(rel: str):
    return parsers.parse("nvidia-smi", read_corpus(rel))


@pytest.mark.parametrize(
    ("rel", "driver", "name", "persistence", "temp", "draw", "cap", "memory"),
    [
        ("nvidia_smi/02_450.57_titan_xp_fenced.txt", "450.57", "TITAN Xp", True, 39, 9.0, 250.0, 12196),
        (
            "nvidia_smi/01_510.47.03_geforce_rocky8_prompt_transcript.txt",
            "510.47.03",
            "NVIDIA GeForce ...",
            False,
            51,
            15.0,
            None,
            4096,
        ),
        (
            "nvidia_smi/03_550.40.07_rtx4070_dollar_prompt.txt",
            "550.40.07",
            "NVIDIA GeForce RTX 4070",
            False,
            36,
            17.0,
            200.0,
            12282,
        ),
        ("nvml/nvidia_smi_default_8xH100_SXM.txt", "565.57.01", "NVIDIA H100 80GB HBM3", True, 30, 100.0, 700.0, 81559),
    ],
)
def test_each_layout_gives_driver_name_persistence_temperature_power_and_memory(
    rel, driver, name, persistence, temp, draw, cap, memory
):
    facts = _facts(rel)
    assert facts.driver is not None and facts.driver.version == driver
    g = (facts.gpus or [])[0]
    assert (g.name, g.persistence_mode, g.temperature_c, g.power_draw_w, g.power_limit_w, g.memory_total_mib) == (
        name,
        persistence,
        temp,
        draw,
        cap,
        memory,
    )


def test_eight_h100s_with_bus_ids_ecc_and_mig_mode():
    gpus = _facts("nvml/nvidia_smi_default_8xH100_SXM.txt").gpus or []
    assert [g.index for g in gpus] == list(range(8))
    assert gpus[7].bus_id == "00000000:DB:00.0"
    assert all(g.ecc_volatile_uncorrected == 0 and g.mig_mode_current is False for g in gpus)
    assert all(g.compute_mode == "Default" for g in gpus)


def test_cuda_version_na_is_unknown_and_an_empty_process_box_is_no_processes():
    facts = _facts("nvidia_smi/04_575.64.03_rtx5070_cuda_na_processes_header.txt")
    assert facts.driver is not None and facts.driver.cuda_version is None
    assert facts.gpu_processes == []


def test_mig_devices_box_and_mig_mode_enabled():
    facts = _facts("nvml/nvidia_smi_mig_devices_H100_NVL.txt")
    gpu = (facts.gpus or [])[0]
    assert gpu.mig_mode_current is True
    assert [(d.gpu, d.gi_id, d.ci_id, d.mig_device, d.memory_total_mib, d.sm) for d in facts.mig_devices or []] == [
        (0, 1, 0, 0, 47488, 60),
        (0, 5, 0, 1, 22144, 26),
        (0, 13, 0, 2, 11008, 16),
    ]


def test_process_box_alone_gives_processes_not_an_empty_gpu_list():
    facts = _facts("nvidia_smi/05_470era_mig_processes_box_venv_prompt.txt")
    assert facts.gpus is None  # the excerpt says nothing about the GPU list
    rows = [(p.gpu, p.gi_id, p.ci_id, p.pid, p.type, p.name, p.memory_mib) for p in facts.gpu_processes or []]
    assert rows[0] == (0, None, None, 23824, "C", "python", 10725)
    assert rows[2] == (1, 3, 0, 34965, "C", "python", 14195)
    assert len(rows) == 7


def test_a_last_row_cut_in_half_is_dropped_but_one_inside_is_an_error():
    text = read_corpus("nvml/nvidia_smi_default_8xH100_SXM.txt")
    lines = text.splitlines()
    cut = "\n".join([*lines[:11], lines[11][:20]])  # GPU 1's first row, cut
    facts = parsers.parse("nvidia-smi", cut)
    assert [g.index for g in facts.gpus or []] == [0]
    broken = "\n".join([*lines[:11], "|   1  garbled |   00000000:2A:00.0 Off |", *lines[12:]])
    with pytest.raises(ParseError) as info:
        parsers.parse("nvidia-smi", broken)
    assert info.value.line == 12


def test_text_that_is_no_table_is_a_parse_error():
    with pytest.raises(ParseError):
        parsers.parse("nvidia-smi", "hello\nworld\n")


def test_r610_kmd_and_cuda_umd_version_header_is_read():
    facts = _facts("nvidia_smi/08_610.43.02_b200_kmd_umd_version_header.txt")
    assert facts.driver is not None and (facts.driver.version, facts.driver.cuda_version) == ("610.43.02", "13.3")
    assert [(g.index, g.name, g.power_draw_w, g.power_limit_w) for g in facts.gpus or []] == [
        (0, "NVIDIA B200", 139.0, 1000.0),
        (1, "NVIDIA B200", 142.0, 1000.0),
    ]


def test_ecc_off_in_the_uncorrected_ecc_cell_is_no_count():
    (gpu,) = _facts("nvidia_smi/07_550.135_tesla_p4_ecc_off.txt").gpus or []
    assert gpu.ecc_volatile_uncorrected is None
    assert (gpu.name, gpu.temperature_c, gpu.memory_total_mib) == ("Tesla P4", 49, 8192)


def test_r470_through_kubectl_after_a_nix_shell_prompt():
    text = "[nix-shell:~/src/bottlerocket]$  " + read_corpus("nvidia_smi/06_470.256.02_a10g_kubectl_transcript.txt")
    facts = parsers.parse("nvidia-smi", text)
    (gpu,) = facts.gpus or []
    assert facts.driver is not None and facts.driver.version == "470.256.02"
    assert (gpu.name, gpu.persistence_mode, gpu.ecc_volatile_uncorrected, gpu.power_limit_w) == (
        "NVIDIA A10G",
        True,
        0,
        300.0,
    )
