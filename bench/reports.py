"""Report benchmark: a 200-candidate cohort report and a 1,024-host fleet report in every format.

    .venv/bin/python bench/reports.py [--candidates 200] [--hosts 1024] [--out DIR]

Each figure is the time to build the validated document from its inputs and render it, per format (the
inputs already in memory: bench/scale.py runs `gpulab report fleet` on a results file, 10,000 hosts too).
The cohort is synthetic (seeded): every candidate attempts a random share of the shipped labs, some
late, some twice, some from two machines. The fleet is made of real assessments (a healthy simulated
HGX H100 and the corpus's broken H100 snapshot: ports polling, NCCL on sockets, Xid 79) repeated under
1,024 host names, a few of them unreachable. The same data feeds scripts/screenshot_reports.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assessor.reports.documents import AttemptRecord  # noqa: E402

T0 = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
BROKEN_H100 = {
    "ibstat.txt": "ibstat/02_h100_cx7_roce400_one_down_polling.txt",
    "nccl-tests.txt": "nccl_debug/01_h800_single_node_ib_not_found_socket_fallback_nvls.txt",
    "dmesg.txt": "dmesg_xid/05_xid79_fallen_off_bus_single_and_multiline.txt",
}


def cohort_records(n: int, seed: int = 7) -> list[AttemptRecord]:
    """Attempts of ``n`` synthetic candidates at the shipped labs (seeded, so runs compare)."""
    from assessor.labs.loader import load_catalogue

    rnd = random.Random(seed)
    labs = load_catalogue().labs
    out = []
    for i in range(n):
        name = f"candidate-{i:03d}"
        skill = rnd.random()
        for lab in labs:
            if rnd.random() > 0.35 + 0.6 * skill - 0.08 * (lab.level - 1):
                continue
            for attempt in range(1 + (rnd.random() < 0.3)):
                checks = []
                for c in lab.checks:
                    ok = rnd.random() < 0.45 + 0.5 * skill + 0.1 * attempt
                    checks.append(
                        {
                            "check": c.id,
                            "status": "pass" if ok else "fail",
                            "message": f"{c.id}: {'as expected' if ok else 'not as expected'}",
                            "points": c.points,
                            "earned": c.points if ok else 0.0,
                            "credit": 1.0 if ok else 0.0,
                            "hint": c.hint,
                        }
                    )
                percent = round(100 * sum(x["earned"] for x in checks) / lab.total_points, 2)
                start = T0 + dt.timedelta(days=rnd.randrange(30), minutes=rnd.randrange(600))
                minutes = rnd.uniform(0.3, 1.3) * lab.time_limit_min
                two_machines = attempt and rnd.random() < 0.1
                out.append(
                    AttemptRecord(
                        candidate=name,
                        lab_id=lab.id,
                        graded_at=(start + dt.timedelta(minutes=minutes)).isoformat(timespec="seconds"),
                        started_at=start.isoformat(timespec="seconds"),
                        late=minutes > lab.time_limit_min,
                        percent=percent,
                        passed=percent >= lab.pass_percent,
                        checks=tuple(checks),
                        host=f"node{rnd.randrange(64):02d}",
                        machine="" if lab.is_design else ("m2" if two_machines else "m1"),
                        domain=lab.domain,
                        level=lab.level,
                    )
                )
    return out


def fleet_results(hosts: int, workdir: Path) -> dict[str, Any]:
    """A results document for ``hosts`` hosts made of two real assessments, a few hosts unreachable."""
    from assessor.assess import profiles
    from assessor.assess.pipeline import assess
    from assessor.checks.result import TargetResults, document

    corpus = ROOT / "tests" / "data" / "corpus"
    broken = workdir / "broken-h100"
    broken.mkdir(parents=True, exist_ok=True)
    for name, rel in BROKEN_H100.items():
        shutil.copyfile(corpus / rel, broken / name)
    profile = profiles.load("hgx-h100")
    healthy = assess("mock:hgx-h100", profile)
    failing = assess(f"snapshot:{broken}", profile)
    targets = []
    for i in range(hosts):
        name = f"gpu{i:04d}"
        if i % 97 == 13:
            targets.append(TargetResults(f"ssh://{name}", name, [], error="unreachable: connection timed out"))
            continue
        base = failing if i % 11 == 3 else healthy
        targets.append(
            TargetResults(
                f"ssh://{name}",
                name,
                base.results,
                captured_at=healthy.captured_at,
                timings=healthy.timings,
            )
        )
    return document(targets, profile.name)


def _time(label: str, work: Any) -> float:
    start = time.perf_counter()
    work()
    took = time.perf_counter() - start
    print(f"{label:44} {took:6.3f} s", flush=True)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--hosts", type=int, default=1024)
    parser.add_argument("--out", type=Path, help="keep the rendered reports here")
    args = parser.parse_args()
    from assessor.labs import levels
    from assessor.labs.loader import load_catalogue
    from assessor.reports import cohort, fleet, render
    from assessor.reports.documents import validate

    out = args.out or Path(tempfile.mkdtemp(prefix="gpulab-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    catalogue = load_catalogue()
    rules = levels.load_rules(catalogue.root)
    records = cohort_records(args.candidates)
    results = fleet_results(args.hosts, out / "work")
    validate(results, "results")
    render.environment("html")  # template loading is a one-off start-up cost, not part of each figure
    render.environment("md")
    print(f"{args.candidates} candidates ({len(records)} attempts), {args.hosts} hosts; reports in {out}")
    worst = 0.0

    for fmt in ("html", "md", "csv", "json"):

        def cohort_report(fmt: str = fmt) -> None:
            doc = cohort.build("bench", records, catalogue, rules)
            (out / f"cohort.{fmt}").write_text(render.render(doc, fmt, validated=True), encoding="utf-8")

        worst = max(worst, _time(f"cohort, {args.candidates} candidates, {fmt}", cohort_report))
    for fmt in ("html", "md", "csv", "junit", "json"):

        def fleet_report(fmt: str = fmt) -> None:
            doc = fleet.build([results])
            text = render.render(doc, fmt, results=[results], validated=True)  # as `gpulab report` does
            (out / f"fleet.{render.SUFFIX[fmt].lstrip('.')}").write_text(text, encoding="utf-8")

        worst = max(worst, _time(f"fleet, {args.hosts} hosts, {fmt}", fleet_report))
    print(f"slowest: {worst:.3f} s (target: under 3 s each)")
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return 0 if worst < 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
