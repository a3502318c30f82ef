"""Write executables named like the real tools that run the simulated ones (``gpulab sim shims``)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

# Paths whose reads the simulator answers; `cat` of anything else is the real cat.
SIMULATED_FILES = ("/proc/driver/nvidia/version", "/etc/os-release")


def write_shims(directory: Path | str, python: str | None = None) -> list[Path]:
    """One small sh script per simulated tool in ``directory``; returns their paths."""
    from assessor.sim.tools import TOOLS

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    exe = shlex.quote(python or sys.executable)
    root = shlex.quote(str(Path(__file__).resolve().parents[2]))
    run = f"PYTHONPATH={root}${{PYTHONPATH:+:$PYTHONPATH}} exec {exe} -m assessor.sim.shim"
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
