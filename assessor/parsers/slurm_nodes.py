"""``scontrol show node`` output (``-o``, one line a node, or the long form) to ``NodeFacts.slurm_nodes``.

Each node is a run of ``Key=Value`` fields starting at ``NodeName=``; in the long form the fields continue on
indented lines. A value may hold spaces (``OS=Linux 5.15.0-91-generic #101-Ubuntu SMP ...``): it runs to the
next `` Key=``. ``Reason=`` comes last on its line and takes the rest of it, ``[user@time]`` (who set it, when)
split off. ``Gres=(null)`` is no GRES. A paste cut in the middle of its last node keeps the nodes before it
and says the list may be incomplete; a text with no ``NodeName=`` at all is not this output.

>>> n = parse("NodeName=gpu01 Gres=gpu:8 State=IDLE+DRAIN Reason=maintenance [root@2024-01-25T15:12:23]\\n")
>>> (n.slurm_nodes[0].name, n.slurm_nodes[0].state, n.slurm_nodes[0].reason, n.slurm_nodes[0].gres)
('gpu01', 'IDLE+DRAIN', 'maintenance', 'gpu:8')
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import NodeFacts, SlurmNode
from assessor.parsers._text import clean_lines, cut_line

_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(.*?)(?=\s+[A-Za-z][A-Za-z0-9_:/]*=|\s*$)")
_REASON = re.compile(r"(?:^|\s)Reason=(.*)$")
_SET_BY = re.compile(r"\s*\[[^\[\]@]*@[^\[\]]*\]\s*$")


def _record(fields: dict[str, str], reason: str | None) -> SlurmNode:
    gres = fields.get("Gres")
    return SlurmNode(
        name=fields["NodeName"],
        state=fields["State"],
        reason=reason,
        gres=None if gres in (None, "", "(null)") else gres,
        gres_used=fields.get("GresUsed") or None,
        alloc_tres=fields.get("AllocTRES") or None,
        version=fields.get("Version") or None,
        partitions=[p for p in fields.get("Partitions", "").split(",") if p],
    )


def _fields(line: str) -> tuple[dict[str, str], str | None]:
    """The ``Key=Value`` fields of one line, and its reason (None when the line has none)."""
    reason = None
    m = _REASON.search(line)
    if m is not None:
        reason = _SET_BY.sub("", m.group(1)).strip() or None
        line = line[: m.start()]
    return {k: v.strip() for k, v in _FIELD.findall(line)}, reason


def parse(text: str) -> NodeFacts:
    """Parse ``scontrol show node [-o]`` into ``slurm_nodes``."""
    lines = clean_lines(text)
    last = cut_line(text, lines)
    nodes: list[SlurmNode] = []
    fields: dict[str, str] = {}
    reason: str | None = None
    start = 0
    cut = False

    def close(number: int) -> None:
        nonlocal fields, reason
        if fields:
            if "State" not in fields:
                raise ParseError(f"node {fields['NodeName']} has no State=", line=number)
            nodes.append(_record(fields, reason))
        fields, reason = {}, None

    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if index == last and "State=" not in line and not fields.get("State") and line.startswith("NodeName="):
            cut = True  # a one-line node cut before its state
            break
        if line.startswith("NodeName="):
            close(start + 1)
            start = index
        elif not fields:
            if "=" not in line and not nodes:
                continue  # a line before the output (a heading a paste kept)
            if line.startswith("Node ") and "not found" in line:
                continue
            raise ParseError(f"not a scontrol show node line: {line[:80]!r}", line=index + 1)
        found, said = _fields(line)
        if not found and said is None:
            raise ParseError(f"not a scontrol show node line: {line[:80]!r}", line=index + 1)
        fields.update(found)
        if said is not None:
            reason = said
    if fields and "State" not in fields and last >= start:
        cut = True
        fields = {}
    close(start + 1)
    if not nodes and not cut:
        raise ParseError("no NodeName= in the text: not scontrol show node output")
    facts = NodeFacts(slurm_nodes=nodes)
    if cut or last >= 0:
        facts.partial["slurm_nodes"] = "the paste ends in the middle of a node: the nodes after it are not there"
    return facts
