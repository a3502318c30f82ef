"""Limits over real SSH: reply caps, tar bombs, stalled hosts, missing keys, symlinks in --out."""

from __future__ import annotations

import gzip
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sshbed import SshBed, node, sshd_available, write_inventory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """A healthy node, one whose tar sends a gzip bomb, one whose shell prints 1 GB."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    root = tmp_path_factory.mktemp("limits")
    bed = SshBed(root).setup(1)
    bomb = root / "bomb.tar.gz"
    # streamed to disk: the test process itself never holds the member (its children would inherit the peak)
    with gzip.open(bomb, "wb", compresslevel=9) as packed, tarfile.open(fileobj=packed, mode="w") as tar:
        info = tarfile.TarInfo("./1.o")
        info.size = 512 << 20  # 512 MiB of zeros in about 512 KiB
        tar.addfile(info, _Zeros())
    bed.add_node("bomb", "hgx-h100", extra_bin={"tar": f"exec cat {bomb}"})
    bed.add_node("flood", "hgx-h100", extra_bin={"bash": "cat >/dev/null; exec head -c 1073741824 /dev/zero"})
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


class _Zeros(io.RawIOBase):
    """An endless stream of zero bytes, read in pieces."""

    def readinto(self, buffer: Any) -> int:
        buffer[:] = bytes(len(buffer))
        return len(buffer)

    def read(self, size: int = -1) -> bytes:
        return bytes(max(0, min(size, 1 << 20)))


def gpulab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """gpulab in its own process: what reaches stderr is what a user would see."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from assessor.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def host_error(proc: subprocess.CompletedProcess[str], host: str) -> str:
    doc = json.loads(proc.stdout)
    return str({t["host"]: t for t in doc["targets"]}[host].get("error") or "")


def test_a_gzip_tar_bomb_from_a_node_is_an_error_for_that_host_only(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["bomb", "node01"])
    proc = gpulab("assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(bed.known_hosts))
    assert proc.returncode == 3, proc.stderr
    assert "not a plain tar" in host_error(proc, "bomb")
    assert "gzip" in host_error(proc, "bomb")
    assert host_error(proc, "node01") == ""


def test_a_node_printing_1_gb_is_cut_at_the_reply_limit_not_read_into_memory(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["flood"])
    script = (
        "import resource, sys, json; from click.testing import CliRunner; from assessor.cli import main; "
        "r = CliRunner().invoke(main, sys.argv[1:]); "
        "print(json.dumps({'out': r.stdout, 'rss_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))"
    )
    args = ["assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(bed.known_hosts)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", script, *args, "--max-reply", str(8 << 20)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    elapsed = time.monotonic() - start
    result = json.loads(proc.stdout)
    error = str(json.loads(result["out"])["targets"][0]["error"])
    assert "reply limit of 8 MiB" in error and "--max-reply" in error
    assert result["rss_kib"] < 400 * 1024  # 1 GB held in memory would be far beyond this
    assert elapsed < 60


def _silent_server(greeting: bytes = b"") -> tuple[int, threading.Event]:
    """A TCP server that accepts, optionally says ``greeting``, and then never says anything more."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if greeting:
                conn.sendall(greeting)
        for conn in held:
            conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(listener.getsockname()[1]), stop


@pytest.mark.parametrize(
    ("greeting", "expected"),
    [(b"", "no SSH banner from [127.0.0.1]:{port} within 2 s"), (b"SSH-2.0-OpenSSH_9.2p1\r\n", "key exchange")],
    ids=["no-banner", "stalled-key-exchange"],
)
def test_a_stalled_host_ends_within_the_host_timeout_without_a_traceback(
    tmp_path: Path, greeting: bytes, expected: str
) -> None:
    port, stop = _silent_server(greeting)
    try:
        start = time.monotonic()
        proc = gpulab("assess", "-t", f"ssh://127.0.0.1:{port}", "-c", "gpu.count", "-f", "json", "--host-timeout", "2")
        elapsed = time.monotonic() - start
    finally:
        stop.set()
    error = json.loads(proc.stdout)["targets"][0]["error"]
    assert expected.format(port=port) in error
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr and "paramiko" not in proc.stderr
    assert elapsed < 2 + 8  # the host's 2 s, plus starting Python


def test_a_missing_key_file_is_named_not_called_unreachable(bed: SshBed, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-key"
    proc = gpulab(
        "assess",
        "-t",
        f"ssh://127.0.0.1:{node(bed, 'node01').port}",
        "-c",
        "gpu.count",
        "-f",
        "json",
        "--identity",
        str(missing),
        "--known-hosts",
        str(bed.known_hosts),
    )
    error = json.loads(proc.stdout)["targets"][0]["error"]
    assert error == f"key file not found: {missing}"


def test_capture_out_never_follows_a_symlink_already_in_the_output_directory(bed: SshBed, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "caps"
    out.mkdir()
    for name in ("ibstat.txt", "meta.json", "nvidia-smi-q.xml"):
        (out / name).symlink_to(victim)
    inv = write_inventory(bed, tmp_path, ["node01"])
    proc = gpulab(
        "capture", "-i", str(inv), "-l", "node01", "--out", str(out / "one"), "--known-hosts", str(bed.known_hosts)
    )
    assert proc.returncode == 0, proc.stderr
    proc = gpulab(
        "capture",
        "-t",
        f"ssh://{bed.user}@127.0.0.1:{node(bed, 'node01').port}",
        "--identity",
        str(bed.client_key),
        "--out",
        str(out),
        "--known-hosts",
        str(bed.known_hosts),
    )
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert (out / "ibstat.txt").read_text().startswith("CA '") and not (out / "ibstat.txt").is_symlink()
