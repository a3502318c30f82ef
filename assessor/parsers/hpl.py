"""HPL output (NVIDIA's HPL-NVIDIA from the NGC HPC-Benchmarks container, or netlib's ``xhpl``) to ``NodeFacts.hpl``.

Both print a result table: a ``T/V  N  NB  P  Q  Time  Gflops`` header (HPL-NVIDIA adds ``(   per GPU)``),
a rule, then one row per test (``WC0  376832  1024  4  4  85.42  4.176e+05 ( 2.610e+04)``). After the
row come the start and end times and the residual check of that test::

    ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   0.000320172243 ...... PASSED

which this parser ties to the row before it. What runs around the table is kept out: the banner
(``HPL-NVIDIA 24.3.0  -- NVIDIA accelerated HPL benchmark -- NVIDIA``, ``HPLinpack 2.1 ...``, read for
the version), the parameter block, HPL-NVIDIA's progress lines (``Prog= ...  GF_per= ...``), NCCL INFO
lines, launcher prefixes (``[1,0]<stdout>:``), prompts, markdown ``<br />`` tags, cuts. An
``HPL ERROR from process ...`` line, or the benchmark's ``>>> ... <<<`` message under it, is the
run's ``error``.

A row is read only when it has the table's shape; a line that starts like a row after the header
but is not one is a ParseError naming its line. Text with no table, no row, no banner and no error
is not HPL output.

>>> run = parse('''T/V                N    NB     P     Q         Time          Gflops (   per GPU)
... --------------------------------------------------------------------------------
... WC0            92160  1024     1     1        30.73       1.698e+04 ( 1.698e+04)
... ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   0.000320172243 ...... PASSED''').hpl
>>> r = run.results[0]
>>> (r.variant, r.n, r.nb, r.p, r.q, r.time_s, r.gflops, r.gflops_per_gpu, r.residual_check)
('WC0', 92160, 1024, 1, 1, 30.73, 16980.0, 16980.0, 'PASSED')
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import HplResult, HplRun, NodeFacts
from assessor.parsers._text import clean_lines

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_ROW = re.compile(
    rf"^(?P<tv>W[RCL][\w]*)\s+(?P<n>\d+)\s+(?P<nb>\d+)\s+(?P<p>\d+)\s+(?P<q>\d+)\s+(?P<time>{_NUM})\s+"
    rf"(?P<gflops>{_NUM})(?:\s+\(\s*(?P<per>{_NUM})\s*\))?$"
)
_ROW_START = re.compile(r"^W[RCL]\w*\s+\d")
_HEADER = re.compile(r"^T/V\s+N\s+NB\s+P\s+Q\s+Time\s+Gflops")
_RESIDUAL = re.compile(rf"^\|\|Ax-b\|\|_oo/\(eps\*.*=\s*(?P<value>{_NUM})\s*\.+\s*(?P<check>PASSED|FAILED)\b")
_NVIDIA_BANNER = re.compile(r"^(?P<version>HPL-NVIDIA\s+[\w.]+)\s+--")
_NETLIB_BANNER = re.compile(r"^(?P<version>HPLinpack\s+[\w.]+)\s+--")
_ERROR = re.compile(r"^HPL ERROR\b.*")
_ERROR_MESSAGE = re.compile(r"^>>>\s*(?P<message>.+?)\s*<<<$")
_BR = re.compile(r"\s?<br ?/?>$", re.IGNORECASE)
_QUOTE = re.compile(r"^>\s(?!>)")


def parse(text: str) -> NodeFacts:
    """Parse an HPL run into ``hpl``: its result rows with their residual checks, its version and error."""
    run = HplRun()
    seen_header = False
    recognised = False
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if line.endswith(">"):  # a markdown paste's " <br />" (tested only there: the pattern is not anchored)
            line = _BR.sub("", line)
        line = _QUOTE.sub("", line).strip()
        if not line:
            continue
        if _HEADER.match(line):
            seen_header = recognised = True
            continue
        if line[0] == "W" and _ROW_START.match(line):
            m = _ROW.match(line)
            if m is None:
                if seen_header:
                    raise ParseError(f"malformed HPL result row: {line[:120]!r}", line=number)
                continue
            run.results.append(_result(m))
            recognised = True
            continue
        if line.startswith("||Ax-b||"):
            m = _RESIDUAL.match(line)
            if m is not None:
                _attach(run, float(m["value"]), m["check"])
                recognised = True
            continue
        if not line.startswith(("HPL", ">>>")):
            continue  # the rest of HPL's output, and anything else around it
        if run.version is None and (m := _NVIDIA_BANNER.match(line) or _NETLIB_BANNER.match(line)):
            run.version = " ".join(m["version"].split())
            recognised = True
        elif _ERROR.match(line):
            run.error = run.error or line
            recognised = True
        elif run.error is not None and (m := _ERROR_MESSAGE.match(line)):
            run.error = m["message"]
    if not recognised:
        raise ParseError("not HPL output: no 'T/V ... Gflops' table, result row, HPL banner or HPL ERROR line")
    return NodeFacts(hpl=run)


def _result(m: re.Match[str]) -> HplResult:
    return HplResult(
        variant=m["tv"],
        n=int(m["n"]),
        nb=int(m["nb"]),
        p=int(m["p"]),
        q=int(m["q"]),
        time_s=float(m["time"]),
        gflops=float(m["gflops"]),
        gflops_per_gpu=float(m["per"]) if m["per"] is not None else None,
    )


def _attach(run: HplRun, value: float, check: str) -> None:
    """The residual line belongs to the last row before it that has none yet (HPL prints it after the row)."""
    for result in reversed(run.results):
        if result.residual_check is None:
            result.residual, result.residual_check = value, check
            return
