"""A lab folder's validation verdict is kept, and only for the exact files that passed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs import loader

DATA = Path(__file__).parent / "data"


def copy_lab(tmp_path: Path) -> Path:
    """A copy of ib-301 with content of its own (the verdict is kept by content, not by path)."""
    lab = tmp_path / "infiniband" / "ib-301"
    shutil.copytree(DATA / "infiniband" / "ib-301", lab)
    with (lab / "lab.yaml").open("a") as f:
        f.write(f"# {tmp_path.name}\n")
    return lab


def test_a_valid_lab_is_stamped_and_an_edit_is_validated_again(tmp_path: Path) -> None:
    lab = copy_lab(tmp_path)
    stamp = loader.validated_stamp(lab)
    assert stamp is not None and not stamp.exists()
    loader.load_lab(lab)
    assert stamp.exists()
    text = (lab / "lab.yaml").read_text()
    (lab / "lab.yaml").write_text(text.replace("level: 3", "level: 9"))
    assert loader.validated_stamp(lab) != stamp
    with pytest.raises(InputError, match=r"lab.yaml:\d+: .*level"):
        loader.load_lab(lab)


def test_a_lab_that_fails_is_never_stamped(tmp_path: Path) -> None:
    lab = copy_lab(tmp_path)
    (lab / "README.md").write_text("")
    with pytest.raises(InputError, match=r"README\.md: empty"):
        loader.load_lab(lab)
    stamp = loader.validated_stamp(lab)
    assert stamp is not None and not stamp.exists()


def test_no_cache_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_NO_CACHE", "1")
    assert loader.validated_stamp(DATA / "infiniband" / "ib-301") is None


def test_the_same_lab_in_the_wrong_folder_is_validated_again(tmp_path: Path) -> None:
    lab = copy_lab(tmp_path)
    loader.load_lab(lab)
    moved = tmp_path / "mig" / "ib-301"
    shutil.copytree(lab, moved)
    with pytest.raises(InputError, match="must match the parent directory"):
        loader.load_lab(moved)
