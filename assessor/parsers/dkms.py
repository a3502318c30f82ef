"""``dkms status`` output to ``NodeFacts.dkms``.

Each line is a module version in the DKMS tree and, once built, the kernel and architecture it was built for
and its state: ``nvidia/535.129.03, 5.15.0-91-generic, x86_64: installed`` (dkms 2.8 and 3), or the older
``nvidia, 460.91.03, 5.11.0-36-generic, x86_64: installed``; a version only added (its source registered,
built for no kernel) is ``nvidia/535.129.03: added``. dkms may add a warning in parentheses after the state
(``(WARNING! Diff between built and installed module!)``), which is read past. An empty output is an empty
tree (no module at all), not an error.

>>> [(d.module, d.version, d.kernel, d.state) for d in parse('''nvidia/535.129.03, 5.15.0-91-generic, x86_64: installed
... nvidia/550.144.03: added''').dkms]
[('nvidia', '535.129.03', '5.15.0-91-generic', 'installed'), ('nvidia', '550.144.03', None, 'added')]
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import DkmsBuild, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_LINE = re.compile(
    r"^(?P<module>[\w.+-]+)(?:/|,\s*)(?P<version>[^,:\s]+)"
    r"(?:,\s*(?P<kernel>[^,:\s]+)(?:,\s*(?P<arch>[^,:\s]+))?)?"
    r":\s*(?P<state>added|built|installed|installed-weak|broken)\b.*$"
)


def parse(text: str) -> NodeFacts:
    """Parse ``dkms status`` output into ``dkms``."""
    lines = clean_lines(text)
    last = cut_line(text, lines)
    builds: list[DkmsBuild] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            if number - 1 == last:
                break  # cut halfway through the line
            raise ParseError(f"not a dkms status line: {line[:80]!r}", line=number)
        builds.append(
            DkmsBuild(
                module=m.group("module"),
                version=m.group("version"),
                state=m.group("state"),
                kernel=m.group("kernel"),
                arch=m.group("arch"),
            )
        )
    facts = NodeFacts(dkms=builds)
    if last >= 0:
        facts.partial["dkms"] = "the paste ends in the middle of a line: the builds after it are not there"
    return facts
