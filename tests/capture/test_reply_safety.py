"""What a node sends back is data: plain tar only, within the reply limit; snapshots never follow links."""

from __future__ import annotations

import base64
import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from assessor.capture import batch, snapshot
from assessor.capture.run import COMMANDS
from assessor.capture.snapshot import Snapshot, Source
from assessor.errors import InputError


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _reply(archive: bytes) -> str:
    return f"\n{batch.MARKER} TAR\n{base64.b64encode(archive).decode()}\n{batch.MARKER} END\n"


def _index_tar(stdout: bytes) -> bytes:
    index = f"1 {COMMANDS[0].file} 0 0 100 200\n".encode()
    return _tar({"./index": index, "./1.o": stdout, "./1.e": b""})


def test_a_plain_tar_within_the_limit_is_read() -> None:
    records = batch.parse_records(_reply(_index_tar(b"hello\n")), COMMANDS, 30.0, max_reply=1 << 20)
    assert records.problem is None and records.complete
    assert records(COMMANDS[0].argvs[0], 30.0).stdout == "hello\n"


def test_a_gzip_tar_bomb_is_refused_without_unpacking_it() -> None:
    # 64 MiB of zeros compress to ~64 KiB: a reader that decompresses would hold the whole member
    bomb = gzip.compress(_index_tar(b"\0" * (64 << 20)), compresslevel=9)
    assert len(bomb) < 1 << 20
    records = batch.parse_records(_reply(bomb), COMMANDS, 30.0, max_reply=1 << 20)
    assert not records.complete
    assert records.problem is not None
    assert "not a plain tar" in records.problem and "gzip" in records.problem
    assert records.outcomes == {}


def test_members_adding_up_beyond_the_limit_are_refused_naming_it() -> None:
    records = batch.parse_records(_reply(_index_tar(b"x" * 4096)), COMMANDS, 30.0, max_reply=2048)
    assert records.problem is not None
    assert "reply limit of 2 KiB" in records.problem
    assert records.outcomes == {}


def test_garbage_instead_of_a_tar_is_a_problem_not_a_crash() -> None:
    records = batch.parse_records(_reply(b"this is not a tar archive at all" * 40), COMMANDS, 30.0)
    assert records.problem is not None and "not a plain tar" in records.problem


def test_a_symlink_member_is_never_read() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        index = f"1 {COMMANDS[0].file} 0 0 100 200\n".encode()
        info = tarfile.TarInfo("./index")
        info.size = len(index)
        tar.addfile(info, io.BytesIO(index))
        link = tarfile.TarInfo("./1.o")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
    records = batch.parse_records(_reply(buf.getvalue()), COMMANDS, 30.0)
    assert records(COMMANDS[0].argvs[0], 30.0).stdout == ""


def _snap() -> Snapshot:
    return Snapshot({"uname.txt": Source("uname.txt", "Linux node01 6.1\n")}, host="node01")


def test_write_replaces_a_symlink_in_the_output_directory_instead_of_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "uname.txt").symlink_to(victim)
    (out / "meta.json").symlink_to(victim)
    snapshot.write(_snap(), out)
    assert victim.read_text() == "precious\n"
    assert not (out / "uname.txt").is_symlink() and (out / "uname.txt").read_text() == "Linux node01 6.1\n"
    assert not (out / "meta.json").is_symlink() and json.loads((out / "meta.json").read_text())["host"] == "node01"


def test_write_refuses_an_output_directory_that_is_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    with pytest.raises(InputError, match="symbolic link"):
        snapshot.write(_snap(), tmp_path / "out")
    assert list(elsewhere.iterdir()) == []


def test_a_directory_of_host_snapshots_is_a_fleet_and_a_snapshot_is_not(tmp_path: Path) -> None:
    for host in ("node02", "node01"):
        snapshot.write(_snap(), tmp_path / "fleet" / host)
    snapshot.write_error_record(tmp_path / "fleet" / "ghost", "ssh://ghost", "ghost", "unreachable")
    (tmp_path / "fleet" / "notes").mkdir()  # nothing usable: not a host
    found = snapshot.host_snapshots(tmp_path / "fleet")
    assert [p.name for p in found] == ["ghost", "node01", "node02"]
    assert snapshot.host_snapshots(tmp_path / "fleet" / "node01") == []


def _records_of_a_node(tmp_path: Path) -> str:
    """What the batched script prints on a node whose tools all answer ``ok``, run here under sh."""
    import subprocess

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for command in COMMANDS:
        tool = bindir / command.argvs[0][0]
        tool.write_text("#!/bin/sh\necho ok\n")
        tool.chmod(0o755)
    path = f"{bindir}:/usr/bin:/bin"
    proc = subprocess.run(
        ["sh", "-s"],
        input=batch.script(COMMANDS, 5, nvml=True),
        capture_output=True,
        text=True,
        env={"PATH": path},
        check=True,
    )
    return proc.stdout


def test_unpack_writes_the_snapshot_capture_writes_and_removes_the_records(tmp_path: Path) -> None:
    records = tmp_path / "node01" / ".capture.records"
    records.parent.mkdir()
    records.write_text(_records_of_a_node(tmp_path).replace("\n", "\r\n"))  # as a terminal sends it
    assert batch.main(["unpack", str(records), str(records.parent), "--host", "node01", "--timeout", "5"]) == 0
    assert not records.exists()
    snap = snapshot.read(records.parent)
    assert snap.host == "node01"
    assert snap.sources["ibstat.txt"].text == "ok\n"
    assert json.loads((records.parent / "meta.json").read_text())["via"] == "capture.yml"


def test_unpack_refuses_a_reply_over_the_limit_with_an_error_record(tmp_path: Path) -> None:
    records = tmp_path / "node01" / ".capture.records"
    records.parent.mkdir()
    records.write_text(_records_of_a_node(tmp_path))
    code = batch.main(["unpack", str(records), str(records.parent), "--host", "node01", "--max-reply", "1024"])
    assert code == 1
    why = "the node's reply is over the reply limit of 1 KiB: capture refused"
    assert snapshot.error_record(records.parent) == ("node01", why)
    assert not (records.parent / "ibstat.txt").exists()
