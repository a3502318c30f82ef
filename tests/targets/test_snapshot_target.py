"""A directory of outputs pasted under any names is a snapshot, and so is one file; what is not placed is named."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main
from tests.support.corpus import read_corpus

IBSTAT = "ibstat/02_h100_cx7_roce400_one_down_polling.txt"
XML = "nvidia_smi_xml/a100-sxm4-40gb-mig-510-v11.xml"


def assess(target: str, *checks: str) -> tuple[int, dict]:
    args = ["assess", "-t", target, "-f", "json"]
    for check in checks:
        args += ["-c", check]
    result = CliRunner().invoke(main, args)
    return result.exit_code, json.loads(result.stdout)["targets"][0]


def test_files_under_any_names_are_recognised_by_content(tmp_path: Path) -> None:
    (tmp_path / "node7-ib.log").write_text("$ ibstat\n" + read_corpus(IBSTAT))
    (tmp_path / "smi.xml").write_text(read_corpus(XML))
    code, target = assess(f"snapshot:{tmp_path}", "ib.ports_active", "gpu.count")
    by_check = {r["check"]: r for r in target["results"]}
    assert (
        code == 1
        and by_check["ib.ports_active"]["status"] == "fail"
        and "mlx5_11" in by_check["ib.ports_active"]["message"]
    )
    assert by_check["gpu.count"]["status"] == "pass"
    assert "notes" not in target


def test_unknown_and_duplicate_files_are_named_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(read_corpus(IBSTAT))
    (tmp_path / "b.txt").write_text(read_corpus(IBSTAT))
    (tmp_path / "shopping-list.txt").write_text("eggs\nmilk\n")
    _, target = assess(f"snapshot:{tmp_path}", "ib.ports_active")
    notes = target["notes"]
    assert any(n.startswith("b.txt: not used: a second ibstat.txt") for n in notes)
    assert any(n.startswith("shopping-list.txt: not used: unknown") for n in notes)


def test_a_single_file_is_a_snapshot(tmp_path: Path) -> None:
    file = tmp_path / "paste.txt"
    file.write_text(read_corpus(IBSTAT))
    code, target = assess(f"snapshot:{file}", "ib.ports_active")
    assert code == 1 and target["results"][0]["status"] == "fail"


def test_a_directory_of_nothing_recognisable_cannot_be_assessed_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("nothing here\n")
    result = CliRunner().invoke(main, ["assess", "-t", f"snapshot:{tmp_path}", "-c", "gpu.count", "-f", "json"])
    assert result.exit_code == 3  # the target could not be assessed at all
    assert "x.txt: unknown" in json.loads(result.stdout)["targets"][0]["error"]
