"""Render every HTML report (candidate, cohort, fleet) and photograph each in headless Chromium.

    .venv/bin/python scripts/screenshot_reports.py [--out DIR] [--width 1280] [--height 2400]

Writes DIR/<kind>.html and DIR/<kind>.png (default DIR: build/screenshots). Needs Debian's `chromium`
(scripts/setup.sh installs it when run as root). The data is bench/reports.py's synthetic cohort (12
candidates) and a 24-host fleet made of real assessments. Exit 1 when Chromium is missing or fails.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    """The headless browser on PATH, if any."""
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def screenshot(html: Path, png: Path, *, width: int = 1280, height: int = 2400, timeout: float = 60) -> None:
    """Photograph one HTML file (no network: the reports are self-contained)."""
    exe = browser()
    if exe is None:
        raise RuntimeError("no chromium on PATH: apt-get install chromium (scripts/setup.sh does it as root)")
    with tempfile.TemporaryDirectory(prefix="gpulab-chromium-") as profile:
        cmd = [
            exe,
            "--headless",
            "--no-sandbox",  # containers and CI run as root, where the sandbox refuses to start
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            html.resolve().as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not png.is_file():
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")


def render_all(out: Path) -> list[Path]:
    """Write candidate.html, cohort.html and fleet.html under ``out``."""
    from assessor.labs import levels
    from assessor.labs.loader import load_catalogue
    from assessor.reports import candidate, cohort, fleet, render
    from bench.reports import cohort_records, fleet_results

    catalogue = load_catalogue()
    rules = levels.load_rules(catalogue.root)
    records = cohort_records(12, seed=3)
    by_count: dict[str, int] = {}
    for r in records:
        by_count[r.candidate] = by_count.get(r.candidate, 0) + 1
    who = max(by_count, key=lambda name: by_count[name])
    results = fleet_results(24, out / "work")
    docs = {
        "candidate": candidate.build(who, records, catalogue, rules),
        "cohort": cohort.build("autumn-2026", records, catalogue, rules),
        "fleet": fleet.build([results]),
    }
    written = []
    for kind, doc in docs.items():
        path = out / f"{kind}.html"
        path.write_text(render.render(doc, "html"), encoding="utf-8")
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "screenshots")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2400)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        for html in render_all(args.out):
            png = html.with_suffix(".png")
            screenshot(html, png, width=args.width, height=args.height)
            print(png)
    except RuntimeError as exc:
        print(f"screenshot-reports: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
