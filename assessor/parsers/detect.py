"""Which tool printed this text: a parser kind recognised from content, never from a file name.

Each kind has signatures: lines only its tool prints (nvidia-smi -q's ``NVSMI LOG`` banner,
ibv_devinfo's ``hca_id:``, nccl-tests' ``# nThread``). :func:`detect` reports every kind whose
signatures are present and then drops a kind another one explains (an nccl-tests output holds
NCCL INFO lines, so it is not also an NCCL debug log). One kind left: that kind. Several:
ambiguous, named. None: unknown. Nothing is guessed silently.

The text is cleaned first (prompts, fences, launcher prefixes: see :mod:`assessor.parsers._text`).
Every signature is a line-anchored pattern without nested repetition: linear in the input.

Some excerpts carry no line only their tool prints: ``lsmod | grep nvidia`` drops lsmod's header,
a paste of ``nvidia-smi mig -lgi`` rows drops the box title, nccl-tests rows come without their
``#`` header. Those tables have a fixed column shape instead, and a text whose every line has that
shape (and at least one line names what only that tool lists) is recognised by it: the shapes are
tried only when no signature matched, so they never make a text ambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assessor.errors import ParseError
from assessor.parsers._text import clean

_M = re.MULTILINE

# kind -> patterns; a kind matches when any of its patterns is found in the cleaned text.
_SIGNATURES: dict[str, tuple[re.Pattern[str], ...]] = {
    "nvml": (re.compile(r'\A\s*\{\s*"(?:driver|gpus|mig_instances|problems)"'),),
    "nvidia-smi-xml": (re.compile(r"<nvidia_smi_log\b"),),
    "nvidia-smi-q": (
        re.compile(r"^=+NVSMI LOG=+\s*$", _M),
        re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7][ \t]*\n[ \t]+\S[^\n]{0,80} : ", _M),
    ),
    "nvidia-smi": (
        re.compile(r"^\|\s*NVIDIA-SMI \S+\s+(?:Driver|KMD) Version:", _M),
        re.compile(r"^\|\s*GPU\s+Name\s+(?:Persistence-M|TCC/WDDM)", _M),
        re.compile(r"^\|\s*Processes:\s*\|", _M),
        re.compile(r"^\|\s*MIG devices:\s*\|", _M),
    ),
    "nvidia-smi-nvlink": (
        re.compile(r"^[ \t]+Link \d{1,3}: (?:\d+(?:\.\d+)? GB/s|<inactive>)[ \t]*$", _M),
        # nvlink -R (the far end of each link), and nvlink -s on a board whose links are all down
        re.compile(r"^[ \t]+Link \d{1,3}: Remote Device [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[\dA-Fa-f]{2}\.\d: Link", _M),
        re.compile(r"^GPU \d{1,3}: [^\n]{1,200}\n(?:NVML: )?Unable to retrieve NVLink information", _M | re.I),
    ),
    "nvidia-smi-list": (re.compile(r"^GPU \d{1,4}: [^\n]{0,200}\(UUID: ?GPU-[^\n)]{0,80}\)[ \t]*$", _M),),
    "nvidia-smi-topo": (
        re.compile(r"^[ \t]*X[ \t]+= Self[ \t]*$", _M),
        re.compile(r"^[ \t]*GPU0[ \t]+(?:GPU1|NIC0|mlx5_0|CPU Affinity)\b", _M),
        re.compile(r"^GPU0[ \t]+X[ \t]", _M),
        re.compile(r"^(?:GPU|NIC)\d{1,3}[ \t]+(?:(?:X|NV\d{1,3}|PIX|PXB|PHB|NODE|SYS|SOC)[ \t]+){3}", _M),
    ),
    "nvidia-smi-mig-lgi": (re.compile(r"^\|\s*GPU instances:\s*\|", _M),),
    "nvidia-smi-mig-lgip": (re.compile(r"^\|\s*GPU instance profiles:\s*\|", _M),),
    "nvidia-smi-mig-lgipp": (re.compile(r"^GPU\s+\d+\s+Profile\s+ID\s+\d+\s+Placements?\s*:", _M),),
    "ibstat": (
        re.compile(r"^CA '[^'\n]{1,64}'[ \t]*$", _M),
        re.compile(r"^Infiniband device '[^'\n]{1,64}' port \d+ status:", _M),
    ),
    "ibv-devinfo": (re.compile(r"^hca_id:\s+\S", _M), re.compile(r"^No IB devices found", _M)),
    "ibnetdiscover": (
        re.compile(r"^switchguid=0x[0-9a-fA-F]{1,16}", _M),
        re.compile(r"^caguid=0x[0-9a-fA-F]{1,16}[ \t]*$", _M),
        re.compile(r"^(?:Switch|Ca)[ \t]+\d{1,4}[ \t]+\"[SH]-[0-9a-fA-F]{16}\"", _M),
    ),
    "iblinkinfo": (
        re.compile(
            r"==\([ \t]*(?:\d{1,2}X[ \t]+[\d.]{1,12} Gbps[^)]{0,20}|[ \t]*)[A-Za-z]{1,16}/[ \t]*[A-Za-z]{1,32}\)==>"
        ),
    ),
    "ib-write-bw": (re.compile(r"#bytes\s+#iterations\s+BW peak\["), re.compile(r"^\s*\w[\w ]{0,40} BW Test\s*$", _M)),
    "ipmitool-lan": (re.compile(r"^IP Address Source[ \t]+: ", _M), re.compile(r"^802\.1q VLAN ID[ \t]+: ", _M)),
    "ipmitool-users": (
        re.compile(r"^ID[ \t]+Name[ \t]+Callin[ \t]+Link Auth[ \t]+IPMI Msg[ \t]+Channel Priv Limit", _M),
        re.compile(r"^Maximum User IDs[ \t]+: \d+[ \t]*\nEnabled User IDs[ \t]+: ", _M),
    ),
    "mlxfwmanager": (
        re.compile(r"^Querying Mellanox devices firmware \.\.\.", _M),
        re.compile(r"^  Versions:[ \t]+Current[ \t]+Available[ \t]*$", _M),
    ),
    "mlxlink": (
        re.compile(r"^Physical Counters and BER Info[ \t]*\n-{30}", _M),
        re.compile(r"^Troubleshooting Info[ \t]*\n-{20}[ \t]*\nStatus Opcode\s+:", _M),
        re.compile(r"^Operational Info[ \t]*\n-{16}[ \t]*\nState\s{20,}: ", _M),
    ),
    "lsmod": (re.compile(r"^Module\s+Size\s+Used by\s*$", _M),),
    "dmesg": (
        re.compile(r"NVRM: (?:Xid|The NVIDIA GPU|GPU at|loading NVIDIA)"),
        re.compile(r"^\[\s{0,12}\d{1,10}\.\d{6}\] ", _M),
        re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kernel: ", _M),
    ),
    "systemctl-show": (re.compile(r"^(?:Id|ActiveState|LoadState|SubState)=\S", _M),),
    "systemctl-status": (
        re.compile(r"^[●○×✗*↻]?\s*[\w@.:-]{1,200}\.service(?: - [^\n]{0,200})?\n\s+Loaded: ", _M),
        re.compile(r"systemd\[\d{1,10}\]: (?:Starting|Started|Failed to start) (?:NVIDIA|nvidia)"),
        re.compile(r"systemd\[\d{1,10}\]: nvidia[\w@.-]{0,100}\.service: "),
        re.compile(r"\bnv-fabricmanager\[\d{1,10}\]: "),
    ),
    "nccl-tests": (
        re.compile(r"^#\s*nThread \d+ nGpus \d+", _M),
        re.compile(r"^#\s*size\s+count\s+type\s+", _M),
        re.compile(r"^#\s*Avg bus bandwidth\s*:", _M),
        re.compile(r"^#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s", _M),
        # a run that died before its table: nccl-tests' own failure line (common.cu)
        re.compile(r"\bTest (?:CUDA|NCCL) failure common\.cu:\d+"),
    ),
    "nccl-debug": (re.compile(r"NCCL (?:INFO|WARN) "), re.compile(r"\bNCCL version \d+\.\d+\.\d+")),
    "dcgmi-diag": (
        re.compile(r"^\|\s*Diagnostic\s+\|\s*Result\s+\|", _M),
        re.compile(r"^[|+]-+\s+(?:Deployment|Integration|Hardware|Stress|Metadata)\s+-+[+|]", _M),
    ),
    "hpl": (
        re.compile(r"^HPL-NVIDIA\s+\S+\s+--", _M),
        re.compile(r"^[ \t]*T/V\s+N\s+NB\s+P\s+Q\s+Time\s+Gflops", _M),
        re.compile(r"^[ \t]*\|\|Ax-b\|\|_oo/\(eps\*[^\n]{0,80}\.{3,}\s*(?:PASSED|FAILED)", _M),
        re.compile(r"^HPL ERROR from process", _M),
    ),
    "nvbandwidth": (
        re.compile(r"^nvbandwidth Version:", _M),
        re.compile(r"^[ \t]*memcpy (?:CE|SM|local) [^\n]{0,80}bandwidth \(GB/s\)[ \t]*$", _M),
        re.compile(r"^SUM \w{1,80}_(?:ce|sm|copy) \d", _M),
    ),
    "driver-version": (re.compile(r"^NVRM version:\s", _M),),
    "os-release": (re.compile(r"^(?:PRETTY_NAME|VERSION_ID)=", _M),),
    "docker-info": (
        re.compile(r"^[ \t]Server Version: \S", _M),
        re.compile(r"^[ \t]Runtimes: [\w. -]{1,400}$", _M),
        re.compile(r"^[ \t]Default Runtime: \S", _M),
    ),
    "cdi-spec": (
        re.compile(r"^cdiVersion: ?\S", _M),
        re.compile(r'^\{"cdiVersion":', _M),
        re.compile(r'"cdiVersion":\s*"[\d.]{1,16}",'),
    ),
    "uname": (re.compile(r"\A\s*Linux \S+ \d+\.\d+\.\S+ #", _M),),
    "proc-cmdline": (re.compile(r"\A\s*BOOT_IMAGE=\S+ [^\n]{0,4000}\broot=", _M),),
    "grub-default": (re.compile(r"^GRUB_CMDLINE_LINUX(?:_DEFAULT)?=", _M),),
    "dpkg-list": (
        re.compile(r"^Desired=Unknown/Install/Remove/Purge/Hold", _M),
        re.compile(r"^\|\|/ Name\s+Version\s+Architecture\s+Description", _M),
    ),
    "scontrol-node": (re.compile(r"^NodeName=\S{1,256} (?:Arch|CoresPerSocket|CPUAlloc|State)=", _M),),
    "dkms-status": (
        re.compile(
            r"^[\w.+-]{1,64}/[^,:\s]{1,64}, [^,:\s]{1,128}, (?:x86_64|aarch64|ppc64le): (?:installed|built)", _M
        ),
        re.compile(
            r"^[\w.+-]{1,64}, \d[^,:\s]{0,63}, [^,:\s]{1,128}, (?:x86_64|aarch64|ppc64le): (?:installed|built)", _M
        ),
    ),
}

# Header-less excerpts of tables with a fixed column shape: (a line of the table, a line that must be
# there at least once). Every non-blank line must be a table line; used only when no signature matched.
_MODULE_ROW = r"[A-Za-z_][\w-]{0,63}[ \t]+\d{1,12}[ \t]+(?:\d{1,6}|-)(?:[ \t]+[^ \t\n]{1,4000}){0,4}[ \t]*"
_LGI_ROW = (
    r"\|[ \t]*\d{1,3}[ \t]+(?:MIG[ \t]+)?\d{1,2}g\.\d{1,4}gb\S{0,16}"
    r"[ \t]+\d{1,3}[ \t]+\d{1,3}[ \t]+\d{1,2}:\d{1,2}[ \t]*\|"
)
_NCCL_ROW = (
    r"[ \t]*\d{1,20}[ \t]+\d{1,20}[ \t]+[a-z][a-z0-9_]{0,15}[ \t]+[a-z]{1,8}[ \t]+-?\d{1,3}"
    r"(?:[ \t]+(?:[\d.e+-]{1,30}|N/A)){3,}[ \t]*"
)
_DPKG_ROW = r"(?:ii|rc|hi|iU|iF|un)[ R] [a-z0-9][a-z0-9+.:-]{0,127}(?:[ \t]+\S{1,128}){0,3}[^\n]{0,300}"
_SHAPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "dpkg-list": (
        re.compile(rf"^(?!{_DPKG_ROW}$)[ \t]*\S", _M),
        re.compile(r"^(?:ii|rc)[ R] (?:lib)?(?:nvidia|cuda)", _M),
    ),
    "lsmod": (
        re.compile(rf"^(?!{_MODULE_ROW}$)[ \t]*\S", _M),
        re.compile(r"^(?:nvidia|nv_peer|mlx\d|ib_|rdma|gdrdrv)\w*[ \t]+\d", _M),
    ),
    "nvidia-smi-mig-lgi": (
        re.compile(rf"^(?!{_LGI_ROW}$|\+[-=+]{{3,}}\+[ \t]*$)[ \t]*\S", _M),
        re.compile(rf"^{_LGI_ROW}$", _M),
    ),
    "nccl-tests": (
        re.compile(rf"^(?!{_NCCL_ROW}$)[ \t]*\S", _M),
        re.compile(rf"^{_NCCL_ROW}$", _M),
    ),
}


def _shaped(body: str) -> list[str]:
    """The kinds whose table shape every line of ``body`` has (see _SHAPES)."""
    return [kind for kind, (other, row) in _SHAPES.items() if row.search(body) and not other.search(body)]


# kind -> kinds it explains: output of the first always contains the others' signatures.
_EXPLAINS: dict[str, frozenset[str]] = {
    "nccl-tests": frozenset({"nccl-debug"}),
    "nvidia-smi-q": frozenset({"nvidia-smi-list"}),
    "nvidia-smi-nvlink": frozenset({"nvidia-smi-list"}),
    "systemctl-status": frozenset({"systemctl-show"}),
    "dmesg": frozenset({"nccl-debug"}),
    "nvml": frozenset({"nvidia-smi-xml"}),
}
# A kernel log quotes everything: its signatures only count when no other kind matched.
_WEAK = frozenset({"dmesg", "nccl-debug"})


@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found: one kind, several (ambiguous) or none (unknown)."""

    matches: tuple[str, ...]

    @property
    def kind(self) -> str | None:
        return self.matches[0] if len(self.matches) == 1 else None

    @property
    def ambiguous(self) -> bool:
        return len(self.matches) > 1

    def describe(self) -> str:
        if self.kind:
            return f"recognised as {self.kind}"
        if self.ambiguous:
            return f"ambiguous: the content fits {', '.join(self.matches)}"
        return "unknown: the content matches no tool output gpulab reads"


def detect(text: str) -> Detection:
    """Every kind whose signatures ``text`` holds, after dropping kinds another one explains.

    Raises ParseError (with the line) for binary data, as every parser does.
    """
    body = clean(text)
    found = [kind for kind, patterns in _SIGNATURES.items() if any(p.search(body) for p in patterns)]
    if not found:
        found = _shaped(body)
    strong = [k for k in found if k not in _WEAK]
    if strong:
        # A weak kind stays only when it is a file of its own (nccl-tests is not "weak" itself).
        found = strong + [k for k in found if k in _WEAK and k in _only_weak_explained(strong)]
    explained = {e for k in found for e in _EXPLAINS.get(k, ())}
    return Detection(tuple(k for k in found if k not in explained))


def _only_weak_explained(strong: list[str]) -> frozenset[str]:
    # No strong kind explains a weak one except through _EXPLAINS: keep them so it drops them.
    return frozenset(e for k in strong for e in _EXPLAINS.get(k, ()))


def detect_kind(text: str) -> str | None:
    """The one kind ``text`` is, or None when it is unknown or ambiguous (see :func:`detect`)."""
    return detect(text).kind


def require_kind(text: str, *, source: str | None = None) -> str:
    """The one kind of ``text``; ParseError naming the candidates when ambiguous, or unknown."""
    found = detect(text)
    if found.kind is None:
        raise ParseError(found.describe(), line=1, source=source)
    return found.kind


def snapshot_file(text: str) -> str:
    """The snapshot file name a pasted output belongs under, found from its content.

    ValueError saying why when the content is unknown, ambiguous, or of a kind no snapshot file holds.
    """
    from assessor.capture.sources import FILES

    found = detect(text)
    kind = found.kind
    if kind is None:
        raise ValueError(found.describe())
    kind = _FILED_AS.get(kind, kind)
    for row in FILES:
        if row.kind == kind:
            return row.file
    raise ValueError(f"recognised as {kind}, which no snapshot file holds")


# Kinds kept in the snapshot file of another kind whose parser reads them too.
_FILED_AS = {"nccl-debug": "nccl-tests"}  # the nccl-tests parser reads an NCCL_DEBUG log without a table
