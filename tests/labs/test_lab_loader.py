"""Loading and validating labs: good labs load, every malformed one names file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs import loader
from tests.labs.conftest import DATA


def _edit(lab_dir: Path, old: str, new: str) -> Path:
    path = lab_dir / "lab.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text, f"test setup: {old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def test_example_labs_load_with_their_checks_points_and_partial_rules():
    cat = loader.load_catalogue(DATA)
    assert cat.errors == []
    assert [lab.id for lab in cat.labs] == ["design-501", "ib-301", "nccl-301"]  # sorted by domain, level, id
    nccl = cat.get("nccl-301")
    assert nccl.fixture == "dgx-a100"
    assert [c.id for c in nccl.checks] == ["nccl.busbw", "nccl.transport"]
    assert nccl.checks[0].partial[0].factor == 0.8 and nccl.checks[0].partial[0].credit == 0.5
    assert nccl.total_points == 100
    design = cat.get("design-501")
    assert design.is_design and design.solution_answer == "solution.yaml"


def test_lab_digest_covers_lab_yaml_and_readme(labs_copy: Path):
    lab_dir = labs_copy / "infiniband" / "ib-301"
    before = loader.load_lab(lab_dir).digest
    (lab_dir / "README.md").write_text("# changed\n\nnew text\n", encoding="utf-8")
    assert loader.load_lab(lab_dir).digest != before


def test_bad_level_names_file_line_and_key(labs_copy: Path):
    path = _edit(labs_copy / "infiniband" / "ib-301", "level: 3", "level: 7")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    assert f"{path}:{_line_of(path, 'level: 7')}:" in str(exc.value)
    assert "(key level)" in str(exc.value)


def test_level_disagreeing_with_id_is_reported_on_the_level_line(labs_copy: Path):
    path = _edit(labs_copy / "infiniband" / "ib-301", "level: 3", "level: 2")
    with pytest.raises(InputError, match=r"level 2 disagrees with the id ib-301") as exc:
        loader.load_lab(path.parent)
    assert f"{path}:{_line_of(path, 'level: 2')}:" in str(exc.value)


def test_unknown_check_id_names_line_key_and_suggests(labs_copy: Path):
    path = _edit(labs_copy / "infiniband" / "ib-301", "id: ib.peermem", "id: ib.peermen")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    message = str(exc.value)
    assert f"{path}:{_line_of(path, 'ib.peermen')}:" in message
    assert "(key grading.checks[1].id)" in message
    assert "did you mean ib.peermem" in message


def test_unknown_fault_names_line_and_key(labs_copy: Path):
    path = _edit(labs_copy / "infiniband" / "ib-301", "{fault: peermem-unloaded}", "{fault: peermem-unload}")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    message = str(exc.value)
    assert f"{path}:{_line_of(path, 'peermem-unload}')}:" in message
    assert "unknown fault 'peermem-unload'" in message
    assert "(key scenario.faults[1].fault)" in message


def test_missing_readme_is_reported(labs_copy: Path):
    lab_dir = labs_copy / "infiniband" / "ib-301"
    (lab_dir / "README.md").unlink()
    with pytest.raises(InputError, match=r"README.md: missing"):
        loader.load_lab(lab_dir)


def test_bad_param_value_names_the_param_key(labs_copy: Path):
    path = _edit(labs_copy / "nccl" / "nccl-301", "params: {min_gbps: 228}", "params: {min_gbps: fast}")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    message = str(exc.value)
    assert "(key grading.checks[0].params.min_gbps)" in message
    assert "must be float" in message


def test_whose_nccl_job_the_grader_runs_is_a_user_unless_the_lab_says_root(tmp_path: Path):
    import shutil

    shipped = loader.default_root() / "nccl"
    assert loader.load_lab(shipped / "nccl-301").nccl_job == "user"
    assert loader.load_lab(shipped / "nccl-403").nccl_job == "root"
    copy = tmp_path / "labs" / "nccl" / "nccl-403"
    shutil.copytree(shipped / "nccl-403", copy)
    path = _edit(copy, "nccl_job: root", "nccl_job: admin")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    message = str(exc.value)
    assert "lab.yaml" in message and "(key grading.nccl_job)" in message and "'admin'" in message


def test_unknown_fixture_and_schema_key_typos_are_both_located(labs_copy: Path):
    path = _edit(labs_copy / "nccl" / "nccl-301", "fixture: dgx-a100", "fixture: dgx-a1000")
    with pytest.raises(InputError, match=r"unknown fixture 'dgx-a1000'.*\(key fixture\)"):
        loader.load_lab(path.parent)
    path = _edit(path.parent, "time_limit_min: 45", "time_limit_mins: 45")
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    assert "unknown key(s) time_limit_mins" in str(exc.value)
    assert "'time_limit_min' is a required property" in str(exc.value)


def test_partial_rule_needs_the_param_set_to_a_number(labs_copy: Path):
    path = _edit(labs_copy / "nccl" / "nccl-301", "params: {min_gbps: 228}", "params: {}")
    with pytest.raises(InputError, match=r"params.min_gbps must be set to a number.*partial\[0\].param"):
        loader.load_lab(path.parent)


def test_zero_points_and_id_prefix_of_another_domain_are_rejected(labs_copy: Path):
    path = _edit(labs_copy / "infiniband" / "ib-301", "points: 40", "points: 0")
    with pytest.raises(InputError, match=r"ib.peermem is a task check: it carries points.*grading.checks\[1\].points"):
        loader.load_lab(path.parent)
    path = _edit(path.parent, "points: 0", "points: 40")
    path = _edit(path.parent, "domain: infiniband", "domain: health")
    with pytest.raises(InputError, match=r"lab id ib-301 of domain health must start with health-"):
        loader.load_lab(path.parent)


def test_unknown_simulated_tool_in_solution_is_reported(labs_copy: Path):
    path = _edit(labs_copy / "infiniband" / "ib-301", "- modprobe nvidia_peermem", "- insmod nvidia_peermem")
    with pytest.raises(InputError, match=r"insmod is not a simulated tool.*\(key solution.commands\[0\]\)"):
        loader.load_lab(path.parent)


def test_design_lab_rejects_catalogue_checks_and_unknown_graders(labs_copy: Path):
    lab_dir = labs_copy / "design" / "design-501"
    _edit(lab_dir, "id: design.power", "id: design.powr")
    with pytest.raises(InputError, match=r"unknown design grader 'design.powr'"):
        loader.load_lab(lab_dir)
    _edit(lab_dir, "id: design.powr", "id: gpu.count")
    with pytest.raises(InputError, match=r"design labs are graded by design.\* graders, not gpu.count"):
        loader.load_lab(lab_dir)


def test_catalogue_keeps_good_labs_when_one_is_broken(labs_copy: Path):
    _edit(labs_copy / "infiniband" / "ib-301", "level: 3", "level: nine")
    cat = loader.load_catalogue(labs_copy)
    assert [lab.id for lab in cat.labs] == ["design-501", "nccl-301"]
    assert len(cat.errors) == 1 and "ib-301/lab.yaml" in str(cat.errors[0])


def test_labs_root_prefers_env_then_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("GPULAB_LABS", str(tmp_path))
    assert loader.labs_root() == tmp_path
    monkeypatch.delenv("GPULAB_LABS")
    root = loader.labs_root()
    assert root.name == "labs" and (root / "levels.yaml").is_file()


def test_find_lab_suggests_close_ids():
    with pytest.raises(InputError, match=r"did you mean nccl-301"):
        loader.find_lab("nccl-310", DATA)


def test_a_guard_with_points_is_refused_naming_file_line_and_key(labs_copy: Path):
    path = _edit(
        labs_copy / "infiniband" / "ib-301", "    - id: ib.peermem\n", "    - id: ib.peermem\n      role: guard\n"
    )
    with pytest.raises(InputError) as exc:
        loader.load_lab(path.parent)
    assert f"{path}:28: ib.peermem is a guard: guards carry no points (points: 0), not 40" in str(exc.value)
    assert "(key grading.checks[1].points)" in str(exc.value)
    _edit(path.parent, "points: 40", "points: 0")
    lab = loader.load_lab(path.parent)
    assert [c.role for c in lab.checks] == ["task", "guard"] and lab.total_points == 60.0


def test_a_lab_of_guards_only_is_refused(labs_copy: Path):
    path = _edit(
        labs_copy / "infiniband" / "ib-301", "    - id: ib.peermem\n", "    - id: ib.peermem\n      role: guard\n"
    )
    path = _edit(path.parent, "points: 40", "points: 0")
    path = _edit(
        path.parent,
        "      params: {link_layer: InfiniBand}\n",
        "      role: guard\n      params: {link_layer: InfiniBand}\n",
    )
    path = _edit(path.parent, "points: 60", "points: 0")
    with pytest.raises(InputError, match="every check is a guard"):
        loader.load_lab(path.parent)
