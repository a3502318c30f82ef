from __future__ import annotations

import json
from pathlib import Path

import pytest

from assessor.capture import snapshot
from assessor.errors import InputError
from assessor.parsers.assemble import facts_from_snapshot, nvml_failure
from tests.support.snapshots import corpus_snapshot


def test_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        snapshot.read(tmp_path / "nope")


def test_directory_with_nothing_usable_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="holds nothing usable"):
        snapshot.read(tmp_path)


def test_raw_files_without_meta_are_a_valid_snapshot(tmp_path: Path) -> None:
    corpus_snapshot(tmp_path, {"ibstat.txt": "ibstat/01_h100_cx7_ndr400_ib_all_active.txt"})
    facts = facts_from_snapshot(snapshot.read(tmp_path))
    assert facts.ib_ports is not None
    assert len([p for p in facts.ib_ports if p.link_layer == "InfiniBand"]) == 8  # plus mlx5_bond_0 (Ethernet)
    assert facts.sources["ib_ports"] == "ibstat.txt"
    assert facts.gpus is None and "gpus" not in facts.problems  # absent: a gap, not an error


def test_binary_garbage_becomes_a_problem_for_that_field_only(tmp_path: Path) -> None:
    corpus_snapshot(tmp_path, {"ibstat.txt": "ibstat/01_h100_cx7_ndr400_ib_all_active.txt"})
    (tmp_path / "lsmod.txt").write_bytes(b"\x7fELF\x00\x01\x02garbage")
    facts = facts_from_snapshot(snapshot.read(tmp_path))
    assert facts.modules is None
    assert "lsmod.txt" in facts.problems["modules"] and "binary" in facts.problems["modules"]
    assert facts.ib_ports is not None


def test_unreadable_file_becomes_a_problem(tmp_path: Path) -> None:
    """Root reads any file, so make it unreadable the way root cannot: a directory in its place."""
    (tmp_path / "uname.txt").write_text("Linux node01 6.1.0 x86_64 GNU/Linux\n")
    (tmp_path / "ibstat.txt").mkdir()
    facts = facts_from_snapshot(snapshot.read(tmp_path))
    assert facts.problems["ib_ports"].startswith(f"{tmp_path / 'ibstat.txt'}: cannot read")
    assert facts.uname is not None


def test_capture_failure_recorded_in_meta_is_a_problem(tmp_path: Path) -> None:
    corpus_snapshot(tmp_path, {"lsmod.txt": "ibstat/01_h100_cx7_ndr400_ib_all_active.txt"})
    (tmp_path / "lsmod.txt").write_text("Module Size Used by\nnvidia 100 0\n")
    meta = {
        "files": {
            "ibstat.txt": {"command": "ibstat", "status": "timeout", "message": "ibstat timed out after 30 s"},
            "dcgmi-diag.txt": {"command": "dcgmi diag -r 1", "status": "missing"},
        }
    }
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    facts = facts_from_snapshot(snapshot.read(tmp_path))
    assert "timed out" in facts.problems["ib_ports"]
    assert "dcgm_diag" not in facts.problems  # a missing tool is a gap


def test_malformed_meta_json_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "uname.txt").write_text("Linux node01 6.1.0 x86_64 GNU/Linux\n")
    (tmp_path / "meta.json").write_text('{\n "host": "x",\n oops\n}')
    with pytest.raises(InputError, match=r"meta.json:3: unreadable meta.json"):
        snapshot.read(tmp_path)


def test_host_comes_from_uname_when_meta_is_absent(tmp_path: Path) -> None:
    (tmp_path / "uname.txt").write_text("Linux node07 6.1.0-18-amd64 #1 SMP x86_64 GNU/Linux\n")
    assert snapshot.read(tmp_path).host == "node07"


def test_nvidia_smi_driver_mismatch_becomes_a_driver_fact(tmp_path: Path) -> None:
    (tmp_path / "nvidia-smi-q.xml").write_text("Failed to initialize NVML: Driver/library version mismatch\n")
    facts = facts_from_snapshot(snapshot.read(tmp_path))
    assert facts.driver is not None
    assert facts.driver.nvml_error == "Failed to initialize NVML: Driver/library version mismatch"
    assert "version mismatch" in facts.problems["gpus"]


def test_nvml_failure_ignores_xml() -> None:
    assert nvml_failure('<?xml version="1.0" ?>\n<nvidia_smi_log>') is None


def test_write_then_read_round_trips_sources_and_meta(tmp_path: Path) -> None:
    snap = snapshot.Snapshot(host="node01")
    snap.sources["uname.txt"] = snapshot.Source("uname.txt", "Linux node01 6.1\n", command="uname -a", exit_code=0)
    snap.sources["ibstat.txt"] = snapshot.Source(
        "ibstat.txt", None, "missing", command="ibstat", message="ibstat is not installed on the target"
    )
    snapshot.write(snap, tmp_path / "s")
    back = snapshot.read(tmp_path / "s")
    assert back.host == "node01"
    assert back.sources["uname.txt"].text == "Linux node01 6.1\n"
    assert back.sources["ibstat.txt"].status == "missing"
    assert not (tmp_path / "s" / "ibstat.txt").exists()
