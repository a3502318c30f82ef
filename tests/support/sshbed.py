"""The SSH test bed: real OpenSSH servers on loopback, each a simulated GPU node.

Every node is its own ``sshd`` on 127.0.0.1 with its own host key; its sessions get a PATH
that starts with the simulator's shims and a ``GPULAB_SIM_STATE`` pointing at the node's own
state file (sshd's ``SetEnv``). Nothing listens beyond the loopback address.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
# On the PYTHONPATH of a node's sessions: the bytecode of what Ansible sends is compiled once, not per task.
REMOTE_PYTHON = Path(__file__).resolve().parent / "remote_python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    name: str
    port: int
    directory: Path
    fixture: str
    pid: int | None = None
    root: Path | None = None  # GPULAB_SIM_ROOT of the node, when it has one
    inside: bool = False  # its SSH sessions land inside the simulated node (gpulab sim login)

    @property
    def state(self) -> Path:
        return self.directory / "state.json"

    @property
    def host_key(self) -> Path:
        return self.directory / "ssh_host_ed25519_key"

    def known_hosts_line(self) -> str:
        key = (self.directory / "ssh_host_ed25519_key.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {key[0]} {key[1]}"

    def reset(self, host: str | None = None) -> None:
        """Back to the fresh fixture."""
        from assessor.sim.fixtures import load_fixture
        from assessor.sim.state import save_state

        save_state(load_fixture(self.fixture, host=host or self.name), self.state)


@dataclass
class SshBed:
    root: Path
    nodes: list[Node] = field(default_factory=list)
    user: str = field(default_factory=getpass.getuser)

    @property
    def client_key(self) -> Path:
        return self.root / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def shims(self) -> Path:
        return self.root / "bin"

    @property
    def code_cache(self) -> Path:
        """Where the nodes keep the bytecode of Ansible's modules (remote_python/sitecustomize.py), shared by
        the beds of a test session's worker (beside the bed's own directory)."""
        return self.root.parent / "ansible-module-bytecode"

    @property
    def candidate_key(self) -> Path:
        """A second client key: on a node whose sessions land inside it, the candidate's (no admin verbs)."""
        return self.root / "candidate_ed25519"

    def setup(self, count: int, fixture: str = "hgx-h100") -> SshBed:
        from assessor.sim.shims import write_shims

        self.root.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
        _keygen(self.client_key)
        _keygen(self.candidate_key)
        write_shims(self.shims)
        for i in range(count):
            self.add_node(f"node{i + 1:02d}", fixture)
        self.write_known_hosts()
        return self

    def add_node(
        self,
        name: str,
        fixture: str,
        *,
        extra_bin: dict[str, str] | None = None,
        shims: bool = True,
        env: dict[str, str] | None = None,
        sim_root: bool = False,
        inside: bool = False,
    ) -> Node:
        """A node; ``extra_bin`` puts scripts (name -> sh body) ahead of the shims on its PATH.

        ``env`` adds variables to its sessions (sshd SetEnv); ``sim_root`` gives it a directory for the
        files a real node keeps under / (``GPULAB_SIM_ROOT``: its /etc/nccl.conf is ``node.root/etc/nccl.conf``).
        """
        node = Node(name, free_port(), self.root / name, fixture)
        node.directory.mkdir(parents=True, exist_ok=True)
        _keygen(node.host_key)
        node.reset()
        authorized = node.directory / "authorized_keys"
        authorized.write_text((self.client_key.with_suffix(".pub")).read_text())
        if inside:
            # a simulated node served as docs/NODE.md says: every session lands inside the node; the bed's
            # client key is the instructor's (admin verbs on the host), candidate_key a candidate's
            from assessor.sim.config_root import populate, root_for_state
            from assessor.sim.state import load_state

            populate(root_for_state(node.state), load_state(node.state))
            login = f"{sys.executable} -m assessor.cli sim login"
            authorized.write_text(
                f'command="{login} --admin {node.state}" {self.client_key.with_suffix(".pub").read_text()}'
                f'command="{login} {node.state}" {self.candidate_key.with_suffix(".pub").read_text()}'
            )
            node.inside = True
        dirs = [str(self.shims)] if shims else []
        if extra_bin:
            own = node.directory / "bin"
            own.mkdir(exist_ok=True)
            for tool, body in extra_bin.items():
                (own / tool).write_text("#!/bin/sh\n" + body + "\n")
                (own / tool).chmod(0o755)
            dirs.insert(0, str(own))
        path = ":".join([*dirs, "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"])
        # Each node has its own home: the login shell then reads the node's (empty) rc files, not the
        # host user's, which may run slow set-up (pyenv init) on every session like no GPU node would.
        home = node.directory / "home"
        home.mkdir(exist_ok=True)
        setenv = {"PATH": path, "GPULAB_SIM_STATE": str(node.state), "HOME": str(home), **(env or {})}
        if not inside:  # Ansible's modules run on this node's host: compile their code once (REMOTE_PYTHON)
            self.code_cache.mkdir(parents=True, exist_ok=True)
            setenv = {"PYTHONPATH": str(REMOTE_PYTHON), "GPULAB_TEST_CODE_CACHE": str(self.code_cache), **setenv}
        if sim_root:
            node.root = node.directory / "root"
            (node.root / "etc").mkdir(parents=True, exist_ok=True)
            setenv["GPULAB_SIM_ROOT"] = str(node.root)
        config = node.directory / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {node.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {node.host_key}",
                    f"AuthorizedKeysFile {authorized}",
                    f"PidFile {node.directory / 'sshd.pid'}",
                    "StrictModes no",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    f"AllowUsers {self.user}",
                    "MaxStartups 200",
                    "MaxSessions 50",
                    "Subsystem sftp internal-sftp",  # Ansible copies files over SFTP
                    "SetEnv " + " ".join(f"{k}={v}" for k, v in setenv.items()),
                    "",
                ]
            )
        )
        self.nodes.append(node)
        return node

    def write_known_hosts(self) -> None:
        self.known_hosts.write_text("".join(n.known_hosts_line() + "\n" for n in self.nodes))

    def start(self) -> SshBed:
        for node in self.nodes:
            self.start_node(node)
        return self

    def start_node(self, node: Node) -> None:
        log = node.directory / "sshd.log"
        proc = subprocess.Popen(
            [SSHD, "-D", "-f", str(node.directory / "sshd_config"), "-E", str(log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        node.pid = proc.pid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"sshd for {node.name} exited: {log.read_text() if log.exists() else ''}")
            try:
                with socket.create_connection(("127.0.0.1", node.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd for {node.name} did not listen on {node.port}")

    def stop_node(self, node: Node) -> None:
        if node.inside:
            from assessor.sim.machine.enter import stop

            stop(node.state)
        if node.pid is not None:
            try:
                os.kill(node.pid, signal.SIGTERM)
                os.waitpid(node.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            node.pid = None

    def stop(self) -> None:
        for node in self.nodes:
            self.stop_node(node)

    def at_shell(
        self, node: Node, line: str, stdin: str | None = None, key: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One command line typed at the node's shell, through the OpenSSH client with its host key checked."""
        return subprocess.run(
            [
                "ssh",
                "-i",
                str(key or self.client_key),
                "-p",
                str(node.port),
                "-o",
                "BatchMode=yes",
                "-o",
                f"UserKnownHostsFile={self.known_hosts}",
                "-o",
                "StrictHostKeyChecking=yes",
                f"{self.user}@127.0.0.1",
                line,
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def inventory(self, path: Path, nodes: list[Node] | None = None, extra: str = "") -> Path:
        """A YAML Ansible inventory of the bed's nodes (group ``gpu``), plus ``extra`` host lines."""
        lines = [
            "all:",
            "  vars:",
            f"    ansible_user: {self.user}",
            f"    ansible_ssh_private_key_file: {self.client_key}",
            "  children:",
            "    gpu:",
            "      hosts:",
        ]
        for node in nodes or self.nodes:
            lines.append(f"        {node.name}: {{ansible_host: 127.0.0.1, ansible_port: {node.port}}}")
        path.write_text("\n".join(lines) + "\n" + extra)
        return path


def _keygen(path: Path) -> None:
    if not path.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def sshd_available() -> bool:
    return Path(SSHD).exists()


def node(bed: SshBed, name: str) -> Node:
    """The bed's node called ``name``."""
    return next(n for n in bed.nodes if n.name == name)


def write_inventory(bed: SshBed, tmp: Path, names: list[str], extra: str = "") -> Path:
    """An inventory of the named nodes of the bed in ``tmp/lab.yml``."""
    return bed.inventory(tmp / "lab.yml", [node(bed, n) for n in names], extra)


def marked_processes(name: str, value: str) -> list[str]:
    """``PID COMMAND LINE`` of every running process whose environment holds ``name=value`` (a marker a test
    gives a node's sessions through ``add_node(env=...)``, or its own children): what a run left behind.

    Zombies (nothing left but an exit status) do not count; processes whose environment cannot be read are
    not this user's, so not the test's.
    """
    wanted = f"{name}={value}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if wanted not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            stat = (proc / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        found.append(f"{proc.name} {args}")
    return found
