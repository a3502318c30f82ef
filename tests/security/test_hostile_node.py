"""A hostile node over loopback SSH: its dmesg quotes escapes, OSC 52, bidi, zero-width and tag characters,
a soft hyphen and bare URLs in an Xid line, which gpulab quotes as evidence. Every format it reaches (the
terminal table, results JSON, JUnit, the Markdown summary, and the fleet report in each format) shows the
bytes as data: none survives raw, the visible escape is there, and the URL is inert in Markdown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.hostile import HOSTILE, assert_inert
from tests.support.sshbed import SshBed, sshd_available, write_inventory

ROOT = Path(__file__).resolve().parents[2]
# one dmesg line; OSC 52 ended by ST (ESC \\) rather than BEL: a C0 control other than ESC makes the whole
# file binary data, refused before it is parsed (tests/parsers)
ON_NODE = HOSTILE.replace("\n", " ").replace("\x07", "\x1b\\")


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    root = tmp_path_factory.mktemp("hostile")
    bed = SshBed(root).setup(0)
    payload = root / "dmesg.txt"
    payload.write_text(
        "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n"
        f"[   12.500000] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name={ON_NODE}, {ON_NODE}\n",
        encoding="utf-8",
    )
    bed.add_node("evil", "hgx-h100", extra_bin={"dmesg": f"exec cat {payload}"})
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def gpulab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    code = "import sys; from assessor.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


def test_a_hostile_node_reaches_every_format_as_data(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["evil"])
    out = {"json": tmp_path / "r.json", "junit": tmp_path / "r.xml", "md": tmp_path / "r.md"}
    proc = gpulab(
        "assess",
        "-i",
        str(inv),
        "-c",
        "gpu.xid",
        "--known-hosts",
        str(bed.known_hosts),
        "--json",
        str(out["json"]),
        "--junit",
        str(out["junit"]),
        "--markdown",
        str(out["md"]),
    )
    assert proc.returncode == 1, proc.stderr  # the Xid 79 fails gpu.xid
    texts = {"terminal": proc.stdout + proc.stderr, **{k: p.read_text(encoding="utf-8") for k, p in out.items()}}
    result = json.loads(texts["json"])["targets"][0]["results"][0]
    assert result["status"] == "fail", result
    quoted = " ".join(result["evidence"])  # the data is all there, as the node sent it (CSI aside: parsers drop it)
    assert "\x1b]52;c;" in quoted and "a\u202eb" in quoted and "\U000e0041" in quoted and "https://evil" in quoted
    for fmt in ("html", "md", "csv", "junit", "json"):
        report = gpulab("report", "fleet", str(out["json"]), "-f", fmt)
        assert report.returncode == 0, report.stderr
        texts[f"report {fmt}"] = report.stdout + report.stderr
    for where, text in texts.items():
        assert_inert(text, where=where)
        if where not in ("terminal", "report csv"):  # the table and the fleet CSV show no evidence lines
            assert "\\u202e" in text or "\\\\u202e" in text, where
    for where in ("md", "report md"):
        assert "https://evil.example" not in texts[where] and "https[:]//evil.example" in texts[where]
    assert all("\\e]52;c;" in texts[where] for where in ("junit", "report html"))  # OSC 52 shown, not sent
