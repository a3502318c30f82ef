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
IBV_DEVINFO = "ibv_devinfo/02_ib_cx7_mt4126_fw28.37_port_active_infiniband.txt"


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


def test_ibv_devinfo_alone_gives_the_ports_in_any_state(tmp_path: Path) -> None:
    snap = tmp_path / "node"
    snap.mkdir()
    (snap / "ibv_devinfo.txt").write_text(
        read_corpus("ibv_devinfo/02_ib_cx7_mt4126_fw28.37_port_active_infiniband.txt")
    )
    facts = facts_from_snapshot(read(snap))
    assert facts.ib_ports and {p.state for p in facts.ib_ports} >= {"Active"}


def test_a_broken_ibstat_is_not_replaced_by_ibv_devinfo(tmp_path: Path) -> None:
    snap = tmp_path / "node"
    snap.mkdir()
    (snap / "ibv_devinfo.txt").write_text(
        read_corpus("ibv_devinfo/02_ib_cx7_mt4126_fw28.37_port_active_infiniband.txt")
    )
    (snap / "ibstat.txt").write_text("CA 'mlx5_0'\n\tCA type: MT4129\n\x01\x02 garbage \x03\n")
    facts = facts_from_snapshot(read(snap))
    assert facts.ib_ports is None and facts.problems["ib_ports"].startswith("ibstat.txt")
