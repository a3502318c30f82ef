"""``nvidia-smi nvlink -s``: each link's speed or ``<inactive>``, on real excerpts."""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from tests.support.corpus import read_corpus


def test_v100_with_two_inactive_links():
    status = parsers.parse(
        "nvidia-smi-nvlink", read_corpus("nvidia_smi_nvlink/01_v100_sxm2_two_links_inactive_excerpt.txt")
    )
    (gpu,) = status.nvlink_status or []
    assert (gpu.gpu, gpu.name) == (3, "Tesla V100-SXM2-32GB")
    assert [(link.link, link.active) for link in gpu.links] == [
        (0, True),
        (1, True),
        (2, True),
        (3, False),
        (4, True),
        (5, False),
    ]
    assert gpu.links[0].speed_gbps == 25.781


def test_gb200_excerpt_cut_after_the_second_gpus_first_links():
    status = parsers.parse("nvidia-smi-nvlink", read_corpus("nvidia_smi_nvlink/02_gb200_18_links_excerpt.txt"))
    gpus = status.nvlink_status or []
    assert [(g.gpu, len(g.links), g.uuid) for g in gpus] == [
        (0, 18, "GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde"),
        (1, 2, "GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5"),
    ]


def test_a_link_state_that_is_no_speed_is_an_error_unless_it_is_the_cut_last_line():
    text = "GPU 0: A100 (UUID: GPU-1)\n\t Link 0: fast\n\t Link 1: 25.0 GB/s\n"
    with pytest.raises(ParseError) as info:
        parsers.parse("nvidia-smi-nvlink", text)
    assert info.value.line == 2
    cut = parsers.parse("nvidia-smi-nvlink", "GPU 0: A100 (UUID: GPU-1)\n\t Link 0: 25.0 GB/s\n\t Link 1: 25.\n")
    assert len((cut.nvlink_status or [])[0].links) == 1
