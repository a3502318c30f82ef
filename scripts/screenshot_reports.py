"""Render every HTML report (candidate, cohort, fleet) and photograph each in headless Chromium.

    .venv/bin/python scripts/screenshot_reports.py [--out DIR] [--width 1280] [--height 2400]
    .venv/bin/python scripts/screenshot_reports.py --docs

Writes DIR/<kind>.html and DIR/<kind>.png (default DIR: build/screenshots). Needs Debian's `chromium`
(scripts/setup.sh installs it when run as root). The data is bench/reports.py's synthetic cohort (12
candidates) and a 24-host fleet made of real assessments. Exit 1 when Chromium is missing or fails.

``--docs`` makes the README's two pictures instead, from a candidate who works as a real one does, in a
scratch folder (its own attempts database, simulated nodes; nothing of the user's is read or written): ada
takes nine labs on simulated nodes (solves seven with the labs' reference solutions, grades one broken node
unsolved and one design from its example file), then sits a timed NCP-AII practice exam (seed 21, the clock
moved by the script) and solves all its tasks but one. What `gpulab exam report -f html` and `gpulab report
candidate --exam NCP-AII -f html` then write is photographed into docs/img/exam-result.png and
docs/img/candidate-report.png. Both pages are checked first to hold no path of this machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assessor.labs.model import Lab

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


# ---- the README's pictures (--docs) ------------------------------------------------------------------------

WHO = "ada"
EXAM = "NCP-AII"
SEED = 21
SOLVED = ("drv-101", "drv-201", "health-101", "health-201", "mig-101", "mig-201", "ib-201")  # with the reference
UNSOLVED = ("nccl-301",)  # started (the fault in place) and graded as it is
DESIGN = "design-502"  # graded from its example file: a wrong design
# (page, its picture under docs/img, window width and height): the top of each page: the exam's summary, the
# candidate's levels and next steps down to the readiness for the exam and the head of the study plan
DOC_IMAGES = (("exam", "exam-result.png", 1200, 1150), ("candidate", "candidate-report.png", 1280, 2950))


def gpulab(*args: str) -> str:
    """Run one gpulab command in process, as the candidate types it; its output. RuntimeError when it fails
    for any reason but a grade that did not pass (exit 1)."""
    from click.testing import CliRunner

    from assessor.cli import main

    result = CliRunner().invoke(main, list(args))
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"gpulab {' '.join(args)}: exit {result.exit_code}: {result.output.strip()[-500:]}")
    return result.output


def solve(lab: Lab, node: Path | None, folder: Path) -> str | None:
    """Do what the lab's reference solution does, as a candidate types it (never `lab solve`, which marks the
    node): its files and commands on the node; the answer file to hand in (a design, a ticket), if any."""
    from assessor.labs.drivers.sim import solve_file
    from assessor.labs.loader import reference_answer

    answer = None
    if lab.solution_answer:
        path = folder / f"{lab.id}-answer.yaml"
        path.write_text(reference_answer(lab), encoding="utf-8")
        answer = str(path)
    if node is not None:
        solve_file(lab, node)
    return answer


def take_labs(work: Path, db: str) -> None:
    """ada's lab attempts, each started and graded through the CLI on a simulated node of its own."""
    from assessor.labs import lifecycle
    from assessor.labs.loader import find_lab

    for n, lab_id in enumerate((*SOLVED, *UNSOLVED), 1):
        lab = find_lab(lab_id)
        node = work / f"node-{n}.json"
        spec = f"mock:{node}"
        gpulab("sim", "init", "--fixture", str(lab.fixture), "--state", str(node), "--host", f"lab-node-{n:02d}")
        gpulab("lab", "start", lab_id, "--target", spec, "--candidate", WHO, "--db", db)
        answer = None
        if lab_id in SOLVED:
            answer = solve(lifecycle.variant_on(lab, spec, db=db), node, work)
        gpulab("lab", "grade", lab_id, "--target", spec, "--candidate", WHO, "--db", db, *_answer(answer))
    design = find_lab(DESIGN)
    gpulab("lab", "start", DESIGN, "--candidate", WHO, "--db", db)
    example = str(design.path / (design.answer_example or ""))
    gpulab("lab", "grade", DESIGN, "--candidate", WHO, "--db", db, "--answer", example)


def _answer(path: str | None) -> list[str]:
    return ["--answer", path] if path else []


def sit_exam(work: Path, db: str) -> None:
    """ada's sitting: every task solved but the last, which is graded as it is; the clock moved on between."""
    import datetime as dt

    from assessor.labs import exam_run
    from assessor.labs.loader import find_lab, with_variant

    clock_at = [dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=3)]

    def clock() -> dt.datetime:
        return clock_at[0]

    s = exam_run.start(EXAM, candidate=WHO, db=db, seed=SEED, clock=clock).session
    for t in s.tasks:
        clock_at[0] += dt.timedelta(minutes=13)
        lab = with_variant(find_lab(t.lab), t.variant)
        node = Path(t.target.removeprefix("mock:")) if t.target else None
        answer = solve(lab, node, work) if t is not s.tasks[-1] else None
        if answer is None and lab.is_design:
            answer = str(lab.path / (lab.answer_example or ""))  # a design handed in as its example: wrong
        exam_run.grade(str(t.n), candidate=WHO, db=db, answer=answer, clock=clock)
    clock_at[0] += dt.timedelta(minutes=4)
    exam_run.submit(candidate=WHO, db=db, clock=clock)


def render_docs(out: Path) -> list[tuple[Path, str, int, int]]:
    """The exam result and the candidate report (--exam) of ada's work, as HTML under ``out``: each page with
    its picture's name and window size. RuntimeError when a page shows a path of this machine."""
    import os

    work = Path(tempfile.mkdtemp(prefix="gpulab-docs-"))
    db = str(work / "attempts.db")
    saved = {k: os.environ.get(k) for k in ("GPULAB_DB", "GPULAB_LABS")}
    os.environ["GPULAB_DB"] = db
    os.environ.pop("GPULAB_LABS", None)  # the shipped catalogue
    try:
        take_labs(work, db)
        sit_exam(work, db)
        pages = {
            "exam": out / "exam-result.html",
            "candidate": out / "candidate-exam.html",
        }
        gpulab("exam", "report", "--candidate", WHO, "--db", db, "-f", "html", "-o", str(pages["exam"]))
        report = ("report", "candidate", "--candidate", WHO, "--db", db, "--exam", EXAM, "-f", "html")
        gpulab(*report, "-o", str(pages["candidate"]))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(work, ignore_errors=True)
    local = [str(p) for p in {work, ROOT, Path(tempfile.gettempdir())} if str(p) != "/"]  # not ~: /root is a node's
    for page in pages.values():
        text = page.read_text(encoding="utf-8")
        shown = sorted({p for p in local if p in text})
        if shown:
            raise RuntimeError(f"{page} shows a path of this machine ({', '.join(shown)}): not photographed")
    return [(pages[kind], png, w, h) for kind, png, w, h in DOC_IMAGES]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "screenshots")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2400)
    parser.add_argument(
        "--docs",
        action="store_true",
        help="make docs/img/exam-result.png and docs/img/candidate-report.png (the README's pictures) instead",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.docs:
        from assessor.errors import GpulabError

        try:
            for html, name, width, height in render_docs(args.out):
                picture = ROOT / "docs" / "img" / name
                screenshot(html, picture, width=width, height=height)
                print(picture.relative_to(ROOT))
        except (RuntimeError, GpulabError) as exc:  # GpulabError: a reference solution the node refused
            print(f"screenshot-reports: {exc}", file=sys.stderr)
            return 1
        return 0
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
