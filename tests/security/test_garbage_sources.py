"""A source that does not look like its kind is ``error``, never evidence for a pass.

A ``dmesg.txt`` that is no kernel log ("hello world", a web server's 404 page, megabytes of one letter, an
empty file) holds no Xid because it holds no kernel events at all: ``gpu.xid`` says error, with the reason.
A real kernel log without Xid lines still passes. The same for ``uname.txt`` and ``node.os``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor import parsers
from assessor.cli import main
from assessor.errors import ParseError
from tests.support.corpus import CORPUS

XML = CORPUS / "nvidia_smi_xml" / "a10g-515-v11.xml"
HTML_404 = (
    "<!DOCTYPE html>\n<html>\n<head><title>404 Not Found</title></head>\n"
    "<body>\n<center><h1>404 Not Found</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n"
)
GARBAGE = {
    "hello": "hello world\n",
    "html-404": HTML_404,
    "one-letter": "a" * (4 << 20),
    "one-letter-lines": "a\n" * 50_000,
    "empty": "",
    "blank": "\n \n",
}
# A healthy node's kernel log, in each layout a capture or a paste has: no Xid, so gpu.xid passes.
HEALTHY = {
    "dmesg": "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n"
    "[    5.123456] nvidia: loading out-of-tree module taints kernel.\n",
    "dmesg-T": "[Sun Feb 23 16:24:18 2025] mlx5_core 0000:9c:00.0: firmware version: 28.39.1002\n",
    "journalctl-k": "Nov 14 10:00:00 gpu01 kernel: pci 0000:18:00.0: [10de:2330] type 00 class 0x030200\n",
    "dmesg-t": "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n",
    "dmesg-r": "<6>[    5.123456] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n",
    "dmesg-x": "kern  :info  : [    5.123456] EXT4-fs (nvme0n1p2): mounted filesystem\n",
}


def xid_result(tmp_path: Path, dmesg: str) -> dict:
    snap = tmp_path / "snap"
    snap.mkdir(exist_ok=True)
    shutil.copy(XML, snap / "nvidia-smi-q.xml")
    (snap / "dmesg.txt").write_text(dmesg, encoding="utf-8")
    result = CliRunner().invoke(main, ["assess", "-t", f"snapshot:{snap}", "-c", "gpu.xid", "-f", "json"])
    doc = json.loads(result.stdout)
    return dict(doc["targets"][0]["results"][0])


@pytest.mark.parametrize("name", list(GARBAGE))
def test_a_dmesg_that_is_no_kernel_log_is_an_error_never_a_pass(tmp_path: Path, name: str) -> None:
    r = xid_result(tmp_path, GARBAGE[name])
    assert r["status"] == "error", r
    assert "not a kernel log" in r["message"] or "empty" in r["message"], r["message"]


def test_the_reason_says_what_the_file_looks_like() -> None:
    with pytest.raises(ParseError, match=r"not a kernel log: .* an HTML page"):
        parsers.parse("dmesg", HTML_404)
    with pytest.raises(ParseError, match=r"not a kernel log: none of the 1 line\(s\) read .* 'hello world'"):
        parsers.parse("dmesg", "hello world\n")


@pytest.mark.parametrize("name", list(HEALTHY))
def test_a_real_kernel_log_without_xid_passes(tmp_path: Path, name: str) -> None:
    r = xid_result(tmp_path, HEALTHY[name])
    assert r["status"] == "pass", r
    assert r["message"].startswith("no Xid or SXid in the kernel log")


@pytest.mark.parametrize("sample", sorted((CORPUS / "dmesg_xid").glob("*.txt")), ids=lambda p: p.name)
def test_real_kernel_logs_with_xids_are_read(sample: Path) -> None:
    assert parsers.parse("dmesg", sample.read_text(encoding="utf-8")).kernel_events


def test_a_kernel_log_behind_garbage_is_refused_when_it_starts_too_late() -> None:
    text = "junk\n" * 10_001 + "[    1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, y\n"
    with pytest.raises(ParseError, match="first 10,000"):
        parsers.parse("dmesg", text)


@pytest.mark.parametrize("text", ["hello world\n", HTML_404, "a" * 1000])
def test_a_uname_that_is_no_uname_output_is_an_error_not_a_pass(tmp_path: Path, text: str) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "uname.txt").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["assess", "-t", f"snapshot:{snap}", "-c", "node.os", "-f", "json"])
    r = json.loads(result.stdout)["targets"][0]["results"][0]
    assert r["status"] == "error" and "not uname output" in r["message"], r


@pytest.mark.parametrize(
    "text", ["Linux gpu01 6.8.0-45-generic #45-Ubuntu SMP x86_64 x86_64 x86_64 GNU/Linux\n", "5.15.0-91-generic\n"]
)
def test_real_uname_outputs_are_read(text: str) -> None:
    assert parsers.parse("uname", text).uname == text.strip()
