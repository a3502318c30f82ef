"""Credentials never printed or stored, from any input; malformed targets and host names are one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.secrets import has_password, redact
from assessor.targets.inventory import load as load_inventory
from assessor.targets.ssh import parse_spec

GPULAB = [sys.executable, "-m", "assessor.cli"]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("ssh://root:hunter2@10.0.0.1:22", "hunter2"),
        ('node1 ansible_host=10.0.0.1 ansible_password=s3cr3t! "broken', "s3cr3t!"),
        ("node1 ansible_ssh_pass='two words' x=1", "two words"),
        ('ansible_become_password: "quoted-one"', "quoted-one"),
        ("https://deploy:tok3n@git.example.com/repo", "tok3n"),
        ("curl -u x password=abc123", "abc123"),
    ],
)
def test_redact_hides_every_form_of_a_credential(text: str, secret: str) -> None:
    shown = redact(text)
    assert secret not in shown and "***" in shown


def test_redact_leaves_prose_and_plain_targets_alone() -> None:
    for text in ("carries a password: use a key", "ssh://admin@[::1]:2222", "ssh://node07", "token ring"):
        assert redact(text) == text
    assert not has_password("ssh://admin@host") and has_password("ssh://admin:x@host")


def gpulab(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GPULAB, *argv], capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("target", ["ssh://user:pw-Secret9@", "ssh://user:pw-Secret9@host", "ssh://u:pw-Secret9@h:x"])
def test_a_target_with_a_password_is_refused_without_echoing_it(target: str) -> None:
    done = gpulab("assess", "-t", target)
    assert done.returncode == 2
    assert "pw-Secret9" not in done.stdout + done.stderr
    assert done.stderr.startswith("gpulab: error:") and done.stderr.count("\n") == 1


def test_a_malformed_ipv6_target_is_one_line_not_a_traceback() -> None:
    done = gpulab("assess", "-t", "ssh://[::1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == "gpulab: error: bad ssh target 'ssh://[::1': use ssh://[user@]host[:port]\n"
    with pytest.raises(InputError):
        parse_spec("ssh://[::1")


def test_a_broken_ini_line_is_quoted_without_its_password(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.ini"
    inventory.write_text('[gpu]\nnode1 ansible_host=10.0.0.1 ansible_password=Hunter-22 "broken\n')
    done = gpulab("assess", "-i", str(inventory))
    assert done.returncode == 2 and "Hunter-22" not in done.stderr
    assert "ansible_password=***" in done.stderr and str(inventory) in done.stderr


def test_an_inventory_target_with_a_password_is_refused(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text('all:\n  hosts:\n    n1:\n      gpulab_target: "ssh://root:Hunter-22@10.0.0.1"\n')
    with pytest.raises(InputError, match="carries a password") as caught:
        load_inventory(str(inventory))
    assert "Hunter-22" not in str(caught.value)
    out = tmp_path / "out"
    done = gpulab("assess", "-i", str(inventory), "--out", str(out))
    assert done.returncode == 2 and "Hunter-22" not in done.stdout + done.stderr
    assert not out.exists() or not any(
        "Hunter-22" in p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize("name", [".", "..", "a/b"])
def test_a_host_named_like_a_path_is_refused(name: str, tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(f'all:\n  hosts:\n    "{name}":\n      ansible_host: 10.0.0.1\n')
    with pytest.raises(InputError, match=r"cannot be '\.', '\.\.' or contain a slash"):
        load_inventory(str(inventory))
