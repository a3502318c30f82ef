"""Sources agree or say so: a present but broken source is an error for its facts, never papered over."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assessor.capture.snapshot import read
from assessor.cli import main
from assessor.parsers.assemble import facts_from_snapshot
from tests.support.corpus import read_corpus

XML = "nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml"
LIST = "nvml/nvidia_smi_L_mig_A100_40GB_guide.txt"


def snapshot(tmp_path: Path, xml: str | None) -> Path:
    snap = tmp_path / "node"
    snap.mkdir()
    (snap / "nvidia-smi-L.txt").write_text(read_corpus(LIST))
    if xml is not None:
        (snap / "nvidia-smi-q.xml").write_text(xml)
    return snap


def test_a_truncated_xml_is_an_error_for_gpus_even_when_the_list_fills_them(tmp_path: Path) -> None:
    text = read_corpus(XML)
    cut = text[: len(text) // 2]
    facts = facts_from_snapshot(read(snapshot(tmp_path, cut)))
    assert facts.gpus is None
    assert facts.problems["gpus"].startswith("nvidia-smi-q.xml")
    assert any(ch.isdigit() for ch in facts.problems["gpus"].split(":")[1])  # the line


def test_without_the_xml_the_list_gives_the_gpus(tmp_path: Path) -> None:
    facts = facts_from_snapshot(read(snapshot(tmp_path, None)))
    assert facts.gpus and "gpus" not in facts.problems


def test_assess_of_a_snapshot_with_a_truncated_xml_errors_and_exits_1(tmp_path: Path) -> None:
    text = read_corpus(XML)
    snap = snapshot(tmp_path, text[: len(text) // 2])
    result = CliRunner().invoke(main, ["assess", "-t", f"snapshot:{snap}", "-c", "gpu.count", "-f", "json"])
    assert result.exit_code == 1
    (outcome,) = json.loads(result.stdout)["targets"][0]["results"]
    assert outcome["status"] == "error" and "nvidia-smi-q.xml" in outcome["message"]
