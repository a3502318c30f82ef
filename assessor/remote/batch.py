"""One shell script that runs every capture command on a remote node in one round trip.

The script is built from fixed argv lists, each argument quoted; its output is a series of
records (marker line, base64 stdout, base64 stderr) that :func:`parse_records` reads back.
Pure functions: no network here.
"""

from __future__ import annotations

import base64
import binascii
import shlex
from collections.abc import Sequence

from assessor.capture import Command, Outcome

MARKER = "@@gpulab-record@@"
STDERR_LIMIT = 4000

# Runs one attempt. Prints a record; returns 0 when the attempt is usable (exit 0 or some
# output), so `||` moves on to the next alternative only when this one was refused.
_PRELUDE = r"""
gl_now() { date +%s%N 2>/dev/null || echo 0; }
gl_run() {
  gl_file=$1; gl_idx=$2; gl_limit=$3; shift 3
  gl_out=$(mktemp) || exit 70; gl_err=$(mktemp) || exit 70
  gl_t0=$(gl_now)
  if ! command -v "$1" >/dev/null 2>&1; then
    gl_rc=127
  elif command -v timeout >/dev/null 2>&1; then
    timeout -k 2 "$gl_limit" "$@" >"$gl_out" 2>"$gl_err" </dev/null; gl_rc=$?
  else
    "$@" >"$gl_out" 2>"$gl_err" </dev/null; gl_rc=$?
  fi
  gl_t1=$(gl_now)
  printf '\n%s %s %s %s %s %s\n' '@@gpulab-record@@' "$gl_file" "$gl_idx" "$gl_rc" "$gl_t0" "$gl_t1"
  base64 <"$gl_out" | tr -d '\n'; printf '\n'
  head -c 4000 "$gl_err" | base64 | tr -d '\n'; printf '\n'
  gl_usable=1
  if [ "$gl_rc" = 0 ] || [ -s "$gl_out" ]; then gl_usable=0; fi
  rm -f "$gl_out" "$gl_err"
  return $gl_usable
}
"""


def script(commands: Sequence[Command], timeout: float) -> str:
    """The POSIX sh script that captures ``commands`` with a per-command time limit."""
    limit = f"{max(1, round(timeout))}s"
    lines = ["set +e", _PRELUDE.strip()]
    for command in commands:
        attempts = [
            f"gl_run {shlex.quote(command.file)} {i} {limit} {shlex.join(argv)}" for i, argv in enumerate(command.argvs)
        ]
        lines.append(" || ".join(attempts) + " || true")
    lines.append(f"printf '\\n%s END\\n' '{MARKER}'")
    return "\n".join(lines) + "\n"


class Records:
    """Outcomes read back from the script's output, replayable as a capture Runner."""

    def __init__(self, outcomes: dict[tuple[str, ...], Outcome], complete: bool) -> None:
        self.outcomes = outcomes
        self.complete = complete  # the END marker arrived: nothing was cut off

    def __call__(self, argv: Sequence[str], timeout: float) -> Outcome:
        found = self.outcomes.get(tuple(argv))
        if found is not None:
            return found
        # never ran: an earlier alternative answered, or the connection dropped before it
        return Outcome(None, "", "not run", 0.0, missing=True)


def parse_records(output: str, commands: Sequence[Command], timeout: float) -> Records:
    """Read the script's output back into outcomes keyed by argv."""
    by_file = {c.file: c for c in commands}
    outcomes: dict[tuple[str, ...], Outcome] = {}
    lines = output.split("\n")
    complete = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith(MARKER):
            i += 1
            continue
        fields = line.split()
        if fields[1:2] == ["END"]:
            complete = True
            break
        if len(fields) != 6 or fields[1] not in by_file or i + 2 >= len(lines):
            break  # a record cut off mid-way: what came before stands
        _, file, idx, rc, t0, t1 = fields
        try:
            argv = by_file[file].argvs[int(idx)]
            stdout = base64.b64decode(lines[i + 1], validate=True).decode("utf-8", "replace")
            stderr = base64.b64decode(lines[i + 2], validate=True).decode("utf-8", "replace")
            code = int(rc)
            duration = max(0.0, (int(t1) - int(t0)) / 1e9)
        except (ValueError, IndexError, binascii.Error):
            break
        if code == 127 and not stdout:
            outcome = Outcome(None, "", stderr or f"{argv[0]}: command not found", duration, missing=True)
        elif code in (124, 137) and duration >= timeout * 0.9:
            outcome = Outcome(None, stdout, f"timed out after {timeout:g} s", duration, timed_out=True)
        else:
            outcome = Outcome(code, stdout, stderr, duration)
        outcomes[tuple(argv)] = outcome
        i += 3
    return Records(outcomes, complete)
