"""Fleet benchmark: capture+assess of 1, 8 and 32 loopback sshd nodes, against Ansible running
the same capture commands (`ansible all -m shell`) with the same forks on the same hosts, and
playbooks/capture.yml (Ansible's forks, snapshots fetched home) in hosts per minute.

    .venv/bin/python bench/fleet.py [--sizes 1,8,32] [--rounds 3] [--forks 32] [--tools sim,replay]

Two kinds of node tools:
- sim: the simulator's shims, a Python process per command (what the test bed runs);
- replay: each node's outputs, captured once from the simulator, served by `cat` scripts, so the
  figures measure the transport, parsing and grading rather than the simulated tools' start-up.
Needs sshd (scripts/setup.sh installs it). Every node listens on 127.0.0.1 only.
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

from tests.support.sshbed import Node, SshBed  # noqa: E402

BIN = Path(sys.executable).parent


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    return elapsed, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forks", type=int, default=32)
    ap.add_argument("--tools", default="sim,replay")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for tools in args.tools.split(","):
        bench(sizes, args.rounds, args.forks, tools)


def replay_scripts(node_state: Path, out: Path) -> dict[str, str]:
    """sh scripts answering the capture commands with outputs the simulator gave once."""
    from assessor.capture.run import COMMANDS
    from assessor.sim.state import load_state
    from assessor.sim.tools import Session, run_tool

    session = Session(state=load_state(node_state))
    cases: dict[str, list[str]] = {}
    for command in COMMANDS:
        argv = list(command.argvs[0])
        if argv[0] in ("cat", "uname"):
            continue  # the real ones answer
        result = run_tool(argv, session)
        name = out / command.file
        name.write_text(result.stdout)
        args = " ".join(argv[1:])
        cases.setdefault(argv[0], []).append(f'  "{args}") cat {name}; exit {result.exit_code} ;;')
    return {tool: 'case "$*" in\n' + "\n".join(lines) + "\nesac\nexit 2" for tool, lines in cases.items()}


def ssh_floor(bed: SshBed, n: int) -> float:
    """Wall time of `ssh node true` on n nodes at once (OpenSSH client)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(node: Node) -> None:
        subprocess.run(
            [
                "ssh",
                "-q",
                "-o",
                "BatchMode=yes",
                "-o",
                f"UserKnownHostsFile={bed.known_hosts}",
                "-o",
                "ControlMaster=no",
                "-i",
                str(bed.client_key),
                "-p",
                str(node.port),
                f"{bed.user}@127.0.0.1",
                "true",
            ],
            check=True,
        )

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        list(pool.map(one, bed.nodes[:n]))
    return time.perf_counter() - start


def capture_playbook(bed: SshBed, root: Path, n: int, forks: int, rounds: int) -> float:
    """Median wall time of playbooks/capture.yml over the first n nodes of the bed."""
    inv = bed.inventory(root / f"inv{n}.yml", bed.nodes[:n])
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_ARGS": f"-o UserKnownHostsFile={bed.known_hosts} -o ControlMaster=auto -o ControlPersist=60s",
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable,
        "ANSIBLE_NOCOLOR": "1",
    }
    times = []
    for i in range(rounds):
        snaps = root / f"snaps{n}-{i}"
        argv = [
            str(BIN / "ansible-playbook"),
            "-i",
            str(inv),
            str(ROOT / "playbooks" / "capture.yml"),
            "-f",
            str(forks),
            "-e",
            f"gpulab_snapshot_dir={snaps}",
            "-e",
            f"gpulab_controller_python={sys.executable}",
        ]
        t, rc = timed(argv, env)
        if rc != 0:
            raise SystemExit(f"capture.yml failed (exit {rc}) on {n} nodes")
        times.append(t)
    return statistics.median(times)


def bench(sizes: list[int], rounds: int, forks: int, tools: str) -> None:
    from assessor.capture import batch
    from assessor.capture.run import COMMANDS

    root = Path(tempfile.mkdtemp(prefix="gpulab-bench-"))
    bed = SshBed(root)
    if tools == "replay":
        from assessor.sim.fixtures import load_fixture
        from assessor.sim.state import save_state

        bed.setup(0)
        for i in range(max(sizes)):
            name = f"node{i + 1:02d}"
            recorded = root / "recorded" / name
            recorded.mkdir(parents=True)
            save_state(load_fixture("hgx-h100", host=name), recorded / "state.json")
            bed.add_node(name, "hgx-h100", extra_bin=replay_scripts(recorded / "state.json", recorded), shims=False)
    else:
        bed.setup(max(sizes))
    bed.write_known_hosts()
    bed.start()
    script = batch.script(list(COMMANDS), 30)
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_SSH_ARGS": f"-o UserKnownHostsFile={bed.known_hosts} -o ControlMaster=auto -o ControlPersist=60s",
            "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable,
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    try:
        rows = []
        for n in sizes:
            inv = bed.inventory(root / f"inv{n}.yml", bed.nodes[:n])
            gl = [
                str(BIN / "gpulab"),
                "assess",
                "-i",
                str(inv),
                "-p",
                "hgx-h100",
                "-f",
                "json",
                "--forks",
                str(forks),
                "--known-hosts",
                str(bed.known_hosts),
            ]
            an = [str(BIN / "ansible"), "all", "-i", str(inv), "-m", "shell", "-a", script, "-f", str(forks)]
            g_times, a_times = [], []
            for _ in range(rounds):
                t, rc = timed(gl)
                if rc not in (0, 1):
                    raise SystemExit(f"gpulab failed (exit {rc}) on {n} nodes")
                g_times.append(t)
                t, rc = timed(an, env)
                if rc != 0:
                    raise SystemExit(f"ansible failed (exit {rc}) on {n} nodes")
                a_times.append(t)
            rows.append((n, statistics.median(g_times), statistics.median(a_times), ssh_floor(bed, n)))
        one = rows[0][1]
        print(f"fleet capture+assess over loopback sshd, node tools: {tools}, forks {forks}, median of {rounds} runs")
        print(
            f"{'nodes':>5} {'gpulab s':>9} {'vs 1 node':>9} {'ansible s':>10} {'ansible/gpulab':>15}"
            f" {'ssh true s':>11} {'gpulab/floor':>13}"
        )
        for n, g, a, floor in rows:
            print(f"{n:>5} {g:>9.2f} {g / one:>8.1f}x {a:>10.2f} {a / g:>14.1f}x {floor:>11.2f} {g / floor:>12.2f}x")
        n = sizes[-1]
        took = capture_playbook(bed, root, n, forks, rounds)
        print(
            f"capture.yml on {n} nodes, forks {forks}: {took:.1f} s, {60 * n / took:.0f} hosts per minute "
            "(snapshots fetched home and unpacked on the controller)"
        )
        print("(gpulab: connect, one batched capture, parse and grade the hgx-h100 profile;")
        print(" ansible: the same capture script through `ansible all -m shell`, no grading;")
        print(" ssh true: OpenSSH running `true` on the same nodes at once: the floor any SSH tool pays here,")
        print(" where the nodes' sshd and tools share the controller's cores)")
    finally:
        bed.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
