"""gpulab's node-wide playbooks through ansible-runner against the loopback sshd test bed.

capture.yml brings back snapshots that grade as a direct SSH assessment does; host keys are checked on every
Ansible run, and no SSH connection of one run is reused by the next (a node whose key changed a second ago is
refused). prepare-node.yml's simulated node is tested in tests/project/test_practice_cluster_role.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import lifecycle
from assessor.labs.loader import find_lab
from assessor.sim import faults
from assessor.sim.state import load_state
from assessor.targets import TargetOptions, ansible
from tests.support.sshbed import Node, SshBed, node, sshd_available, write_inventory

PYTHON = f"        ansible_python_interpreter: {sys.executable}\n"


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("playbed")).setup(3)
    bed.add_node("blank", "hgx-h100", shims=False)  # no simulated tools
    bed.add_node("keys", "hgx-h100", env={"GPULAB_SIM_EUID": "0"}, sim_root=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def inventory(bed: SshBed, tmp_path: Path, names: list[str]) -> Path:
    inv = write_inventory(bed, tmp_path, names)
    text = inv.read_text().replace("  vars:\n", f"  vars:\n{PYTHON.replace('        ', '    ')}", 1)
    inv.write_text(text)
    return inv


def options(bed: SshBed, **kw: Any) -> TargetOptions:
    return TargetOptions(identity=str(bed.client_key), known_hosts=str(bed.known_hosts), **kw)


def verdicts(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {t["host"]: {r["check"]: r["status"] for r in t["results"]} for t in doc["targets"]}


def gpulab(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, json.loads(result.stdout)


def new_host_key(bed: SshBed, target: Node) -> None:
    """The node is rebuilt: a new host key, its sshd restarted on the same port (old sessions live on)."""
    for path in (target.host_key, target.host_key.with_suffix(".pub")):
        path.unlink()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(target.host_key)], check=True)
    bed.stop_node(target)
    bed.start_node(target)


def test_capture_playbook_snapshots_grade_as_direct_ssh_does(bed: SshBed, tmp_path: Path) -> None:
    for n in bed.nodes:
        n.reset()
    faults.inject(node(bed, "node02").state, "ib-port-down")
    faults.inject(node(bed, "node03").state, "xid-79")
    inv = inventory(bed, tmp_path, ["node01", "node02", "node03"])
    seen: list[tuple[str, str]] = []
    run = ansible.capture_fleet(
        str(inv), tmp_path / "snaps", options(bed), forks=3, on_host=lambda h, s, _w: seen.append((h, s))
    )
    assert run.rc == 0, run.reasons
    assert sorted(seen) == [("node01", "ok"), ("node02", "ok"), ("node03", "ok")]
    for host in ("node01", "node02", "node03"):
        meta = json.loads((tmp_path / "snaps" / host / "meta.json").read_text())
        assert meta["via"] == "capture.yml" and meta["files"]["ibstat.txt"]["status"] == "ok"
        assert not (tmp_path / "snaps" / host / ".capture.records").exists()
    _, offline = gpulab("assess", "--target", f"snapshot:{tmp_path / 'snaps'}", "-p", "hgx-h100", "-f", "json")
    _, direct = gpulab("assess", "-i", str(inv), "-p", "hgx-h100", "-f", "json", "--known-hosts", str(bed.known_hosts))
    assert verdicts(offline) == verdicts(direct)
    assert verdicts(offline)["node02"]["ib.ports_active"] == "fail"
    assert verdicts(offline)["node03"]["gpu.xid"] == "fail"
    assert "fail" not in verdicts(offline)["node01"].values()


def test_prepare_with_an_unknown_fixture_is_bad_input(bed: SshBed, tmp_path: Path) -> None:
    inv = inventory(bed, tmp_path, ["blank"])
    result = CliRunner().invoke(main, ["prepare", "-i", str(inv), "--fixture", "hgx-z900", "--no-packages"])
    assert result.exit_code == 2
    assert "unknown fixture 'hgx-z900'" in result.output


def _lab_vars(target: Node) -> dict[str, Any]:
    assert target.root is not None
    return {
        "nccl_conf": str(target.root / "etc" / "nccl.conf"),
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
    }


def test_lab_start_refuses_a_changed_host_key_within_a_minute_of_a_good_run(
    bed: SshBed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "attempts.db"))
    target = node(bed, "keys")
    target.reset()
    lab = find_lab("health-101")
    spec = f"ssh://{bed.user}@127.0.0.1:{target.port}"
    known = tmp_path / "known_hosts"
    known.write_text(bed.known_hosts.read_text())
    opts = TargetOptions(identity=str(bed.client_key), known_hosts=str(known))
    lifecycle.start(lab, spec, opts, host_vars=_lab_vars(target))  # leaves Ansible's ControlPersist window open
    target.reset()
    new_host_key(bed, target)
    # ssh refuses the changed key; Ansible reports it as the key warning, or (when it was already writing to a
    # pipelined ssh that exited) as a broken pipe. Either way nothing may run on the node: that is asserted below.
    refused = r"(?i)host key|identification has changed|could not be sent to remote host.*Broken pipe"
    try:
        with pytest.raises(lifecycle.StepFailed, match=refused):
            lifecycle.start(lab, spec, opts, host_vars=_lab_vars(target))
        with pytest.raises(lifecycle.StepFailed, match=refused):
            lifecycle.start(
                lab, spec, TargetOptions(**{**opts.__dict__, "accept_new_host_keys": True}), host_vars=_lab_vars(target)
            )
        assert load_state(target.state).services["nvidia-dcgm.service"].active_state == "active"  # nothing ran
    finally:
        bed.write_known_hosts()


def test_a_relative_known_hosts_is_found_although_ansible_runs_elsewhere(
    bed: SshBed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "attempts.db"))
    monkeypatch.chdir(tmp_path)
    target = node(bed, "keys")
    target.reset()
    Path("kh").write_text(target.known_hosts_line() + "\n")
    spec = f"ssh://{bed.user}@127.0.0.1:{target.port}"
    lifecycle.start(
        find_lab("health-101"),
        spec,
        TargetOptions(identity=str(bed.client_key), known_hosts="kh"),
        host_vars=_lab_vars(target),
    )
    assert load_state(target.state).services["nvidia-dcgm.service"].active_state == "inactive"
    assert Path("kh").read_text() == target.known_hosts_line() + "\n"  # nothing accepted or added


def test_capture_playbook_refuses_a_changed_host_key_on_the_next_run(bed: SshBed, tmp_path: Path) -> None:
    target = node(bed, "node01")
    target.reset()
    inv = inventory(bed, tmp_path, ["node01", "node02"])
    known = tmp_path / "known_hosts"
    known.write_text(bed.known_hosts.read_text())
    opts = TargetOptions(identity=str(bed.client_key), known_hosts=str(known), accept_new_host_keys=True)
    first = ansible.capture_fleet(str(inv), tmp_path / "one", opts)
    assert first.hosts == {"node01": "ok", "node02": "ok"}
    new_host_key(bed, target)
    try:
        second = ansible.capture_fleet(str(inv), tmp_path / "two", opts)
    finally:
        bed.write_known_hosts()
    assert second.hosts == {"node01": "unreachable", "node02": "ok"}
    assert "host key" in second.reasons["node01"].lower() or "identification" in second.reasons["node01"].lower()
    assert not (tmp_path / "two" / "node01" / "meta.json").exists()


def test_a_paramiko_inventory_cannot_switch_host_keys_off_or_hide_a_prompt(bed: SshBed, tmp_path: Path) -> None:
    inv = inventory(bed, tmp_path, ["node01"])
    loose = "    ansible_connection: paramiko_ssh\n    ansible_paramiko_host_key_checking: false\n"
    inv.write_text(inv.read_text().replace("  vars:\n", "  vars:\n" + loose, 1))
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    refused = ansible.capture_fleet(
        str(inv), tmp_path / "one", TargetOptions(identity=str(bed.client_key), known_hosts=str(empty))
    )
    assert refused.hosts == {"node01": "unreachable"}  # refused at once: no prompt waits, nothing ran there
    assert "authenticity of host" in refused.reasons["node01"] and "can't be established" in refused.reasons["node01"]
    assert empty.read_text() == "" and not (tmp_path / "one" / "node01" / "meta.json").exists()


def test_capture_playbook_refuses_an_unknown_key_even_when_the_inventory_says_not_to_check(
    bed: SshBed, tmp_path: Path
) -> None:
    inv = inventory(bed, tmp_path, ["node01"])
    loose = '    ansible_ssh_common_args: "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"\n'
    inv.write_text(inv.read_text().replace("  vars:\n", "  vars:\n" + loose, 1))
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    refused = ansible.capture_fleet(
        str(inv), tmp_path / "one", TargetOptions(identity=str(bed.client_key), known_hosts=str(empty))
    )
    assert refused.hosts == {"node01": "unreachable"}
    assert "host key" in refused.reasons["node01"].lower()
    assert empty.read_text() == ""
    accepted = ansible.capture_fleet(
        str(inv),
        tmp_path / "two",
        TargetOptions(identity=str(bed.client_key), known_hosts=str(empty), accept_new_host_keys=True),
    )
    assert accepted.hosts == {"node01": "ok"}
    assert [line.split()[1:] for line in empty.read_text().splitlines()] == [
        node(bed, "node01").known_hosts_line().split()[1:]
    ]


def test_a_hung_task_fails_its_host_within_the_host_limit_and_the_others_finish(bed: SshBed, tmp_path: Path) -> None:
    import threading

    playbook = tmp_path / "hang.yml"
    playbook.write_text(
        "- hosts: all\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - name: a tool that never returns on node01 (a GPU fallen off the bus)\n"
        "      ansible.builtin.command: \"{{ 'sleep 3600' if inventory_hostname == 'node01' else 'true' }}\"\n"
    )
    inv = inventory(bed, tmp_path, ["node01", "node02"])
    outcome: list[ansible.PlaybookRun] = []
    worker = threading.Thread(
        target=lambda: outcome.append(ansible.run(playbook, str(inv), options(bed, host_timeout=15))), daemon=True
    )
    worker.start()
    worker.join(120)  # with no limit the run would hang here for an hour
    assert not worker.is_alive() and outcome, "a hung task held the whole run"
    run = outcome[0]
    assert run.hosts == {"node01": "failed", "node02": "ok"}
    assert "expected time frame" in run.reasons["node01"] or "timed out" in run.reasons["node01"].lower()
