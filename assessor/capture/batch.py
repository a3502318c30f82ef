"""One shell script that runs every capture command on a remote node in one round trip.

The script is built from fixed argv lists, each argument quoted. It keeps each command's output
in a temporary directory and sends it all at the end as one base64 tar (or, without tar, a record
per command: marker line, base64 stdout, base64 stderr) that :func:`parse_records` reads back.
Pure functions: no network here.

The tar comes from a node gpulab does not control: it is read as a plain tar (never decompressed,
so a small compressed archive cannot unpack into gigabytes), only regular members are read, and
their sizes together must stay within the reply limit. Anything else is a :attr:`Records.problem`.
"""

from __future__ import annotations

import base64
import binascii
import io
import shlex
import tarfile
from collections.abc import Sequence
from pathlib import Path

from assessor.capture.run import Command, Outcome
from assessor.capture.snapshot import Snapshot, Source

MARKER = "@@gpulab-record@@"
STDERR_LIMIT = 4000
DEFAULT_MAX_REPLY = 256 * 1024 * 1024  # bytes one node may send back (--max-reply)

# Runs one attempt. Prints a record; returns 0 when the attempt is usable (exit 0 or some
# output), so `||` moves on to the next alternative only when this one was refused.
_PRELUDE = r"""
gl_dir=$(mktemp -d 2>/dev/null || echo "/tmp/gpulab.$$") && mkdir -p "$gl_dir" || exit 70
trap 'rm -rf "$gl_dir"' EXIT
gl_n=0
gl_now() {
  if [ -n "${EPOCHREALTIME:-}" ]; then gl_t=${EPOCHREALTIME%.*}${EPOCHREALTIME#*.}000; else gl_t=$(date +%s%N); fi
}
gl_run() {
  gl_file=$1; gl_idx=$2; gl_limit=$3; shift 3
  gl_n=$((gl_n + 1)); gl_o="$gl_dir/$gl_n.o"; gl_e="$gl_dir/$gl_n.e"
  gl_now; gl_t0=$gl_t
  if ! command -v "$1" >/dev/null 2>&1; then
    gl_rc=127; : >"$gl_o"; : >"$gl_e"
  elif [ -n "$gl_timeout" ]; then
    timeout -k 2 "$gl_limit" "$@" >"$gl_o" 2>"$gl_e" </dev/null; gl_rc=$?
  else
    "$@" >"$gl_o" 2>"$gl_e" </dev/null; gl_rc=$?
  fi
  gl_now
  printf '%s %s %s %s %s %s\n' "$gl_n" "$gl_file" "$gl_idx" "$gl_rc" "$gl_t0" "$gl_t" >>"$gl_dir/index"
  [ "$gl_rc" = 0 ] || [ -s "$gl_o" ]
}
gl_b64() { base64 -w0 "$@" 2>/dev/null || base64 "$@" | tr -d '\n'; }
# Everything goes home in one piece: a tar of the outputs (two processes), or file by file without tar.
gl_dump() {
  if command -v tar >/dev/null 2>&1; then
    printf '\n%s TAR\n' '@@gpulab-record@@'
    tar -C "$gl_dir" -cf - . | gl_b64; printf '\n'
  else
    while read -r gl_k gl_rest; do
      printf '\n%s %s\n' '@@gpulab-record@@' "$gl_rest"
      gl_b64 "$gl_dir/$gl_k.o" </dev/null; printf '\n'
      gl_b64 "$gl_dir/$gl_k.e" </dev/null; printf '\n'
    done <"$gl_dir/index"
  fi
}
gl_timeout=$(command -v timeout)
: >"$gl_dir/index"
"""

# The script runs under bash where there is one (its clock needs no process per reading), else sh.
SHELL = "if command -v bash >/dev/null 2>&1; then exec bash -s; else exec sh -s; fi"


# The NVML collector runs where the node's python3 has nvidia-ml-py: the script writes the collector
# (generated from assessor/capture/nvml.py, nothing installed) to its temporary directory and runs it
# with this fixed argv; without python3 or pynvml the record says so and grading uses nvidia-smi.
NVML_ARGV = ("python3", "-c", "import os, runpy; runpy.run_path(os.environ['GPULAB_NVML'], run_name='__main__')")
NVML_COMMAND = Command("nvml.json", (NVML_ARGV,))
_NVML_END = "GPULAB_NVML_COLLECTOR_END"


def script(commands: Sequence[Command], timeout: float, *, nvml: bool = False) -> str:
    """The POSIX sh script that captures ``commands`` with a per-command time limit.

    With ``nvml``, it also runs the NVML collector (:data:`NVML_COMMAND`) in the same round trip.
    """
    limit = f"{max(1, round(timeout))}s"
    lines = ["set +e", _PRELUDE.strip()]
    if nvml:
        from assessor.capture.nvml import standalone_script

        collector = standalone_script()
        if f"\n{_NVML_END}\n" in f"\n{collector}\n":
            raise RuntimeError("the NVML collector's source holds the heredoc delimiter")
        lines.append(f"cat >\"$gl_dir/nvml.py\" <<'{_NVML_END}'\n{collector}\n{_NVML_END}")
        lines.append('GPULAB_NVML="$gl_dir/nvml.py"; export GPULAB_NVML')
        commands = [*commands, NVML_COMMAND]
    for command in commands:
        attempts = [
            f"gl_run {shlex.quote(command.file)} {i} {limit} {shlex.join(argv)}" for i, argv in enumerate(command.argvs)
        ]
        lines.append(" || ".join(attempts) + " || true")
    lines.append("gl_dump")
    lines.append(f"printf '\\n%s END\\n' '{MARKER}'")
    return "\n".join(lines) + "\n"


class Records:
    """Outcomes read back from the script's output, replayable as a capture Runner."""

    def __init__(self, outcomes: dict[tuple[str, ...], Outcome], complete: bool, problem: str | None = None) -> None:
        self.outcomes = outcomes
        self.complete = complete  # the END marker arrived: nothing was cut off
        self.problem = problem  # the reply was malformed or over the limit: an error for the host

    def __call__(self, argv: Sequence[str], timeout: float) -> Outcome:
        found = self.outcomes.get(tuple(argv))
        if found is not None:
            return found
        # never ran: an earlier alternative answered, or the connection dropped before it
        return Outcome(None, "", "not run", 0.0, missing=True)


class ReplyRefused(Exception):
    """The node's tar is not one gpulab reads: compressed, malformed, or unpacking beyond the limit."""


def parse_records(
    output: str, commands: Sequence[Command], timeout: float, max_reply: int = DEFAULT_MAX_REPLY
) -> Records:
    """Read the script's output back into outcomes keyed by argv."""
    by_file = {c.file: c for c in commands}
    entries: list[tuple[str, str, str, str, str, bytes, bytes]] = []
    lines = output.split("\n")
    complete = False
    problem = None
    i = 0
    try:
        while i < len(lines):
            fields = lines[i].split()
            if not lines[i].startswith(MARKER):
                i += 1
            elif fields[1:2] == ["END"]:
                complete = True
                break
            elif fields[1:2] == ["TAR"]:
                entries.extend(_from_tar(base64.b64decode(lines[i + 1], validate=True), max_reply))
                i += 2
            elif len(fields) == 6:
                raw_out, raw_err = (base64.b64decode(lines[i + k], validate=True) for k in (1, 2))
                file, idx, rc, t0, t1 = fields[1:6]
                entries.append((file, idx, rc, t0, t1, raw_out, raw_err))
                i += 3
            else:
                break
    except ReplyRefused as exc:
        complete, problem = False, str(exc)
    except (IndexError, ValueError, binascii.Error, tarfile.TarError):
        complete = False  # a cut-off transfer: what came before stands
    outcomes: dict[tuple[str, ...], Outcome] = {}
    for file, idx, rc, t0, t1, out, err in entries:
        command = by_file.get(file)
        try:
            argv = command.argvs[int(idx)] if command else None
            code, duration = int(rc), max(0.0, (int(t1) - int(t0)) / 1e9)
        except (ValueError, IndexError):
            continue
        if argv is None:
            continue
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")[:STDERR_LIMIT]
        if code == 127 and not stdout:
            outcome = Outcome(None, "", stderr or f"{argv[0]}: command not found", duration, missing=True)
        elif code in (124, 137) and duration >= timeout * 0.9:
            outcome = Outcome(None, stdout, f"timed out after {timeout:g} s", duration, timed_out=True)
        else:
            outcome = Outcome(code, stdout, stderr, duration)
        outcomes[tuple(argv)] = outcome
    return Records(outcomes, complete, problem)


def _from_tar(data: bytes, max_reply: int = DEFAULT_MAX_REPLY) -> list[tuple[str, str, str, str, str, bytes, bytes]]:
    """(file, attempt, rc, t0, t1, stdout, stderr) per command from the script's tar of outputs.

    ReplyRefused when the data is not a plain tar or its members add up to more than ``max_reply``.
    """
    try:
        # "r:": plain tar only, never decompressed; closed by the with below
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")  # noqa: SIM115
    except tarfile.TarError:
        raise ReplyRefused(f"the node's reply is not a plain tar ({_looks_like(data)}): capture refused") from None
    with tar:
        try:
            listed = tar.getmembers()
        except tarfile.TarError as exc:
            raise ReplyRefused(f"the node's reply is a malformed tar ({exc}): capture refused") from None
        members = {m.name.removeprefix("./"): m for m in listed if m.isreg() and not m.issparse()}
        if sum(m.size for m in members.values()) > max_reply:
            raise ReplyRefused(
                f"the node's reply unpacks to more than the reply limit of {size_words(max_reply)} (--max-reply): "
                "capture refused"
            )

        def read(name: str) -> bytes:
            member = members.get(name)
            handle = tar.extractfile(member) if member is not None else None
            return handle.read(max_reply) if handle is not None else b""

        out = []
        for line in read("index").decode("utf-8", "replace").splitlines():
            fields = line.split()
            if len(fields) == 6:
                n = fields[0]
                out.append((fields[1], fields[2], fields[3], fields[4], fields[5], read(f"{n}.o"), read(f"{n}.e")))
        return out


def _looks_like(data: bytes) -> str:
    for magic, name in ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ", "xz"), (b"\x28\xb5\x2f\xfd", "zstd")):
        if data.startswith(magic):
            return f"{name}-compressed data, which gpulab never unpacks"
    return "unreadable header"


def size_words(n: int) -> str:
    """A byte count as a person writes it: 256 MiB, 8 KiB, 100 bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def add_nvml(snap: Snapshot, records: Records, timeout: float) -> None:
    """Add nvml.json to ``snap``, or why it is missing when nvidia-smi is there to grade instead.

    A node with neither keeps no nvml.json record: grading then says it has no NVIDIA tools at all.
    """
    from assessor.capture.run import NVML_FILE

    source = nvml_source(records, timeout)
    smi = snap.sources.get("nvidia-smi-q.xml")
    if source.status == "ok" or (smi is not None and smi.status != "missing"):
        snap.sources[NVML_FILE] = source


def nvml_source(records: Records, timeout: float) -> Source:
    """nvml.json as the node's own python3 collected it, or why not (grading then uses nvidia-smi)."""
    from assessor.capture import sources
    from assessor.capture.run import source_from

    source = source_from(NVML_COMMAND, records, timeout)
    source.command = f"{sources.NVML_COLLECTOR}, run by python3 on the node"
    if source.status != "ok":
        why = source.stderr or source.message or source.status
        source.message = f"no NVML on the node ({why}): nvidia-smi's output is graded instead"
    return source


def unpack(output: str, directory: Path, host: str, timeout: float, max_reply: int = DEFAULT_MAX_REPLY) -> str | None:
    """Write the snapshot the script's ``output`` holds into ``directory`` (capture.yml's controller side).

    Returns None when the snapshot was written, else why not (then ``directory`` holds an error record,
    which grading reports as the host's error).
    """
    from assessor import __version__
    from assessor.capture import snapshot
    from assessor.capture.run import COMMANDS, capture

    commands = [*COMMANDS, NVML_COMMAND]
    # Ansible may have run the script on a terminal: lines end in CR LF there
    records = parse_records(output.replace("\r\n", "\n"), commands, timeout, max_reply)
    why = records.problem
    if why is None and not records.complete:
        why = f"the capture's output was cut off ({len(records.outcomes)} of {len(commands)} commands finished)"
    if why is not None:
        snapshot.write_error_record(directory, f"ansible:{host}", host, why)
        return why
    snap = capture(records, host=host, timeout=timeout)
    add_nvml(snap, records, timeout)
    meta = {"target": f"ansible:{host}", "via": "capture.yml", "gpulab_version": __version__}
    snapshot.write(snap, directory, {**meta, "time": snapshot.now_iso()})
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m assessor.capture.batch script|unpack``: the two halves capture.yml runs on the controller."""
    import argparse
    import sys

    from assessor.capture.run import COMMANDS, DEFAULT_TIMEOUT_S

    ap = argparse.ArgumentParser(prog="python -m assessor.capture.batch")
    sub = ap.add_subparsers(dest="what", required=True)
    render = sub.add_parser("script", help="write the batched capture script")
    render.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    render.add_argument("--out", required=True)
    take = sub.add_parser("unpack", help="turn a node's capture output into its snapshot directory")
    take.add_argument("records")
    take.add_argument("directory")
    take.add_argument("--host", required=True)
    take.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    take.add_argument("--max-reply", type=int, default=DEFAULT_MAX_REPLY)
    args = ap.parse_args(argv)
    if args.what == "script":
        Path(args.out).write_text(script(COMMANDS, args.timeout, nvml=True), encoding="utf-8")
        return 0
    records = Path(args.records)
    if records.stat().st_size > args.max_reply:
        why: str | None = f"the node's reply is over the reply limit of {size_words(args.max_reply)}: capture refused"
        from assessor.capture import snapshot

        snapshot.write_error_record(Path(args.directory), f"ansible:{args.host}", args.host, why or "")
    else:
        text = records.read_bytes().decode("utf-8", "replace")
        why = unpack(text, Path(args.directory), args.host, args.timeout, args.max_reply)
    records.unlink()
    if why is not None:
        from assessor.neutralise import visible

        print(visible(f"{args.host}: {why}"), file=sys.stderr)  # the reason quotes the node
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
