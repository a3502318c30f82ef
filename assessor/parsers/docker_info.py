"""``docker info`` to ``NodeFacts.container_engine``: the runtimes the running daemon offers, its default
runtime and the directories it reads CDI specs from.

The server part is indented one space under ``Server:`` (``Runtimes: io.containerd.runc.v2 nvidia runc``,
``Default Runtime: runc``, ``CDI spec directories:`` with one directory a line below it). When the daemon
does not answer, the client part is followed by ``ERROR: Cannot connect to the Docker daemon ...``: that is
a fact too (no daemon), not a parse error.

>>> e = parse('''Server:
...  Server Version: 28.3.3
...  Runtimes: io.containerd.runc.v2 nvidia runc
...  Default Runtime: runc''').container_engine
>>> (e.server_version, e.runtimes, e.default_runtime, e.cdi_spec_dirs)
('28.3.3', ['io.containerd.runc.v2', 'nvidia', 'runc'], 'runc', None)
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import ContainerEngine, NodeFacts
from assessor.parsers._text import clean_lines

_KEY = re.compile(r"^(?P<indent>[ \t]*)(?P<key>[A-Za-z][\w ./-]{0,40}):[ \t]*(?P<value>.*)$")
_NO_DAEMON = re.compile(r"(Cannot connect to the Docker daemon at \S+\.?(?: Is the docker daemon running\?)?)")


def parse(text: str) -> NodeFacts:
    """Parse ``docker info`` into ``container_engine``."""
    lines = clean_lines(text)
    engine = ContainerEngine()
    seen_server = False
    in_cdi = False
    for raw in lines:
        line = raw.rstrip()
        missing = _NO_DAEMON.search(line)
        if missing:
            engine.error = missing.group(1)
            continue
        match = _KEY.match(line)
        if in_cdi:
            if match is None and line.strip().startswith("/"):
                assert engine.cdi_spec_dirs is not None
                engine.cdi_spec_dirs.append(line.strip())
                continue
            in_cdi = False
        if match is None:
            continue
        key, value = match.group("key").strip(), match.group("value").strip()
        if key == "Server":
            seen_server = True
        elif key == "Server Version":
            engine.server_version = value or None
            seen_server = True
        elif key == "Runtimes":
            engine.runtimes = value.split()
            seen_server = True
        elif key == "Default Runtime":
            engine.default_runtime = value or None
            seen_server = True
        elif key == "CDI spec directories":
            engine.cdi_spec_dirs = []
            in_cdi = True
    if not seen_server and engine.error is None:
        raise ParseError("not docker info output: no Server section, Runtimes or Default Runtime line", line=1)
    facts = NodeFacts(container_engine=engine)
    if engine.error is None and engine.server_version is not None and not engine.runtimes:
        # a paste cut before the Runtimes line: the runtimes it lists are not known, not absent
        facts.partial["container_engine"] = "docker info was cut before its Runtimes line"
    return facts
