"""What a node that runs Slurm needs laid over its ``/usr``: the daemons' launcher and their preload library.

- ``/usr/lib/gpulab/slurm-daemon DAEMON ARGS...``: starts one daemon as its unit would, then becomes it (the
  PID stays the unit's main PID): it waits until the previous instance has gone (``systemctl restart`` ends
  it with SIGTERM, and a Slurm daemon saves its state before it exits) and, for the Slurm daemons, until
  munged's socket is there (slurmd also until the node's slurmctld answers, for 10 s at most, so that it
  registers at once rather than at the controller's next ping); it makes the folders the packages make.
- ``/usr/lib/gpulab/libgpulab-slurm.so``, preloaded into the daemons only (``preload.c`` says why), built with
  the machine's C compiler.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from assessor.sim.mig_caps import CAPS_MAJOR
from assessor.sim.slurm_node import CLIENTS, MUNGE_SOCKET, missing_binaries

LAUNCHER = "/usr/lib/gpulab/slurm-daemon"
INSTALL = "apt-get install slurmctld slurmd slurm-client munge"
PRELOAD = "/usr/lib/gpulab/libgpulab-slurm.so"
_HERE = Path(__file__).resolve().parent

_LAUNCHER_TEXT = f"""#!/bin/sh
# gpulab: starts one of the node's Slurm daemons as its systemd unit does, then becomes it.
unset GPULAB_STANDIN
name=${{1##*/}}
mkdir -p /var/log/slurm
if [ ! -x "$1" ]; then
  echo "$1: not installed on the machine this simulated node runs on ({INSTALL})" >> /var/log/slurm/gpulab.log
  exit 127
fi
n=0
while pgrep -x "$name" >/dev/null 2>&1 && [ $n -lt 150 ]; do sleep 0.1; n=$((n + 1)); done
mkdir -p /sys/fs/cgroup/systemd /run/munge /var/log/munge /var/lib/munge
mkdir -p /var/spool/slurmctld /var/spool/slurmd
chmod 700 /var/log/munge /var/lib/munge 2>/dev/null
if [ "$name" != munged ]; then
  n=0
  while [ ! -S {MUNGE_SOCKET} ] && [ $n -lt 150 ]; do sleep 0.1; n=$((n + 1)); done
fi
if [ "$name" = slurmd ]; then
  # the controller runs on this node too: register once it answers, not into a restarting slurmctld
  n=0
  while ! scontrol ping >/dev/null 2>&1 && [ $n -lt 40 ]; do sleep 0.25; n=$((n + 1)); done
fi
export LD_PRELOAD={PRELOAD}
exec "$@"
"""
_MISSING_CLIENT = f"""#!/bin/sh
echo "${{0##*/}}: Slurm is not installed on the machine this simulated node runs on ({INSTALL})" >&2
exit 127
"""


def write_runtime(layer: Path) -> str | None:
    """Write the launcher and build the preload library under ``layer`` (the node's ``/usr``); a one-line
    reason when the library cannot be built (no C compiler): the daemons then cannot run on this node. Where
    the machine lacks Slurm's clients, each missing one is a script saying so (and what to install)."""
    launcher = layer / LAUNCHER.removeprefix("/usr/")
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(_LAUNCHER_TEXT, encoding="utf-8")
    launcher.chmod(0o755)
    for name in missing_binaries():  # the clients the machine lacks say so, inside the node
        if name in CLIENTS:
            stand_in = layer / "bin" / name
            stand_in.parent.mkdir(parents=True, exist_ok=True)
            stand_in.write_text(_MISSING_CLIENT, encoding="utf-8")
            stand_in.chmod(0o755)
    library = layer / PRELOAD.removeprefix("/usr/")
    compiler = os.environ.get("CC") or "cc"
    try:
        done = subprocess.run(
            [
                compiler,
                "-shared",
                "-fPIC",
                "-O2",
                f"-DNVIDIA_CAPS_MAJOR={CAPS_MAJOR}",
                "-o",
                str(library),
                str(_HERE / "preload.c"),
                "-ldl",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no C compiler to build the Slurm daemons' library ({exc}); install gcc"
    if done.returncode != 0:
        return f"building the Slurm daemons' library failed: {done.stderr.strip().splitlines()[-1:]}"
    return None
