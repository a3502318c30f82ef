"""``systemctl show`` (or ``systemctl status``) output to ``NodeFacts.services``.

The snapshot holds ``systemctl show`` of the NVIDIA units: ``Key=value`` lines, one block
per unit, blocks separated by a blank line (``-p Id,ActiveState,...`` prints the same shape
with fewer keys). Users paste ``systemctl status`` just as often, and sometimes only what
a failed ``systemctl start`` printed with the journal after it; those are recognised
automatically and read for the same facts.

>>> s = parse('''Id=nvidia-fabricmanager.service
... LoadState=loaded
... ActiveState=failed
... SubState=failed
... Result=exit-code
... ExecMainStatus=1''').services[0]
>>> (s.name, s.active_state, s.sub_state, s.result, s.exec_main_status)
('nvidia-fabricmanager.service', 'failed', 'failed', 'exit-code', 1)
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import NodeFacts, Service
from assessor.parsers._text import clean_lines

_SHOW_LINE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9]*)=(?P<value>.*)$")
_UNIT = r"[\w@.:\\-]+\.(?:service|socket|target|timer|mount|path|scope|slice|swap|automount|device)"

# systemctl status: "● nvidia-fabricmanager.service - NVIDIA fabric manager service"
_STATUS_HEADER = re.compile(rf"^[●○×✗*↻]?\s*(?P<unit>{_UNIT})(?:\s+-\s+.*)?$")
_LOADED = re.compile(r"^Loaded:\s*(?P<state>[\w-]+)(?:\s*\((?P<detail>[^)]*)\))?")
_ACTIVE = re.compile(r"^Active:\s*(?P<state>[\w-]+)(?P<parens>(?:\s*\([^)]*\))*)")
_MAIN_PID = re.compile(r"^Main PID:\s*\d+\s*\((?:[^)]*\bstatus=(?P<status>\d+))?")
_NOT_FOUND = re.compile(rf"^Unit (?P<unit>{_UNIT}) could not be found\.?$")
# What `systemctl start` prints when the job fails, and the matching unit Result= value.
_JOB_FAILED = re.compile(rf"^Job for (?P<unit>{_UNIT}) failed because (?P<why>.*?)\.?$")
_JOB_REASONS = {
    "the control process exited with error code": "exit-code",
    "a timeout was exceeded": "timeout",
    "a fatal signal was delivered to the control process": "signal",
    "a fatal signal was delivered causing the control process to dump core": "core-dump",
    "the service did not take the steps required by its unit configuration": "protocol",
    "start of the service was attempted too often": "start-limit-hit",
    "a configured resource limit was exceeded": "resources",
}
# Journal lines systemd writes about a unit: "systemd[1]: x.service: Failed with result 'exit-code'."
_JOURNAL_RESULT = re.compile(rf"systemd\[\d+\]:\s*(?P<unit>{_UNIT}): Failed with result '(?P<result>[\w-]+)'")
_JOURNAL_MAIN_EXIT = re.compile(
    rf"systemd\[\d+\]:\s*(?P<unit>{_UNIT}): (?:Main|Control) process exited, code=\w+, status=(?P<status>\d+)"
)
# A journal line of a unit's own process: "Nov 05 13:55:26 node1 nv-fabricmanager[104230]: <message>".
_JOURNAL_PROCESS = re.compile(r"(?:^|\s)(?P<comm>[\w.@-]{1,64})\[\d{1,10}\]: (?P<message>.+)$")
# "systemd[1]: Starting NVIDIA fabric manager service...": the unit by its description.
_JOURNAL_STARTING = re.compile(r"systemd\[\d+\]:\s*(?:Starting|Started|Failed to start) (?P<what>.+?)\.{0,3}$")
# The processes and descriptions of the NVIDIA units, so journal lines name their unit.
_UNIT_OF = {
    "nv-fabricmanager": "nvidia-fabricmanager.service",
    "nvidia-fabricmanager-start.sh": "nvidia-fabricmanager.service",
    "nvidia-fabricmanager": "nvidia-fabricmanager.service",
    "nvidia fabric manager service": "nvidia-fabricmanager.service",
    "nvidia fabricmanager daemon": "nvidia-fabricmanager.service",
    "nvidia-persistenced": "nvidia-persistenced.service",
    "nvidia persistence daemon": "nvidia-persistenced.service",
    "nv-hostengine": "nvidia-dcgm.service",
    "nvidia dcgm service": "nvidia-dcgm.service",
}
# Words that make a unit's own journal line the reason it failed.
_ERROR_WORDS = re.compile(
    r"don.?t match|doesn.?t match|mismatch|driver interface version|\berror\b|\bfail"
    r"|not supported|unable|cannot|could not|\[NV_\w+\]",
    re.IGNORECASE,
)


def parse(text: str) -> NodeFacts:
    """Parse ``systemctl show`` (or ``systemctl status``) output into ``services``."""
    lines = clean_lines(text)
    first = next((line.strip() for line in lines if line.strip()), None)
    if first is None:
        raise ParseError("empty systemctl output")
    if _SHOW_LINE.match(first):
        return NodeFacts(services=_parse_show(lines))
    services = _parse_status(lines)
    if not services:
        raise ParseError("neither systemctl show (Key=value) nor systemctl status output: no unit named")
    return NodeFacts(services=services)


def _parse_show(lines: list[str]) -> list[Service]:
    services: list[Service] = []
    block: dict[str, str] = {}
    start = 1
    for number, raw in enumerate([*lines, ""], start=1):
        line = raw.strip()
        if not line:
            if block:
                services.append(_service_from_show(block, start))
                block = {}
            continue
        m = _SHOW_LINE.match(line)
        if m is None:
            raise ParseError(f"not a systemctl show Key=value line: {line!r}", line=number)
        if not block:
            start = number
        block[m["key"]] = m["value"].strip()
    return services


def _service_from_show(block: dict[str, str], start: int) -> Service:
    name = block.get("Id") or (block.get("Names") or "").split(" ")[0]
    if not name:
        raise ParseError("unit block has no Id= line: capture with `systemctl show -p Id,...`", line=start)
    status = block.get("ExecMainStatus")
    if status is not None and status and not status.isdigit():
        raise ParseError(f"ExecMainStatus is not a number: {status!r}", line=start)
    return Service(
        name=name,
        load_state=block.get("LoadState") or None,
        active_state=block.get("ActiveState") or None,
        sub_state=block.get("SubState") or None,
        unit_file_state=block.get("UnitFileState") or None,
        result=block.get("Result") or None,
        exec_main_status=int(status) if status else None,
    )


def _parse_status(lines: list[str]) -> list[Service]:
    units: dict[str, Service] = {}
    current: Service | None = None

    def unit(name: str) -> Service:
        return units.setdefault(name, Service(name=name))

    reasons: list[tuple[str | None, str]] = []  # (unit or None, message), in journal order
    for raw in lines:
        line = raw.strip()
        if ":" not in line and "." not in line:
            continue  # every line read below names a unit ("x.service") or is "Key: ..." / "comm[pid]: ..."
        if m := _STATUS_HEADER.match(line):
            current = unit(m["unit"])
        elif m := _NOT_FOUND.match(line):
            # What systemctl show says for such a unit.
            found = unit(m["unit"])
            found.load_state, found.active_state, found.sub_state = "not-found", "inactive", "dead"
        elif current is not None and (m := _LOADED.match(line)):
            current.load_state = m["state"]
            detail = [part.strip() for part in (m["detail"] or "").split(";")]
            # "loaded (/path/x.service; enabled; preset: enabled)": the second field.
            if m["state"] == "loaded" and len(detail) > 1 and detail[1]:
                current.unit_file_state = detail[1]
        elif current is not None and (m := _ACTIVE.match(line)):
            _set_active(current, m["state"], m["parens"])
        elif current is not None and (m := _MAIN_PID.match(line)):
            if m["status"]:
                current.exec_main_status = int(m["status"])
        elif m := _JOB_FAILED.match(line):
            failed = unit(m["unit"])
            if failed.active_state is None:
                failed.active_state, failed.sub_state = "failed", "failed"
            failed.result = failed.result or _JOB_REASONS.get(m["why"].strip())
        elif m := _JOURNAL_RESULT.search(line):
            unit(m["unit"]).result = m["result"]
        elif m := _JOURNAL_MAIN_EXIT.search(line):
            exited = unit(m["unit"])
            exited.exec_main_status = int(m["status"])
            if exited.active_state is None and m["status"] != "0":
                exited.active_state, exited.sub_state = "failed", "failed"
        elif "systemd[" in line and (m := _JOURNAL_STARTING.search(line)):
            if (name := _UNIT_OF.get(m["what"].strip().lower())) is not None:
                unit(name)
        elif (m := _JOURNAL_PROCESS.search(line)) and m["comm"] != "systemd" and _ERROR_WORDS.search(m["message"]):
            owner = _UNIT_OF.get(m["comm"]) or (current.name if current else None)
            reasons.append((owner, m["message"].strip()))
    for service in units.values():
        if service.active_state == "active":
            continue  # an error logged before a restart that worked is history
        mine = [text for owner, text in reasons if owner in (service.name, None)]
        if mine and service.reason is None:
            service.reason = mine[0]  # the first error: later lines are its consequences
    for owner, _text in reasons:
        if owner is not None and owner not in units:
            # Only the unit's own error lines were pasted: it failed, and they say why.
            found = unit(owner)
            found.active_state, found.sub_state = "failed", "failed"
            found.reason = next(text for o, text in reasons if o == owner)
    return list(units.values())


def _set_active(service: Service, state: str, parens: str) -> None:
    """``active (running)``, ``failed (Result: exit-code)``, ``activating (auto-restart) (Result: ...)``."""
    service.active_state = state
    for inner in re.findall(r"\(([^)]*)\)", parens):
        if inner.startswith("Result:"):
            service.result = inner.removeprefix("Result:").strip()
        elif service.sub_state is None:
            service.sub_state = inner.strip()
    if service.sub_state is None and state == "failed":
        service.sub_state = "failed"  # status shows the Result where the sub-state would be
