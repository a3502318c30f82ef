"""The practice cluster's node set-up, run for real: prepare-node.yml (role gpulab_simulator) through
``gpulab prepare`` (ansible-runner) against a loopback OpenSSH server standing in for a practice VM.

The "VM" is one ``sshd`` on 127.0.0.1. Ansible provisions it with a key of its own (Vagrant's key, which
reaches the machine itself); the role writes the login account's ``authorized_keys``, which sshd reads too.
The run takes the settings the ``Vagrantfile`` passes (the login keys made in a directory on the controller,
the checkout already on the node as the synced folder puts it there), the simulator forced on (the machine
running the tests may have a GPU), and these stand-ins, so that it needs neither root nor a package registry:

- the login account is the account running the tests (``gpulab_manage_system=false``: no user made, nothing
  in /etc touched); its ``authorized_keys``, gpulab's prefix and the checkout are in a temporary directory;
- no packages (``--no-packages``), and PyPI's part is played by this venv: the node's venv is made beforehand
  with a ``.pth`` naming this venv's site-packages, so the role's own ``pip install`` of the checkout (run
  for real, ``--no-deps --no-index``) finds gpulab's dependencies and hatchling there.

Then the candidate's key lands inside the node (its host name, its tools, the state out of reach), the
candidate's key has no admin verb, Vagrant's key still reaches the machine, and the admin key answers the
probe and starts a simulator-only lab through an inventory of the shape the ``Vagrantfile`` writes.
"""

from __future__ import annotations

import contextlib
import getpass
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.sim.state import load_state

ROOT = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"
NAME = "gpu07"  # the node's inventory name, hence its host name
FIXTURE = "dgx-a100"


@dataclass
class PracticeNode:
    root: Path
    port: int
    user: str
    prefix: Path
    prepare_exit: int = -1
    prepare_output: str = ""

    @property
    def state(self) -> Path:
        return self.prefix / "node" / "state.json"

    @property
    def venv(self) -> Path:
        return self.prefix / "venv"

    @property
    def source(self) -> Path:
        return self.prefix / "source"

    @property
    def authorized_keys(self) -> Path:
        return self.root / "home" / ".ssh" / "authorized_keys"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def provision_key(self) -> Path:
        """Vagrant's own key: it reaches the machine, not the node."""
        return self.root / "provision_ed25519"

    def key(self, who: str) -> Path:
        """The private key of ``candidate`` or ``admin``, made by the role in the controller's key directory."""
        return self.root / "keys" / f"{who}_ed25519"

    def ssh(self, key: Path, line: str, tty: bool = False) -> subprocess.CompletedProcess[str]:
        """``line`` sent to the machine over SSH with ``key``, its host key checked (on a terminal: ``tty``)."""
        return subprocess.run(
            [
                *("ssh", "-i", str(key), "-p", str(self.port), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"),
                *(["-tt"] if tty else []),
                *("-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes"),
                *(f"{self.user}@127.0.0.1", line),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_sshd(node: PracticeNode) -> subprocess.Popen[bytes]:
    """The VM's sshd: Vagrant's key in one file, the login account's (the role's) in the other."""
    _keygen(node.root / "host_key")
    host_key = (node.root / "host_key.pub").read_text().split()
    node.known_hosts.write_text(f"[127.0.0.1]:{node.port} {host_key[0]} {host_key[1]}\n")
    _keygen(node.provision_key)
    (node.root / "provision_keys").write_text(node.provision_key.with_suffix(".pub").read_text())
    config = node.root / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {node.port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {node.root / 'host_key'}",
                f"AuthorizedKeysFile {node.root / 'provision_keys'} {node.authorized_keys}",
                f"PidFile {node.root / 'sshd.pid'}",
                "StrictModes no",
                "UsePAM no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                f"AllowUsers {node.user}",
                "Subsystem sftp internal-sftp",
                # a home of its own: the account's rc files (pyenv init ...) would slow every session down
                f"SetEnv HOME={node.root / 'home'}",
                "",
            ]
        )
    )
    with contextlib.suppress(OSError):
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
    log = node.root / "sshd.log"
    proc = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited: {log.read_text() if log.exists() else ''}")
        try:
            with socket.create_connection(("127.0.0.1", node.port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    pytest.fail("sshd did not listen")


def _stand_ins(node: PracticeNode) -> None:
    """What Vagrant's synced folder and PyPI give a real practice VM (module docstring)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(node.venv)], check=True)
    purelib = Path(sysconfig.get_paths(vars={"base": str(node.venv), "platbase": str(node.venv)})["purelib"])
    (purelib / "_gpulab_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for part in ("assessor", "labs", "playbooks", "profiles", "reports"):
        shutil.copytree(ROOT / part, node.source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / part, node.source / part)
    (node.root / "home").mkdir()


def _prepare(node: PracticeNode) -> None:
    inventory = node.root / "provision.yml"
    inventory.write_text(
        f"all:\n  hosts:\n    {NAME}:\n      ansible_host: 127.0.0.1\n      ansible_port: {node.port}\n"
        f"      ansible_user: {node.user}\n      ansible_ssh_private_key_file: {node.provision_key}\n"
        f"      ansible_python_interpreter: {sys.executable}\n      ansible_become: false\n"
    )
    extra = {
        # as the Vagrantfile passes them
        "gpulab_simulate": "true",
        "gpulab_key_dir": str(node.root / "keys"),
        "gpulab_copy_source": "false",
        "gpulab_source_dir": str(node.source),
        # the stand-ins for root and PyPI
        "gpulab_prefix": str(node.prefix),
        "gpulab_manage_system": "false",
        "gpulab_login_user": node.user,
        "gpulab_authorized_keys": str(node.authorized_keys),
        "gpulab_pip_args": "--no-deps --no-build-isolation --no-index",
    }
    args = ["prepare", "-i", str(inventory), "--fixture", FIXTURE, "--no-packages"]
    args += ["--known-hosts", str(node.known_hosts)]
    for key, value in extra.items():
        args += ["-e", f"{key}={value}"]
    result = CliRunner().invoke(main, args)
    node.prepare_exit, node.prepare_output = result.exit_code, result.output


@pytest.fixture(scope="module")
def practice(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PracticeNode]:
    if not Path(SSHD).exists():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    root = tmp_path_factory.mktemp("practice")
    node = PracticeNode(root, _free_port(), getpass.getuser(), root / "opt")
    _stand_ins(node)
    sshd = _start_sshd(node)
    try:
        _prepare(node)
        yield node
    finally:
        if node.state.exists():
            from assessor.sim.machine.enter import stop

            stop(node.state)
        sshd.send_signal(signal.SIGTERM)
        sshd.wait(timeout=10)


def test_prepare_installs_gpulab_and_makes_the_node_from_the_fixture(practice: PracticeNode) -> None:
    assert practice.prepare_exit == 0, practice.prepare_output
    assert f"{NAME}: ready" in practice.prepare_output
    state = load_state(practice.state)
    assert (state.host, state.fixture, len(state.gpus)) == (NAME, FIXTURE, 8)
    assert (practice.state.parent / "state.json.d" / "etc").is_dir()  # the node's own files, beside its state
    # gpulab is the venv's own copy, installed from the checkout on the node
    where = subprocess.run(
        [str(practice.venv / "bin" / "python"), "-I", "-c", "import assessor; print(assessor.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=practice.root,
    )
    assert where.stdout.startswith(str(practice.venv))


def test_every_key_of_the_login_account_carries_the_forced_login(practice: PracticeNode) -> None:
    login = f"{practice.venv}/bin/gpulab sim login"
    candidate = practice.key("candidate").with_suffix(".pub").read_text().strip()
    admin = practice.key("admin").with_suffix(".pub").read_text().strip()
    lines = [line for line in practice.authorized_keys.read_text().splitlines() if not line.startswith("#")]
    assert lines == [
        f'restrict,pty,command="{login} {practice.state}" {candidate}',
        f'restrict,pty,command="{login} --admin {practice.state}" {admin}',
    ]
    assert practice.authorized_keys.stat().st_mode & 0o777 == 0o600


def test_the_candidates_key_lands_inside_the_node(practice: PracticeNode) -> None:
    line = f"hostname; command -v nvidia-smi; nvidia-smi -L | wc -l; test -e {practice.state} || echo no-state"
    done = practice.ssh(practice.key("candidate"), line + "; test -t 0 && echo terminal", tty=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # a terminal for an interactive login (restrict,pty), the node's own name and tools, its state out of reach
    assert done.stdout.split() == [NAME, "/usr/bin/nvidia-smi", "8", "no-state", "terminal"]
    assert socket.gethostname() != NAME
    refused = practice.ssh(practice.key("candidate"), "gpulab-node probe")
    assert refused.returncode == 127 and "command not found" in refused.stderr
    # Vagrant's key still reaches the machine itself (the next `vagrant provision`)
    assert practice.ssh(practice.provision_key, "hostname").stdout.strip() == socket.gethostname()


def test_the_admin_key_starts_a_simulator_lab_from_the_practice_inventory(
    practice: PracticeNode, tmp_path: Path
) -> None:
    probe = practice.ssh(practice.key("admin"), "gpulab-node probe")
    assert probe.stdout == f"gpulab simulated node {FIXTURE} {NAME}\n", probe.stderr
    # the inventory the Vagrantfile writes for a simulated node: its login account and the admin key
    inventory = tmp_path / "gpulab-inventory.yml"
    inventory.write_text(
        "all:\n  children:\n    gpu:\n      hosts:\n"
        f"        {NAME}: {{ansible_host: 127.0.0.1, ansible_port: {practice.port}, ansible_user: {practice.user}, "
        f"ansible_ssh_private_key_file: {practice.key('admin')}}}\n"
    )
    args = ["lab", "start", "drv-201", "-i", str(inventory), "--target", NAME, "--candidate", "ada"]
    args += ["--known-hosts", str(practice.known_hosts), "--db", str(tmp_path / "attempts.db")]
    started = CliRunner().invoke(main, args)
    assert started.exit_code == 0, started.output
    assert "drv-201 started for ada" in started.output
    # the simulator's own start ran on the node's host: the upgraded driver waits for its module to reload
    state = load_state(practice.state)
    assert state.driver.version != state.driver.kernel_module_version
