"""perftest client output (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``) to ``NodeFacts.ib_write_bw``.

The output is a header block (test title, ``Key : value`` pairs, two to a line), the
queue-pair addresses, then a table whose header names the unit: ``BW peak[Gb/sec]`` with
``--report_gbits``, ``BW peak[MB/sec]`` without. Rows are whitespace separated; some
builds put a TAB before the message rate. Outputs pasted from a GitHub reply keep the
``> `` quote prefix on every line: it is removed when the text starts with it.

>>> run = parse('''                    RDMA_Write BW Test
...  Dual-port       : OFF\\t\\tDevice         : mlx5_0
...  Link type       : IB
...  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
...  8388608    5000             392.10             391.96   \\t\\t   0.005841''').ib_write_bw
>>> (run.test, run.device, run.link_type, run.unit, run.average_gbits())
('RDMA_Write BW Test', 'mlx5_0', 'IB', 'Gb/sec', 391.96)
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import NodeFacts, PerftestRow, PerftestRun
from assessor.parsers._text import clean_lines

_QUOTE = re.compile(r"^>[ ]?")
_TITLE = re.compile(r"^\s*(?P<title>[A-Za-z_]+(?: [A-Za-z_]+)* BW Test)\s*$")
_TABLE_HEADER = re.compile(r"#bytes.*BW peak\[(?P<unit>[^\]]+)\]")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def parse(text: str) -> NodeFacts:
    """Parse a perftest bandwidth run (client side) into ``ib_write_bw``."""
    lines = clean_lines(text)
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise ParseError("empty perftest output")
    if first.startswith(">"):
        lines = [_QUOTE.sub("", line) for line in lines]
    run = PerftestRun()
    in_table = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if "BW peak[" in stripped and (m := _TABLE_HEADER.search(stripped)):
            run.unit = m["unit"].strip()
            in_table = True
            continue
        if in_table and stripped[0].isdigit():
            run.rows.append(_row(stripped, number))
            continue
        if stripped.startswith("-"):
            in_table = False  # the closing rule; warnings may follow
            continue
        if run.test is None and stripped.endswith("BW Test") and (m := _TITLE.match(stripped)):
            run.test = m["title"]
            continue
        for key, value in _pairs(stripped):
            if key == "device" and run.device is None:
                run.device = value
            elif key == "link type" and run.link_type is None:
                run.link_type = value
    if run.test is None and run.unit is None:
        raise ParseError("not perftest output: no 'BW Test' title and no '#bytes ... BW peak[...]' table header")
    return NodeFacts(ib_write_bw=run)


def _pairs(line: str) -> list[tuple[str, str]]:
    """Header pairs such as ``Dual-port       : OFF\t\tDevice         : mlx5_0``: (key, value), values
    one token, keys lower-case with single spaces. Split by hand: a regex over a long line with
    no colon would try every start position (quadratic)."""
    parts = line.split(":")
    pairs = []
    for i in range(1, len(parts)):
        before = parts[i - 1].split()
        if i > 1:
            before = before[1:]  # the previous pair's value comes first
        words = parts[i].split()
        if before and words:
            pairs.append((" ".join(before).lower(), words[0]))
    return pairs


def _row(line: str, number: int) -> PerftestRow:
    """``#bytes #iterations peak average [msgrate]``; anything else in the table is an error."""
    cells = line.split()
    if len(cells) not in (4, 5) or not all(_NUMBER.match(c) for c in cells):
        raise ParseError(f"malformed result row (expected 4 or 5 numbers): {line!r}", line=number)
    return PerftestRow(
        size_bytes=int(cells[0]),
        iterations=int(float(cells[1])),
        bw_peak=float(cells[2]),
        bw_average=float(cells[3]),
        msg_rate_mpps=float(cells[4]) if len(cells) == 5 else None,
    )
