"""``dcgmi diag -r 1|2|3|4`` text output: metadata and one result per test, with details.

The table is two columns. Section rules carry the category (``|-----  Metadata  ---+---|`` in
DCGM 3.3+, ``+-----  Integration  ---+---+`` everywhere); DCGM 3.0 has no Metadata section.
A test row is ``| name | result |`` where the result is ``Pass``, ``Pass - All`` or ``Pass -
GPUs: 1, 2`` (3.x) and rows with an empty name continue it: per-GPU results (``Fail - GPU: 0``
in 3.x, ``GPU0: Pass`` in 4.x) or a ``Warning``/``Error``/``Info`` message that DCGM wraps at a
fixed width, even mid-word. Wrapped pieces are joined back into one detail. DCGM 4 prints a GPU's own
warnings under its ``GPUn:`` row, labelled ``Warning: GPUn``; the detail keeps that label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assessor.errors import ParseError
from assessor.facts import DcgmDiag, DcgmTest, NodeFacts
from assessor.parsers._text import clean_lines

_SECTION = re.compile(r"^[|+]-+\s+([A-Za-z][A-Za-z /]*?)\s+-+[+|]")
_RULE = re.compile(r"^\+[-=+]+\+?$")
# "GPU0: Pass" (4.x) or "GPU 0: Fail - ..." as a per-GPU line.
_GPU_STATUS = re.compile(r"^GPU\s?\d+\s*:\s*(\w+)")
# "Fail - GPU: 0", "Pass - GPUs: 1, 2, 3" (3.x) as a continuation line.
_GROUP_STATUS = re.compile(r"^(\w+)\s+-\s+(?:All|GPUs?\b)")
_MESSAGE_LABELS = ("Warning", "Error", "Info", "Notice")
# A DCGM 4 message about one entity: "Warning: GPU5", "Info: GPU0" (dcgmi/Diag.cpp HelperDisplayEntityResults).
_ENTITY_LABEL = re.compile(r"^(?:Warning|Error|Info|Notice):\s*[A-Za-z]+\d+$")
_RESULTS = {
    "pass": "Pass",
    "passed": "Pass",
    "fail": "Fail",
    "failed": "Fail",
    "skip": "Skip",
    "skipped": "Skip",
    "warn": "Warn",
    "warning": "Warn",
}
_SEVERITY = {"Skip": 0, "Pass": 1, "Warn": 2, "Fail": 3}


def normalise_result(cell: str) -> str | None:
    """``Pass - All``, ``PASS``, ``Fail - GPU: 0`` -> Pass/Fail/Skip/Warn; None when not a result."""
    head = cell.strip().split(" - ", 1)[0].strip().lower()
    return _RESULTS.get(head)


@dataclass
class _Message:
    """A detail being assembled from wrapped table rows."""

    label: str | None  # Warning/Error/Info, or None for a per-GPU line
    chunks: list[str] = field(default_factory=list)
    open: bool = True  # the last chunk filled the cell, so the next row may continue it

    def text(self, width: int) -> str:
        # A full piece that ended in a space lost it to padding: restore it to the cell width.
        body = "".join(c.rstrip().ljust(width) for c in self.chunks[:-1]) + self.chunks[-1]
        body = body.strip()
        return f"{self.label}: {body}" if self.label else body


@dataclass
class _Row:
    name: str
    value: str  # the result cell as printed, leading space removed, padding kept
    width: int  # how many characters DCGM puts in one wrapped piece of the result cell
    complete: bool  # False when the line was cut before the closing "|"


def _split_row(line: str) -> _Row | None:
    body = line[1:]
    complete = body.rstrip().endswith("|")
    if complete:
        body = body.rstrip()[:-1]
    if "|" not in body:
        return _Row(body.strip(), "", 0, False) if body.strip() else None
    name, value = body.split("|", 1)
    # DCGM prints " " + piece padded to the cell width - 3 + "  ".
    width = max(len(value) - 3, 1) if complete else 0
    return _Row(name.strip(), value[1:] if value.startswith(" ") else value, width, complete)


def parse(text: str) -> NodeFacts:
    """Parse ``dcgmi diag`` text output into ``NodeFacts.dcgm_diag``."""
    diag = DcgmDiag()
    lines = clean_lines(text)
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    category = "Unknown"
    current: DcgmTest | None = None
    messages: list[_Message] = []
    width = 45
    table = False
    error: tuple[int, str] | None = None

    def flush() -> None:
        if current is not None:
            current.details.extend(m.text(width) for m in messages)
        messages.clear()

    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Error:") and error is None:
            error = (i + 1, line)
        if not line.startswith(("|", "+")):
            continue  # "$ dcgmi diag -r 2", "Successfully ran diagnostic for group.", pasted prose
        table = True
        if m := _SECTION.match(line):
            flush()
            category, current = m.group(1).strip(), None
            continue
        if _RULE.match(line):
            continue
        row = _split_row(line)
        if row is None or (row.name == "Diagnostic" and row.value.strip() == "Result"):  # the header row
            continue
        if row.width:
            width = row.width
        value = row.value.strip()
        if category == "Metadata":
            if row.name and value:
                diag.metadata[row.name] = value
                if row.name == "DCGM Version":
                    diag.version = value
            continue
        label = row.name.split(":", 1)[0]
        if label in _MESSAGE_LABELS:
            if current is None:
                if label not in ("Error", "Warning"):
                    continue  # an Info/Notice line about no test in particular
                # An error or warning with no test before it (a failed deployment check): keep
                # it as a result of its own so that it cannot be lost.
                current = DcgmTest(category, label, "Fail" if label == "Error" else "Warn")
                diag.tests.append(current)
            # DCGM 4 names the entity a warning is for: "Warning: GPU5". Keep it: it says which GPU failed.
            messages.append(_Message(row.name if _ENTITY_LABEL.match(row.name) else label, [row.value]))
            messages[-1].open = _fills(row, width)
            continue
        if not row.name:
            if current is None or not value:
                continue
            _continuation(current, messages, row, width)
            continue
        result = normalise_result(value)
        if result is None:
            if i == last:
                continue  # cut off mid-row
            reason = f"unknown result {value!r}" if value else "no result"
            raise ParseError(f"{reason} for test {row.name!r}", line=i + 1)
        flush()
        current = DcgmTest(category=category, name=row.name, result=result)
        diag.tests.append(current)
        if " - " in value and not value.lower().endswith(" - all"):
            # "Pass - GPUs: 1, 2": which GPUs the result is for is a detail worth keeping.
            messages.append(_Message(None, [value], open=False))
    flush()
    if not table:
        if error is not None:
            raise ParseError(f"no dcgmi diag results: {error[1]}", line=error[0])
        raise ParseError("no dcgmi diag results found", line=1)
    return NodeFacts(dcgm_diag=diag)


def _fills(row: _Row, width: int) -> bool:
    # A piece that fills the cell may continue on the next row; one ending in a space
    # loses that space to padding, hence width - 1.
    return row.complete and len(row.value.rstrip()) >= width - 1


def _continuation(current: DcgmTest, messages: list[_Message], row: _Row, width: int) -> None:
    """An empty-name row: a per-GPU result, or the next wrapped piece of a message."""
    value = row.value.strip()
    status = _GPU_STATUS.match(value) or _GROUP_STATUS.match(value)
    if status:
        result = normalise_result(status.group(1))
        # Only a worse per-GPU result changes the test's result: one GPU failing fails it.
        if result in ("Warn", "Fail") and _SEVERITY[result] > _SEVERITY[current.result]:
            current.result = result
        messages.append(_Message(None, [value], open=False))
        return
    if messages and messages[-1].open:
        messages[-1].chunks.append(row.value)
    else:
        messages.append(_Message(None, [row.value]))
    messages[-1].open = _fills(row, width)
