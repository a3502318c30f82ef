"""Every playbook passes ansible-playbook --syntax-check and ansible-lint; the Vagrantfile validates."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NODE_PLAYBOOKS = sorted((ROOT / "playbooks").glob("*.yml"))
LAB_PLAYBOOKS = sorted((ROOT / "labs").glob("*/*/*.yml"))
LINT_CONFIG = ROOT / "playbooks" / ".ansible-lint"


def tool(name: str) -> str:
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run scripts/setup.sh (pip install -e '.[dev]')")
    return str(found)


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1"}


def test_the_node_playbooks_exist() -> None:
    assert [p.name for p in NODE_PLAYBOOKS] == ["capture.yml", "prepare-node.yml"]
    assert len(LAB_PLAYBOOKS) >= 3


def syntax_check(*playbooks: Path) -> subprocess.CompletedProcess[str]:
    """``ansible-playbook --syntax-check`` of the playbooks, in one run."""
    return subprocess.run(
        [tool("ansible-playbook"), "--syntax-check", "-i", "localhost,", *map(str, playbooks)],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ROOT,
        check=False,
    )


@pytest.fixture(scope="session")
def checked_together() -> set[str]:
    """The playbooks that passed one syntax check run over all of them (none when that run failed).

    Starting Ansible costs about as much as checking every playbook, so one run checks them all; it names each
    playbook it checked ("playbook: PATH") and stops at the first that fails, so after a failure every playbook
    is checked again on its own.
    """
    proc = syntax_check(*NODE_PLAYBOOKS, *LAB_PLAYBOOKS)
    if proc.returncode != 0:
        return set()
    return {line.removeprefix("playbook: ") for line in proc.stdout.splitlines() if line.startswith("playbook: ")}


@pytest.mark.parametrize("playbook", NODE_PLAYBOOKS + LAB_PLAYBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_playbook_passes_the_syntax_check(playbook: Path, checked_together: set[str]) -> None:
    if str(playbook) in checked_together:
        return  # passed in the run over every playbook
    proc = syntax_check(playbook)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def lint(playbooks: list[Path], cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """ansible-lint at the production profile, with caches of its own (two runs at once under pytest -n must
    not share theirs)."""
    lint_env = {**env(), "XDG_CACHE_HOME": str(tmp_path / "cache"), "ANSIBLE_HOME": str(tmp_path / "ansible")}
    return subprocess.run(
        [tool("ansible-lint"), "--nocolor", "-c", str(LINT_CONFIG), *map(str, playbooks)],
        capture_output=True,
        text=True,
        env=lint_env,
        cwd=cwd,
        check=False,
    )


def test_node_playbooks_pass_ansible_lint_production(tmp_path: Path) -> None:
    proc = lint(NODE_PLAYBOOKS, ROOT / "playbooks", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in proc.stderr + proc.stdout


# The lab playbooks in two halves by lab domain, so two workers lint them at once.
LAB_HALVES = {
    "drivers-health": [p for p in LAB_PLAYBOOKS if p.parts[-3] in ("drivers", "health")],
    "infiniband-mig-nccl": [p for p in LAB_PLAYBOOKS if p.parts[-3] not in ("drivers", "health")],
}


def test_the_halves_hold_every_lab_playbook() -> None:
    assert sorted(p for half in LAB_HALVES.values() for p in half) == LAB_PLAYBOOKS
    assert all(LAB_HALVES.values())


@pytest.mark.parametrize("half", sorted(LAB_HALVES))
def test_lab_playbooks_pass_ansible_lint_production(half: str, tmp_path: Path) -> None:
    # the lab playbooks and the shared tasks they import, at the same profile
    proc = lint(LAB_HALVES[half], ROOT, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in proc.stderr + proc.stdout


def test_the_vagrantfile_validates() -> None:
    vagrant = shutil.which("vagrant")
    if vagrant is None:
        pytest.fail("vagrant is not installed: run scripts/setup.sh as root (Debian's vagrant package)")
    proc = subprocess.run(
        [vagrant, "validate", "--ignore-provider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "VAGRANT_CHECKPOINT_DISABLE": "1", "GPULAB_GPU_NODES": "2"},
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Vagrantfile validated successfully" in proc.stdout
