"""``NCCL_DEBUG=INFO`` log lines: NCCL version, network, IB devices, channel transports, warnings.

NCCL prefixes every line with ``host:pid:tid [dev]`` (and the source file for WARN), mpirun
may add a rank tag (``[155] ``) or a ``--tag-output`` tag (``[1,0]<stdout>:``), and the
wording moved between releases (``Ring 00 : 155[3d000] -> ...`` in 2.5, ``Channel 00/0 :
0[0] -> 1[1] ...`` since). So every pattern here is searched inside the line rather than
anchored at its start, and what NCCL did not say stays unknown (``None`` / empty).

A log without an nccl-tests table still says how big the job was: the host of every line's
``host:pid:tid [dev]`` prefix, and the ``nranks`` of its ``comm ... rank R nranks N`` lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from assessor.errors import ParseError
from assessor.facts import NcclDebug, NcclRun, NodeFacts
from assessor.parsers._text import clean_lines

_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+\S*)")
_NETWORK = re.compile(r"NCCL INFO Using network (.+)$")
_IB_NO_DEVICE = re.compile(r"NCCL INFO NET/IB\w* : No device found")
_IB_USING = re.compile(r"NCCL INFO NET/IB\w* : Using (.*)$")
_SOCKET_USING = re.compile(r"NCCL INFO NET/Socket : Using ")
_IB_ITEM = re.compile(r"\[\d+\]([^\s\[\];]+)")
_WARN = re.compile(r"NCCL WARN (.*)$")
# "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "Channel 07/0 : 0[0] -> 2[0] [receive] via NET/IB/3/GDRDMA",
# "Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC" (NCCL 2.5). Ring listings ("Channel 00/16 :  0 3 1")
# have no "via" and are not transports.
_CHANNEL = re.compile(r"NCCL INFO (?:Channel|Ring) \d+(?:/\d+)? : ")
# NVLS in use (not merely supported: "NVLS multicast support is available" is printed either way).
_NVLS_USED = re.compile(r"NCCL INFO (?:Connected NVLS\b|NVLS comm\b)")
_NVLS_CHANNELS = re.compile(r"\b(\d+) nvls channels")
# NIC index ("3") or NIC index plus proxy rank under PXN ("0(4)") inside a NET transport.
_NIC_INDEX = re.compile(r"^\d+(?:\(\d+\))?$")
# The HPC-X / SHARP plugin names its IB transport IBext, IBext_v8, ...: it is still InfiniBand verbs.
_IB_PLUGIN = re.compile(r"^IBext(?:_v\d+)?$")
# "NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0" and "... (nvidia-peermem) enabled ...":
# NCCL's net_ib says which kernel path lets the HCA reach GPU memory (one line per HCA and path).
_GDR_PATH = re.compile(r"NCCL INFO NET/IB\w* : GPU Direct RDMA \(([\w-]{1,32})\) enabled")
_DMABUF_ENV = re.compile(r"NCCL INFO NCCL_DMABUF_ENABLE set by environment to (\S+)")


# "gpu01:124172:124172 [0] NCCL INFO ...", after an optional mpirun rank tag; the host is group 1.
_LINE_HOST = re.compile(
    r"^(?:\[\d{1,6}\][ \t]?|\[\d{1,6},\d{1,6}\]<\w{1,8}>:[ \t]?)?"
    r"([A-Za-z0-9][\w.-]{0,253}):\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL ",
    re.MULTILINE,
)
_NRANKS = re.compile(r"\bnranks (\d{1,7})\b")
MAX_HOSTS = 4096  # a job larger than this is reported as this many hosts


def job_size(text: str) -> tuple[list[str], int | None]:
    """(hosts of the NCCL line prefixes in order of appearance, the largest ``nranks``) of a raw log."""
    hosts: dict[str, None] = {}
    for m in _LINE_HOST.finditer(text):
        hosts.setdefault(m.group(1))
        if len(hosts) >= MAX_HOSTS:
            break
    nranks = max((int(m.group(1)) for m in _NRANKS.finditer(text)), default=None)
    return list(hosts), nranks


def _normalise_transport(via: str) -> tuple[str, bool | None]:
    """``NET/IB/3/GDRDMA`` -> (``NET/IB/GDRDMA``, True); non-NET transports give (name, None)."""
    parts = [p.strip() for p in via.split("/")]
    family = parts[0]
    if not family.split():
        return "unknown", None
    if family == "NET" and len(parts) > 1:
        name = "IB" if _IB_PLUGIN.match(parts[1]) else parts[1]
        flags = [p for p in parts[2:] if p and not _NIC_INDEX.match(p)]
        gdr = "GDRDMA" in flags
        return (f"NET/{name}/GDRDMA" if gdr else f"NET/{name}"), gdr
    if family == "P2P" and len(parts) > 1 and parts[1]:
        # "direct pointer", "IPC/read", "CUMEM/CE": the mechanism is the first word.
        return f"P2P/{parts[1].split()[0]}", None
    # SHM/direct/direct, SHM/CE, CollNet/..., NVLS: the family says enough.
    return family.split()[0], None


def parse_debug_lines(lines: Iterable[str]) -> NcclDebug:
    """Collect what NCCL INFO/WARN lines say; lines that are not NCCL's are ignored.

    Pure: takes any lines (a whole nccl-tests output works) and never raises.
    """
    debug = NcclDebug()
    net_channels = False
    socket_using = False
    for line in lines:
        if "NCCL" not in line:
            continue
        if debug.nccl_version is None and (m := _VERSION.search(line)):
            debug.nccl_version = m.group(1)
        if m := _WARN.search(line):
            debug.warnings.append(m.group(1).strip())
            continue
        if "NCCL INFO" not in line:
            continue
        if (via := _channel_transport(line)) is not None:
            transport, gdr = _normalise_transport(via)
            _add(debug.transports, transport)
            if gdr is not None:
                net_channels = True
                debug.gdrdma = bool(debug.gdrdma) or gdr
        elif m := _GDR_PATH.search(line):
            _add(debug.gdr_paths, m.group(1))
        elif m := _DMABUF_ENV.search(line):
            debug.dmabuf_enable = m.group(1).rstrip(".")
        elif m := _NETWORK.search(line):
            if debug.network is None:
                debug.network = m.group(1).strip() or None
        elif _IB_NO_DEVICE.search(line):
            debug.ib_no_device = True
        elif _SOCKET_USING.search(line):
            socket_using = True
        elif m := _IB_USING.search(line):
            listing = m.group(1).split("OOB", 1)[0]
            for dev in _IB_ITEM.findall(listing):
                _add(debug.ib_devices, dev)
        elif _NVLS_USED.search(line) or (
            "nvls channels" in line and (m := _NVLS_CHANNELS.search(line)) and int(m.group(1)[-6:]) > 0
        ):
            _add(debug.transports, "NVLS")
    if not net_channels:
        debug.gdrdma = None
    if debug.network is None and socket_using and debug.ib_no_device and not debug.ib_devices:
        # Older NCCL prints no "Using network" line: IB found nothing and the socket transport set up.
        debug.network = "Socket"
    return debug


def _channel_transport(line: str) -> str | None:
    """What follows "via" in a channel line; None for other lines (no regex backtracking)."""
    m = _CHANNEL.search(line)
    if m is None:
        return None
    _, sep, via = line[m.end() :].partition("via ")
    via = via.strip()
    return via if sep and via else None


def _add(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def parse(text: str) -> NodeFacts:
    """Parse a ``NCCL_DEBUG=INFO`` log into ``NodeFacts.nccl.debug``."""
    lines = clean_lines(text)
    if not is_nccl_log(text):
        raise ParseError("no NCCL INFO/WARN lines found (was NCCL_DEBUG=INFO set?)", line=1)
    return NodeFacts(nccl=NcclRun(debug=debug_of(text, lines), tests_output=False))


def debug_of(text: str, lines: list[str]) -> NcclDebug:
    """What the NCCL lines of ``text`` say (``lines``: the same text cleaned), with the job's size."""
    debug = parse_debug_lines(lines)
    debug.hosts, debug.nranks = job_size(text)
    return debug


_NCCL_MARK = re.compile(r"NCCL (?:INFO|WARN)|\bNCCL version \d+\.\d+\.\d+")


def is_nccl_log(text: str) -> bool:
    """Whether some line of ``text`` is NCCL's own (INFO, WARN or its version banner): one search."""
    return _NCCL_MARK.search(text) is not None
