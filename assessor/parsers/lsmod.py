"""``lsmod`` output (or ``/proc/modules``) to ``NodeFacts.modules``.

``lsmod`` prints ``name size refcount [holder,holder,...]`` under an optional
``Module Size Used by`` header. Users also paste ``/proc/modules``, where the holders end
with a comma (``-`` for none) and a state and an address follow; both read the same.

Without the header (and without /proc/modules' state column) the text is most often what
``lsmod | grep nvidia`` printed: the modules it lists are loaded, but one it does not list may be
loaded too, so ``partial`` says the list is filtered and the checks do not read an absence from it.

>>> [m.used_by for m in parse('''Module                  Size  Used by
... nvidia_peermem         16384  0
... nvidia_modeset       1306624  1 nvidia_drm
... nvidia              56717312  3 nvidia_uvm,nvidia_peermem,nvidia_modeset''').modules]
[[], ['nvidia_drm'], ['nvidia_uvm', 'nvidia_peermem', 'nvidia_modeset']]
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import KernelModule, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_HEADER = re.compile(r"^Module\s+Size\s+Used\s+by\s*$")
_NAME = re.compile(r"^[\w-]+$")
_PROC_STATES = {"Live", "Loading", "Unloading"}
_PROC_STATE_COLUMN = re.compile(r"[ \t](?:Live|Loading|Unloading)[ \t]+0x")


def parse(text: str) -> NodeFacts:
    """Parse ``lsmod`` output into ``modules``."""
    modules: list[KernelModule] = []
    lines = clean_lines(text)
    last = cut_line(text, lines)
    header = False
    proc_modules = _PROC_STATE_COLUMN.search(text) is not None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if _HEADER.match(line):
            header = True
            continue
        try:
            modules.append(_module(line, number))
        except ParseError:
            if number - 1 == last and modules:
                break  # the paste ends halfway through this line
            raise
    if not modules:
        raise ParseError("empty lsmod output: no module lines")
    facts = NodeFacts(modules=modules)
    if not header and not proc_modules:
        facts.partial["modules"] = (
            "no 'Module Size Used by' header: an excerpt such as lsmod | grep, so a module it does not list "
            "may still be loaded"
        )
    return facts


def _module(line: str, number: int) -> KernelModule:
    cells = line.split()
    if len(cells) < 3 or not _NAME.match(cells[0]) or not cells[1].isdigit():
        raise ParseError(f"not an lsmod line (expected 'name size count [users]'): {line!r}", line=number)
    count_cell = cells[2]
    if count_cell != "-" and not count_cell.isdigit():
        raise ParseError(f"use count is not a number: {count_cell!r}", line=number)
    holders = cells[3] if len(cells) > 3 else ""
    if len(cells) > 4 and cells[4] not in _PROC_STATES:
        raise ParseError(f"unexpected text after the users list: {line!r}", line=number)
    # "[permanent]" and "[unsafe]" are module flags lsmod appends, not users; "-" is none.
    users = [u for u in holders.split(",") if u and u != "-" and not u.startswith("[")]
    return KernelModule(
        name=cells[0],
        size=int(cells[1]),
        used_by_count=int(count_cell) if count_cell.isdigit() else None,
        used_by=users,
    )
