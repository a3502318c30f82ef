"""The agent of a running simulated node: boots it, answers its tools, keeps its processes.

One agent per node, outside the node's namespaces (``python -m assessor.sim.machine.agent STATE``, started
by ``gpulab sim shell``). It alone opens the state file. Inside, every simulated tool connects to its
socket (``/run/gpulab/node.sock``), and the agent runs the tool on the state as :mod:`assessor.sim.tools`
does for the ``mock:`` target, with the caller's environment (``GPULAB_*`` variables dropped: the node's
files are always its own).

After every tool, after every death of one of the node's processes, and whenever the state file changes
(a lab started, a fault injected from outside), it reconciles the node with its state: the GPU daemons of
running units and the jobs of ``nvidia-smi``'s process table run as real processes under the same PIDs
(:func:`.layout.node_processes`), and the published files (``/proc/driver/nvidia/version``, the boot id,
``/var/log/fabricmanager.log``) say what the state says. A node process that ends without the agent asking
(``kill``, ``pkill``, ``fuser -k``) is delivered to the state as the signal it died of, so the unit goes
down or the job leaves its GPU, as ``kill`` of the simulated tools does.

The agent ends (and the node with it) when asked (``gpulab sim stop``), when its state file is gone, or when
it is killed: PID 1 of the node sees its pipe close and the kernel ends every process of the node.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.sim.grub import booted_cmdline
from assessor.sim.machine.layout import (
    DAEMON_PATHS,
    GPULAB_DIR,
    NVML_LIBRARY_DIR,
    OWN_DIRS,
    TOOL_PATHS,
    NodePaths,
    NodeProcess,
    boot_id,
    device_files,
)
from assessor.sim.state import NodeState

_HERE = Path(__file__).resolve().parent
MAX_REQUEST = 4 * 1024 * 1024
POLL_S = 0.3
NVML_HELLO = b"gpulab-nvml "  # the first line of gpulab's libnvidia-ml.so.1 (runtime.c)
MAX_NVML_SESSIONS = 64
# How long a real daemon asked to stop (SIGTERM) has to end before it gets SIGKILL: systemd's TimeoutStopSec,
# shorter than its 90 s default so that the tool that stopped it answers within its client's 60 s
STOP_TIMEOUT_S = 30.0


def find_python() -> str:
    """A Python 3 under ``/usr`` (the node sees the host's ``/usr``): its pid 1 and tool client run on it."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("the simulated node needs a python3 under /usr (apt-get install python3)")


_SUDO = """#!/bin/sh
# gpulab: sudo on a simulated node. You are its administrator: the command runs as root.
while [ $# -gt 0 ]; do
  case "$1" in
    -u|-g|-C|-D|-p|-r|-t|-U|-h) shift 2 ;;
    -i|-s) shift; [ $# -eq 0 ] && exec /bin/bash -l; exec /bin/bash -lc "$*" ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -eq 0 ] && { echo "usage: sudo [-E] [-u user] command" >&2; exit 1; }
exec "$@"
"""


def write_layer(paths: NodePaths, python: str) -> None:
    """The files laid over the node's ``/usr``: the simulated tools, the daemons' stand-ins, pid 1, sudo."""
    layer = paths.layer
    if layer.exists():
        shutil.rmtree(layer)
    lib = layer / GPULAB_DIR.removeprefix("/usr/")
    (lib / "jobs").mkdir(parents=True)
    shutil.copyfile(_HERE / "pid1.py", lib / "pid1.py")
    shutil.copyfile(_HERE / "client.py", lib / "client.py")
    tool = f"#!{python} -SI\nimport sys\nsys.path.insert(0, {GPULAB_DIR!r})\nimport client\nsys.exit(client.main())\n"
    standin = (_HERE / "standin.sh").read_text(encoding="utf-8")

    def put(node_path: str, text: str) -> None:
        target = layer / node_path.removeprefix("/usr/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o755)

    for node_path in TOOL_PATHS.values():
        put(node_path, tool)
        # A program of the same name in the host's /usr/local (a docker CLI) comes first on the node's PATH:
        # the simulated tool covers it there too, so the node never runs the host's.
        name = node_path.rsplit("/", 1)[1]
        for local in ("/usr/local/sbin", "/usr/local/bin"):
            if os.path.lexists(f"{local}/{name}"):
                put(f"{local}/{name}", tool)
    _put_nvml_library(layer)
    for node_path in DAEMON_PATHS.values():
        put(node_path, standin)
    # a daemon's binary typed by hand (standin.sh hands it over): the client, told the program's name
    put(f"{GPULAB_DIR}/by-hand", tool.replace("import client\n", "import client\nsys.argv = sys.argv[1:]\n"))
    put("/usr/bin/sudo", _SUDO)


def _put_nvml_library(layer: Path) -> None:
    """gpulab's libnvidia-ml.so.1 at the real library path, so programs inside load it unchanged."""
    from assessor.errors import InputError
    from assessor.sim.nvml_lib.build import write_library

    try:
        write_library(layer / NVML_LIBRARY_DIR.removeprefix("/usr/"))
    except InputError as exc:  # no C compiler: the node works, programs that load NVML find no library
        print(f"gpulab: the node has no libnvidia-ml.so.1: {exc}", file=sys.stderr)


def prepare(paths: NodePaths, state: NodeState, python: str) -> None:
    """The node's directories, its own files that it lacks, and the tool layer."""
    from assessor.sim.config_root import populate

    root = paths.root
    for sub in ("usr", "etc", *OWN_DIRS):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "var" / "log").mkdir(parents=True, exist_ok=True)
    (root / "var" / "tmp").mkdir(parents=True, exist_ok=True)
    os.chmod(root / "var" / "tmp", 0o1777)
    populate(root, state)
    for sub in ("work/usr", "work/etc", "sock/jobs", "proc/driver", "newroot"):
        (paths.run / sub).mkdir(parents=True, exist_ok=True)
    write_layer(paths, python)
    _slurm_runtime(paths, state)
    own = {
        "etc/hostname": f"{state.host}\n",
        "etc/hosts": f"127.0.0.1\tlocalhost\n127.0.1.1\t{state.host}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    }
    os_release = _simulated_file(paths, "/etc/os-release")
    if os_release:
        own["etc/os-release"] = os_release
    for rel, text in own.items():
        target = root / rel
        if not target.exists() and not target.is_symlink():
            target.write_text(text, encoding="utf-8")
    boot = paths.published / "boot_id"
    if not boot.exists():
        boot.write_text(boot_id(state) + "\n", encoding="utf-8")
    cmdline = paths.published / "cmdline"
    if not cmdline.exists():
        cmdline.write_text(booted_cmdline(state) + "\n", encoding="utf-8")


def _slurm_runtime(paths: NodePaths, state: NodeState) -> None:
    """A node that runs Slurm gets its daemons' launcher and library (:mod:`assessor.sim.slurm_node.runtime`)."""
    from assessor.sim.slurm_node import runs_slurm
    from assessor.sim.slurm_node.runtime import write_runtime

    if runs_slurm(state):
        problem = write_runtime(paths.layer)
        if problem:
            print(f"gpulab: the node's Slurm cannot run: {problem}", file=sys.stderr)


def _simulated_file(paths: NodePaths, node_path: str) -> str | None:
    from assessor.sim.tools import Session, run_tool

    result = run_tool(["cat", node_path], Session(path=paths.state, env={}))
    return result.stdout if result.exit_code == 0 else None


def _read_quietly(path: Path) -> str | None:
    if path.is_symlink():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _write_if_changed(path: Path, text: str, *, in_place: bool = False) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    if in_place:  # a file bound into the node: the bind holds this inode, so rewrite it, never replace it
        with open(path, "r+" if path.exists() else "w", encoding="utf-8") as fh:
            fh.truncate(0)
            fh.write(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".gpulab-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def publish(paths: NodePaths, state: NodeState) -> None:
    """The files of the node that mirror its state: the driver's version file, the boot id, FM's log."""
    from assessor.sim.config_root import write_node_file
    from assessor.sim.mig_caps import write_proc_files
    from assessor.sim.tools.system import driver_version_text, fabric_manager_log

    version = driver_version_text(state)
    nvidia = paths.published / "driver" / "nvidia"
    if version is None:
        shutil.rmtree(nvidia, ignore_errors=True)
    else:
        nvidia.mkdir(parents=True, exist_ok=True)
        _write_if_changed(nvidia / "version", version)
    write_proc_files(paths.published / "driver", state)  # the MIG capabilities (assessor.sim.mig_caps)
    _write_if_changed(paths.published / "boot_id", boot_id(state) + "\n", in_place=True)
    _write_if_changed(paths.published / "cmdline", booted_cmdline(state) + "\n", in_place=True)
    log = fabric_manager_log(state, paths.root)
    if log is not None and _read_quietly(paths.root / "var" / "log" / "fabricmanager.log") != log:
        # a file of the node's own, where the candidate may have put a link: written without following it
        write_node_file(paths.root, "/var/log/fabricmanager.log", log)


@dataclass
class Agent:
    paths: NodePaths
    python: str
    proc: subprocess.Popen[bytes] | None = None
    running: dict[int, NodeProcess] = field(default_factory=dict)  # by its PID in the node (the state's, unless taken)
    expected: set[int] = field(default_factory=set)  # PIDs the agent itself ended
    events: list[dict[str, Any]] = field(default_factory=list)
    buffer: bytes = b""
    seen: tuple[float, int] | None = None
    next_id: int = 0
    stopping: bool = False
    nvml_sessions: int = 0

    # ---- boot --------------------------------------------------------------------------------

    def boot(self) -> int:
        """Start the node's namespaces and PID 1; its host PID."""
        from assessor.sim.machine.mounts import UNSHARE_ARGS, boot_script
        from assessor.sim.state import load_state

        state = load_state(self.paths.state)
        prepare(self.paths, state, self.python)
        publish(self.paths, state)
        script = boot_script(self.paths, state.host, device_files(state), self.python, address=_address(state))
        log = open(self.paths.log, "ab")  # noqa: SIM115 - the node's stderr for its whole life
        self.proc = subprocess.Popen(
            [*UNSHARE_ARGS, "sh", "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            close_fds=True,
        )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        ready = self._wait_event(lambda e: e.get("ev") == "ready", 20.0)
        if ready is None:
            raise RuntimeError("the node did not boot")
        init = _child_of(self.proc.pid)
        if init is None:
            raise RuntimeError("the node's PID 1 is not there")
        self.seen = None
        self.reconcile()
        return init

    # ---- talking to PID 1 --------------------------------------------------------------------

    def _send(self, command: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def _read_events(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                self.stopping = True
                break
            self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    self.events.append(event)

    def _until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Read PID 1's events until ``done()`` holds (True), or until ``timeout`` or the node's end (False)."""
        import select

        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or self.stopping:
                return False
            select.select([self.proc.stdout.fileno()], [], [], left)
            self._read_events()
        return True

    def _wait_event(self, match: Any, timeout: float) -> dict[str, Any] | None:
        """The first event ``match`` takes (removed from the queue), or None after ``timeout``."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            for i, event in enumerate(self.events):
                if match(event):
                    found.append(self.events.pop(i))
                    return True
            return False

        return found[0] if self._until(seen, timeout) else None

    # ---- keeping the node's processes --------------------------------------------------------

    def _spawn(self, process: NodeProcess) -> None:
        from assessor.sim.machine.layout import job_name

        if process.exe.startswith(f"{GPULAB_DIR}/jobs/"):
            job = self.paths.sockets / "jobs" / job_name(process.comm)
            if not job.exists():
                job.write_text((_HERE / "standin.sh").read_text(encoding="utf-8"), encoding="utf-8")
                job.chmod(0o755)
        for attempt in range(3):
            self.next_id += 1
            ident = self.next_id
            self._send(
                {
                    "op": "spawn",
                    "id": ident,
                    "pid": process.pid,
                    "exe": process.exe,
                    "argv": list(process.argv),
                    "holds": list(process.holds),
                }
            )
            reply = self._wait_event(lambda e, i=ident: e.get("ev") == "spawned" and e.get("id") == i, 5.0)
            pid = reply.get("pid") if reply else None
            if not isinstance(pid, int):
                return
            self.running[pid] = process
            if pid == process.pid or attempt == 2 or process.stop_signal != signal.SIGKILL:
                # a real daemon (Slurm's) keeps the PID it got: ending it and starting another would leave two
                # of it racing over one pid file (the new slurmd "killing old slurmd"), the unit's record of it
                # behind
                return
            print(f"gpulab node agent: {process.comm} got PID {pid}, not {process.pid}: again", file=sys.stderr)
            self._kill(pid)  # the PID was taken: try again for the one the state names

    def _kill(self, pid: int) -> bool:
        """End one node process; True when it is a real daemon asked to stop (it may take a while to exit)."""
        print(f"gpulab node agent: ending PID {pid}", file=sys.stderr, flush=True)
        self.expected.add(pid)
        process = self.running.get(pid)
        sig = process.stop_signal if process is not None else int(signal.SIGKILL)
        self._send({"op": "kill", "pid": pid, "sig": sig})
        self.running.pop(pid, None)
        return sig != signal.SIGKILL

    def _await_ends(self, pids: set[int], timeout: float = STOP_TIMEOUT_S, grace: float = 5.0) -> None:
        """Wait until the daemons just asked to stop have exited, as ``systemctl stop`` waits for a unit's main
        process: a slurmctld still saving its state, or a slurmd still answering its controller with the old
        configuration, must not overlap the instance started next. One that outlives ``timeout`` gets
        SIGKILL, as systemd sends it after TimeoutStopSec; the agent then waits ``grace`` seconds more at most.
        Their exit events stay queued (:meth:`_deaths` knows them as expected)."""

        def left() -> set[int]:
            return pids - {e.get("pid") for e in self.events if e.get("ev") == "exit"}

        if self._until(lambda: not left(), timeout) or self.stopping:
            return
        for pid in sorted(left()):
            print(f"gpulab node agent: PID {pid} outlived its stop: SIGKILL", file=sys.stderr, flush=True)
            self._send({"op": "kill", "pid": pid, "sig": int(signal.SIGKILL)})
        self._until(lambda: not left(), grace)

    def sync(self) -> None:
        """Learn of every node process that has ended so far (a ``kill`` typed just before a tool)."""
        self.next_id += 1
        ident = self.next_id
        self._send({"op": "sync", "id": ident})
        self._wait_event(lambda e: e.get("ev") == "synced" and e.get("id") == ident, 2.0)
        self._deaths()

    def reconcile(self) -> None:
        """Make the node's processes and published files what its state says (nothing to do while the state
        file is the one last reconciled: every write replaces it, so its inode and time change)."""
        from assessor.errors import InputError
        from assessor.sim.machine.layout import node_processes
        from assessor.sim.state import load_state

        self._deaths()
        try:
            mark = _stat_mark(self.paths.state)
            if mark == self.seen:
                return
            state = load_state(self.paths.state)
        except (InputError, OSError):
            return
        self.seen = mark
        wanted = {p.key: p for p in node_processes(state)}
        have = {process.key: pid for pid, process in self.running.items()}
        stopping = {pid for key, pid in have.items() if key not in wanted and self._kill(pid)}
        if stopping:
            self._await_ends(stopping)  # a restart's new instance starts once the old one has gone
        for key, process in wanted.items():
            if key not in have:
                self._spawn(process)
        publish(self.paths, state)

    def _deaths(self) -> None:
        """Deliver to the state every death of a node process the agent did not ask for."""
        from assessor.sim.state import updating
        from assessor.sim.tools.node import deliver

        self._read_events()
        exits = [e for e in self.events if e.get("ev") == "exit"]
        self.events = [e for e in self.events if e.get("ev") != "exit"]
        for event in exits:
            pid = event.get("pid")
            if not isinstance(pid, int):
                continue
            if pid in self.expected:
                self.expected.discard(pid)
                continue
            gone = self.running.pop(pid, None)
            if gone is None:
                continue
            print(f"gpulab node agent: {gone.comm} (PID {pid}) ended: {event}", file=sys.stderr, flush=True)
            died_of = event.get("signal")
            sig = died_of if isinstance(died_of, int) else int(signal.SIGTERM)
            code = event.get("code")
            with contextlib.suppress(Exception), updating(self.paths.state) as state:
                deliver(state, gone.pid, sig)
                service = state.services.get(gone.unit or "")
                if service is not None and isinstance(code, int) and code != 0:
                    # a real daemon that exits with an error (slurmd refusing its gres.conf): its unit failed
                    service.active_state, service.sub_state = "failed", "failed"
                    service.result, service.exec_main_status = "exit-code", code

    # ---- serving the node's tools ------------------------------------------------------------

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one simulated tool for a process inside the node."""
        from assessor.errors import InputError
        from assessor.sim.config_root import ROOT_ENV
        from assessor.sim.shim import failure_code
        from assessor.sim.tools import Session, run_tool

        argv = request.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            return {"exit": 2, "stdout": "", "stderr": "gpulab: malformed tool request\n"}
        raw_env = request.get("env")
        env = {
            k: v
            for k, v in (raw_env.items() if isinstance(raw_env, dict) else ())
            if isinstance(k, str) and isinstance(v, str) and not k.startswith("GPULAB_")
        }
        env[ROOT_ENV] = str(self.paths.root)
        raw_uid = request.get("uid")
        uid = raw_uid if isinstance(raw_uid, int) else 0
        program = os.path.basename(argv[0])
        try:
            result = run_tool(argv, Session(path=self.paths.state, env=env, euid=uid))
        except InputError as exc:
            return {"exit": failure_code(program), "stdout": "", "stderr": f"{program}: {exc}\n"}
        except Exception as exc:  # a simulator bug: one line, the tool's failure code, the node goes on
            return {
                "exit": failure_code(program),
                "stdout": "",
                "stderr": f"{program}: internal simulator error: {type(exc).__name__}: {exc}\n",
            }
        return {"exit": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}

    def _serve_one(self, listener: socket.socket) -> None:
        conn, _ = listener.accept()
        conn.settimeout(5.0)
        reader = conn.makefile("rb")
        try:
            first = reader.readline(MAX_REQUEST + 1)
        except OSError:
            first = b""
        if first.startswith(NVML_HELLO):
            self._start_nvml(conn, reader, first)
            return
        with conn, reader:
            data = first
            try:
                while len(data) <= MAX_REQUEST:
                    chunk = reader.read1(65536)
                    if not chunk:
                        break
                    data += chunk
                request = json.loads(data) if len(data) <= MAX_REQUEST else None
            except (OSError, ValueError):
                request = None
            if isinstance(request, dict) and self.running:
                self.sync()  # a `kill` typed just before this tool is in the state it reads
            bad = {"exit": 2, "stderr": "gpulab: bad request\n"}
            reply = self.answer(request) if isinstance(request, dict) else bad
            # the node's processes and /proc files follow the tool before it answers: a `pgrep` or a
            # `cat boot_id` typed right after `systemctl start` or `reboot` sees what the tool did
            self.reconcile()
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(reply).encode())

    def _start_nvml(self, conn: socket.socket, reader: Any, hello: bytes) -> None:
        """A program inside the node loaded libnvidia-ml.so.1: answer its NVML calls on their own thread."""
        words = hello.split()
        uid = int(words[2]) if len(words) > 2 and words[2].isdigit() else 0
        if self.nvml_sessions >= MAX_NVML_SESSIONS:
            reader.close()
            conn.close()  # the library answers its caller NVML_ERROR_UNKNOWN
            return
        self.nvml_sessions += 1
        conn.settimeout(None)  # a monitoring tool may keep NVML open for hours between two calls
        threading.Thread(target=self._serve_nvml, args=(conn, reader, uid), daemon=True).start()

    def _serve_nvml(self, conn: socket.socket, reader: Any, uid: int) -> None:
        from assessor.sim.nvml_lib.serve import node_nvml, serve

        try:
            with conn, reader, conn.makefile("wb") as writer:
                serve(reader, writer, node_nvml(str(self.paths.state), uid))
        except OSError:
            pass  # the program ended or closed its end
        finally:
            self.nvml_sessions -= 1

    def serve(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cwd = os.getcwd()
        os.chdir(self.paths.sockets)  # bind by a short relative name: the full path may be long
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink("node.sock")
            listener.bind("node.sock")
        finally:
            os.chdir(cwd)
        os.chmod(self.paths.socket, 0o666)
        listener.listen(16)
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, "tool")
        selector.register(self.proc.stdout, selectors.EVENT_READ, "init")
        while not self.stopping:
            for key, _ in selector.select(POLL_S):
                if key.data == "tool":
                    self._serve_one(listener)
            if not self.paths.state.exists() or self.proc.poll() is not None:
                break
            self.reconcile()  # deaths reported by PID 1, and a state changed from outside (a lab start)
        self.shutdown()

    def shutdown(self) -> None:
        self.stopping = True
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        with contextlib.suppress(OSError):
            self.paths.record.unlink()


def _address(state: NodeState) -> str | None:
    """The address the node's network gets beside loopback: only a node that runs Slurm needs one."""
    from assessor.sim.slurm_node import NODE_ADDRESS, runs_slurm

    return NODE_ADDRESS if runs_slurm(state) else None


def _stat_mark(path: Path) -> tuple[float, int]:
    st = path.stat()
    return (st.st_mtime, st.st_ino)


def _child_of(pid: int) -> int | None:
    """The first child of ``pid`` (the node's PID 1 is the only child of its unshare)."""
    for _ in range(100):
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.01)
    return None


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m assessor.sim.machine.agent STATE", file=sys.stderr)
        return 2
    paths = NodePaths.of(args[0])
    paths.run.mkdir(parents=True, exist_ok=True)
    lock = open(paths.run / "agent.lock", "a+")  # noqa: SIM115 - held for the agent's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another agent runs this node
    agent = Agent(paths, find_python())
    signal.signal(signal.SIGTERM, lambda *_: setattr(agent, "stopping", True))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        init = agent.boot()
    except Exception as exc:
        print(f"gpulab node agent: {exc}", file=sys.stderr, flush=True)
        agent.shutdown()
        return 1
    record = {"agent": os.getpid(), "init": init, "state": str(paths.state), "started": time.time()}
    tmp = paths.record.with_name("agent.json.tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, paths.record)
    agent.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
