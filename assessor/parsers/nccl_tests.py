"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ``alltoall_perf``, ...).

The table layout is read from its own column header, because it changed over the years:
``error`` became ``#wrong``, ``root`` was added, ``-C`` prints ``cputime``, ``-I`` adds
per-iteration columns and timestamps add a date and a time at the end. Real captures mix
other text into the table (``NCCL INFO``/``WARN`` lines, mpirun help messages such as ``8
more processes have sent help message ...``, ``[1,0]<stdout>:`` tags): anything that is not a
result row is skipped, while a result row that does not fit its header is an error, except
on the last line where a cut-off capture is expected.

A run that stopped prints why on one line, which is kept as ``failure``: nccl-tests' CUDACHECK and
NCCLCHECK print ``HOST: Test CUDA failure common.cu:941 'system not yet initialized'`` (or ``Test NCCL
failure ... 'unhandled system error / '``), then `` .. HOST pid N: Test failure common.cu:891`` for each
frame; releases before 2.0 printed ``Cuda failure common.cu:NNN '...'`` or ``NCCL failure ...`` without the
host. Such a run is an nccl-tests output even when it stopped before its header.

A file that holds only NCCL_DEBUG lines (a run that died before its table, or an application's
log) is read as the NCCL log it is: ``tests_output`` is False, and the checks judge its network,
transports and WARN lines without a table.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass

from assessor.errors import ParseError
from assessor.facts import NcclDevice, NcclRow, NcclRun, NodeFacts
from assessor.parsers._text import clean_lines, echoed_commands
from assessor.parsers.nccl_debug import debug_of, is_nccl_log

# mpirun --tag-output ("[1,0]<stdout>:") and markdown quoting ("> ") in pasted captures.
_TAG = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|>\s?)+")
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (\S+)")
_TEST_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_TEST_BINARY = re.compile(r"(?:^|[\s/])([a-z][a-z0-9_]*_perf)(?:_mpi)?(?:\s|$)")
_NTHREAD = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
# "#  Rank  0 Group  0 Pid  54740 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB";
# old releases have no Group, new ones print the bus as [0000:07:00].
_RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\](.*)$"
)
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
# "gpu: Test CUDA failure common.cu:1030 'system not yet initialized'", "NCCL failure common.cu:908 'x'."
_FAILURE = re.compile(r"^(?:\S+:\s+)?(?P<what>(?:Test\s+)?(?:CUDA|Cuda|NCCL)\s+failure\s+\S+:\d+\s+'.*')\.?\s*$")
# " .. gpu pid 3018: Test failure common.cu:937": the frames above it, printed after the failure line.
_FAILURE_FRAME = re.compile(r"^\.\.\s+\S+\s+pid\s+\d+:\s+(?P<what>Test failure\s+\S+:\d+)\s*$")
_INT = re.compile(r"^-?\d+$")
_NUMERIC = re.compile(r"^(?:-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|N/A)$")

_KEY_COLUMNS = ("size", "count", "type", "redop", "root")
_TIME_COLUMNS = ("time", "cputime")
_WRONG_COLUMNS = ("#wrong", "wrong", "error", "errors")


@dataclass(frozen=True)
class _Layout:
    """Where each value sits in a result row, read from the column header."""

    keys: tuple[str, ...]  # leading columns: size, count, type, redop, root (as printed)
    groups: tuple[tuple[str, ...], ...]  # one per out-of-place / in-place block: time, algbw, busbw, #wrong, i_*
    timestamp: bool  # a trailing "YYYY-mm-dd HH:MM:SS" (two tokens)

    @property
    def width(self) -> int:
        return len(self.keys) + sum(len(g) for g in self.groups) + (2 if self.timestamp else 0)


# What a current nccl-tests prints, for a table whose header was cut off.
_DEFAULT_LAYOUT = _Layout(
    keys=_KEY_COLUMNS,
    groups=(("time", "algbw", "busbw", "#wrong"), ("time", "algbw", "busbw", "#wrong")),
    timestamp=False,
)


def _layout_from_header(tokens: list[str]) -> _Layout | None:
    """``size count type redop root time algbw busbw #wrong time ...`` -> a layout, else None."""
    if not tokens or tokens[0] != "size":
        return None
    keys: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i] in _KEY_COLUMNS:
        keys.append(tokens[i])
        i += 1
    groups: list[list[str]] = []
    timestamp = False
    for tok in tokens[i:]:
        if tok in _TIME_COLUMNS:
            groups.append([])
        elif tok == "timestamp":
            timestamp = True
            continue
        if not groups:
            return None
        groups[-1].append("#wrong" if tok in _WRONG_COLUMNS else tok)
    if not groups or not all("busbw" in g for g in groups):
        return None
    return _Layout(tuple(keys), tuple(tuple(g) for g in groups), timestamp)


def _float(value: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(value)
    return number


def _wrong(value: str) -> int | None:
    # Validation off (-c 0) prints N/A; %g may print 1e+06 for a large count.
    return None if value.upper() == "N/A" else int(_float(value))


def _row(tokens: list[str], layout: _Layout) -> NcclRow:
    """One result row under ``layout``; ValueError when it does not fit."""
    if layout.timestamp:
        tokens = tokens[:-2]
    nkeys = len(layout.keys)
    full = nkeys + sum(len(g) for g in layout.groups)
    if len(tokens) == full:
        blocks = list(layout.groups)
    elif len(layout.groups) == 2 and len(tokens) == full - len(layout.groups[0]):
        # Only the in-place block is printed (the out-of-place one is left blank).
        blocks = [(), layout.groups[1]]
    else:
        raise ValueError(f"{len(tokens)} fields where the header has {full}")
    keyvals = dict(zip(layout.keys, tokens[:nkeys], strict=True))
    row = NcclRow(
        size_bytes=int(keyvals["size"]),
        count=int(keyvals["count"]) if "count" in keyvals else None,
        type=keyvals.get("type"),
        redop=keyvals.get("redop"),
        root=int(keyvals["root"]) if "root" in keyvals else None,
    )
    if row.type is not None and _INT.match(row.type):
        raise ValueError(f"type {row.type!r} is a number")
    pos = nkeys
    for prefix, block in zip(("oop", "ip"), blocks, strict=False):
        for column in block:
            value = tokens[pos]
            pos += 1
            if column in _TIME_COLUMNS:
                setattr(row, f"{prefix}_time_us", _float(value))
            elif column in ("algbw", "busbw"):
                setattr(row, f"{prefix}_{column}", _float(value))
            elif column == "#wrong":
                setattr(row, f"{prefix}_wrong", _wrong(value))
            else:
                _float(value)  # per-iteration statistics: checked, not kept
    return row


def _looks_like_row(tokens: list[str]) -> bool:
    # size and count are both integers; "8 more processes have sent help message" is not a row.
    return len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit()


def parse(text: str) -> NodeFacts:
    """Parse nccl-tests stdout (with any interleaved NCCL_DEBUG lines) into ``NodeFacts.nccl``."""
    raw_lines = clean_lines(text)
    # rank tags ("[1,0]<stdout>:", "> ") only where the text holds one at all
    lines = [_TAG.sub("", line) for line in raw_lines] if ("<std" in text or ">" in text) else raw_lines
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    run = NcclRun()
    layout: _Layout | None = None
    seen_header = False
    starting_test: str | None = None
    command_test: str | None = None
    consumed = -1  # the line a split row's second half was taken from
    for i, line in enumerate(lines):
        stripped = line.strip()
        if i == consumed or not stripped or "NCCL INFO" in line or "NCCL WARN" in line:
            continue
        if stripped.startswith("#"):
            seen_header |= _header_line(stripped, run)
            if m := _TEST_STARTING.match(stripped):
                starting_test = starting_test or m.group(1)
            tokens = stripped.lstrip("#").split()
            if (found := _layout_from_header(tokens)) is not None:
                layout = found
                seen_header = True
            continue
        tokens = stripped.split()
        if not _looks_like_row(tokens):
            if "failure" not in stripped and "_perf" not in stripped:
                continue  # neither a failure line nor the command: the cheap test first, per line
            if (m := _FAILURE.match(stripped)) and (run.failure is None or run.failure.startswith("Test failure ")):
                run.failure = _failure_text(m.group("what"))  # the first cause (after a frame: ranks interleave)
            elif run.failure is None and (m := _FAILURE_FRAME.match(stripped)):
                run.failure = _failure_text(m.group("what"))
            if command_test is None and (m := _TEST_BINARY.search(stripped)):
                command_test = m.group(1)
            continue
        try:
            run.rows.append(_row(tokens, layout or _DEFAULT_LAYOUT))
        except (ValueError, KeyError) as exc:
            # Two ranks writing at once can split a row over two lines (each with its rank tag).
            following = _row_tail(lines, i)
            if following is not None:
                with contextlib.suppress(ValueError, KeyError):
                    run.rows.append(_row(tokens + following[1], layout or _DEFAULT_LAYOUT))
                    consumed = following[0]
                    continue
            if i == last:
                continue  # a capture cut off mid-row
            if layout is None:
                continue  # no header seen: not sure this is a table at all
            raise ParseError(f"result row does not fit the table header: {exc}", line=i + 1) from None
    if not seen_header and not run.rows and run.failure is None:
        if is_nccl_log(text):
            return NodeFacts(nccl=NcclRun(debug=debug_of(text, raw_lines), tests_output=False))
        raise ParseError("no nccl-tests results found (and no NCCL_DEBUG lines)", line=1)
    if command_test is None:
        # The command line may have been echoed after a shell prompt, which cleaning removed.
        echoed = (_TEST_BINARY.search(f" {c} ") for c in echoed_commands(text))
        command_test = next((m.group(1) for m in echoed if m), None)
    run.test = starting_test or command_test
    run.debug = debug_of(text, raw_lines)
    return NodeFacts(nccl=run)


def _failure_text(what: str) -> str:
    """The failure as printed, spaces collapsed and NCCL's empty last-error suffix (`` / '``) dropped."""
    text = " ".join(what.split())
    return re.sub(r"\s*/\s*'$", "'", text)


def _row_tail(lines: list[str], i: int) -> tuple[int, list[str]] | None:
    """(index, tokens) of the next non-blank line when it is only numbers: the rest of a split row."""
    for j in range(i + 1, min(i + 3, len(lines))):
        tokens = lines[j].split()
        if not tokens:
            continue
        if all(_NUMERIC.match(t) for t in tokens):
            return j, tokens
        return None
    return None


def _header_line(line: str, run: NcclRun) -> bool:
    """Fill ``run`` from a ``#`` header or footer line; True when it was an nccl-tests header."""
    if m := _TESTS_VERSION.match(line):
        run.tests_version = m.group(1)
        return True
    if m := _NTHREAD.match(line):
        run.nthreads, run.ngpus = int(m.group(1)), int(m.group(2))
        return True
    if m := _RANK.match(line):
        run.devices.append(
            NcclDevice(
                rank=int(m.group(1)),
                pid=int(m.group(2)),
                host=m.group(3),
                device=int(m.group(4)),
                bus=m.group(5),
                name=m.group(6).strip() or None,
            )
        )
        return True
    if (m := _OUT_OF_BOUNDS.match(line)) and run.out_of_bounds is None:
        run.out_of_bounds = int(m.group(1))
        return True
    if (m := _AVG_BUSBW.match(line)) and run.avg_busbw is None:
        # "nan" when nothing ran: unknown, not zero.
        with contextlib.suppress(ValueError):
            run.avg_busbw = _float(m.group(1))
        return True
    return False
