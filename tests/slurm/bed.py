"""A real Slurm on loopback: munged, slurmctld and one slurmd whose node is a simulated GPU node.

Every daemon runs in the foreground as the test's user from a folder of its own (munge's key and socket,
slurm.conf, state and spool, logs); the cluster's ports are free ones of 127.0.0.1. The node's
HealthCheckProgram, Prolog and Epilog are wrappers that run ``gpulab slurm health|prolog|epilog`` on the
simulated node's state file, with the environment slurmd does not give them (it runs them with almost none).
Each wrapper counts its runs in ``MODE.runs`` and appends gpulab's output to ``MODE.log``; the health check does
nothing while ``health.paused`` exists.
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.sshbed import free_port

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("scontrol", "sinfo", "sbatch", "squeue", "scancel", "munge")
PROFILE = "any-gpu-node"
HEALTH_INTERVAL_S = 2


def missing_binaries() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if not _which(name)]


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")


WRAPPER = """#!/bin/sh
{pause}
export PATH={path} SLURM_CONF={conf} HOME={home} LC_ALL=C.UTF-8
echo start >> {runs}
{python} -m assessor.cli slurm {mode} --profile {profile} --target mock:{state} >> {log} 2>&1
rc=$?
echo "end $rc" >> {runs}
exit $rc
"""


@dataclass
class SlurmBed:
    root: Path
    host: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    user: str = field(default_factory=getpass.getuser)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.root / "node.json"

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def runs(self, mode: str) -> int:
        """How many runs of ``mode``'s wrapper have ended."""
        path = self.root / f"{mode}.runs"
        return sum(line.startswith("end") for line in path.read_text().splitlines()) if path.exists() else 0

    def last_exit(self, mode: str) -> int | None:
        """The exit code of ``mode``'s last run, None while it runs or before its first."""
        path = self.root / f"{mode}.runs"
        lines = path.read_text().splitlines() if path.exists() else []
        return int(lines[-1].split()[1]) if lines and lines[-1].startswith("end ") else None

    # ---- setting up

    def setup(self) -> SlurmBed:
        from assessor.sim.fixtures import load_fixture
        from assessor.sim.state import save_state

        # munged wants every folder above its socket searchable by all, and its key readable by its user only
        self.root.chmod(0o755)
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(mode=0o755)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        save_state(load_fixture("hgx-h100", host=self.host), self.state)
        for mode in ("health", "prolog", "epilog"):
            self._wrapper(mode)
        self.conf.write_text(self._slurm_conf())
        return self

    def _wrapper(self, mode: str) -> None:
        path = self.root / f"{mode}.sh"
        pause = f"[ -e {shlex.quote(str(self.root / 'health.paused'))} ] && exit 0" if mode == "health" else ""
        path.write_text(
            WRAPPER.format(
                pause=pause,
                path=shlex.quote(os.pathsep.join([str(Path(sys.executable).parent), "/usr/sbin", "/usr/bin", "/bin"])),
                conf=shlex.quote(str(self.conf)),
                home=shlex.quote(str(self.root)),
                runs=shlex.quote(str(self.root / f"{mode}.runs")),
                log=shlex.quote(str(self.root / f"{mode}.log")),
                python=shlex.quote(sys.executable),
                mode=mode,
                profile=PROFILE,
                state=shlex.quote(str(self.state)),
            )
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def _slurm_conf(self) -> str:
        r = self.root
        return f"""ClusterName=gpulab
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser={self.user}
SlurmdUser={self.user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r / "munge" / "munge.socket"}
StateSaveLocation={r / "state"}
SlurmdSpoolDir={r / "spool"}
SlurmctldPidFile={r / "slurmctld.pid"}
SlurmdPidFile={r / "slurmd.pid"}
SlurmctldLogFile={r / "log" / "slurmctld.log"}
SlurmdLogFile={r / "log" / "slurmd.log"}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
SelectType=select/linear
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
HealthCheckProgram={r / "health.sh"}
HealthCheckInterval={HEALTH_INTERVAL_S}
HealthCheckNodeState=ANY
Prolog={r / "prolog.sh"}
Epilog={r / "epilog.sh"}
PrologFlags=Alloc
NodeName={self.host} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=gpu Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
"""

    # ---- the daemons

    def start(self) -> None:
        m = self.root / "munge"
        self._spawn(
            "munged",
            [
                "munged",
                "--foreground",
                f"--key-file={m / 'munge.key'}",
                f"--socket={m / 'munge.socket'}",
                f"--log-file={m / 'munged.log'}",
                f"--pid-file={m / 'munged.pid'}",
                f"--seed-file={m / 'munged.seed'}",
            ],
        )
        self.wait(lambda: (m / "munge.socket").exists(), "munged's socket", 10)
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self.wait(lambda: self.slurm("scontrol", "ping", check=False).returncode == 0, "slurmctld to answer", 20)
        self._spawn("slurmd", ["slurmd", "-D", "-N", self.host, "-f", str(self.conf)])

    def _spawn(self, name: str, argv: list[str]) -> None:
        binary = _which(argv[0])
        assert binary, f"{argv[0]} is not installed"
        out = (self.root / "log" / f"{name}.out").open("wb")
        self.procs[name] = subprocess.Popen(
            [binary, *argv[1:]], stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )
        out.close()

    def stop(self) -> None:
        """End every daemon (slurmd first), SIGTERM then SIGKILL, each with its whole process group."""
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                if proc.poll() is not None:
                    break
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(wait)
                except subprocess.TimeoutExpired:
                    continue
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
        self.procs.clear()

    def assert_running(self) -> None:
        dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
        assert not dead, f"daemons ended: {dead}\n{self.logs()}"

    def logs(self, lines: int = 25) -> str:
        """The tail of every log, to explain a failure."""
        out = []
        for path in sorted(
            [*(self.root / "log").glob("*"), *self.root.glob("*.log"), self.root / "munge" / "munged.log"]
        ):
            if path.is_file():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)

    # ---- talking to it

    def slurm(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        binary = _which(argv[0]) or argv[0]
        proc = subprocess.run(
            [binary, *argv[1:]], capture_output=True, text=True, env=self.env, timeout=15, check=False, cwd=self.root
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{shlex.join(argv)} exited {proc.returncode}: {proc.stderr}\n{self.logs()}")
        return proc

    def node(self) -> tuple[str, str]:
        """The node's state as scontrol prints it (``IDLE+DRAIN``) and its reason, without ``[user@time]``."""
        from assessor.slurm.scontrol import parse_show_node

        info = parse_show_node(self.host, self.slurm("scontrol", "show", "node", self.host).stdout)
        return info.state, info.reason or ""

    def reasons(self) -> list[str]:
        """``sinfo -R``, one ``REASON|NODELIST`` line per reason, the reason in full."""
        out = self.slurm("sinfo", "-R", "-h", "-o", "%E|%N").stdout
        return [line for line in out.splitlines() if line.strip()]

    def wait(self, ready: Callable[[], bool], what: str, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ready():
                return
            if any(p.poll() is not None for p in self.procs.values()):
                self.assert_running()
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {seconds:g}s\n{self.logs()}")

    def log(self, mode: str) -> str:
        """What gpulab printed in every run of ``mode`` so far."""
        path = self.root / f"{mode}.log"
        return path.read_text() if path.exists() else ""

    def wait_log(self, mode: str, text: str, seconds: float = 20) -> None:
        """Wait until a run of ``mode`` has printed ``text``."""
        self.wait(lambda: text in self.log(mode), f"{text!r} from gpulab slurm {mode}", seconds)

    def wait_runs(self, mode: str, count: int, seconds: float = 20) -> None:
        """Wait until ``count`` more runs of ``mode`` have ended."""
        target = self.runs(mode) + count
        self.wait(lambda: self.runs(mode) >= target, f"{count} more {mode} run(s)", seconds)


def make_root() -> Path:
    """A short folder of its own (a UNIX socket path is at most 107 bytes) that every user can search."""
    return Path(tempfile.mkdtemp(prefix="gpulab-slurm-"))
