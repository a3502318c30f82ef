"""A lab's `objectives:` key: only known objectives, each once, of an exam domain the lab lists; every problem
names the lab's file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs import loader
from assessor.labs.model import LabObjective

TRAINS = 'exam_domains:\n  - "NCP-AII: Cluster Test and Verification"\n'


def _objectives(lab_dir: Path, *names: str) -> Path:
    path = lab_dir / "lab.yaml"
    text = path.read_text(encoding="utf-8")
    assert TRAINS in text, f"test setup: {path}"
    listed = "".join(f"  - {n}\n" for n in names)
    path.write_text(text.replace(TRAINS, TRAINS + "objectives:\n" + listed, 1), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def test_named_objectives_load_whole_or_part(labs_copy: Path) -> None:
    _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-4.3", "NCP-AII-4.10 (part)")
    lab = loader.load_lab(labs_copy / "nccl" / "nccl-301")
    assert lab.objectives == (LabObjective("NCP-AII-4.3"), LabObjective("NCP-AII-4.10", whole=False))


def test_an_unknown_objective_names_file_line_key_and_the_closest(labs_copy: Path) -> None:
    path = _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-4.3", "NCP-AII-4.33")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    message = str(exc.value)
    assert f"{path}:{_line_of(path, 'NCP-AII-4.33')}: unknown objective 'NCP-AII-4.33'" in message
    assert "did you mean NCP-AII-4.3" in message and "(key objectives[1])" in message


def test_an_objective_of_a_domain_the_lab_does_not_list_is_refused(labs_copy: Path) -> None:
    path = _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-2.2")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    message = str(exc.value)
    assert f"{path}:{_line_of(path, 'NCP-AII-2.2')}:" in message and "(key objectives[0])" in message
    assert "NCP-AII-2.2 is an objective of 'NCP-AII: Physical Layer Management': list that in exam_domains" in message


def test_an_objective_named_twice_is_refused(labs_copy: Path) -> None:
    path = _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-4.3", "NCP-AII-4.3 (part)")
    with pytest.raises(InputError, match=r"objective NCP-AII-4.3 is named twice \(key objectives\[1\]\)"):
        loader.load_lab(path.parent)


def test_a_badly_written_objective_is_a_schema_error(labs_copy: Path) -> None:
    path = _objectives(labs_copy / "nccl" / "nccl-301", "ncp-aii 4.3")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    assert f"{path}:{_line_of(path, 'ncp-aii 4.3')}:" in str(exc.value) and "(key objectives[0])" in str(exc.value)


def test_a_labs_tree_with_its_own_objectives_file_is_checked_against_it(labs_copy: Path) -> None:
    """A labs tree ($GPULAB_LABS) may carry its own objectives.yaml; a broken one is reported for the lab."""
    path = _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-4.3")
    (labs_copy / "objectives.yaml").write_text("version: 1\nexams: []\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"objectives.yaml:2: exams: a mapping of exam"):
        loader.load_lab(path.parent)


def test_a_lab_validated_once_is_checked_again_when_the_objectives_change(
    labs_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation is cached per lab folder; the objectives file it was checked against is part of the key."""
    monkeypatch.delenv("GPULAB_NO_CACHE", raising=False)
    from assessor.labs import objectives

    path = _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-4.3")
    loader.load_lab(path.parent)  # valid against the shipped objectives: stamped
    own = labs_copy / "objectives.yaml"
    own.write_text(
        objectives.default_path().read_text(encoding="utf-8").replace("id: NCP-AII-4.3\n", "id: NCP-AII-4.30\n"),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"unknown objective 'NCP-AII-4.3'; did you mean NCP-AII-4.30"):
        loader.load_lab(path.parent)


def test_lab_show_json_lists_the_objectives_as_written(labs_copy: Path) -> None:
    from assessor.labs import views

    _objectives(labs_copy / "nccl" / "nccl-301", "NCP-AII-4.3", "NCP-AII-4.10 (part)")
    record = views.lab_record(loader.load_lab(labs_copy / "nccl" / "nccl-301"))
    assert record["objectives"] == ["NCP-AII-4.3", "NCP-AII-4.10 (part)"]
