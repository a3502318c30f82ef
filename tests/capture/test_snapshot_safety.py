"""Only regular files inside a snapshot directory are read, each under a size cap; the rest is an error named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.capture.snapshot import read
from assessor.cli import main
from assessor.errors import InputError
from tests.support.corpus import read_corpus


def node(tmp_path: Path) -> Path:
    snap = tmp_path / "node"
    snap.mkdir()
    (snap / "ibstat.txt").write_text(read_corpus("ibstat/01_h100_cx7_ndr400_ib_all_active.txt"))
    return snap


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    snap = node(tmp_path)
    os.mkfifo(snap / "lsmod.txt")
    source = read(snap).sources["lsmod.txt"]
    assert source.status == "unreadable" and "not a regular file" in (source.message or "")


def test_a_device_is_refused(tmp_path: Path) -> None:
    snap = node(tmp_path)
    (snap / "dmesg.txt").symlink_to("/dev/zero")
    source = read(snap).sources["dmesg.txt"]
    assert source.status == "unreadable" and source.text is None


def test_a_link_out_of_the_snapshot_is_refused_and_its_content_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    snap = node(tmp_path)
    (snap / "lsmod.txt").symlink_to(secret)
    result = CliRunner().invoke(main, ["assess", "-t", f"snapshot:{snap}", "-c", "driver.loaded", "-f", "json"])
    assert "secret-hash" not in result.stdout
    (outcome,) = json.loads(result.stdout)["targets"][0]["results"]
    assert outcome["status"] == "error" and "symbolic link leading out" in outcome["message"]


def test_a_link_inside_the_snapshot_is_read(tmp_path: Path) -> None:
    snap = node(tmp_path)
    (snap / "raw").mkdir()
    (snap / "raw" / "ibstat-run1.txt").write_text((snap / "ibstat.txt").read_text())
    (snap / "ibstat.txt").unlink()
    (snap / "ibstat.txt").symlink_to(snap / "raw" / "ibstat-run1.txt")
    assert read(snap).sources["ibstat.txt"].status == "ok"


def test_a_file_over_the_cap_is_an_error_for_its_checks(tmp_path: Path) -> None:
    snap = node(tmp_path)
    (snap / "dmesg.txt").write_bytes(b"x" * (2 * 1024 * 1024))
    source = read(snap, max_bytes=1024 * 1024).sources["dmesg.txt"]
    assert source.status == "unreadable" and "limit" in (source.message or "")
    result = CliRunner().invoke(
        main, ["assess", "-t", f"snapshot:{snap}", "-c", "gpu.xid", "--max-file-size", "1", "-f", "json"]
    )
    (outcome,) = json.loads(result.stdout)["targets"][0]["results"]
    assert result.exit_code == 1 and outcome["status"] == "error" and "--max-file-size" in outcome["message"]


def test_a_fifo_meta_json_is_an_input_error(tmp_path: Path) -> None:
    snap = node(tmp_path)
    os.mkfifo(snap / "meta.json")
    with pytest.raises(InputError, match=r"meta\.json: not a regular file"):
        read(snap)
