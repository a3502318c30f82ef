"""Entry point of a tool shim: ``python -m assessor.sim.shim PROGRAM ARGS...``.

The node's state file comes from ``GPULAB_SIM_STATE``; ``GPULAB_SIM_EUID`` pretends another
user (tests of root-only commands); ``GPULAB_SIM_ROOT``, when set, is the directory that holds the
node's files under / (its ``etc/nccl.conf``, which the simulated nccl-tests read).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m assessor.sim.shim PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    state = os.environ.get("GPULAB_SIM_STATE")
    if not state:
        print(f"{args[0]}: GPULAB_SIM_STATE is not set: point it at a state file (gpulab sim init)", file=sys.stderr)
        return 1
    if not Path(state).exists():
        print(
            f"{args[0]}: simulated node state {state} does not exist (gpulab sim init --state {state})", file=sys.stderr
        )
        return 1
    from assessor.sim.tools import Session, run_tool

    euid = int(os.environ.get("GPULAB_SIM_EUID", os.geteuid()))
    result = run_tool(args, Session(path=Path(state), env=dict(os.environ), euid=euid))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.stdout.flush()
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
