"""``nvidia-smi topo -m``: the GPU/NIC connection matrix, CPU/NUMA affinity and NIC legend.

::

    \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
    GPU0\t X \tNV12\tPXB\t48-63,176-191\t3\t\tN/A
    ...
    Legend:
      X    = Self
      ...
    NIC Legend:
      NIC0: mlx5_0

The tool separates cells with tabs; pasted copies often have them expanded to spaces, so cells
are split on any whitespace and the multi-word column names ("CPU Affinity", "NUMA Affinity",
"GPU NUMA ID") are put back together. Older drivers name NICs in the header directly
(``mlx5_0``) and print no NIC legend.

Excerpts are common (an issue quoting only some rows): a matrix without its header has its
columns inferred from where each row's ``X`` (self) cell sits, and a last row cut short is
dropped. A short row anywhere else is an error.

Cells run together where a tab was lost in a paste or a column name fills its tab stop (machines
with 10+ NICs: ``NIC11NIC12``, ``NIC11CPU Affinity``; in rows ``SYSNODE``). The general rule: a
header cell made of device names one after the other (GPU#, NIC#, mlx5_#, then the first word of an
extra column) is those cells, and a row cell made of connection codes one after the other is those
codes; a word that is one name or one code is never split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assessor.errors import ParseError
from assessor.facts import NodeFacts, Topology
from assessor.parsers._nvsmi import check_text, is_not_available, is_shell_noise, raise_on_failure, says_no_devices

# Columns after the device columns, in the order nvidia-smi prints them.
_EXTRA_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
# X, NV12, PIX, PXB, PHB, NODE, SYS, SOC (pre-R384 name of SYS); upper case, so a future code
# is accepted while prose and affinity values ("0-11", "N/A") are not.
_CODE = re.compile(r"^[A-Z][A-Z0-9]*$")
_LABEL = re.compile(r"^[A-Za-z][\w.:-]*$")
_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<number>\d+)$")
_NIC_LEGEND_ENTRY = re.compile(r"^(?P<nic>NIC\d+)\s*:\s*(?P<name>\S+)$")
# What a glued header cell can be made of, and a glued row cell (see the module doc).
_HEADER_PIECE = re.compile(r"(?:GPU|NIC)\d{1,3}|mlx\d_\d{1,3}|CPU|NUMA")
_CODE_PIECE = re.compile(r"NV\d{1,3}|PIX|PXB|PHB|NODE|SYS|SOC|X")
# A header or a row: a label, then a column name or a connection code (both start upper case).
_MATRIX_LINE = re.compile(r"^[ \t]*[A-Za-z][\w.:-]*[ \t]+[A-Z]", re.MULTILINE)
# Where a line can hold glued cells at all (the cheap test before splitting its words).
_GLUED_NAMES = re.compile(r"\d(?:GPU|NIC|mlx|CPU|NUMA)")
_GLUED_CODES = re.compile(
    r"(?:PIX|PXB|PHB|NODE|SYS|SOC)(?:NV|PIX|PXB|PHB|NODE|SYS|SOC|X|\d)|\dX\b|NV\d{1,3}(?:NV|P[IH]|NODE|SYS|SOC)"
)


@dataclass
class _Row:
    number: int  # 1-based line in the file
    label: str
    cells: list[str]  # the matrix cells (leading code-like tokens)
    extras: list[str]  # what follows: affinity values


def parse(text: str) -> NodeFacts:
    """Parse ``nvidia-smi topo -m`` into ``topology``.

    Raises ParseError (with the line) for a row whose cells do not match the header (unless it
    is the file's last matrix line, cut short), for text inside the matrix that is not a row,
    and for output with no matrix at all; the ParseError of a driver failure carries
    nvidia-smi's message verbatim.
    """
    lines = check_text(text)
    if says_no_devices(text):
        raise ParseError(text.strip(), line=1)
    raise_on_failure(text)
    if _MATRIX_LINE.search("\n".join(lines)) is None:
        # No line is a label followed by a column name or a connection code: no matrix, found in one search.
        first = next((i for i, raw in enumerate(lines, start=1) if raw.strip()), 1)
        raise ParseError("no topology matrix in nvidia-smi topo -m output", line=first)

    header: list[str] | None = None  # device columns, then extra columns
    header_line = 0
    rows: list[_Row] = []
    nic_names: dict[str, str] = {}
    section = "preamble"  # preamble -> matrix -> legend -> nic_legend
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or is_shell_noise(line):
            continue
        if line == "Legend:":
            section = "legend"
            continue
        if line == "NIC Legend:":
            section = "nic_legend"
            continue
        if section == "legend":
            continue  # prose explaining the codes
        if section == "nic_legend":
            entry = _NIC_LEGEND_ENTRY.match(line)
            if entry is None:
                raise ParseError(f"not a NIC legend entry: {line[:80]!r}", line=number)
            nic_names[entry["nic"]] = entry["name"]
            continue
        tokens = line.split()
        if header is None and not rows:
            if "GPU" in line and _GLUED_NAMES.search(line):  # every header names GPU0
                tokens = _unglue(tokens, _HEADER_PIECE, tail=False)
        elif len(tokens) > 1 and _GLUED_CODES.search(line):
            tokens = tokens[:1] + _unglue(tokens[1:], _CODE_PIECE, tail=True)
        if header is None and not rows and _is_header(tokens):
            header = _header_columns(tokens)
            header_line = number
            section = "matrix"
            continue
        if _LABEL.match(tokens[0]) and len(tokens) > 1 and _CODE.match(tokens[1]):
            rows.append(_split_row(number, tokens))
            section = "matrix"
            continue
        if section == "matrix":
            raise ParseError(f"not a topology row: {line[:80]!r}", line=number)
        # Anything before the matrix ("NVIDIA Topology:", a title) is not ours to judge.

    if header is None and not rows:
        first = next((i for i, raw in enumerate(lines, start=1) if raw.strip()), 1)
        raise ParseError("no topology matrix in nvidia-smi topo -m output", line=first)

    if header is not None:
        devices = [c for c in header if c not in _EXTRA_COLUMNS]
        extras = header[len(devices) :]
    else:
        devices = _infer_devices(rows)
        extras = list(_EXTRA_COLUMNS)
    last_line = max((i for i, raw in enumerate(lines, start=1) if raw.strip()), default=0)
    if rows and rows[-1].number == last_line and len(rows[-1].cells) < len(devices):
        rows.pop()  # the file ends inside this row (an excerpt, a cut capture): keep whole rows

    topology = Topology(devices=devices, matrix={}, nic_names=nic_names)
    for row in rows:
        if header is not None and row.label not in devices:
            raise ParseError(f"row {row.label} is not a column of the header on line {header_line}", line=row.number)
        if len(row.cells) != len(devices):
            raise ParseError(
                f"row {row.label} has {len(row.cells)} connection cells, the header has {len(devices)} devices",
                line=row.number,
            )
        if len(row.extras) > len(extras):
            raise ParseError(f"row {row.label} has more cells than the header has columns", line=row.number)
        topology.matrix[row.label] = dict(zip(devices, row.cells, strict=True))
        values = dict(zip(extras, row.extras, strict=False))
        for column, target in (("CPU Affinity", topology.cpu_affinity), ("NUMA Affinity", topology.numa_affinity)):
            value = values.get(column)
            if value is not None and not is_not_available(value):
                target[row.label] = value
    return NodeFacts(topology=topology)


def _unglue(tokens: list[str], piece: re.Pattern[str], *, tail: bool) -> list[str]:
    """Tokens with each one made of several ``piece`` matches split into them.

    ``tail``: a glued token may end in something else that starts with a digit (``SYS0-27,112-139``:
    the last code and the CPU affinity), kept as a token of its own.
    """
    out: list[str] = []
    for token in tokens:
        pieces: list[str] = []
        pos = 0
        while pos < len(token) and (m := piece.match(token, pos)) is not None:
            pieces.append(m.group())
            pos = m.end()
        rest = token[pos:]
        glued = pieces and (len(pieces) > 1 or rest) and (not rest or (tail and rest[0].isdigit()))
        if glued and not (len(pieces) == 1 and not rest):
            out.extend([*pieces, rest] if rest else pieces)
        else:
            out.append(token)
    return out


def _is_header(tokens: list[str]) -> bool:
    """The column header: labels only, no ``X`` (every whole row has its self cell)."""
    # The cheap test first: a header starts with a numbered device (GPU0), which prose rarely does.
    return _NUMBERED.match(tokens[0]) is not None and "X" not in tokens and all(_LABEL.match(t) for t in tokens)


def _header_columns(tokens: list[str]) -> list[str]:
    """Header tokens with the multi-word column names joined back together."""
    columns: list[str] = []
    i = 0
    while i < len(tokens):
        for name in _EXTRA_COLUMNS:
            words = name.split()
            if tokens[i : i + len(words)] == words:
                columns.append(name)
                i += len(words)
                break
        else:
            columns.append(tokens[i])
            i += 1
    return columns


def _split_row(number: int, tokens: list[str]) -> _Row:
    count = 0
    for token in tokens[1:]:
        if not _CODE.match(token):
            break
        count += 1
    return _Row(number, tokens[0], tokens[1 : 1 + count], tokens[1 + count :])


def _infer_devices(rows: list[_Row]) -> list[str]:
    """Column names for a matrix whose header is missing, from the rows' self (X) cells.

    Columns come in groups (GPU0.., then NIC0..), each numbered from 0: a row ``NIC3`` with
    its X in column 11 puts NIC0 at column 8. Every group needs one row to place it.
    """
    width = max(len(row.cells) for row in rows)
    starts: dict[str, int] = {}
    for row in rows:
        numbered = _NUMBERED.match(row.label)
        if numbered is None or "X" not in row.cells:
            continue
        start = row.cells.index("X") - int(numbered["number"])
        prefix = numbered["prefix"]
        if starts.setdefault(prefix, start) != start or start < 0:
            raise ParseError(f"cannot place column {row.label}: header missing and rows disagree", line=row.number)
    ordered = sorted(starts.items(), key=lambda item: item[1])
    if not ordered or ordered[0][1] != 0:
        raise ParseError("header missing and the rows do not show where the columns start", line=rows[0].number)
    devices: list[str] = []
    for i, (prefix, start) in enumerate(ordered):
        end = ordered[i + 1][1] if i + 1 < len(ordered) else width
        if i + 1 == len(ordered) and prefix == "GPU":
            # Only GPU rows: the GPUs reach as far as a row has an NVLink (NV#) or self cell; the columns
            # after them (NICs whose rows were not quoted) cannot be named.
            end = max(end_of_gpus(rows, start), start + 1)
            devices.extend(f"{prefix}{n}" for n in range(end - start))
            devices.extend(f"COL{n}" for n in range(end, width))
            break
        devices.extend(f"{prefix}{n}" for n in range(end - start))
    return devices


def end_of_gpus(rows: list[_Row], start: int) -> int:
    """One past the last column a GPU row links to by NVLink, or where the last GPU row's self cell is."""
    end = start
    for row in rows:
        for column, cell in enumerate(row.cells):
            if column >= end and (cell == "X" or cell.startswith("NV")):
                end = column + 1
    return end
