"""A lab README's practice commands, typed into a real shell as a candidate would, work end to end.

The block under "Practise on the simulator" is run as written by bash (with HOME in a temporary folder, so the
attempts database is the candidate's own), all but its last line: the bare ``gpulab sim shell`` that enters the
lab's node needs a terminal. What the candidate types on the node goes through the same command instead, as
``gpulab sim shell node.json -- bash -c '...'``: the checks with the node's own tools and, where the fix is
done on the node, the fix. A ticket for the data centre is written on the host, beside ``node.json``, where
the grade command (under "Get graded") hands it in. Nothing is called in-process, and the running node is
shut down at the end, whatever happened.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assessor.labs.loader import find_lab
from assessor.sim.machine.enter import stop
from assessor.sim.state import load_state

BIN = Path(sys.executable).parent  # the environment gpulab is installed in
# A login shell's PATH on Ubuntu (and root's on Debian); the node's boot runs util-linux pivot_root from sbin.
LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENTER = "gpulab sim shell"  # the README line that enters the node (interactive: a terminal, a login shell)


def shell_blocks(readme: str, heading: str) -> str:
    """The ```bash block that follows ``heading`` in a README."""
    section = readme.split(heading, 1)[1]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match, f"no bash block under {heading}"
    return match.group(1)


def run_as_candidate(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": f"{BIN}:{LOGIN_PATH}",
        "GPULAB_DB": str(home / "attempts.db"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def on_the_node(lines: list[str]) -> str:
    """What the candidate types at the node's shell, as one command line run on the host."""
    typed = "\n".join(["set -euo pipefail", *lines])
    return f"gpulab sim shell node.json -- bash -c {shlex.quote(typed)}"


TICKET = (
    "cat > ticket.yaml <<'EOF'\n"
    "diagnosis:\n  findings:\n"
    "    - {component: mlx5_2, finding: no-link, action: reseat-cable, why: Polling}\n"
    "    - {component: mlx5_6, finding: degraded-rate, actions: [reseat-cable, replace-transceiver], why: 200 on NDR}\n"
    "EOF"
)


@pytest.mark.parametrize(
    ("lab_id", "fix_on_node", "fix_on_host"),
    [
        ("drv-101", "nvidia-smi -pm 1", None),  # root on the node: no sudo, no pretending
        ("ib-402", None, TICKET),  # a physical fault: the ticket is written where it is handed in
    ],
)
def test_the_readme_practice_flow_runs_in_a_shell_and_the_fix_passes(
    lab_id: str, fix_on_node: str | None, fix_on_host: str | None, tmp_path: Path
) -> None:
    readme = find_lab(lab_id).readme.read_text(encoding="utf-8")
    practise = shell_blocks(readme, "## Practise on the simulator").splitlines()
    assert practise[-1] == ENTER, practise  # the README enters the node of the open lab, with no path to type
    setup = practise[:-1]
    assert setup and not any(line.startswith((ENTER, "export ", "enable ")) for line in setup), setup
    grade = shell_blocks(readme, "## Get graded").splitlines()[0].split("#")[0]
    typed = [
        'echo "node: $(hostname)"',
        'echo "tool: $(command -v nvidia-smi)"',
        "nvidia-smi -L | head -1",
        "ibstat | head -1",
        *([fix_on_node] if fix_on_node else []),
    ]
    script = "\n".join([*setup, on_the_node(typed), *([fix_on_host] if fix_on_host else []), grade])
    try:
        done = run_as_candidate(script, tmp_path)
    finally:
        stop(tmp_path / "node.json")  # the node's processes end, pass or fail
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{lab_id} started for" in done.stdout
    assert "NOT isolated" not in done.stderr, done.stderr  # a node of its own, not shims on the host's PATH
    # the commands ran on the node: its host name (not this machine's) and its tools at their real paths
    host = load_state(tmp_path / "node.json").host
    assert host != socket.gethostname()
    assert f"node: {host}\n" in done.stdout, done.stdout[-3000:]
    assert "tool: /usr/bin/nvidia-smi\n" in done.stdout
    assert "GPU 0:" in done.stdout and "CA '" in done.stdout  # the candidate's tools answer from the node
    assert "): PASSED" in done.stdout and "recorded as an attempt" in done.stdout
