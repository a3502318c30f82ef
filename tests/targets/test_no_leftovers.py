"""Nothing gpulab starts outlives a host's time limit or an interrupt, on the node or here.

A hung tool (a GPU fallen off the bus: nvidia-smi never returns) fails its host within the host's limit while
the other host finishes, and afterwards no process of the hung node's sessions runs on it, and no
ansible-playbook, fork or ssh (client or ControlMaster) of gpulab's runs here. The bed's nodes mark every
process of their SSH sessions with an environment variable (sshd's SetEnv); the test marks its own children
the same way; :func:`tests.support.sshbed.marked_processes` finds what is left of either.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs.drivers.ansible import run_playbook_on_hosts
from assessor.labs.loader import default_root, find_lab
from assessor.targets import TargetOptions
from tests.support.sshbed import SshBed, marked_processes, sshd_available, write_inventory

ROOT = Path(__file__).resolve().parents[2]
NODE_MARK = "GPULAB_TEST_NODE_MARK"  # on every process of a bed node's SSH sessions
LOCAL_MARK = "GPULAB_TEST_LOCAL_MARK"  # on every process this test starts here, and on what those start
HANG = "exec sleep 3600"  # nvidia-smi on a node whose GPU fell off the bus
# a lab's start playbook whose task never returns on the node called stuck
HUNG_SETUP = """- name: A start that hangs on one node
  hosts: all
  gather_facts: false
  tasks:
    - name: Ask the GPU
      ansible.builtin.command: "{{ 'sleep 3599' if inventory_hostname == 'stuck' else 'true' }}"
      changed_when: false
"""


@pytest.fixture(scope="module")
def mark() -> str:
    return uuid.uuid4().hex


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, mark: str) -> Iterator[SshBed]:
    """``calm``: no NVIDIA tools (a capture there is quick); ``stuck``: its nvidia-smi hangs."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("leftovers")).setup(0)
    bed.add_node("calm", "hgx-h100", shims=False, env={NODE_MARK: mark})
    bed.add_node("stuck", "hgx-h100", shims=False, env={NODE_MARK: mark}, extra_bin={"nvidia-smi": HANG})
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def left_behind(mark: str, within: float = 10.0) -> list[str]:
    """What still runs of the nodes' sessions or of this test's children after ``within`` seconds (the node's
    guard looks once a second, then gives SIGTERM a second before SIGKILL)."""
    deadline = time.monotonic() + within
    while True:
        found = marked_processes(NODE_MARK, mark) + marked_processes(LOCAL_MARK, mark)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.25)


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def hung_task_runs(mark: str) -> bool:
    """The start playbook's task (not a capture's nvidia-smi, ``sleep 3600``) runs on ``stuck``."""
    return any(p.endswith(" sleep 3599") for p in marked_processes(NODE_MARK, mark))


def inventory(bed: SshBed, tmp_path: Path) -> Path:
    """Both nodes, Ansible's modules run by this venv's Python (as tests/targets/test_playbooks.py does)."""
    inv = write_inventory(bed, tmp_path, ["calm", "stuck"])
    inv.write_text(inv.read_text().replace("  vars:\n", f"  vars:\n    ansible_python_interpreter: {sys.executable}\n"))
    return inv


def hung_lab(tmp_path: Path) -> Path:
    """A copy of the shipped labs where health-101's start playbook hangs on ``stuck``."""
    root = tmp_path / "labs"
    shutil.copytree(default_root(), root)
    (root / "health" / "health-101" / "setup.yml").write_text(HUNG_SETUP)
    return root


def test_a_hung_capture_over_ssh_is_an_error_for_its_host_and_nothing_of_it_stays_on_the_node(
    bed: SshBed, tmp_path: Path, mark: str
) -> None:
    inv = write_inventory(bed, tmp_path, ["calm", "stuck"])
    started = time.monotonic()
    args = ["capture", "-i", str(inv), "--out", str(tmp_path / "snaps"), "--known-hosts", str(bed.known_hosts)]
    result = CliRunner().invoke(main, [*args, "--timeout", "60", "--host-timeout", "4"])
    assert time.monotonic() - started < 30, "the hung host held the capture"
    assert result.exit_code == 1, result.output
    assert "stuck: error: capture on" in result.stderr and "longer than 4 s" in result.stderr
    assert "calm: snapshot written" in result.stdout  # the other host finished
    assert left_behind(mark) == []  # neither nvidia-smi's sleep nor the capture's shell, nor an ssh here


def test_a_hung_task_of_a_cohort_lab_fails_its_host_and_leaves_nothing_running(
    bed: SshBed, tmp_path: Path, mark: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCAL_MARK, mark)  # ansible-playbook, its forks and their ssh processes inherit it
    lab = find_lab("health-101", hung_lab(tmp_path))
    options = TargetOptions(identity=str(bed.client_key), known_hosts=str(bed.known_hosts), host_timeout=5)
    outcomes = run_playbook_on_hosts(lab, "setup", str(inventory(bed, tmp_path)), ["calm", "stuck"], options)
    assert outcomes["calm"].status == "ok"
    assert outcomes["stuck"].status == "failed"
    assert "Timed out after 5 second(s)" in outcomes["stuck"].message
    assert left_behind(mark) == []  # no ansible-playbook, no ssh master here; no sleep on the node


def test_sigint_to_a_lab_start_over_ssh_stops_ansible_here_and_the_task_on_the_node(
    bed: SshBed, tmp_path: Path, mark: str
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GPULAB_LABS": str(hung_lab(tmp_path)),
        "GPULAB_DB": str(tmp_path / "attempts.db"),
        LOCAL_MARK: mark,
    }
    args = ["lab", "start", "health-101", "-i", str(inventory(bed, tmp_path)), "--target", "stuck"]
    args += ["--known-hosts", str(bed.known_hosts), "--candidate", "ada"]
    code = "import sys; from assessor.cli import main; sys.exit(main())"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a terminal's Ctrl-C reaches gpulab's process group, and only it
    )
    try:
        assert wait_for(lambda: hung_task_runs(mark), 90), "the start never reached the hung task"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpulab: interrupted"), err
    assert left_behind(mark) == []  # no ansible-playbook or ssh here, no sleep on the node
