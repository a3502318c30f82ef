"""Cohort benchmark: `gpulab lab start` and `lab grade` over 1, 8 and 32 loopback sshd nodes at once,
against the one-host commands (`-t HOST`) a shell loop over the cohort would run.

    .venv/bin/python bench/cohort.py [--sizes 1,8,32] [--rounds 1] [--forks 32] [--lab health-101]

Every node is a real sshd on 127.0.0.1 whose sessions run the simulator's tools (tests/support/sshbed.py):
the lab's setup playbook really runs through ansible-runner and every grade really captures over SSH. The
nodes' sshd and tools share the controller's cores, so on a small machine the figures for many nodes
measure the cores as much as gpulab. Needs sshd (scripts/setup.sh installs it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.sshbed import SshBed  # noqa: E402

GPULAB = [sys.executable, "-c", "from assessor.cli import main; main()"]


def timed(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0, 1)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv[3:])}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return elapsed


def inventory(bed: SshBed, path: Path, n: int) -> Path:
    """The first n nodes, each with its candidate; Python and become as the test bed needs them."""
    lines = [
        "all:",
        "  vars:",
        f"    ansible_user: {bed.user}",
        f"    ansible_ssh_private_key_file: {bed.client_key}",
        "    ansible_become: false",
        f"    ansible_python_interpreter: {sys.executable}",
        "  hosts:",
    ]
    for i, node in enumerate(bed.nodes[:n]):
        lines.append(
            f"    {node.name}: {{ansible_host: 127.0.0.1, ansible_port: {node.port}, gpulab_candidate: c{i + 1:02d}}}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--forks", type=int, default=32)
    ap.add_argument("--lab", default="health-101")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="gpulab-bench-cohort-"))
    bed = SshBed(root).setup(0)
    for i in range(max(sizes)):
        bed.add_node(f"node{i + 1:02d}", "hgx-h100", env={"GPULAB_SIM_EUID": "0"}, sim_root=True)
    bed.write_known_hosts()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env["GPULAB_DB"] = str(root / "attempts.db")
    ssh = ["--known-hosts", str(bed.known_hosts)]
    try:
        bed.start()
        rows = []
        one_start = one_grade = 0.0
        for n in sizes:
            inv = inventory(bed, root / f"inv{n}.yml", n)
            cohort = ["-i", str(inv), *ssh, "--forks", str(args.forks)]
            starts, grades = [], []
            for _ in range(args.rounds):
                starts.append(timed([*GPULAB, "lab", "start", args.lab, *cohort], env))
                grades.append(timed([*GPULAB, "lab", "grade", args.lab, *cohort, "--out", str(root / "book")], env))
                timed([*GPULAB, "lab", "reset", args.lab, *cohort], env)
            if n == sizes[0]:
                # the one-host commands, as a shell loop over the cohort runs them
                single = ["-i", str(inv), "-t", bed.nodes[0].name, *ssh]
                one_start = statistics.median(
                    timed([*GPULAB, "lab", "start", args.lab, *single], env) for _ in range(args.rounds)
                )
                one_grade = statistics.median(
                    timed([*GPULAB, "lab", "grade", args.lab, *single], env) for _ in range(args.rounds)
                )
                timed([*GPULAB, "lab", "reset", args.lab, *single], env)
            rows.append((n, statistics.median(starts), statistics.median(grades)))
            print(f"  {n} hosts measured", file=sys.stderr, flush=True)
        print(
            f"cohort {args.lab} over loopback sshd (simulated tools), forks {args.forks}, "
            f"median of {args.rounds} run(s), {os.cpu_count()} cores"
        )
        print(f"one host (-t HOST): start {one_start:.2f} s, grade {one_grade:.2f} s")
        print(
            f"{'hosts':>5} {'start s':>8} {'vs 1 host':>9} {'loop s':>7} {'grade s':>8} {'vs 1 host':>9} {'loop s':>7}"
        )
        for n, s, g in rows:
            print(
                f"{n:>5} {s:>8.2f} {s / one_start:>8.1f}x {n * one_start:>7.1f} "
                f"{g:>8.2f} {g / one_grade:>8.1f}x {n * one_grade:>7.1f}"
            )
        print("(start: one ansible-runner run of the setup playbook over the cohort, one start recorded per host;")
        print(" grade: every host captured over SSH at once, graded, recorded and written to the gradebook;")
        print(" loop s: the one-host command run once per host, as a shell loop over the cohort would)")
    finally:
        bed.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
