"""Kernel log (``dmesg``, ``dmesg -T``, ``journalctl -k``, syslog) to ``NodeFacts.kernel_events``.

Only the events readiness checks act on are kept; every other line is ignored, as a
kernel log holds everything. Recognised events:

- ``xid``: ``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <message>`` (pid/name are
  absent on older drivers and for some codes);
- ``sxid``: NVSwitch ``nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 12028, Non-fatal, ...``;
- ``fallen_off_bus``: the "GPU ... has fallen off the bus" message that newer drivers print
  over several ``NVRM:`` lines, with no Xid (code 79 is set for it);
- ``pcie_degraded``: the kernel's ``... available PCIe bandwidth, limited by ... x8 link``.

A line may carry a ``[ 1843.308145]`` or ``[Sun Feb 23 16:24:18 2025]`` stamp, a journal
or syslog ``Nov 14 10:00:00 host kernel:`` prefix, or both; the stamp is kept as printed.

>>> e = parse("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, "
...           "name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP!").kernel_events[0]
>>> (e.kind, e.code, e.bus_id, e.pid, e.process, e.timestamp)
('xid', 119, '0000:9b:00', '2024380', 'nvidia-smi', 'Sun Feb 23 16:24:18 2025')
>>> e.message
'Timeout after 6s of waiting for RPC response from GPU4 GSP!'
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import KernelEvent, NodeFacts
from assessor.parsers._text import clean_lines

# dmesg "[ 1843.308145]", dmesg -T "[Sun Feb 23 16:24:18 2025]", dmesg -e "[Nov14 10:00]" / "[  +0.000012]";
# not "[drm]" and other subsystem tags that start a message.
_BRACKET_STAMP = re.compile(
    r"^\[\s*(?P<ts>[+-]?\d+\.\d+|[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4}"
    r"|[A-Z][a-z]{2}\d{1,2} \d{2}:\d{2})\s*\]\s?"
)
_ISO_STAMP = re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T[\d:.,]+(?:[+-]\d{2}:?\d{2}|Z)?)\s+")  # dmesg --time-format iso
# journalctl short / syslog "Nov 14 10:00:00 host kernel:", localized months ("11月 15 ..."),
# and short-iso "2024-11-14T10:00:00+0000 host kernel:".
_JOURNAL_PREFIX = re.compile(
    r"^(?P<ts>(?:\S+\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?)|(?:\d{4}-\d{2}-\d{2}T\S+))"
    r"\s+\S+\s+kernel:\s?"
)
_HOST_KERNEL = re.compile(r"^\S+\s+kernel:\s?")  # after a short-monotonic "[ 5.1] host kernel:"
_LEVEL_PREFIX = re.compile(r"^(?:<\d+>|\d+,\d+,\d+,[^;]*;)")  # dmesg -r "<4>", /dev/kmsg "6,123,456,-;"
# dmesg -x "kern  :warn  : ", also after a host as collectors print it ("gpu3: kern: warning: ").
_FACILITY_PREFIX = re.compile(
    r"^(?:[\w.-]{1,253}:\s{1,8})?[a-z]{1,10}\s{0,8}:\s{0,8}"
    r"(?:emerg|alert|crit|err|error|warn|warning|notice|info|debug)\s{0,8}:\s?"
)

_BUS = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
# Older drivers print "Xid (0000:01:00)" without "PCI:"; MIG adds text after the address.
_XID = re.compile(rf"NVRM: Xid \((?:PCI:)?(?P<bus>{_BUS})[^)]*\):\s*(?P<code>\d+)(?:,\s*(?P<rest>.*))?$")
_SXID = re.compile(rf"SXid \((?:PCI:)?(?P<bus>{_BUS})[^)]*\):\s*(?P<code>\d+)(?:,\s*(?P<rest>.*))?$")
_PID_NAME = re.compile(r"^pid=(?P<pid>'[^']*'|[^,\s]*),\s*name=(?P<name>[^,]*)(?:,\s*(?P<msg>.*))?$")
_GPU_HEADER = re.compile(rf"NVRM: The NVIDIA GPU (?P<bus>{_BUS})")
_NVRM_CONTINUATION = re.compile(r"^NVRM:\s*(?P<text>.*)$")
_FALLEN_ONE_LINE = re.compile(rf"NVRM: (?:GPU (?:at )?(?:PCI:)?)(?P<bus>{_BUS})\b.*fallen off the bus")
_PCIE_LIMITED = re.compile(
    rf"^(?P<driver>\S+) (?P<bus>{_BUS}): (?P<msg>[\d.]+ Gb/s available PCIe bandwidth, limited by .*)$"
)
_NOT_PERMITTED = re.compile(r"^dmesg: read kernel buffer failed", re.I)
# Every event line holds one of these words (the multi-line form starts on an NVRM line).
_EVENT_WORDS = re.compile(r"NVRM|SXid|PCIe bandwidth|dmesg:")
# What marks a line of a kernel log (see _require_kernel_log): a kernel time stamp or prefix at its start ...
_KERNEL_SHAPE = re.compile(
    r"<\d{1,3}>|\d{1,3},\d{1,20},\d{1,20},[^;]{0,16};"  # dmesg -r, /dev/kmsg
    r"|\[\s{0,12}[+-]?\d{1,10}\.\d{1,9}\s{0,2}\]"  # dmesg [ 1843.308145], dmesg -e [  +0.000012]
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} {1,2}\d{1,2} \d{2}:\d{2}:\d{2} \d{4}\]"  # dmesg -T
    r"|\[[A-Z][a-z]{2}\d{1,2} \d{2}:\d{2}\]"  # dmesg -e
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{6}[+-]\d{2}:\d{2} "  # dmesg --time-format iso
    r"|\S{1,40}\s{1,4}\d{1,2}\s{1,2}\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?\s{1,4}[\w.-]{1,253}\s{1,4}kernel:"  # journal
    r"|\d{4}-\d{2}-\d{2}T\S{1,40}\s{1,4}[\w.-]{1,253}\s{1,4}kernel:"  # journalctl -o short-iso
    r"|(?:[\w.-]{1,253}:\s{1,8})?kern\s{0,8}:\s{0,8}[a-z]{1,8}\s{0,8}:"  # dmesg -x
)
# ... or the NVIDIA driver's and the boot banner's words anywhere (dmesg -t prints no stamp).
_KERNEL_WORDS = ("NVRM: ", "SXid (", "Linux version ")
_SHAPE_LINES = 10_000
_HTML = re.compile(r"<(?:!doctype|html|head|body|\?xml)\b", re.I)
_CONTINUATION_LOOKAHEAD = 4  # the multi-line message spans three lines in all drivers seen


def parse(text: str) -> NodeFacts:
    """Parse a kernel log into ``kernel_events`` (Xid, SXid, fallen off the bus, degraded PCIe)."""
    if not text.strip():
        raise ParseError("empty kernel log: a booted kernel always logs something, so the capture failed")
    lines = clean_lines(text, log_prefixes=False)
    _require_kernel_log(lines)
    events: list[KernelEvent] = []
    consumed: set[int] = set()  # continuation lines already folded into a multi-line event
    for index, raw in enumerate(lines):
        if index in consumed:
            continue
        if _EVENT_WORDS.search(raw) is None:
            continue  # a kernel log holds everything: only lines naming an event are read further
        number = index + 1
        timestamp, body = split_prefix(raw)
        if _NOT_PERMITTED.match(body):
            # dmesg_restrict: an empty log here would pass every Xid check by accident.
            raise ParseError(f"the kernel log could not be read: {body}", line=number)
        event = _event(body, timestamp, number)
        if event is None and (m := _GPU_HEADER.search(body)):
            event = _multiline_fallen_off_bus(m["bus"], body, lines, index, timestamp, consumed)
        if event is not None:
            events.append(event)
    return NodeFacts(kernel_events=events)


def _require_kernel_log(lines: list[str]) -> None:
    """ParseError unless some line has a kernel log's shape: a kernel time stamp or prefix, or a line of
    the NVIDIA driver (NVRM, SXid) or of the kernel's boot banner.

    A file that is not a kernel log ("hello world", a web server's 404 page, megabytes of one letter) holds
    no Xid because it holds no kernel events at all: it is no evidence of a healthy GPU, so ``gpu.xid``
    says ``error`` with this reason instead of passing. A real log without Xid lines still passes. Only the
    first 10,000 lines are looked at: every line of a kernel log has the shape, and a log that only starts
    further down is an error, never a pass.
    """
    for number, raw in enumerate(lines[:_SHAPE_LINES], 1):
        line = raw.strip()
        if line and (_KERNEL_SHAPE.match(line) or any(word in line for word in _KERNEL_WORDS)):
            return
        if _NOT_PERMITTED.match(line):  # dmesg_restrict: the log could not be read at all
            raise ParseError(f"the kernel log could not be read: {line}", line=number)
    first = next((line.strip() for line in lines if line.strip()), "")
    count = sum(1 for line in lines[:_SHAPE_LINES] if line.strip())
    which = f"first {count:,}" if len(lines) > _SHAPE_LINES else f"{count:,}"
    shown = repr(first if len(first) <= 60 else first[:57] + "...")
    what = "an HTML page (a web server's answer?)" if _HTML.match(first) else f"text starting {shown}"
    raise ParseError(
        f"not a kernel log: none of the {which} line(s) read has a kernel log's time stamp or prefix "
        "([ 12.345678], [Sun Feb 23 16:24:18 2025], 'Nov 14 10:00:00 host kernel:', <4>) or a line of the "
        f"NVIDIA driver (NVRM); it is {what}, so it is no evidence about Xid errors: capture `dmesg` again"
    )


def split_prefix(line: str) -> tuple[str | None, str]:
    """``(timestamp as printed or None, message)`` for one kernel log line.

    >>> split_prefix("Nov 14 10:00:00 node01 kernel: [ 12.5] NVRM: loading")
    ('Nov 14 10:00:00', 'NVRM: loading')
    """
    timestamp: str | None = None
    body = line.strip()
    body = _FACILITY_PREFIX.sub("", _LEVEL_PREFIX.sub("", body))
    if (m := _JOURNAL_PREFIX.match(body)) or (m := _ISO_STAMP.match(body)):
        timestamp, body = m["ts"], body[m.end() :]
    if m := _BRACKET_STAMP.match(body):
        timestamp, body = timestamp or m["ts"], body[m.end() :]
        if m := _HOST_KERNEL.match(body):
            body = body[m.end() :]
    return timestamp, body.strip()


def _event(body: str, timestamp: str | None, number: int) -> KernelEvent | None:
    if m := _XID.search(body):
        pid, process, message = _pid_name(m["rest"] or "")
        return KernelEvent(
            kind="xid",
            message=message,
            code=int(m["code"]),
            bus_id=m["bus"],
            pid=pid,
            process=process,
            timestamp=timestamp,
            line=number,
        )
    if m := _SXID.search(body):
        return KernelEvent(
            kind="sxid",
            message=(m["rest"] or "").strip(),
            code=int(m["code"]),
            bus_id=m["bus"],
            timestamp=timestamp,
            line=number,
        )
    if "fallen off the bus" in body and (m := _FALLEN_ONE_LINE.search(body)):
        return KernelEvent(
            kind="fallen_off_bus", message=body, code=79, bus_id=m["bus"], timestamp=timestamp, line=number
        )
    if m := _PCIE_LIMITED.match(body):
        return KernelEvent(kind="pcie_degraded", message=body, bus_id=m["bus"], timestamp=timestamp, line=number)
    return None


def _pid_name(rest: str) -> tuple[str | None, str | None, str]:
    """Split ``pid=..., name=..., message`` (pid may be quoted; ``<unknown>`` means None)."""
    m = _PID_NAME.match(rest)
    if m is None:
        return None, None, rest.strip()
    pid = m["pid"].strip("'")
    name = m["name"].strip()
    return (
        None if pid in ("", "<unknown>") else pid,
        None if name in ("", "<unknown>") else name,
        (m["msg"] or "").strip(),
    )


def _multiline_fallen_off_bus(
    bus: str, body: str, lines: list[str], index: int, timestamp: str | None, consumed: set[int]
) -> KernelEvent | None:
    """``NVRM: The NVIDIA GPU <bus>`` followed by ``NVRM:`` continuation lines (drivers 570+).

    The same header starts other messages ("... is not supported by ..."), so it counts
    only when the joined text says the GPU fell off the bus.
    """
    parts = [body.removeprefix("NVRM:").strip()]
    taken: list[int] = []
    # A journal may hold the whole message on one line: then there is nothing to join.
    lookahead = 0 if "fallen off the bus" in body else _CONTINUATION_LOOKAHEAD
    for follow in range(index + 1, min(index + 1 + lookahead, len(lines))):
        _, next_body = split_prefix(lines[follow])
        m = _NVRM_CONTINUATION.match(next_body)
        if m is None or _GPU_HEADER.search(next_body) or _XID.search(next_body):
            break
        parts.append(m["text"].strip())
        taken.append(follow)
        if "fallen off the bus" in m["text"]:
            break
    message = " ".join(parts)
    if "fallen off the bus" not in message:
        return None
    consumed.update(taken)
    return KernelEvent(kind="fallen_off_bus", message=message, code=79, bus_id=bus, timestamp=timestamp, line=index + 1)
