"""Answer calls of gpulab's ``libnvidia-ml.so.1`` from a simulated node, one request line at a time.

Started by the library itself (``python -E -m assessor.sim.nvml_lib.serve STATE``, its socket on stdin and
stdout) when a program calls ``nvmlInit`` outside a node, and run by a node's agent for the library inside
the node. Either way :func:`serve` reads requests in the wire format of ``runtime.c`` and answers each from
:class:`~assessor.sim.mock_nvml.MockNvml` through the table in :mod:`assessor.sim.nvml_lib.exports`.

Besides NVML's functions, one request of gpulab's own comes before each ``nvmlInit``:
``gpulabJob TOKEN...``, one token per Slurm job variable set in the calling process (the hex of
``NAME=VALUE``, names from :data:`~assessor.sim.nvml_lib.node.JOB_VARIABLES`, none outside a job), answered
``0``. From that ``nvmlInit`` on the program sees only its job's GPUs, as the simulated tools do
(:mod:`assessor.sim.nvml_lib.node`).

A request that is not well formed (an unknown function, a wrong number of arguments, a bad token, a line past
the size limit, a job variable that is unknown, repeated, too long or not printable ASCII) is answered
``NVML_ERROR_INVALID_ARGUMENT`` or ``NVML_ERROR_FUNCTION_NOT_FOUND`` and the server goes on: a program inside
the node can write anything to the agent's socket.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, BinaryIO

MAX_LINE = 8 * 1024 * 1024
JOB_REQUEST = "gpulabJob"
MAX_JOB_VALUE = 4096  # bytes of one NAME=VALUE: Slurm's are a job id and a list of GPU indices
FUNCTION_NOT_FOUND = 13
INVALID_ARGUMENT = 2
UNKNOWN = 999


def _decode(kind: str, token: str, sizes: int | None) -> Any:
    if kind == "h":
        return ctypes.c_void_p(int(token))
    if kind in "uU":
        value = int(token)
        if value < 0:
            raise ValueError(token)
        return value
    if kind == "i":
        return int(token)
    if kind in "oSa":
        return token == "1"
    if token == "-":
        return None
    raw = b"" if token == "x" else bytes.fromhex(token)
    if kind in "nv":
        return int.from_bytes(raw[:4].ljust(4, b"\0"), "little")
    if kind == "s":
        return raw.decode("utf-8", "replace")
    return raw  # p, b, x


def job_variables(tokens: list[str]) -> dict[str, str] | None:
    """The job variables of a ``gpulabJob`` request; None when a token is not a well formed one."""
    from assessor.sim.nvml_lib.node import JOB_VARIABLES

    if len(tokens) > len(JOB_VARIABLES):
        return None
    env: dict[str, str] = {}
    for token in tokens:
        if len(token) > 2 * MAX_JOB_VALUE:
            return None
        try:
            text = bytes.fromhex(token).decode("ascii")
        except ValueError:  # not hex, or not ASCII (UnicodeDecodeError is a ValueError)
            return None
        name, equals, value = text.partition("=")
        if not equals or name not in JOB_VARIABLES or name in env or not value.isprintable():
            return None
        env[name] = value
    return env


def answer(nvml: Any, line: bytes) -> bytes:
    """The reply line to one request line."""
    import pynvml

    from assessor.sim.nvml_lib.exports import EXPORTS, OUTPUT_KINDS

    words = line.decode("ascii", "replace").split()
    if not words:
        return b"%d\n" % INVALID_ARGUMENT
    if words[0] == JOB_REQUEST:
        env = job_variables(words[1:])
        if env is None or not hasattr(nvml, "enter_job"):
            return b"%d\n" % INVALID_ARGUMENT
        nvml.enter_job(env)
        return b"0\n"
    export = EXPORTS.get(words[0])
    if export is None:
        return b"%d\n" % FUNCTION_NOT_FOUND
    tokens = words[1:]
    outputs = sum(k in OUTPUT_KINDS for k in export.kinds)
    if len(tokens) != len(export.kinds):
        return b"%d%s\n" % (INVALID_ARGUMENT, b" -" * outputs)
    try:
        args = [_decode(k, t, export.sizes.get(i)) for i, (k, t) in enumerate(zip(export.kinds, tokens, strict=True))]
    except ValueError:
        return b"%d%s\n" % (INVALID_ARGUMENT, b" -" * outputs)
    try:
        code, values = export.handler(nvml, args)
    except pynvml.NVMLError as exc:
        code, values = int(exc.value), []
    except Exception as exc:  # a simulator bug: the caller gets NVML's "unknown error", the server goes on
        print(f"gpulab nvml: {export.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        code, values = UNKNOWN, []
    cells = [(v.hex() if v else "x") if v is not None else "-" for v in values]
    cells += ["-"] * (outputs - len(cells))
    return (" ".join([str(code), *cells]) + "\n").encode("ascii")


def serve(reader: BinaryIO, writer: BinaryIO, nvml: Any) -> None:
    """Answer request lines until the caller closes its end."""
    while True:
        line = reader.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE or not line.endswith(b"\n"):
            reply = b"%d\n" % INVALID_ARGUMENT
            while line and not line.endswith(b"\n"):  # skip the rest of an oversized line
                line = reader.readline(MAX_LINE + 1)
        else:
            reply = answer(nvml, line)
        writer.write(reply)
        writer.flush()


def node_nvml(state_path: str, euid: int) -> Any:
    """The simulator's NVML over a state file for one program (:class:`~assessor.sim.nvml_lib.node.NodeNvml`):
    a missing or unreadable node is NVML's "Driver Not Loaded"; inside a Slurm job, only the job's GPUs."""
    from assessor.sim.nvml_lib.node import NodeNvml

    return NodeNvml(state_path, euid)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m assessor.sim.nvml_lib.serve STATE", file=sys.stderr)
        return 2
    raw_euid = os.environ.get("GPULAB_SIM_EUID", "")
    euid = int(raw_euid) if raw_euid.isdigit() else os.geteuid()
    nvml = node_nvml(args[0], euid)
    # buffered reads of stdin stop at the line the caller sent: it waits for the reply before the next one
    with os.fdopen(0, "rb") as requests, os.fdopen(1, "wb") as out:
        serve(requests, out, nvml)
    return 0


if __name__ == "__main__":
    sys.exit(main())
