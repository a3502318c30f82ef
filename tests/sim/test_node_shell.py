"""``gpulab sim shell``: the simulated node as a Linux machine of its own, typed at as a candidate types.

Every command here runs inside the node through the real ``gpulab sim shell`` (util-linux ``unshare`` and
``nsenter``, real ``ps``, ``fuser``, ``lsof``, ``kill``, ``sed``, ``tail``), never through the simulator's
Python functions.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assessor.sim import faults
from assessor.sim.config_root import root_for_state
from assessor.sim.state import load_state, stamp_status
from tests.support.nodeshell import GPULAB, NodeShell, node_shell


@pytest.fixture
def h100(tmp_path: Path) -> Iterator[NodeShell]:
    with node_shell(tmp_path, "hgx-h100", "gpu-node-07") as shell:
        yield shell


@pytest.fixture
def a100(tmp_path: Path) -> Iterator[NodeShell]:
    with node_shell(tmp_path, "dgx-a100", "dgx-a100-03") as shell:
        yield shell


def test_the_node_has_its_own_host_name_everywhere(h100: NodeShell) -> None:
    out = h100.out("hostname; uname -n; cat /etc/hostname; echo $HOSTNAME").split()
    assert out == ["gpu-node-07"] * 4
    assert socket.gethostname() != "gpu-node-07"  # the host keeps its own
    prompt = h100.run("bash -ic 'echo \"$PS1\"' 2>/dev/null").stdout
    assert "\\h" in prompt or "gpu-node-07" in prompt


def test_ordinary_tools_edit_the_nodes_nccl_conf_and_nccl_honours_them(a100: NodeShell) -> None:
    run = "all_reduce_perf -b 8 -e 8G -f 2 -g 8 2>&1"
    quiet = a100.out(run)
    assert "NCCL INFO" not in quiet
    # >> then tail: the edit is the node's file, and NCCL reads it
    assert a100.out("echo NCCL_DEBUG=INFO >> /etc/nccl.conf && tail -n1 /etc/nccl.conf") == "NCCL_DEBUG=INFO\n"
    loud = a100.out(run)
    assert "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB" in loud
    # grep finds it; sed -i changes it in place; NCCL follows
    assert a100.out("grep -c '^NCCL_DEBUG=INFO' /etc/nccl.conf") == "1\n"
    a100.out("sed -i 's/^NCCL_DEBUG=INFO/NCCL_DEBUG=WARN/' /etc/nccl.conf")
    assert "NCCL INFO" not in a100.out(run)
    # the edit is in the node's own files on the host side, where the grader's tools read them
    assert "NCCL_DEBUG=WARN" in (root_for_state(a100.state) / "etc" / "nccl.conf").read_text()


def test_nccl_settings_come_from_the_nodes_files_and_environment_only(a100: NodeShell) -> None:
    # the site's settings are in /etc/nccl.conf, where a candidate finds them
    assert "NCCL_IB_HCA=mlx5_0" in a100.out("grep -h NCCL_IB_HCA /etc/nccl.conf")
    faults.inject(a100.state, "nccl-socket-fallback")
    assert a100.out("grep -rh NCCL_IB_HCA /etc/nccl.conf") == "NCCL_IB_HCA=mlx5_99\n"
    debug = "NCCL_DEBUG=INFO all_reduce_perf -b 8 -e 8G -f 2 -g 8 2>&1"
    assert "NET/Socket" in a100.out(debug)
    # the environment outranks the file, as NCCL documents it
    assert "NET/IB : Using [0]mlx5_0:1/IB" in a100.out(f"NCCL_IB_HCA=mlx5_0 {debug}")
    # the fix a candidate types: the line out of the file; NCCL then uses every IB HCA it finds
    a100.out("sed -i '/NCCL_IB_HCA/d' /etc/nccl.conf")
    assert "NET/IB : Using [0]mlx5_0:1/IB" in a100.out(debug)
    # and what the grader's tools see (no login environment) agrees
    from assessor.sim.tools import Session, run_tool

    argv = ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"]
    graded = run_tool(argv, Session(path=a100.state, env={"NCCL_DEBUG": "INFO"}))
    assert "NET/IB : Using [0]mlx5_0:1/IB" in graded.stdout + graded.stderr


def test_ps_lists_the_nodes_daemons_and_no_host_process(h100: NodeShell) -> None:
    host_sleeper = subprocess.Popen(["sleep", "4242"])
    try:
        listing = h100.out("ps -eo pid=,comm=,args=")
    finally:
        host_sleeper.kill()
        host_sleeper.wait()
    comms = {line.split()[1] for line in listing.splitlines()}
    assert {"nvidia-persiste", "nv-hostengine"} <= comms  # comm is 15 characters, as on a real node
    assert "sleep 4242" not in listing
    assert "pytest" not in listing and "sshd" not in listing
    state = load_state(h100.state)
    from assessor.sim.tools.system import main_pid

    pids = {int(line.split()[0]) for line in listing.splitlines()}
    assert main_pid(state, "nvidia-dcgm.service") in pids  # the PID systemctl status shows is the process
    assert h100.out("pgrep -x nv-hostengine") == f"{main_pid(state, 'nvidia-dcgm.service')}\n"


def test_fuser_names_the_holders_and_stopping_them_lets_the_reset_through(h100: NodeShell) -> None:
    holders = h100.run("fuser -v /dev/nvidia0")
    assert "nvidia-persiste" in holders.stderr and "nv-hostengine" in holders.stderr
    refused = h100.run("nvidia-smi -r -i 0")
    assert refused.returncode != 0 and "In use by another client" in refused.stdout + refused.stderr
    # the drain as an admin types it: systemctl for one, kill for the other, the DRM module out
    h100.out("systemctl stop nvidia-persistenced && kill $(pgrep -x nv-hostengine) && modprobe -r nvidia_drm")
    assert h100.run("fuser /dev/nvidia0").stdout.strip() == ""
    assert h100.run("systemctl is-active nvidia-dcgm").stdout.strip() == "inactive"
    done = h100.run("nvidia-smi -r -i 0")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_gpu_job_is_a_process_holding_its_gpu_and_killing_it_frees_the_gpu(h100: NodeShell) -> None:
    faults.inject(h100.state, "gpu-job", gpu=5, pid=31337)
    assert "31337" in h100.out("sleep 0.6; fuser /dev/nvidia5 2>/dev/null")
    assert "31337" in h100.out("lsof -t /dev/nvidia5")
    assert h100.out("nvidia-smi --query-compute-apps=pid --format=csv,noheader") == "31337\n"
    h100.out("kill -9 31337")
    assert h100.out("nvidia-smi --query-compute-apps=pid --format=csv,noheader") == ""
    assert all(p.pid != 31337 for g in load_state(h100.state).gpus for p in g.processes)


def test_kill_of_a_host_pid_from_inside_leaves_the_host_process_alive(h100: NodeShell) -> None:
    victim = subprocess.Popen(["sleep", "300"])
    try:
        tried = h100.run(f"kill -9 {victim.pid}; /usr/bin/kill -9 {victim.pid}")
        assert tried.returncode != 0
        assert tried.stderr.count("No such process") == 2  # bash's builtin and procps kill alike
        h100.run("kill -9 1")  # the node's own init ignores it, as a real init does
        assert h100.out("hostname") == "gpu-node-07\n"
        time.sleep(0.2)
        assert victim.poll() is None  # still running
    finally:
        victim.kill()
        victim.wait()


def test_reboot_inside_changes_the_nodes_boot_id_and_not_the_hosts(h100: NodeShell) -> None:
    host_boot = Path("/proc/sys/kernel/random/boot_id").read_text()
    before = h100.out("cat /proc/sys/kernel/random/boot_id")
    assert before != host_boot
    h100.out("reboot")
    after = h100.out("cat /proc/sys/kernel/random/boot_id")
    assert after != before
    h100.out("systemctl reboot")
    assert h100.out("cat /proc/sys/kernel/random/boot_id") not in (before, after)
    assert Path("/proc/sys/kernel/random/boot_id").read_text() == host_boot
    # the daemons came back under new PIDs, as after a real boot
    assert "nv-hostengine" in h100.out("ps -eo comm=")


def test_sudo_works_as_for_an_admin(h100: NodeShell) -> None:
    assert h100.out("sudo nvidia-smi -L").count("NVIDIA H100") == 8
    assert h100.out("sudo -E -u root id -u") == "0\n"


def test_the_tools_sit_at_their_real_paths(h100: NodeShell) -> None:
    paths = h100.out("command -v nvidia-smi ibstat systemctl dcgmi lsmod").split()
    assert paths == [
        "/usr/bin/nvidia-smi",
        "/usr/sbin/ibstat",
        "/usr/bin/systemctl",
        "/usr/bin/dcgmi",
        "/usr/sbin/lsmod",
    ]
    assert "Kernel Module" in h100.out("cat /proc/driver/nvidia/version")
    assert "GPU 0: NVIDIA H100" in h100.out("nvidia-smi -L")
    # the fabric manager's binary typed by hand answers -v; perfquery (infiniband-diags) is there too
    assert h100.out("nv-fabricmanager -v").startswith("Fabric Manager version is : ")
    assert h100.out("command -v perfquery").strip() == "/usr/sbin/perfquery"
    assert h100.out("perfquery -x").startswith("# Port extended counters: Lid ")


def test_the_grader_s_record_is_out_of_reach_inside(h100: NodeShell) -> None:
    state = str(h100.state)
    assert h100.run(f"ls {state}").returncode != 0
    assert h100.run(f"ls {h100.state.parent}").returncode != 0
    # a variable naming another node or root is not honoured: the node's tools answer for the node
    hostile = h100.run("GPULAB_SIM_STATE=/nonexistent GPULAB_SIM_ROOT=/ nvidia-smi -L")
    assert hostile.returncode == 0 and "GPU 7" in hostile.stdout
    # writes anywhere the candidate can reach leave the state file's stamp intact
    h100.out("echo x > /etc/gpulab-was-here; echo y >> /root/notes; touch /usr/bin/x || true")
    assert stamp_status(h100.state) == "ok"
    assert not Path("/etc/gpulab-was-here").exists()


def test_host_paths_are_read_only_or_absent(h100: NodeShell) -> None:
    done = h100.run("echo 1 > /proc/sys/vm/drop_caches")
    assert done.returncode != 0
    assert h100.run("ls /work /tmp/pytest-of-root 2>/dev/null").stdout == ""


def test_without_namespaces_it_says_so_and_falls_back_to_shims(tmp_path: Path) -> None:
    with node_shell(tmp_path) as shell:
        env = {**os.environ, "GPULAB_NODE_ISOLATION": "shims"}
        done = shell.run("nvidia-smi -L | head -1; type kill", env=env)
    assert done.returncode == 0
    assert "NOT isolated from the host" in done.stderr
    assert len([line for line in done.stderr.splitlines() if "gpulab sim shell" in line]) == 1
    assert done.stdout.startswith("GPU 0: NVIDIA H100")
    assert "builtin" not in done.stdout  # bash's kill is off: kill is the simulator's


def test_sim_shell_without_state_enters_the_open_labs_node(tmp_path: Path) -> None:
    db = tmp_path / "attempts.db"
    state = tmp_path / "node.json"
    subprocess.run(
        [*GPULAB, "sim", "init", "--fixture", "dgx-a100", "--state", str(state), "--host", "lab-7"],
        check=True,
        capture_output=True,
    )
    try:
        started = subprocess.run(
            [*GPULAB, "lab", "start", "drv-101", "--target", f"mock:{state}", "--db", str(db), "--candidate", "ada"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert started.returncode == 0, started.stderr
        assert f"gpulab sim shell {state}" in started.stdout
        assert f"gpulab sim shell --candidate ada --db {db}" in started.stdout  # the bare form finds this lab
        inside = subprocess.run(
            [*GPULAB, "sim", "shell", "--db", str(db), "--candidate", "ada", "--", "hostname"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert inside.stdout == "lab-7\n", inside.stderr
    finally:
        from assessor.sim.machine.enter import stop

        stop(state)


def test_sim_stop_ends_every_process_of_the_node(h100: NodeShell) -> None:
    from assessor.sim.machine.enter import running
    from assessor.sim.machine.layout import NodePaths

    h100.out("true")
    node = running(NodePaths.of(h100.state))
    assert node is not None
    h100.stop()
    assert running(NodePaths.of(h100.state)) is None
    for pid in (node.agent, node.init):
        # gone, or a zombie its parent has not reaped yet: either way it runs no more
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except FileNotFoundError:
            continue
        assert fields[0] == "Z", f"{pid} still runs: {fields[0]}"
