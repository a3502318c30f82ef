"""``nvidia-smi mig -lgi``, ``-lgip`` and ``-lgipp``: GPU instances, their profiles and placements.

``-lgi`` and ``-lgip`` print boxed tables, one row (``-lgip``: two lines) per entry::

    |   0  MIG 3g.20gb       9        1          4:4     |          (-lgi)

    |   0  MIG 1g.12gb+me    20     1/1        10.75      No     16     1     0   |   (-lgip:
    |                                                             1     1     1   |    SM DEC ENC,
                                                                                       CE JPEG OFA)

``-lgipp`` prints one line per profile, without its name::

    GPU  0 Profile ID  9 Placements: {0,4}:4

With MIG off nvidia-smi answers "No MIG-enabled devices found."; with MIG on and no instance,
"No GPU instances found: Not Found". Both mean an empty list. A transcript holding several
``-lgi`` tables (a capture pasted with the commands between them) gives the last table: the
state the node was left in.
"""

from __future__ import annotations

import dataclasses
import re

from assessor.errors import ParseError
from assessor.facts import GpuInstance, MigProfile, NodeFacts
from assessor.parsers._nvsmi import check_text, is_shell_noise, raise_on_failure
from assessor.parsers._text import cut_line

_EMPTY_ANSWERS = ("no mig-enabled devices found", "no gpu instances found")

_LGI_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:MIG\s+)?(?P<name>\S+)\s+(?P<profile>\d+)\s+(?P<gi>\d+)"
    r"\s+(?P<start>\d+):(?P<size>\d+)\s*\|$"
)
_LGIP_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:MIG\s+)?(?P<name>\S+)\s+(?P<profile>\d+)\s+(?P<free>\d+)/(?P<total>\d+)"
    r"\s+(?P<memory>\d+(?:\.\d+)?)\s+(?P<p2p>Yes|No|N/A)\s+(?P<sm>\d+)\s+(?P<dec>\d+)\s+(?P<enc>\d+)\s*\|$"
)
_LGIP_SECOND = re.compile(r"^\|\s+(?P<ce>\d+)\s+(?P<jpeg>\d+)\s+(?P<ofa>\d+)\s*\|$")
_LGIPP_ROW = re.compile(
    r"^GPU\s+(?P<gpu>\d+)\s+Profile\s+ID\s+(?P<profile>\d+)\s+Placements?\s*:\s*"
    r"\{(?P<starts>[\d,\s]*)\}\s*:\s*(?P<size>\d+)$"
)
_RULE = re.compile(r"^\+[-=+]+\+$|^\|[=]+\|$")
_BOX_TITLES = ("gpu instances:", "gpu instance profiles:")


def parse_lgi(text: str) -> NodeFacts:
    """Parse ``nvidia-smi mig -lgi`` into ``mig_instances`` (compute instances not listed here)."""
    lines = _prepare(text)
    instances: list[GpuInstance] = []
    for number, line in _table_lines(lines, cut_line(text, lines)):
        if line.lower().startswith("| gpu instances:"):
            instances = []  # a new table in a transcript: the later state wins
            continue
        match = _LGI_ROW.match(line)
        if match is None:
            if _is_table_header(line):
                continue
            raise ParseError(f"not an nvidia-smi mig -lgi row: {line[:80]!r}", line=number)
        instances.append(
            GpuInstance(
                gpu=int(match["gpu"]),
                gi_id=int(match["gi"]),
                profile_id=int(match["profile"]),
                name=match["name"],
                placement_start=int(match["start"]),
                placement_size=int(match["size"]),
            )
        )
    return NodeFacts(mig_instances=instances)


def parse_lgip(text: str) -> NodeFacts:
    """Parse ``nvidia-smi mig -lgip`` into ``mig_profiles`` (without placements)."""
    lines = _prepare(text)
    profiles: list[MigProfile] = []
    waiting: tuple[int, MigProfile] | None = None  # a first line whose CE/JPEG/OFA line is due
    for number, line in _table_lines(lines, cut_line(text, lines)):
        if line.lower().startswith("| gpu instance profiles:"):
            profiles = []
            continue
        second = _LGIP_SECOND.match(line)
        if second is not None and waiting is not None:
            profile = waiting[1]
            profile.ce, profile.jpeg, profile.ofa = int(second["ce"]), int(second["jpeg"]), int(second["ofa"])
            waiting = None
            continue
        match = _LGIP_ROW.match(line)
        if match is None:
            if _is_table_header(line) and waiting is None:
                continue
            raise ParseError(f"not an nvidia-smi mig -lgip row: {line[:80]!r}", line=number)
        if waiting is not None:
            raise ParseError("profile row without its CE/JPEG/OFA line", line=waiting[0])
        profile = MigProfile(
            gpu=int(match["gpu"]),
            name=match["name"],
            profile_id=int(match["profile"]),
            instances_free=int(match["free"]),
            instances_total=int(match["total"]),
            memory_gib=float(match["memory"]),
            p2p=None if match["p2p"] == "N/A" else match["p2p"] == "Yes",
            sm=int(match["sm"]),
            dec=int(match["dec"]),
            enc=int(match["enc"]),
        )
        profiles.append(profile)
        waiting = (number, profile)
    if waiting is not None:
        raise ParseError("profile row without its CE/JPEG/OFA line (output cut short?)", line=waiting[0])
    return NodeFacts(mig_profiles=profiles)


def parse_lgipp(text: str) -> NodeFacts:
    """Parse ``nvidia-smi mig -lgipp`` into ``mig_profiles`` with ``placements`` set.

    The output does not name the profiles: ``name`` is "" and every field but gpu,
    profile_id and placements is None. :func:`merge_placements` joins them to ``-lgip``'s.
    """
    lines = _prepare(text)
    profiles: list[MigProfile] = []
    for number, line in enumerate(lines, start=1):
        if not line or is_shell_noise(line):
            continue
        match = _LGIPP_ROW.match(line)
        if match is None:
            raise ParseError(f"not an nvidia-smi mig -lgipp line: {line[:80]!r}", line=number)
        size = int(match["size"])
        try:
            starts = [int(s) for s in match["starts"].split(",")]
        except ValueError:
            raise ParseError(f"bad placement list {{{match['starts']}}}", line=number) from None
        profiles.append(
            MigProfile(
                gpu=int(match["gpu"]),
                name="",
                profile_id=int(match["profile"]),
                placements=[(start, size) for start in starts],
            )
        )
    return NodeFacts(mig_profiles=profiles)


def merge_placements(profiles: list[MigProfile], placements: list[MigProfile]) -> list[MigProfile]:
    """``-lgip`` profiles with the placements of the ``-lgipp`` entry of the same GPU and id."""
    by_key = {(p.gpu, p.profile_id): p.placements for p in placements}
    merged: list[MigProfile] = []
    for profile in profiles:
        placement = by_key.get((profile.gpu, profile.profile_id), profile.placements)
        merged.append(dataclasses.replace(profile, placements=placement))
    return merged


def _prepare(text: str) -> list[str]:
    """Stripped lines; raises on driver failures. Returns [] for the "nothing here" answers."""
    lines = [line.strip() for line in check_text(text)]
    content = [line for line in lines if line and not is_shell_noise(line)]
    if content and all(line.lower().startswith(_EMPTY_ANSWERS) for line in content):
        return []
    raise_on_failure(text)
    if not content:
        raise ParseError("empty nvidia-smi mig output", line=1)
    return lines


def _table_lines(lines: list[str], cut: int = -1) -> list[tuple[int, str]]:
    """(line number, line) of the rows inside the boxes: rules, blanks and prompts dropped.

    A line outside any box that is not a prompt raises: nvidia-smi prints nothing else. The 0-based
    ``cut`` line is where a paste ends halfway through a line (no newline after it): a box row cut
    there is left out, as the excerpt it is.
    """
    rows: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line or is_shell_noise(line) or _RULE.match(line):
            continue
        if number - 1 == cut and line.startswith("|") and not line.endswith("|"):
            continue
        if not (line.startswith("|") and line.endswith("|")):
            raise ParseError(f"text outside the nvidia-smi mig table: {line[:80]!r}", line=number)
        rows.append((number, line))
    return rows


def _is_table_header(line: str) -> bool:
    """The column-title lines (``GPU  Name  Profile ...``, ``ID  ID  Start:Size``)."""
    inner = line.strip("|").strip().lower()
    words = set(inner.replace("/", " ").split())
    titles = {"gpu", "name", "profile", "id", "instance", "placement", "start:size", "instances", "free", "total"}
    titles |= {"memory", "gib", "p2p", "sm", "dec", "enc", "ce", "jpeg", "ofa"}
    return (bool(words) and words <= titles) or inner in _BOX_TITLES
