"""Fleet assessment over real SSH: loopback sshd nodes running the simulator's tools."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import xmlschema
from click.testing import CliRunner

from assessor.cli import main
from assessor.sim import faults
from tests.support.sshbed import SshBed, free_port, node, write_inventory


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def by_host(doc: dict) -> dict[str, dict]:
    return {t["host"]: t for t in doc["targets"]}


def statuses(target: dict) -> dict[str, str]:
    return {r["check"]: r["status"] for r in target["results"]}


def test_inventory_fleet_gives_the_right_verdict_per_node(fresh: SshBed, tmp_path: Path) -> None:
    faults.inject(node(fresh, "node02").state, "ib-port-down")
    faults.inject(node(fresh, "node03").state, "xid-79")
    faults.inject(node(fresh, "node04").state, "peermem-unloaded")
    dead = free_port()
    inv = write_inventory(
        fresh,
        tmp_path,
        ["node01", "node02", "node03", "node04", "node05"],
        extra=f"        ghost: {{ansible_host: 127.0.0.1, ansible_port: {dead}}}\n",
    )
    # the extra host line lands inside gpu.hosts because the inventory ends there
    code, out, _ = gpulab(
        "assess",
        "-i",
        str(inv),
        "-p",
        "hgx-h100",
        "-f",
        "json",
        "--known-hosts",
        str(fresh.known_hosts),
        "--forks",
        "8",
        "--timeout",
        "20",
    )
    doc = json.loads(out)
    hosts = by_host(doc)
    assert code == 3  # a host could not be assessed
    assert set(hosts) == {"node01", "node02", "node03", "node04", "node05", "ghost"}
    for healthy in ("node01", "node05"):
        got = statuses(hosts[healthy])
        assert "error" not in hosts[healthy]
        assert [c for c, s in got.items() if s in ("fail", "error")] == [], healthy
        assert got["gpu.count"] == "pass" and got["ib.ports_active"] == "pass"
    assert statuses(hosts["node02"])["ib.ports_active"] == "fail"
    assert statuses(hosts["node03"])["gpu.xid"] == "fail"
    assert statuses(hosts["node04"])["ib.peermem"] == "fail"
    assert "unreachable" in hosts["ghost"]["error"]
    assert hosts["ghost"]["results"] == []


def test_junit_output_validates_and_names_suites_after_hosts(fresh: SshBed, tmp_path: Path) -> None:
    faults.inject(node(fresh, "node02").state, "ib-port-down")
    dead = free_port()
    inv = write_inventory(
        fresh,
        tmp_path,
        ["node01", "node02"],
        extra=f"        ghost: {{ansible_host: 127.0.0.1, ansible_port: {dead}}}\n",
    )
    code, out, _ = gpulab(
        "assess",
        "--inventory",
        str(inv),
        "--profile",
        "hgx-h100",
        "--format",
        "junit",
        "--known-hosts",
        str(fresh.known_hosts),
    )
    assert code == 3  # a host could not be assessed
    schema = xmlschema.XMLSchema(str(resources.files("assessor") / "schemas" / "junit.xsd"))
    schema.validate(out)
    tree = schema.to_dict(out)
    suites = {s["@name"]: s for s in tree["testsuite"]}
    assert set(suites) == {"node01", "node02", "ghost"}
    assert suites["node01"]["@failures"] == 0 and suites["node01"]["@errors"] == 0
    assert suites["node02"]["@failures"] >= 1
    failing = [c["@name"] for c in suites["node02"]["testcase"] if "failure" in c]
    assert "ib.ports_active" in failing
    assert suites["ghost"]["@errors"] == 1


def test_limit_selects_hosts_like_ansible(fresh: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(fresh, tmp_path, ["node01", "node02", "node03"])
    code, out, err = gpulab(
        "assess",
        "-i",
        str(inv),
        "--limit",
        "node01:node02",
        "-c",
        "gpu.count:expected=8",
        "-f",
        "json",
        "--known-hosts",
        str(fresh.known_hosts),
    )
    assert code == 0, err
    assert sorted(by_host(json.loads(out))) == ["node01", "node02"]


def test_unknown_host_key_is_refused_unless_accepted(fresh: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(fresh, tmp_path, ["node01"])
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    code, out, _ = gpulab("assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(empty))
    assert code == 3  # a host could not be assessed
    assert "unknown host key" in by_host(json.loads(out))["node01"]["error"]
    code, out, _ = gpulab(
        "assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(empty), "--accept-new-host-keys"
    )
    assert code == 0
    assert f"[127.0.0.1]:{node(fresh, 'node01').port}" in empty.read_text()


def test_changed_host_key_is_refused_even_with_accept_new(fresh: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(fresh, tmp_path, ["node01"])
    wrong = tmp_path / "known_hosts"
    other = node(fresh, "node02").known_hosts_line().split()[1:]
    wrong.write_text(f"[127.0.0.1]:{node(fresh, 'node01').port} {' '.join(other)}\n")
    code, out, _ = gpulab(
        "assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(wrong), "--accept-new-host-keys"
    )
    assert code == 3  # a host could not be assessed
    assert "CHANGED" in by_host(json.loads(out))["node01"]["error"]


def test_refused_authentication_is_an_error_for_that_host(fresh: SshBed, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    inv = write_inventory(fresh, tmp_path, ["node01", "node02"])
    text = inv.read_text().replace(str(fresh.client_key), str(stranger))
    inv.write_text(text)
    code, out, _ = gpulab(
        "assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(fresh.known_hosts)
    )
    assert code == 3  # a host could not be assessed
    for host in by_host(json.loads(out)).values():
        assert "authentication refused" in host["error"]


def test_hanging_command_errors_its_checks_and_the_rest_completes(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["hangs", "node01"])
    code, out, _ = gpulab(
        "assess",
        "-i",
        str(inv),
        "-c",
        "ib.ports_active",
        "-c",
        "gpu.count",
        "-f",
        "json",
        "--known-hosts",
        str(bed.known_hosts),
        "--timeout",
        "2",
    )
    hosts = by_host(json.loads(out))
    got = {r["check"]: r for r in hosts["hangs"]["results"]}
    assert got["ib.ports_active"]["status"] == "error"
    assert "timed out" in got["ib.ports_active"]["message"]
    assert got["gpu.count"]["status"] == "pass"
    assert statuses(hosts["node01"]) == {"ib.ports_active": "pass", "gpu.count": "pass"}
    assert code == 1


def test_whole_host_time_limit(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["hangs"])
    code, out, _ = gpulab(
        "assess",
        "-i",
        str(inv),
        "-c",
        "gpu.count",
        "-f",
        "json",
        "--known-hosts",
        str(bed.known_hosts),
        "--timeout",
        "30",
        "--host-timeout",
        "3",
    )
    assert code == 3  # a host could not be assessed
    assert "longer than 3 s" in by_host(json.loads(out))["hangs"]["error"]


def test_connection_dropped_mid_capture_is_an_error_for_that_host(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["drops", "node01"])
    code, out, _ = gpulab(
        "assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(bed.known_hosts)
    )
    hosts = by_host(json.loads(out))
    assert "dropped mid-capture" in hosts["drops"]["error"]
    assert statuses(hosts["node01"]) == {"gpu.count": "pass"}
    assert code == 3  # a host could not be assessed


def test_host_without_nvidia_tools_is_an_error_with_the_reason(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["bare"])
    code, out, _ = gpulab(
        "assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(bed.known_hosts)
    )
    assert code == 3  # a host could not be assessed
    assert "no NVIDIA tools" in by_host(json.loads(out))["bare"]["error"]


def test_no_password_or_key_material_in_results_or_snapshots(fresh: SshBed, tmp_path: Path) -> None:
    secret = "s3cr3t-Pa55word"
    inv = write_inventory(fresh, tmp_path, ["node01"])
    inv.write_text(inv.read_text().replace("    ansible_user:", f"    ansible_password: {secret}\n    ansible_user:"))
    out_dir = tmp_path / "snaps"
    _code, out, err = gpulab(
        "assess",
        "-i",
        str(inv),
        "-p",
        "hgx-h100",
        "-f",
        "json",
        "--out",
        str(out_dir),
        "--known-hosts",
        str(fresh.known_hosts),
    )
    key_material = fresh.client_key.read_text().splitlines()[1]
    assert (out_dir / "node01" / "meta.json").exists()
    written = out + err + "".join(p.read_text(errors="replace") for p in out_dir.rglob("*") if p.is_file())
    assert secret not in written
    assert key_material not in written


def test_out_keeps_snapshots_that_grade_again_offline(fresh: SshBed, tmp_path: Path) -> None:
    faults.inject(node(fresh, "node02").state, "ib-port-down")
    inv = write_inventory(fresh, tmp_path, ["node02"])
    out_dir = tmp_path / "snaps"
    gpulab(
        "assess",
        "-i",
        str(inv),
        "-c",
        "ib.ports_active",
        "-f",
        "json",
        "--out",
        str(out_dir),
        "--known-hosts",
        str(fresh.known_hosts),
    )
    code, out, _ = gpulab("assess", "-t", f"snapshot:{out_dir / 'node02'}", "-c", "ib.ports_active", "-f", "json")
    assert code == 1
    assert json.loads(out)["targets"][0]["results"][0]["status"] == "fail"


def test_inventory_host_with_shell_metacharacters_is_never_run(fresh: SshBed, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    inv = tmp_path / "evil.yml"
    inv.write_text(
        "all:\n  hosts:\n"
        f"    evil: {{ansible_host: '127.0.0.1; touch {marker}', ansible_port: {node(fresh, 'node01').port}}}\n"
    )
    code, out, _ = gpulab(
        "assess", "-i", str(inv), "-c", "gpu.count", "-f", "json", "--known-hosts", str(fresh.known_hosts)
    )
    assert code == 3  # a host could not be assessed
    assert "error" in by_host(json.loads(out))["evil"]
    assert not marker.exists()


@pytest.mark.parametrize("text", ["all:\n  hosts:\n    n1: {ansible_host: 127.0.0.1\n    n2:\n"])
def test_malformed_inventory_is_exit_2_naming_file_and_line(tmp_path: Path, text: str) -> None:
    inv = tmp_path / "bad.yml"
    inv.write_text(text)
    code, _, err = gpulab("assess", "-i", str(inv), "-c", "gpu.count")
    assert code == 2
    assert f"{inv}:4:" in err and "YAML" in err


def test_capture_over_inventory_writes_a_snapshot_per_host(fresh: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(fresh, tmp_path, ["node01", "node02"])
    code, _out, _ = gpulab(
        "capture", "-i", str(inv), "--out", str(tmp_path / "caps"), "--known-hosts", str(fresh.known_hosts)
    )
    assert code == 0
    for name in ("node01", "node02"):
        meta = json.loads((tmp_path / "caps" / name / "meta.json").read_text())
        assert meta["files"]["nvidia-smi-q.xml"]["status"] == "ok"
        assert (tmp_path / "caps" / name / "ibstat.txt").read_text().startswith("CA '")
