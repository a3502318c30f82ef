"""The HTML reports as a browser shows them, and the templates from an installed wheel."""

from __future__ import annotations

import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.support.corpus import ROOT

sys.path.insert(0, str(ROOT))
from scripts.screenshot_reports import browser, screenshot


def png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the decompressed scanlines of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.skipif(browser() is None, reason="no chromium on PATH (scripts/setup.sh installs it as root)")
def test_fleet_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    from assessor.reports import fleet, render
    from bench.reports import fleet_results

    html = tmp_path / "fleet.html"
    html.write_text(render.render(fleet.build([fleet_results(6, tmp_path)]), "html"), encoding="utf-8")
    png = tmp_path / "fleet.png"
    screenshot(html, png, width=1000, height=900)
    width, height, pixels = png_pixels(png)
    assert (width, height) == (1000, 900)
    # a page that rendered has many colours (dark header, badges, matrix cells), not a blank sheet
    rows = [pixels[i * (len(pixels) // height) + 1 : (i + 1) * (len(pixels) // height)] for i in range(0, height, 25)]
    assert len(set(rows)) > 15
    assert len(set(pixels)) > 50


def test_templates_are_found_from_an_installed_wheel(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("gpulab-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert (site / "assessor" / "_data" / "reports" / "templates" / "fleet.html.j2").is_file()
    code = (
        "import json, sys; from assessor.reports import content, render;"
        "print(content.templates_dir());"
        "doc = {'schema': 'gpulab.results/1', 'targets': [{'target': 'mock:x', 'host': 'n1', 'results': "
        "[{'check': 'gpu.count', 'status': 'fail', 'message': '7 GPUs', 'hint': 'reseat'}]}]};"
        "sys.stdout.write(render.render(doc, 'html'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    first, html = out.split("\n", 1)
    assert first.startswith(str(site))
    assert "<!DOCTYPE html>" in html and "reseat" in html
