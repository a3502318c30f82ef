"""Nothing gpulab starts outlives its time limit: on the node (a guard around every remote command) or here.

On the node
    Every command gpulab runs over SSH (the batched capture through paramiko, every command Ansible runs
    through its ``ssh`` connection) is wrapped by :func:`guarded`: a POSIX ``sh`` guard starts a watchdog
    and then ``exec``\\s the command in its place. OpenSSH's ``sshd`` makes each session's command the
    leader of a session of its own (``setsid``), so every process the command starts, and every process
    group those start (coreutils ``timeout`` puts each tool in one of its own), is in that session. The
    watchdog checks once a second and, when the SSH connection is gone (the session's ``sshd`` exited:
    gpulab timed the host out, was interrupted or killed) or the command's time limit has passed, sends
    SIGTERM and a second later SIGKILL to every process of the session (found in ``/proc``). A command that
    ends on its own ends the watchdog too, and what it started on purpose (a daemon) is left alone.

    Why not only ``timeout N`` around the command, or a pty so that sshd's hang-up kills it: ``timeout``
    kills its own process group, and the capture's per-tool ``timeout`` starts a group of its own that the
    outer one never reaches; a pty mixes stderr into stdout, rewrites line ends and breaks Ansible's
    pipelining. Sweeping the session reaches both, without a pty and with nothing installed on the node.

    Limits: the guard needs ``/proc`` (Linux); a command started through ``sudo`` runs as root, which the
    login user cannot kill, so the guard's signals reach sudo, which relays them to the command (and its pty
    hang-up ends the rest). Where the session is not one of its own (not OpenSSH), the guard does nothing.

Here
    :data:`STOP` is set when gpulab is interrupted (SIGINT, SIGTERM: :func:`stop_on_signals`); a run of
    ansible-playbook and a capture over SSH in flight watch it and stop, so the interpreter does not wait
    out a host's time limit on the way out. ansible-playbook runs in a session of its own (ansible-runner
    spawns it on a pty) and is ended as a whole process group (:mod:`assessor.targets.ansible`).
"""

from __future__ import annotations

import contextlib
import math
import shlex
import signal
import threading
from collections.abc import Iterator
from types import FrameType

# set when gpulab is told to stop: runs in flight end early (their hosts are errors)
STOP = threading.Event()

# a grace beyond the command's own limit before the node-side watchdog ends it
GRACE_S = 2

# $1: seconds the command may run; $2: the command line, run by the login shell as sshd would run it.
# gl_sweep SIG: SIG to every process of this session except the one sweeping.
GUARD = r"""gl_limit=$1 gl_cmd=$2 gl_sid=$$ gl_parent=$PPID
gl_alive() { [ -d "/proc/$1" ] || kill -0 "$1" 2>/dev/null; }
gl_sweep() {
  gl_me=$(exec sh -c 'echo "$PPID"')
  for gl_p in /proc/[0-9]*; do
    gl_pid=${gl_p#/proc/}
    [ "$gl_pid" = "$gl_me" ] && continue
    read -r gl_st 2>/dev/null <"$gl_p/stat" || continue
    set -- ${gl_st##*") "}
    [ "${4:-}" = "$gl_sid" ] && kill "-$gl_sig" "$gl_pid" 2>/dev/null
  done
}
if read -r gl_st 2>/dev/null </proc/$$/stat; then
  set -- ${gl_st##*") "}
  if [ "${4:-}" = "$gl_sid" ]; then
    (
      gl_left=$gl_limit
      while [ "$gl_left" -gt 0 ] && gl_alive "$gl_parent"; do
        sleep 1
        gl_alive "$gl_sid" || exit 0
        gl_left=$((gl_left - 1))
      done
      gl_sig=TERM; gl_sweep; sleep 1; gl_sig=KILL; gl_sweep
    ) </dev/null >/dev/null 2>&1 &
  fi
fi
exec "${SHELL:-/bin/sh}" -c "$gl_cmd"
"""


def limit_s(seconds: float) -> int:
    """Whole seconds the guard gives a command that may run ``seconds``: rounded up, plus :data:`GRACE_S`."""
    return max(1, math.ceil(seconds)) + GRACE_S


def guarded(command: str, seconds: float) -> str:
    """``command`` as sent to sshd, with the guard: it and all it starts end when the connection goes, or
    ``seconds`` (plus :data:`GRACE_S`) after it began. (The Ansible connection plugin builds the same line.)"""
    return f"exec /bin/sh -c {shlex.quote(GUARD)} gpulab-guard {limit_s(seconds)} {shlex.quote(command)}"


class Interrupted(KeyboardInterrupt):
    """gpulab was told to stop by a signal (SIGINT: Ctrl-C, SIGTERM); ``code`` is the exit status to end with."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.code = 128 + signum
        super().__init__(signal.Signals(signum).name)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside: SIGINT and SIGTERM set :data:`STOP` (runs in flight stop, in every thread) and raise
    :class:`Interrupted` in the main thread. Outside the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        STOP.set()
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        STOP.clear()  # what was in flight has ended; a later command (in the same process) starts afresh
