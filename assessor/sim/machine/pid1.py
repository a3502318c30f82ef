"""PID 1 of a simulated node (runs inside it: standard library only, no gpulab import).

It reads commands from the agent on fd 0 and writes events on fd 1, one JSON object a line:

- ``{"op": "spawn", "id": N, "pid": WANTED, "exe": PATH, "argv": [...], "holds": [PATH...]}``: start a
  process under PID ``WANTED`` when it is free (through ``/proc/sys/kernel/ns_last_pid``), with the files
  of ``holds`` open; answers ``{"ev": "spawned", "id": N, "pid": PID}`` (``"pid": null`` if it failed).
- ``{"op": "kill", "pid": PID, "sig": SIG}``: signal one of its processes.
- ``{"op": "sync", "id": N}``: answers ``{"ev": "synced", "id": N}`` after reporting every death so far.

When a process it started ends, it says ``{"ev": "exit", "pid": PID, "signal": SIG, "code": CODE}``. It
reaps every orphan of the node, as an init does. When the agent's end of fd 0 closes, it ends the node.
"""

import contextlib
import json
import os
import select
import signal
import sys

NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def _say(event):
    os.write(1, (json.dumps(event) + "\n").encode())


def _spawn(cmd, keeper):
    wanted = cmd.get("pid")
    if isinstance(wanted, int) and wanted > 1:
        try:
            fd = os.open(NS_LAST_PID, os.O_WRONLY)
            try:
                os.write(fd, str(wanted - 1).encode())
            finally:
                os.close(fd)
        except OSError:
            pass
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)  # PID 1 ignores them; its processes must not
            signal.set_wakeup_fd(-1)
            os.dup2(keeper, 9)  # the stand-in waits on fd 9, which never has anything to read
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
            for path in cmd.get("holds", []):  # opened last: no descriptor above may take their place
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
                os.set_inheritable(fd, True)
            env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GPULAB_STANDIN": "1"}
            os.execve(cmd["exe"], cmd["argv"], env)
        finally:
            os._exit(127)
    return pid


def _reap(ours):
    """Reap every child that ended; report those the agent started."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in ours:
            ours.discard(pid)
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            _say({"ev": "exit", "pid": pid, "signal": sig, "code": code})


def main():
    for ignored in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(ignored, signal.SIG_IGN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    keeper_r, _keeper_w = os.pipe()  # the stand-ins read keeper_r; nobody ever writes the other end
    ours: set[int] = set()
    buffer = b""
    _say({"ev": "ready", "pid": os.getpid()})
    while True:
        try:
            ready, _, _ = select.select([0, wake_r], [], [], 5.0)
        except InterruptedError:
            ready = []
        if wake_r in ready:
            os.read(wake_r, 512)
        _reap(ours)
        if 0 not in ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return 0  # the agent is gone: the node stops
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                cmd = json.loads(line)
            except ValueError:
                continue
            if not isinstance(cmd, dict):
                continue
            if cmd.get("op") == "spawn":
                started = None
                try:
                    started = _spawn(cmd, keeper_r)
                    ours.add(started)
                except (OSError, KeyError, TypeError):
                    pass
                _say({"ev": "spawned", "id": cmd.get("id"), "pid": started})
            elif cmd.get("op") == "sync":  # every death so far is reported above this answer
                _reap(ours)
                _say({"ev": "synced", "id": cmd.get("id")})
            elif cmd.get("op") == "kill" and cmd.get("pid") in ours:
                with contextlib.suppress(OSError, ValueError, TypeError):
                    os.kill(cmd["pid"], int(cmd.get("sig", signal.SIGTERM)))


if __name__ == "__main__":
    sys.exit(main())
