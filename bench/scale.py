"""Scale benchmark: gpulab at fleet and cohort sizes, every figure in one run.

    .venv/bin/python bench/scale.py [--hosts 1024,10000] [--attempts 100,10000] [--cohort 8,32,200,1024]
                                    [--memory-hosts N] [--runs 3] [--out DIR]

Every command runs as a fresh process (``python -m assessor.cli ...``), as a person or a CI job types it. A
figure is the median of ``--runs`` runs (a warm-up first for the quick ones; the formats of a report, and
cohort and assess, interleaved), as wall time and as the CPU time the process used (user + system): on a
machine other jobs load, the CPU time is the steadier figure. The machine's cores and load average are
printed first, after each table and last. Every benchmark checks that the data it names is
there (hosts in the output, attempts in the database) and stops when it is not.

- ``report fleet``: a results file of N hosts as ``assess --json`` writes it (bench/reports.py's real
  assessments of a healthy and a broken simulated HGX H100 under N names, a few unreachable), then
  ``gpulab report fleet results.json -f FMT -o FILE`` in every format. The HTML's size, and its first paint
  and load event in headless Chromium (when there is one).
- ``progress``: an attempts database of N attempts (bench/attempts_db.py), the candidate shown having 100;
  ``gpulab progress --candidate C``.
- ``lab grade`` on one simulated node (a state file, after ``lab start``), and how many times it opens the
  node's state file.
- the memory of ``assess`` of N simulated hosts (by default the largest cohort size; none with ``--cohort ''``):
  the peak RSS of its processes together.
- cohort against assess: ``lab start -i`` and ``lab grade -i`` of health-101 against ``assess -i`` of the
  same simulated hosts (an inventory whose every host is a state file of its own: ``gpulab_target:
  mock:FILE``), interleaved, and the ratio grade/assess.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPULAB = [sys.executable, "-m", "assessor.cli"]
FORMATS = ("html", "md", "csv", "junit", "json")
AIM_REPORT_S = 3.0
LAB = "health-101"


def log(text: str) -> None:
    print(f"  .. {text}", file=sys.stderr, flush=True)


def machine() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.2f} {five:.2f} {fifteen:.2f}"


# ---- running a command ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float  # user + system of the process and every child it waited for
    rss_mb: float  # peak of the resident memory of the process and its children together (sampled)
    code: int
    out: str
    err: str


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and its descendants now (from /proc), in kB."""
    total, pending = 0, [pid]
    while pending:
        p = pending.pop()
        try:
            with open(f"/proc/{p}/status", encoding="ascii", errors="replace") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children", encoding="ascii") as f:
                    pending += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,), *, cwd: Path | None = None) -> Run:
    """Run a command to its end: wall and CPU time, peak memory of its processes, output."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=cwd)
        peak = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
                stop.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        stop.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu, rss_mb = usage.ru_utime + usage.ru_stime, max(peak[0], usage.ru_maxrss) / 1024
        done = Run(wall, cpu, rss_mb, proc.returncode, out.read(), err.read())
    if done.code not in ok:
        raise SystemExit(f"{' '.join(argv[2:])}: exit {done.code}\n{done.out[-2000:]}{done.err[-2000:]}")
    return done


def medians(runs: list[Run]) -> tuple[float, float]:
    return statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs)


def gpulab(*args: str) -> list[str]:
    return [*GPULAB, *args]


def environment(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    env["GPULAB_DB"] = str(tmp / "default-attempts.db")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode compiled
    return env


# ---- report fleet -----------------------------------------------------------------------------------------


def check_report(fmt: str, text: str, doc: dict[str, object], hosts: int) -> None:
    """Stop unless the report in ``fmt`` shows the fleet the document holds."""
    import csv
    import io

    summary = doc["summary"]
    assert isinstance(summary, dict)
    problems = []
    if fmt == "json":
        loaded = json.loads(text)
        if len(loaded["hosts"]) + len(loaded["unreachable"]) != hosts:
            problems.append("hosts missing from the JSON")
    elif fmt == "csv":
        if len(list(csv.reader(io.StringIO(text)))) != hosts + 1:
            problems.append("not one CSV row per host")
    elif fmt == "junit":
        if text.count("<testsuite ") != hosts:
            problems.append("not one JUnit testsuite per host")
    elif fmt == "md":
        if f"{hosts} hosts: **{summary['failing']} failing**" not in text:
            problems.append("the Markdown summary does not count every host")
    elif fmt == "html":
        groups = text.split('id="by-check"', 1)[-1].split("</section>", 1)[0]
        per_check = doc["per_check"]
        assert isinstance(per_check, list)
        for c in per_check:
            if (
                c["fail"] + c["error"] + c["warn"]
                and (
                    f'<tr><td><code>{c["check"]}</code></td><td class="num">{c["fail"]}</td>'
                    f'<td class="num">{c["error"]}</td><td class="num">{c["warn"]}</td>'
                )
                not in groups
            ):
                problems.append(f"failing check {c['check']} not in the failing checks with its counts")
        if f"<p>{hosts} hosts · {summary['failing']} failing" not in text:
            problems.append("the HTML header does not count every host")
    if problems:
        raise SystemExit(f"report fleet -f {fmt}, {hosts} hosts: " + "; ".join(problems))


PROBE = (
    "<script>new PerformanceObserver(l=>{for(const e of l.getEntries())console.log('gpulab-paint '+e.name+' '"
    "+e.startTime)}).observe({type:'paint',buffered:true});"
    "addEventListener('load',()=>console.log('gpulab-paint load '+performance.now()));</script>"
)


def paint_times(html: Path, work: Path) -> dict[str, float] | None:
    """First contentful paint and load event (ms after navigation) of an HTML file in headless Chromium, and
    the wall time from starting the browser to its screenshot (s); None without Chromium.

    The page is measured as written, less its Content-Security-Policy's ban on scripts: a copy carries one
    inline script that logs Chromium's paint timings to the console."""
    from scripts.screenshot_reports import browser

    exe = browser()
    if exe is None:
        return None
    text = html.read_text(encoding="utf-8")
    text = text.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1)
    probe = work / f"probe-{html.name}"
    probe.write_text(text.replace('<meta charset="utf-8">', '<meta charset="utf-8">' + PROBE, 1), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="gpulab-chromium-") as profile:
        argv = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--window-size=1280,900",
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={work / 'paint.png'}",
            probe.resolve().as_uri(),
        ]
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        wall = time.perf_counter() - start
    found = {m[0]: float(m[1]) for m in re.findall(r"gpulab-paint ([a-z-]+) ([0-9.]+)", proc.stderr)}
    if "first-contentful-paint" not in found or "load" not in found:
        raise SystemExit(f"chromium gave no paint timings for {html} (exit {proc.returncode})")
    return {"fcp_ms": found["first-contentful-paint"], "load_ms": found["load"], "wall_s": wall}


def bench_reports(sizes: list[int], runs: int, work: Path, env: dict[str, str]) -> float:
    """`report fleet` per size and format; the slowest median wall time."""
    from assessor.reports import fleet, outputs
    from bench.reports import fleet_results

    slowest = 0.0
    print(f"\nreport fleet: `gpulab report fleet results.json -f FMT -o FILE`, median of {runs}")
    print(f"{'hosts':>6} {'format':>6} {'wall s':>7} {'cpu s':>6} {'peak MB':>8} {'output':>9}")
    for n in sizes:
        log(f"report fleet: {n} hosts")
        folder = work / f"fleet-{n}"
        results = fleet_results(n, folder / "work")
        path = folder / "results.json"
        outputs.write_all(results, json_file=str(path))  # as `gpulab assess --json` writes it
        doc = fleet.build([results])
        size = path.stat().st_size
        # interleaved: each run goes through every format, so a burst of load elsewhere falls on all of them
        times: dict[str, list[Run]] = {fmt: [] for fmt in FORMATS}
        for _ in range(runs):
            for fmt in FORMATS:
                argv = gpulab("report", "fleet", str(path), "-f", fmt, "-o", str(folder / f"fleet.{fmt}"))
                times[fmt].append(run(argv, env))
        for fmt in FORMATS:
            target = folder / f"fleet.{fmt}"
            check_report(fmt, target.read_text(encoding="utf-8"), doc, n)
            wall, cpu = medians(times[fmt])
            slowest = max(slowest, wall)
            peak = max(r.rss_mb for r in times[fmt])
            print(
                f"{n:>6} {fmt:>6} {wall:>7.2f} {cpu:>6.2f} {peak:>8.0f} {target.stat().st_size / 1e6:>7.2f} MB",
                flush=True,
            )
        print(f"{'':>6} (input: results.json {size / 1e6:.1f} MB, {n} hosts; {machine()})")
        painted = paint_times(folder / "fleet.html", folder)
        if painted is None:
            print(f"{'':>6} html in Chromium: no chromium on PATH, not measured")
        else:
            print(
                f"{'':>6} html in headless Chromium: first contentful paint {painted['fcp_ms'] / 1000:.2f} s, "
                f"load event {painted['load_ms'] / 1000:.2f} s, browser start to screenshot {painted['wall_s']:.1f} s"
            )
    return slowest


# ---- progress ---------------------------------------------------------------------------------------------


def bench_progress(sizes: list[int], runs: int, work: Path, env: dict[str, str]) -> None:
    from bench import attempts_db

    print(f"\nprogress: `gpulab progress --candidate C` (C has 100 attempts), median of {runs} after a warm-up")
    print(f"{'attempts':>9} {'candidates':>10} {'wall s':>7} {'cpu s':>6}")
    for n in sizes:
        log(f"progress: recording {n} attempts")
        db = work / f"progress-{n}" / "attempts.db"
        db.parent.mkdir(parents=True)
        candidates = max(1, n // 100)
        per = attempts_db.fill(db, n, candidates)
        who = attempts_db.candidate_name(0)
        attempts_db.require(db, n)
        attempts_db.require(db, per[who], who)
        argv = gpulab("progress", "--candidate", who, "--db", str(db))
        shown = json.loads(run([*argv, "--json"], env).out)
        if len(shown["attempts"]) != per[who]:
            raise SystemExit(f"progress --json shows {len(shown['attempts'])} attempts of {who}, not {per[who]}")
        run(argv, env)  # warm-up
        wall, cpu = medians([run(argv, env) for _ in range(runs)])
        print(f"{n:>9} {candidates:>10} {wall:>7.3f} {cpu:>6.3f}   ({machine()})", flush=True)


# ---- simulated nodes --------------------------------------------------------------------------------------


def simulated_nodes(folder: Path, count: int) -> list[Path]:
    """``count`` simulated HGX H100 nodes, each a state file of its own."""
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import save_state

    folder.mkdir(parents=True, exist_ok=True)
    nodes = []
    for i in range(count):
        path = folder / f"node{i:04d}.json"
        if not path.exists():
            save_state(load_fixture("hgx-h100", host=f"node{i:04d}"), path)
        nodes.append(path)
    return nodes


def inventory(path: Path, nodes: list[Path]) -> Path:
    lines = ["all:", "  hosts:"]
    for i, node in enumerate(nodes):
        lines.append(f"    node{i:04d}: {{gpulab_target: 'mock:{node}', gpulab_candidate: c{i:04d}}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


READS = """
import atexit, sys
path, argv = sys.argv[1], sys.argv[2:]
opened = [0]
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)) and str(args[0]) == path:
        opened[0] += 1
sys.addaudithook(hook)
atexit.register(lambda: sys.stderr.write(f"\\ngpulab-bench-opens {opened[0]}\\n"))
sys.argv = ["gpulab", *argv]
from assessor.cli import main
main()
"""


def bench_grade(runs: int, work: Path, env: dict[str, str]) -> None:
    from bench import attempts_db

    (node,) = simulated_nodes(work / "grade", 1)
    db = work / "grade" / "attempts.db"
    target = ["-t", f"mock:{node}", "--candidate", "ada", "--db", str(db)]
    run(gpulab("lab", "start", LAB, *target), env)
    grade = gpulab("lab", "grade", LAB, *target)
    opens = run([sys.executable, "-c", READS, str(node), "lab", "grade", LAB, *target], env, ok=(0, 1))
    found = re.search(r"gpulab-bench-opens (\d+)", opens.err)
    times = [run(grade, env, ok=(0, 1)) for _ in range(runs)]
    attempts_db.require(db, runs + 1, "ada")  # every grade after a start is recorded
    wall, cpu = medians(times)
    print(f"\nlab grade {LAB} on one simulated node (mock:STATE.json, after lab start), median of {runs}")
    print(f"  {wall:.3f} s wall, {cpu:.3f} s cpu; opens the node's state file {found[1] if found else '?'} times")


def bench_cohort(sizes: list[int], runs: int, memory_hosts: int, work: Path, env: dict[str, str]) -> None:
    from bench import attempts_db

    nodes = simulated_nodes(work / "nodes", max([*sizes, memory_hosts]))
    peaks: dict[int, float] = {}
    if sizes:
        print(
            f"\ncohort against assess on simulated hosts (each its own state file), {LAB}, median of {runs} "
            "interleaved runs (one over 32 hosts)"
        )
        print(
            f"{'hosts':>6} {'assess s':>9} {'cpu s':>6} {'start s':>8} {'cpu s':>6} {'grade s':>8} {'cpu s':>6} "
            f"{'grade/assess':>13} {'cpu ratio':>10}"
        )
    for n in sizes:
        log(f"cohort: {n} hosts")
        inv = inventory(work / f"inv{n}.yml", nodes[:n])
        db = work / f"cohort-{n}.db"
        cohort = ["-i", str(inv), "--db", str(db)]
        assessed, started, graded = [], [], []
        for i in range(runs if n <= 32 else 1):
            assessed.append(assess(inv, n, work, env))
            started.append(run(gpulab("lab", "start", LAB, *cohort), env))
            graded.append(run(gpulab("lab", "grade", LAB, *cohort), env, (0, 1)))
            attempts_db.require(db, n * (i + 1))  # every host's candidate graded and recorded
            run(gpulab("lab", "reset", LAB, *cohort), env)
        peaks[n] = max(r.rss_mb for r in assessed)
        (aw, ac), (sw, sc), (gw, gc) = medians(assessed), medians(started), medians(graded)
        print(
            f"{n:>6} {aw:>9.2f} {ac:>6.2f} {sw:>8.2f} {sc:>6.2f} {gw:>8.2f} {gc:>6.2f} {gw / aw:>12.2f}x "
            f"{gc / ac:>9.2f}x",
            flush=True,
        )
    if memory_hosts and memory_hosts not in peaks:
        log(f"assess memory: {memory_hosts} hosts")
        inv = inventory(work / f"inv{memory_hosts}.yml", nodes[:memory_hosts])
        peaks[memory_hosts] = assess(inv, memory_hosts, work, env).rss_mb
    if memory_hosts:
        print(
            f"\nassess -i of {memory_hosts} simulated hosts (hgx-h100, --json FILE): peak memory "
            f"{peaks[memory_hosts]:.0f} MB (its processes together)"
        )


def assess(inv: Path, hosts: int, work: Path, env: dict[str, str]) -> Run:
    """`assess -i INV -p hgx-h100 --json FILE`, checked to have assessed every host."""
    out = work / f"assess-{hosts}.json"
    done = run(gpulab("assess", "-i", str(inv), "-p", "hgx-h100", "--json", str(out)), env, (0, 1, 3))
    if len(json.loads(out.read_text(encoding="utf-8"))["targets"]) != hosts:
        raise SystemExit(f"assess -i of {hosts} hosts did not assess {hosts} hosts")
    return done


def sizes_of(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", default="1024,10000", help="fleet sizes of `report fleet` ('' to skip)")
    ap.add_argument("--attempts", default="100,10000", help="database sizes of `progress` ('' to skip)")
    ap.add_argument("--cohort", default="8,32,200,1024", help="cohort sizes against assess ('' to skip)")
    ap.add_argument(
        "--memory-hosts",
        type=int,
        help="hosts of the assess whose memory is measured (default: the largest cohort size; 0: skip)",
    )
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (cohort sizes over 32: one)")
    ap.add_argument("--out", type=Path, help="keep the files here (default: a temporary folder, removed)")
    args = ap.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="gpulab-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = environment(work)
    cohort = sizes_of(args.cohort)
    memory_hosts = max(cohort, default=0) if args.memory_hosts is None else args.memory_hosts
    print(f"gpulab at scale; {machine()} at the start")
    slowest = 0.0
    try:
        if sizes_of(args.hosts):
            slowest = bench_reports(sizes_of(args.hosts), args.runs, work, env)
        if sizes_of(args.attempts):
            bench_progress(sizes_of(args.attempts), args.runs, work, env)
        bench_grade(args.runs, work, env)
        bench_cohort(cohort, args.runs, memory_hosts, work, env)
    finally:
        print(f"\n{machine()} at the end")
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    if slowest >= AIM_REPORT_S:
        print(f"slowest report: {slowest:.2f} s wall, over the {AIM_REPORT_S:.0f} s aim")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
