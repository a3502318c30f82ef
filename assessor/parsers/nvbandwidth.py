"""nvbandwidth output (github.com/NVIDIA/nvbandwidth) to ``NodeFacts.nvbandwidth``.

A run prints its version (``nvbandwidth Version: v0.8``), the CUDA and driver versions, one
``Device N: NAME (BUS)`` line per GPU, then for each test case::

    Running host_to_device_memcpy_ce.
    memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
               0         1
     0     55.12     55.09

    SUM host_to_device_memcpy_ce 110.21

The matrix's rows are the CPU (host tests) or the source GPU (device-to-device tests), its columns
the GPUs; ``N/A`` marks a pair with no copy (a GPU to itself). A test that fails prints an ``ASSERT``
or CUDA error instead of its matrix: that is its ``error``, never a number. ``Waived:`` lines (a
test this system cannot run) and the closing NOTE are skipped. Pastes lose parts: a cut header, a
matrix with no ``Running`` line (its name then comes from the SUM line, or stays unknown), GitHub's
``> `` quote before a line.

>>> run = parse('''Running host_to_device_memcpy_ce.
... memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
...            0         1
...  0     55.12     27.40
...
... SUM host_to_device_memcpy_ce 82.52''').nvbandwidth
>>> test = run.tests[0]
>>> (test.name, test.columns, test.per_column(), test.sum_gbps)
('host_to_device_memcpy_ce', [0, 1], {0: 55.12, 1: 27.4}, 82.52)
"""

from __future__ import annotations

import math
import re

from assessor.errors import ParseError
from assessor.facts import NodeFacts, NvbandwidthRow, NvbandwidthRun, NvbandwidthTest
from assessor.parsers._text import clean_lines

_VERSION = re.compile(r"^nvbandwidth Version:\s*(?P<version>\S+)")
_DRIVER = re.compile(r"^Driver Version:\s*(?P<version>\S+)")
_DEVICE = re.compile(r"^Device (?P<index>\d+): (?P<name>.+?)(?: \([0-9A-Fa-f:.]+\))?$")
_RUNNING = re.compile(r"^Running (?P<name>\w+)\.?$")
_TITLE = re.compile(r"^memcpy .*\((?:GB/s|ns)\)$|^memory latency")
_SUM = re.compile(r"^SUM (?P<name>\w+) (?P<value>\S+)$")
_COLUMNS = re.compile(r"^\d+(?:\s+\d+)*$")
_ROW = re.compile(r"^(?P<label>\d+)\s+(?P<values>\S.*)$")
_FAILURE = re.compile(r"ASSERT|CUDA_ERROR|cudaError|CUresult|failed with error", re.IGNORECASE)
_QUOTE = re.compile(r"^>\s?")


def parse(text: str) -> NodeFacts:
    """Parse an nvbandwidth run into ``nvbandwidth``: its tests, their matrices and SUMs."""
    run = NvbandwidthRun()
    test: NvbandwidthTest | None = None
    recognised = False
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line:
            continue
        if line[0] == ">":
            line = _QUOTE.sub("", line).strip()
        if m := _RUNNING.match(line):
            test = NvbandwidthTest(name=m["name"])
            run.tests.append(test)
            recognised = True
        elif _TITLE.match(line):
            if test is None or test.title is not None or test.columns:
                test = NvbandwidthTest(name=None)
                run.tests.append(test)
            test.title = line
            recognised = True
        elif m := _SUM.match(line):
            recognised = True
            value = _number(m["value"], number)
            if test is None or (test.name is not None and test.name != m["name"]):
                test = NvbandwidthTest(name=m["name"])
                run.tests.append(test)
            test.name, test.sum_gbps = m["name"], value
        elif test is not None and test.title is not None and not test.columns and _COLUMNS.match(line):
            test.columns = [int(c) for c in line.split()]
        elif test is not None and test.columns and (m := _ROW.match(line)):
            values = [_number(v, number) for v in m["values"].split()]
            if len(values) != len(test.columns):
                raise ParseError(
                    f"matrix row {m['label']} has {len(values)} values for {len(test.columns)} columns", line=number
                )
            test.rows.append(NvbandwidthRow(label=int(m["label"]), values=values))
        elif m := _VERSION.match(line):
            run.version, recognised = m["version"], True
        elif m := _DRIVER.match(line):
            run.driver_version = m["version"]
        elif m := _DEVICE.match(line):
            run.devices.append(m["name"].strip())
        elif test is not None and not test.rows and _FAILURE.search(line):
            test.error = test.error or line[:300]
    if not recognised:
        raise ParseError("not nvbandwidth output: no version line, 'Running TEST.', matrix title or SUM line")
    return NodeFacts(nvbandwidth=run)


def _number(text: str, line: int) -> float | None:
    """A bandwidth cell: a number, or None for N/A; anything else is a ParseError."""
    if text.upper() == "N/A":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"not a bandwidth figure: {text[:40]!r}", line=line) from None
    if not math.isfinite(value):
        return None
    return value
