"""Capture: run the snapshot's tools on a target and keep their raw output.

The command list is fixed data; how a command runs (a local subprocess, the simulator,
an SSH channel) is a :class:`Runner`. A missing tool is recorded as missing, never as a
failure of the whole capture.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from assessor.capture import sources
from assessor.capture.snapshot import Snapshot, Source

DEFAULT_TIMEOUT_S = 30.0
NVML_FILE = "nvml.json"


@dataclass(frozen=True)
class Command:
    file: str
    argvs: tuple[tuple[str, ...], ...]  # alternatives, tried in order while the tool is missing or refuses

    @property
    def shell(self) -> str:
        return " || ".join(shlex.join(a) for a in self.argvs)


def _cmd(file: str, *argvs: Sequence[str]) -> Command:
    return Command(file, tuple(tuple(a) for a in argvs))


# Every capture runs these; the table is assessor.capture.sources.
COMMANDS: tuple[Command, ...] = tuple(Command(f.file, f.argvs) for f in sources.captured())


def _active_file(test: str) -> str:
    return next(f.file for f in sources.FILES if f.active == test)


# Active tests take minutes and load the node: only on request (`capture --with nccl,dcgm`).
def _nccl(gpus: int) -> Command:
    # NCCL_DEBUG=INFO makes NCCL say which network and transports it chose (nccl.transport reads them).
    argv = [
        "env",
        "NCCL_DEBUG=INFO",
        "NCCL_DEBUG_SUBSYS=INIT,NET",
        "all_reduce_perf",
        "-b",
        "1G",
        "-e",
        "8G",
        "-f",
        "2",
    ]
    return _cmd(_active_file("nccl"), [*argv, "-g", str(gpus)])


def _dcgm(level: int) -> Command:
    return _cmd(_active_file("dcgm"), ["dcgmi", "diag", "-r", str(level)])


# HPL-NVIDIA as the NGC HPC-Benchmarks container runs it: one rank per GPU, the container's sample input for
# that many GPUs (HPL-1GPU.dat, HPL-8GPUs.dat).
HPL_SAMPLE_DAT = "/workspace/hpl-linux-x86_64/sample-dat/HPL-{gpus}.dat"


def _hpl(gpus: int) -> Command:
    dat = HPL_SAMPLE_DAT.format(gpus="1GPU" if gpus == 1 else f"{gpus}GPUs")
    argv = ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", str(gpus), "hpl.sh", "--dat", dat]
    return _cmd(_active_file("hpl"), argv)


def _nvbandwidth(_: int) -> Command:
    # the copy engines' host-to-device and device-to-host copies, each GPU on its own
    argv = ["nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    return _cmd(_active_file("nvbandwidth"), argv)


# Active tests, by name, with their default argument: the GPU count for nccl and hpl, the diagnostic
# level for dcgm (2 runs the hardware tests: memory, PCIe, NVLink; 1 only checks the deployment); nvbandwidth
# takes none.
ACTIVE: dict[str, tuple[Callable[[int], Command], int]] = {
    "nccl": (_nccl, 8),
    "dcgm": (_dcgm, 2),
    "hpl": (_hpl, 8),
    "nvbandwidth": (_nvbandwidth, 0),
}


def active_command(spec: str) -> Command:
    """The command of an active test: ``nccl``, ``nccl:4`` (4 GPUs), ``dcgm``, ``dcgm:3`` (level 3)."""
    from assessor.capture import per_adapter
    from assessor.errors import InputError

    name, _, arg = spec.partition(":")
    if name == per_adapter.TEST and not arg:  # capture() runs it once per adapter; this names its command
        return _cmd(per_adapter.FILE, per_adapter.argv("DEV"))
    if name not in ACTIVE:
        raise InputError(f"unknown active test {name!r} (tests: {', '.join(ACTIVE)})")
    build, default = ACTIVE[name]
    try:
        value = int(arg) if arg else default
    except ValueError:
        raise InputError(f"active test {spec!r}: {arg!r} is not a number") from None
    return build(value)


def nccl_test(gpus: int) -> str:
    """The active-test spec of an nccl-tests all_reduce over ``gpus`` GPUs."""
    return f"nccl:{gpus}"


def dcgm_diag(level: int) -> str:
    """The active-test spec of ``dcgmi diag -r LEVEL``."""
    return f"dcgm:{level}"


def hpl_run(gpus: int) -> str:
    """The active-test spec of an HPL-NVIDIA run over ``gpus`` GPUs."""
    return f"hpl:{gpus}"


@dataclass
class Outcome:
    """What running one argv gave."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    missing: bool = False  # the tool is not installed
    timed_out: bool = False


class Runner(Protocol):
    def __call__(self, argv: Sequence[str], timeout: float) -> Outcome: ...


def run_local(argv: Sequence[str], timeout: float) -> Outcome:
    """Run a command on this host."""
    import subprocess

    start = time.monotonic()
    try:
        proc = subprocess.run(list(argv), capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return Outcome(None, "", f"{argv[0]}: command not found", time.monotonic() - start, missing=True)
    except PermissionError as exc:
        return Outcome(None, "", f"{argv[0]}: {exc.strerror}", time.monotonic() - start, missing=True)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else ""
        return Outcome(None, out, f"timed out after {timeout:g} s", time.monotonic() - start, timed_out=True)
    return Outcome(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        time.monotonic() - start,
    )


def source_from(command: Command, runner: Runner, timeout: float) -> Source:
    """Run a command (trying its alternatives) and describe the result as a snapshot source."""
    outcome = Outcome(None, "", "", 0.0, missing=True)
    used = command.argvs[0]
    for argv in command.argvs:
        used = argv
        outcome = runner(argv, timeout)
        refused = outcome.exit_code not in (0, None) and not outcome.stdout.strip()
        if not (outcome.missing or refused):
            break
    src = Source(
        command.file,
        command=shlex.join(used),
        exit_code=outcome.exit_code,
        duration_s=round(outcome.duration_s, 4),
        stderr=_excerpt(outcome.stderr),
    )
    if outcome.missing:
        src.status, src.message = "missing", f"{used[0]} is not installed on the target"
    elif outcome.timed_out:
        src.status, src.message = "timeout", f"{shlex.join(used)} timed out after {timeout:g} s"
        src.text = outcome.stdout or None
    else:
        src.text = outcome.stdout
        if outcome.exit_code != 0:
            src.status = "failed"
            src.message = f"{shlex.join(used)} exited {outcome.exit_code}"
            # a "not found" from the shell or a missing file is a gap, not a broken node
            if not outcome.stdout.strip() and (outcome.exit_code == 127 or "No such file" in outcome.stderr):
                src.status, src.text = "missing", None
    return src


def _excerpt(text: str, limit: int = 2000) -> str | None:
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= limit else text[:limit] + " …"


def capture(
    runner: Runner,
    *,
    host: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    active: Sequence[str] = (),
    nvml_json: Callable[[], str] | None = None,
) -> Snapshot:
    """Capture every snapshot source through ``runner``; ``nvml_json`` adds the NVML collector."""
    from assessor.capture import per_adapter

    snap = Snapshot(host=host)
    commands = list(COMMANDS) + [active_command(spec) for spec in active if spec != per_adapter.TEST]
    for command in commands:
        snap.sources[command.file] = source_from(command, runner, timeout)
    if per_adapter.TEST in active:  # once per adapter ibstat listed above
        snap.sources[per_adapter.FILE] = per_adapter.capture_mlxlink(
            lambda argv: source_from(Command(per_adapter.FILE, (argv,)), runner, timeout),
            snap.sources.get("ibstat.txt"),
        )
    if nvml_json is not None:
        snap.sources[NVML_FILE] = nvml_source(nvml_json)
    if snap.host is None:
        uname = snap.sources.get("uname.txt")
        if uname is not None and uname.text:
            parts = uname.text.split()
            snap.host = parts[1] if len(parts) > 1 else None
    return snap


def nvml_source(produce: Callable[[], str]) -> Source:
    """Run the NVML collector; no driver is a gap recorded with the reason."""
    from assessor.errors import GpulabError

    start = time.monotonic()
    try:
        text = produce()
    except GpulabError as exc:
        status = "missing" if "not found" in str(exc) else "failed"
        return Source(
            NVML_FILE,
            None,
            status,
            command=sources.NVML_COLLECTOR,
            message=str(exc),
            duration_s=round(time.monotonic() - start, 4),
        )
    return Source(
        NVML_FILE,
        text,
        "ok",
        exit_code=0,
        command=sources.NVML_COLLECTOR,
        duration_s=round(time.monotonic() - start, 4),
    )
