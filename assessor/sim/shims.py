"""Write executables named like the real tools that run the simulated ones (``gpulab sim shims``).

Every shim runs ``python -S -m assessor.sim.shim NAME`` (no site-packages: the simulated tools need none, and
skipping them keeps a tool call near 60 ms): none falls back to the host's command of the same
name, so ``reboot``, ``shutdown`` or ``kill`` typed on a simulated node never reach the machine it runs on.
The one exception is ``cat``, which answers the node's simulated files and hands any other path to
``/bin/cat``.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

# Paths whose reads the simulator answers; `cat` of anything else is the real cat.
SIMULATED_FILES = (
    "/proc/driver/nvidia/version",
    "/etc/os-release",
    "/var/log/fabricmanager.log",
    "/etc/nccl.conf",
    "/etc/modprobe.d/*",
    "/usr/share/nvidia/nvswitch/fabricmanager.cfg",
)


def write_shims(directory: Path | str, python: str | None = None) -> list[Path]:
    """One small sh script per simulated tool in ``directory``; returns their paths."""
    from assessor.sim.tools import TOOLS

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    exe = shlex.quote(python or sys.executable)
    root = shlex.quote(str(Path(__file__).resolve().parents[2]))
    run = f"PYTHONPATH={root}${{PYTHONPATH:+:$PYTHONPATH}} exec {exe} -S -m assessor.sim.shim"
    written = []
    for name in sorted(TOOLS):
        if name == "cat":
            cases = "|".join(SIMULATED_FILES)
            body = f'case "$1" in\n  {cases}) {run} cat "$@" ;;\nesac\nexec /bin/cat "$@"\n'
        else:
            body = f'{run} {shlex.quote(name)} "$@"\n'
        path = out / name
        path.write_text("#!/bin/sh\n# gpulab simulator shim: the simulated " + name + "\n" + body, encoding="utf-8")
        path.chmod(0o755)
        written.append(path)
    return written


def shims_report(directory: Path | str, written: list[Path], state_path: str | None = None) -> list[str]:
    """What ``gpulab sim shims`` prints: the shims, how to use them, the node's configuration root."""
    from assessor.sim.config_root import root_for_state

    where = Path(directory).absolute()
    lines = [f"{len(written)} shims written to {where}: {' '.join(p.name for p in written)}"]
    state = state_path or os.environ.get("GPULAB_SIM_STATE")
    if state:
        absolute = shlex.quote(str(Path(state).absolute()))
        lines.append(f"node configuration files (its /etc ...): {root_for_state(state)}")
        lines.append(f"use: export PATH={shlex.quote(str(where))}:$PATH GPULAB_SIM_STATE={absolute}")
    else:
        lines.append(f"use: export PATH={shlex.quote(str(where))}:$PATH GPULAB_SIM_STATE=/absolute/path/of/node.json")
    lines.append("bash runs its builtin kill before any PATH entry: run 'enable -n kill' once (or type 'env kill PID')")
    return lines
