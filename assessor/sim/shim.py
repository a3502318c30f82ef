"""Entry point of a tool shim: ``python -m assessor.sim.shim PROGRAM ARGS...``.

The node's state file comes from ``GPULAB_SIM_STATE``; ``GPULAB_SIM_EUID`` pretends another
user (tests of root-only commands); ``GPULAB_SIM_ROOT``, when set, is the directory that holds the
node's files under / (default: ``STATE.d`` beside the state file, :mod:`assessor.sim.config_root`).

A state that is missing, unreadable or not a state makes every shim print one line naming the file and
exit with the tool's own failure code (:data:`FAILURE_CODES`), never a Python traceback. Nothing here
ever runs a host command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# What each tool exits with when it cannot do anything at all (no driver, no device, no daemon).
FAILURE_CODES = {
    "nvidia-smi": 9,  # "couldn't communicate with the NVIDIA driver" (man nvidia-smi: 9, driver not loaded)
    "dcgmi": 255,  # "Error: unable to establish a connection to the specified host: localhost"
    "ibstat": 255,  # ibpanic()
    "ibv_devinfo": 255,
    "perfquery": 255,  # ibexit(): exit(-1)
    "ib_write_bw": 1,
    "ib_read_bw": 1,
    "ib_send_bw": 1,
    "ib_write_lat": 1,
    "ib_read_lat": 1,
    "ib_send_lat": 1,
    "all_reduce_perf": 1,
    "all_gather_perf": 1,
    "reduce_scatter_perf": 1,
    "alltoall_perf": 1,
    "sendrecv_perf": 1,
    "broadcast_perf": 1,
    "reduce_perf": 1,
    "systemctl": 1,
    "journalctl": 1,
    "reboot": 1,
    "shutdown": 1,
    "kill": 1,
}


def failure_code(program: str) -> int:
    """The exit status ``program`` fails with when the node cannot be reached (1 for the rest)."""
    return FAILURE_CODES.get(os.path.basename(program), 1)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m assessor.sim.shim PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    program = os.path.basename(args[0])
    code = failure_code(program)
    state = os.environ.get("GPULAB_SIM_STATE")
    if not state:
        print(f"{program}: GPULAB_SIM_STATE is not set: point it at a state file (gpulab sim init)", file=sys.stderr)
        return 1  # no node chosen: a usage error of the simulator, not a failure of the tool
    if not Path(state).exists() and not Path(state).is_symlink():
        print(
            f"{program}: simulated node state {state} does not exist (gpulab sim init --state {state})", file=sys.stderr
        )
        return code
    from assessor.errors import InputError
    from assessor.sim.tools import Session, run_tool

    try:
        euid = int(os.environ.get("GPULAB_SIM_EUID", os.geteuid()))
    except ValueError:
        euid = os.geteuid()
    try:
        result = run_tool(args, Session(path=Path(state), env=dict(os.environ), euid=euid))
    except InputError as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        return code
    except Exception as exc:  # a simulator bug must not look like the tool's output: one line, the tool's code
        print(
            f"{program}: simulated node {state}: internal simulator error: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return code
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.stdout.flush()
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
