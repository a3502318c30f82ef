"""A lab README's practice commands, typed into a real shell as a candidate would, work end to end.

The block under "Practise on the simulator" is run as written by bash (with HOME in a temporary folder, so
``~/.gpulab/bin`` is the candidate's own), then the candidate fixes the node with the simulated tools on
their PATH and grades it with the command under "Get graded". Nothing is called in-process: this is the
path where an exported ``GPULAB_SIM_STATE`` arms the pynvml hook in every Python process, gpulab's own
included.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assessor.labs.loader import find_lab

BIN = Path(sys.executable).parent  # the environment gpulab is installed in


def shell_blocks(readme: str, heading: str) -> str:
    """The ```bash block that follows ``heading`` in a README."""
    section = readme.split(heading, 1)[1]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match, f"no bash block under {heading}"
    return match.group(1)


def run_as_candidate(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": f"{BIN}:/usr/bin:/bin",
        "GPULAB_DB": str(home / "attempts.db"),
        "GPULAB_SIM_EUID": "0",  # what sudo gives at a real node's shell
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


@pytest.mark.parametrize(
    ("lab_id", "fix"),
    [
        ("drv-101", "nvidia-smi -pm 1"),
        (
            "ib-402",
            "cat > ticket.yaml <<'EOF'\n"
            "diagnosis:\n  findings:\n"
            "    - {component: mlx5_2, finding: no-link, action: reseat-cable, why: Polling}\n"
            "    - {component: mlx5_6, finding: degraded-rate, action: replace-transceiver, why: 200 on NDR}\n"
            "EOF",
        ),
    ],
)
def test_the_readme_practice_flow_runs_in_a_shell_and_the_fix_passes(lab_id: str, fix: str, tmp_path: Path) -> None:
    readme = find_lab(lab_id).readme.read_text(encoding="utf-8")
    practise = shell_blocks(readme, "## Practise on the simulator")
    grade = shell_blocks(readme, "## Get graded").splitlines()[0].split("#")[0]
    script = "\n".join([practise, "nvidia-smi -L | head -1", "ibstat | head -1", fix, grade])
    done = run_as_candidate(script, tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{lab_id} started for" in done.stdout
    assert "GPU 0:" in done.stdout and "CA '" in done.stdout  # the candidate's tools answer from the node
    assert "): PASSED" in done.stdout and "recorded as an attempt" in done.stdout
