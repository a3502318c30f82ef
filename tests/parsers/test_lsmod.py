"""lsmod parser. The corpus has no lsmod capture, so the samples are written here in lsmod's layout."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import KernelModule
from assessor.parsers import lsmod

LSMOD = """\
Module                  Size  Used by
nvidia_peermem         16384  0
nvidia_uvm           4845568  2
nvidia_drm             77824  0
nvidia_modeset       1314816  1 nvidia_drm
nvidia              56815616  19 nvidia_uvm,nvidia_peermem,nvidia_modeset
ib_core               462848  9 rdma_cm,ib_ipoib,nvidia_peermem,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,ib_cm
mlx5_core            2076672  1 mlx5_ib
"""


def by_name(text: str) -> dict[str, KernelModule]:
    return {m.name: m for m in lsmod.parse(text).modules or []}


def test_lsmod_reads_name_size_count_and_users() -> None:
    mods = by_name(LSMOD)
    assert len(mods) == 7
    nvidia = mods["nvidia"]
    assert (nvidia.size, nvidia.used_by_count) == (56815616, 19)
    # The use count includes references that are not modules: it differs from len(used_by).
    assert nvidia.used_by == ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]
    assert mods["nvidia_peermem"].used_by == [] and mods["nvidia_peermem"].used_by_count == 0
    assert "nvidia_peermem" in mods["ib_core"].used_by


def test_lsmod_header_is_optional_but_its_absence_marks_an_excerpt() -> None:
    without_header = LSMOD.split("\n", 1)[1]
    assert lsmod.parse(without_header).modules == lsmod.parse(LSMOD).modules
    # lsmod | grep drops the header: what is listed is loaded, what is not may be loaded too.
    assert "lsmod | grep" in lsmod.parse(without_header).partial["modules"]
    assert lsmod.parse(LSMOD).partial == {}


def test_lsmod_reads_proc_modules_too() -> None:
    text = (
        "nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)\n"
        "nvidia 56815616 19 nvidia_uvm,nvidia_peermem,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
        "nvme_core 196608 3 nvme,[permanent], Live 0x0000000000000000\n"
    )
    mods = by_name(text)
    assert mods["nvidia_peermem"].used_by == []
    assert mods["nvidia"].used_by == ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]
    assert mods["nvme_core"].used_by == ["nvme"]


def test_lsmod_unknown_use_count_is_none() -> None:
    (mod,) = lsmod.parse("some_builtin 16384 -\n").modules or []
    assert mod.used_by_count is None


def test_lsmod_garbage_line_names_its_line_number() -> None:
    with pytest.raises(ParseError) as err:
        lsmod.parse(LSMOD + "lsmod: ERROR: could not open '/proc/modules': No such file or directory\n")
    assert err.value.line == 9


def test_lsmod_truncated_line_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        lsmod.parse("Module                  Size  Used by\nnvidia_uvm           48")
    assert err.value.line == 2


def test_lsmod_non_numeric_size_is_an_error() -> None:
    with pytest.raises(ParseError):
        lsmod.parse("nvidia  big  0\n")


def test_lsmod_header_only_or_empty_is_an_error() -> None:
    with pytest.raises(ParseError):
        lsmod.parse("Module                  Size  Used by\n")
    with pytest.raises(ParseError):
        lsmod.parse("")


def test_lsmod_doctests() -> None:
    result = doctest.testmod(lsmod)
    assert result.attempted > 0 and result.failed == 0
