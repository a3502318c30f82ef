"""Simulated nccl-tests (single process, ``-g`` GPUs): ``all_reduce_perf``, ``all_gather_perf``,
``reduce_scatter_perf``, ``alltoall_perf``, ``sendrecv_perf``, ``broadcast_perf`` and ``reduce_perf``.

The output is nccl-tests' (``corpus/nccl_tests/02_...``): the ``# nThread`` header, ``# Using
devices`` with one line per rank, the two-block result table, the out-of-bounds and average
footer. With ``NCCL_DEBUG=INFO`` (in the session's environment, or in the node's ``nccl_env``
or ``$GPULAB_SIM_ROOT/etc/nccl.conf``, as ``/etc/nccl.conf`` would set it) NCCL's INFO lines come
between the rank list and the table, as in ``corpus/nccl_debug/``: the NCCL version, the network it
chose (``NET/IB : Using ...`` or ``NET/IB : No device found.`` then ``Using network Socket``), ring
channels and their P2P transport, and NVLS on Hopper NVSwitch systems.

Bandwidth comes from a model of the node (:func:`peak_busbw`), calibrated to the reference numbers
(docs/REFERENCES.md) and the 8x A100 run in the corpus: a fixed launch latency plus a bandwidth that
ramps up with the message size (:func:`efficiency`) to the node's peak. The numbers are deterministic:
the only variation is a small per-row jitter seeded by the host name.

Each test prints its own columns and bus bandwidth as nccl-tests' ``src/*.cu`` (v2.19.6) compute them
(:data:`COLLECTIVES`); every one runs at the same peak busbw, since nccl-tests defines busbw so that it is the
hardware's bandwidth whatever the collective (PERFORMANCE.md). Only all_reduce uses NVLS.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from assessor.sim.config_root import NCCL_CONF, nccl_settings, parse_nccl_conf, read_config
from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult

# Peak all_reduce busbw (GB/s) at large sizes, one node, by GPU family, when the state does not say.
# docs/REFERENCES.md: 8x A100 NV12 ~232 (corpus/nccl_tests/02), 8x H100/H200 with NVLS ~480, ring ~370.
_PEAK_NVLS = {"H100": 480.0, "H200": 480.0, "H800": 480.0}
_PEAK_RING = {"A100": 232.0, "A800": 232.0, "H100": 370.0, "H200": 370.0, "H800": 370.0}
_RING_OVER_NVLS = 370.0 / 480.0  # NVIDIA/nccl-tests#212: the same node without NVLS
_PCIE_GEN4_X16_BUSBW = 20.0  # PCIe-bound all_reduce (P2P disabled, or a PCIe box with no number), GB/s
_LATENCY_US = {"nvlink": 39.0, "nvls": 30.0, "pcie": 55.0}  # small-message time (corpus/nccl_tests/02: ~39 us)

# Fraction of the peak bandwidth reached at a message size (log2 of bytes), piecewise linear in
# log2(size): read off corpus/nccl_tests/02 (8x A100, 232 GB/s at 4G) once the latency is taken out.
_EFFICIENCY = (
    (20, 0.45),
    (22, 0.55),
    (24, 0.62),
    (26, 0.80),
    (27, 0.84),
    (28, 0.88),
    (29, 0.92),
    (30, 0.975),
    (31, 0.99),
    (32, 1.0),
)

_SIZE = re.compile(r"^(\d+)([KMGkmg]?)$")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_TYPE_BYTES = {
    "float": 4,
    "int8": 1,
    "uint8": 1,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "bfloat16": 2,
    "double": 8,
    "float16": 2,
    "float32": 4,
    "float64": 8,
}


def parse_size(text: str) -> int | None:
    """nccl-tests sizes: ``8``, ``1K``, ``128M``, ``8G`` (binary multiples)."""
    m = _SIZE.match(text.strip())
    if m is None:
        return None
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def efficiency(size: int) -> float:
    """Fraction of the node's peak bandwidth that a message of ``size`` bytes reaches."""
    if size <= 0:
        return _EFFICIENCY[0][1]
    x = math.log2(size)
    if x <= _EFFICIENCY[0][0]:
        return _EFFICIENCY[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(_EFFICIENCY):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return 1.0


def _family(gpu: GpuState) -> str | None:
    name = gpu.name.upper()
    for family in ("H200", "H100", "H800", "A100", "A800"):
        if family in name:
            return family
    return None


# The per-node root directory of a simulated node's files (the SSH test bed sets one per node): the
# simulated tools read ``$GPULAB_SIM_ROOT/etc/nccl.conf`` where the real ones read ``/etc/nccl.conf``.
# Unset, no file is read: the state alone is the node (the controller's own /etc must not leak in).
ROOT_ENV = "GPULAB_SIM_ROOT"


def nccl_conf(env: Mapping[str, str]) -> dict[str, str]:
    """The node's ``/etc/nccl.conf`` under ``$GPULAB_SIM_ROOT``; empty without a root or a file."""
    root = env.get(ROOT_ENV)
    return parse_nccl_conf(read_config(Path(root), NCCL_CONF) or "") if root else {}


def merged_env(state: NodeState, env: Mapping[str, str], root: Path | None = None) -> dict[str, str]:
    """NCCL's settings as NCCL documents them (:func:`assessor.sim.config_root.nccl_settings`): the node's
    ``nccl_env``, then its /etc/nccl.conf and ~/.nccl.conf (under ``root``, default ``$GPULAB_SIM_ROOT``),
    then the process environment, which wins."""
    return nccl_settings(state, env, root)


def nvls_active(state: NodeState, gpus: list[GpuState], env: Mapping[str, str]) -> bool:
    """NVLS (NVLink SHARP) runs on Hopper GPUs behind NVSwitches, unless NCCL_NVLS_ENABLE=0."""
    if env.get("NCCL_NVLS_ENABLE", "1") == "0" or not state.nvswitches or len(gpus) < 2:
        return False
    if env.get("NCCL_P2P_DISABLE", "0") == "1":
        return False
    return all(g.architecture == "Hopper" and g.nvlinks and all(link.active for link in g.nvlinks) for g in gpus)


def _pcie_fraction(gpus: list[GpuState]) -> float:
    """The slowest GPU's PCIe link against its own maximum (a Gen4 x8 link carries half of Gen4 x16)."""
    return min((2 ** (g.pcie_gen_current - g.pcie_gen_max)) * g.pcie_width_current / g.pcie_width_max for g in gpus)


def _link_fraction(gpus: list[GpuState]) -> float:
    """Share of NVLinks up on the worst GPU: a ring runs at the speed of its slowest member."""
    fractions = [sum(1 for link in g.nvlinks if link.active) / len(g.nvlinks) for g in gpus if g.nvlinks]
    return min(fractions) if fractions else 0.0


def peak_busbw(state: NodeState, gpus: list[GpuState], env: Mapping[str, str], *, test: str) -> tuple[float, str]:
    """Peak busbw (GB/s) of ``test`` over these GPUs, and the path it takes (nvls, nvlink or pcie)."""
    nvlink = all(g.nvlinks for g in gpus)
    p2p_off = env.get("NCCL_P2P_DISABLE", "0") == "1"
    fraction = _link_fraction(gpus) if nvlink else 0.0
    healthy = state.perf.nccl_allreduce_busbw_gbps
    # A PCIe box's own measured number; an NVLink box without P2P goes through host memory (~20 GB/s).
    pcie = (healthy if not nvlink and healthy is not None else _PCIE_GEN4_X16_BUSBW) * _pcie_fraction(gpus)
    if not nvlink:
        from assessor.sim.grub import p2p_share

        pcie *= p2p_share(state)  # an IOMMU that translates DMA slows peer-to-peer over PCIe
    if not nvlink or p2p_off or fraction == 0.0:
        return pcie, "pcie"
    family = _family(gpus[0]) or ""
    nvls_capable = family in _PEAK_NVLS and bool(state.nvswitches)
    if healthy is not None:
        # The fixture's measured all_reduce: with NVLS on Hopper NVSwitch boxes, a ring elsewhere.
        ring = healthy * _RING_OVER_NVLS if nvls_capable else healthy
        nvls = healthy
    else:
        ring = _PEAK_RING.get(family, 150.0)
        nvls = _PEAK_NVLS.get(family, ring)
    use_nvls = test == "all_reduce_perf" and nvls_active(state, gpus, env)
    peak = (nvls if use_nvls else ring) * fraction
    throttled = [
        g for g in gpus if {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"} & set(g.throttle_reasons)
    ]
    if throttled:
        peak *= 0.8  # clocks held down: the kernels move data more slowly
    return max(peak, pcie), "nvls" if use_nvls else "nvlink"


@dataclass(frozen=True)
class Collective:
    """How one nccl-tests binary fills its row (``src/<test>.cu``): the count column, redop, root, busbw factor."""

    per_rank: bool  # the count column is the per-rank slice (size / nranks) rather than the whole buffer
    reduces: bool  # prints the -o operation as redop; else "none"
    rooted: bool  # prints the -r root; else -1
    bus_factor: str  # busbw / algbw, from nranks: "2(n-1)/n", "(n-1)/n" or "1"

    def factor(self, nranks: int) -> float:
        if self.bus_factor == "2(n-1)/n":
            return 2 * (nranks - 1) / nranks
        if self.bus_factor == "(n-1)/n":
            return (nranks - 1) / nranks
        return 1.0


COLLECTIVES: dict[str, Collective] = {
    "all_reduce_perf": Collective(per_rank=False, reduces=True, rooted=False, bus_factor="2(n-1)/n"),
    "all_gather_perf": Collective(per_rank=True, reduces=False, rooted=False, bus_factor="(n-1)/n"),
    "reduce_scatter_perf": Collective(per_rank=True, reduces=True, rooted=False, bus_factor="(n-1)/n"),
    "alltoall_perf": Collective(per_rank=True, reduces=False, rooted=False, bus_factor="(n-1)/n"),
    "sendrecv_perf": Collective(per_rank=False, reduces=True, rooted=False, bus_factor="1"),
    "broadcast_perf": Collective(per_rank=False, reduces=False, rooted=True, bus_factor="1"),
    "reduce_perf": Collective(per_rank=False, reduces=True, rooted=True, bus_factor="1"),
}


@dataclass
class _Options:
    min_bytes: int = 32 * 1024**2
    max_bytes: int = 32 * 1024**2
    factor: int | None = None  # -f; None: -i steps
    step_bytes: int = 1024**2
    ngpus: int = 1
    nthreads: int = 1
    iters: int = 20
    warmup: int = 5
    check: int = 1
    dtype: str = "float"
    op: str = "sum"
    graph: int = 0
    root: int = 0


def _parse_args(args: list[str], program: str) -> _Options | str:
    opts = _Options()
    it = iter(args)
    sizes = {
        "-b": "min_bytes",
        "--minbytes": "min_bytes",
        "-e": "max_bytes",
        "--maxbytes": "max_bytes",
        "-i": "step_bytes",
        "--stepbytes": "step_bytes",
    }
    ints = {
        "-f": "factor",
        "--stepfactor": "factor",
        "-g": "ngpus",
        "--ngpus": "ngpus",
        "-t": "nthreads",
        "--nthreads": "nthreads",
        "-n": "iters",
        "--iters": "iters",
        "-w": "warmup",
        "--warmup_iters": "warmup",
        "-c": "check",
        "--check": "check",
        "-G": "graph",
        "--cudagraph": "graph",
        "-r": "root",
        "--root": "root",
    }
    for arg in it:
        key, _, inline = arg.partition("=")
        if key in sizes or key in ints:
            value = inline or next(it, "")
            if key in sizes:
                size = parse_size(value)
                if size is None:
                    return f"invalid size specified for '{key}'"
                setattr(opts, sizes[key], size)
            else:
                if not value.lstrip("-").isdigit():
                    return f"invalid number '{value}' for '{key}'"
                setattr(opts, ints[key], int(value))
        elif key in ("-d", "--datatype"):
            opts.dtype = inline or next(it, "float")
        elif key in ("-o", "--op"):
            opts.op = inline or next(it, "sum")
        elif key in (
            "-z",
            "--blocking",
            "-a",
            "--average",
            "-p",
            "--parallel_init",
            "-m",
            "--agg_iters",
            "-C",
            "--report_cputime",
        ):
            if not inline:
                next(it, None)
        else:
            return f"{program}: invalid option -- '{arg}'"
    if opts.dtype not in _TYPE_BYTES:
        return f"invalid type {opts.dtype}"
    if opts.max_bytes < opts.min_bytes:
        return "invalid option: maxbytes < minbytes, check your -b and -e arguments"
    if opts.factor is not None and opts.factor < 2:
        opts.factor = None
    return opts


def _sizes(opts: _Options) -> list[int]:
    out: list[int] = []
    size = opts.min_bytes
    while size <= opts.max_bytes and len(out) < 64:
        out.append(size)
        if opts.factor:
            size *= opts.factor
        else:
            size += opts.step_bytes
    return out


def _jitter(host: str, *parts: object) -> float:
    """A deterministic factor within ±0.3 % for one table cell."""
    digest = hashlib.sha256(":".join(str(p) for p in (host, *parts)).encode()).hexdigest()
    return 1.0 + (int(digest[:6], 16) / 0xFFFFFF - 0.5) * 0.006


def _time_str(us: float) -> str:
    """nccl-tests' time column: fewer decimals as the time grows."""
    if us >= 10000:
        return f"{us:7.0f}"
    if us >= 100:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def _pid(state: NodeState) -> int:
    return 2000 + int(hashlib.sha256(f"{state.host}:nccl".encode()).hexdigest()[:6], 16) % 4_000_000


def _bus_byte(gpu: GpuState) -> int:
    return int(gpu.bus_id.split(":")[1], 16)


def _cuda_failure(state: NodeState, message: str, printed: str = "") -> ToolResult:
    """nccl-tests' CUDACHECK: what the run printed so far, the failure, the frame that called it; exit 2.

    The lines are those of real runs that stopped: NVIDIA/nccl-tests#264 (8x H100 without the fabric
    manager: the header, ``# Using devices``, then ``test: Test CUDA failure common.cu:941 'system not yet
    initialized'`` and `` .. test pid 54340: Test failure common.cu:891``), with the line numbers of the
    2025 release in NVIDIA/nccl-tests#338 (``common.cu:1030``, frame ``common.cu:937``).
    """
    pid = _pid(state)
    text = (
        f"{printed}{state.host}: Test CUDA failure common.cu:1030 '{message}'\n"
        f" .. {state.host} pid {pid}: Test failure common.cu:937\n"
    )
    return ToolResult(2, text)


def _header(opts: _Options) -> str:
    """The ``# nThread ...`` line nccl-tests prints before it touches a GPU."""
    return (
        f"# nThread {opts.nthreads} nGpus {opts.ngpus} minBytes {opts.min_bytes} maxBytes {opts.max_bytes} "
        + (f"step: {opts.factor}(factor)" if opts.factor else f"step: {opts.step_bytes}(bytes)")
        + f" warmup iters: {opts.warmup} iters: {opts.iters} agg iters: 1 validation: {opts.check} "
        f"graph: {opts.graph}\n"
    )


def cuda_problem(state: NodeState) -> str | None:
    """Why CUDA cannot start on this node (the message of the CUDA error nccl-tests prints), or None."""
    drv = state.driver
    if not drv.loaded or not state.module_loaded("nvidia"):
        return "CUDA driver version is insufficient for CUDA runtime version"
    if drv.version != drv.kernel_module_version:
        return "system has unsupported display driver / cuda driver combination"
    if any(g.fabric_state not in (None, "Completed") for g in state.gpus):
        # NVSwitch systems: CUDA refuses to start until the fabric manager has trained the fabric.
        return "system not yet initialized"
    return None


def usable_gpus(state: NodeState) -> list[GpuState]:
    """The GPUs a CUDA process sees whole: not lost, not in MIG mode."""
    return [g for g in state.gpus if not g.lost and not g.mig_mode_current]


def _run(program: str, args: list[str], session: Session) -> ToolResult:
    state = session.read()
    parsed = _parse_args(args, program)
    if isinstance(parsed, str):
        return ToolResult(1, "", parsed + "\n")
    opts = parsed
    env = merged_env(state, session.env, session.root())
    # The header comes first; CUDA fails on the first device it opens, before that device's rank line.
    started = _version_lines(state, program) + _header(opts) + "#\n# Using devices\n"
    problem = cuda_problem(state)
    if problem is not None:
        return _cuda_failure(state, problem, started)
    visible = usable_gpus(state)
    nranks = opts.ngpus * opts.nthreads
    if nranks < 1 or nranks > len(visible):
        return _cuda_failure(state, "invalid device ordinal", started)
    gpus = visible[:nranks]
    pid = _pid(state)
    out: list[str] = [started]
    for rank, g in enumerate(gpus):
        out.append(
            f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {state.host:>10} device {g.index:2d} "
            f"[{_bus_tests(g)}] {g.name}\n"
        )
    memory = min(g.memory_total_mib for g in gpus) * 1024**2
    # send + receive buffers, plus the expected-result buffer when checking.
    needed = opts.max_bytes * (3 if opts.check else 2)
    if needed > memory:
        return _cuda_failure(state, "out of memory", "".join(out))
    debug = env.get("NCCL_DEBUG", "").upper() == "INFO"
    peak, path = peak_busbw(state, gpus, env, test=program)
    if debug:
        out.extend(_info_lines(state, gpus, env, pid, path))
    rows, busbws = table(program, opts, state.host, peak, nranks, _LATENCY_US.get(path, 40.0))
    out.extend(rows)
    if debug:
        for rank, g in enumerate(gpus):
            out.append(
                f"{state.host}:{pid}:{pid} [{rank}] NCCL INFO comm {_comm(state, rank)} rank {rank} "
                f"nranks {nranks} cudaDev {rank} busId {_bus_id_short(g)} - Destroy COMPLETE\n"
            )
    out.append(footer(program, busbws))
    return ToolResult(0, "".join(out))


def table(
    program: str, opts: _Options, host: str, peak: float, nranks: int, latency: float
) -> tuple[list[str], list[float]]:
    """The result table of ``program`` (its three header lines and one row per size) at a peak busbw of
    ``peak`` GB/s over ``nranks`` ranks, and the busbw of every cell (for the average)."""
    out: list[str] = []
    word = _TYPE_BYTES[opts.dtype]
    out.append("#\n")
    out.append(
        "#                                                              out-of-place                       "
        "in-place          \n"
    )
    out.append(
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
        "algbw   busbw  #wrong \n"
    )
    out.append(
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  "
        "(GB/s)  (GB/s)         \n"
    )
    coll = COLLECTIVES[program]
    factor = coll.factor(nranks)
    redop = opts.op if coll.reduces else "none"
    root = opts.root if coll.rooted else -1
    busbws: list[float] = []
    for size in _sizes(opts):
        per = word * (nranks if coll.per_rank else 1)
        count = size // per
        size_rounded = count * per
        count_shown = count
        row = f"{size_rounded:12d}  {count_shown:12d}  {opts.dtype:>8}  {redop:>6}  {root:6d}"
        for block in ("oop", "ip"):
            if size_rounded == 0 or nranks == 1:
                t = latency * 0.1 * _jitter(host, program, size, block) if nranks == 1 else 0.1
                algbw = size_rounded / 1e3 / t if t else 0.0
                bus = algbw * factor
            else:
                alg_peak = peak / factor if factor else peak
                t = latency + size_rounded / (alg_peak * 1e3 * efficiency(size_rounded))
                t *= _jitter(host, program, size_rounded, block)
                algbw = size_rounded / 1e3 / t
                bus = algbw * factor
            busbws.append(bus)
            wrong = "0" if opts.check else "N/A"
            row += f"  {_time_str(t)}  {algbw:6.2f}  {bus:6.2f}  {wrong:>6}"  # 2.17+: #wrong is 6 wide
        out.append(row + "\n")
    return out, busbws


def footer(program: str, busbws: list[float]) -> str:
    """nccl-tests' closing lines: out-of-bounds values, the average busbw, the end of the test."""
    average = sum(busbws) / len(busbws) if busbws else 0.0
    return (
        "# Out of bounds values : 0 OK\n"
        f"# Avg bus bandwidth    : {average:g} \n"
        "#\n"
        f"# Collective test concluded: {program}\n"
    )


def _program(name: str) -> Callable[[list[str], Session], ToolResult]:
    """The nccl-tests binary ``name``: one runner for all, told which collective it runs (:data:`COLLECTIVES`)."""
    return functools.partial(_run, name)


all_reduce_perf = _program("all_reduce_perf")
all_gather_perf = _program("all_gather_perf")
reduce_scatter_perf = _program("reduce_scatter_perf")
alltoall_perf = _program("alltoall_perf")
sendrecv_perf = _program("sendrecv_perf")
broadcast_perf = _program("broadcast_perf")
reduce_perf = _program("reduce_perf")


# nccl-tests 2.17+ (2025) opens with its version and the NCCL it was built with and runs against, names the
# test, prints a rank's GPU as [domain:bus:device] and closes with "Collective test concluded" (corpus
# nccl_tests/09: 2.17.6; older releases print the bus byte alone, [0x0f], and none of those lines).
NCCL_TESTS_VERSION = "2.17.6"


def _version_lines(state: NodeState, program: str) -> str:
    version = (state.perf.nccl_version or "2.18.3+cuda12.2").split("+")[0].split(".")
    code = int(version[0]) * 10000 + int(version[1]) * 100 + int(version[2]) if len(version) == 3 else 0
    return (
        f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers={code} nccl-library={code}\n"
        f"# Collective test starting: {program}\n"
    )


def _bus_tests(gpu: GpuState) -> str:
    """The rank line's GPU: ``0000:0f:00`` (4-digit domain, bus, device, lower case)."""
    domain, bus, devfn = gpu.bus_id.split(":")
    return f"{domain[-4:]}:{bus}:{devfn.split('.')[0]}".lower()


def _comm(state: NodeState, rank: int) -> str:
    base = int(hashlib.sha256(f"{state.host}:comm".encode()).hexdigest()[:8], 16) & 0xFFFFFF0
    return f"0x55{base + rank * 0x11A0:010x}"


def _bus_id_short(gpu: GpuState) -> str:
    """NCCL's busId: ``00000000:18:00.0`` -> ``18000``."""
    _, bus, devfn = gpu.bus_id.split(":")
    dev, fn = devfn.split(".")
    return f"{int(bus, 16):x}{int(dev, 16):02x}{int(fn)}"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


def ib_devices(state: NodeState, env: Mapping[str, str]) -> list[str]:
    """The ``mlx5_0:1/IB`` entries NCCL's IB transport would use (active ports that NCCL_IB_HCA allows)."""
    spec = env.get("NCCL_IB_HCA", "").strip()
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    spec = spec.lstrip("=")
    filters: list[tuple[str, int | None]] = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        name, _, port_text = item.partition(":")
        filters.append((name, int(port_text) if port_text.isdigit() else None))

    def wanted(name: str, port: int) -> bool:
        if not filters:
            return True
        hit = any((name == f if exact else name.startswith(f)) and (p is None or p == port) for f, p in filters)
        return not hit if exclude else hit

    if not state.module_loaded("ib_core") or not state.module_loaded("mlx5_ib"):
        return []
    out = []
    for hca in state.ib_hcas:
        for port in hca.ports:
            if port.state != "Active" or not wanted(hca.name, port.port):
                continue
            kind = "IB" if port.link_layer == "InfiniBand" else "RoCE"
            out.append(f"{hca.name}:{port.port}/{kind}")
    return out


def dmabuf_supported(state: NodeState) -> bool:
    """Whether the node can register GPU memory with its HCAs through DMA-BUF: the open GPU kernel
    modules on a 5.12+ kernel (NVIDIA GPU Operator documentation, GPUDirect RDMA)."""
    words = (state.uname or "").split()
    head = re.match(r"(\d+)\.(\d+)", words[2] if len(words) > 2 else "")
    return bool(state.driver.open_kernel_module and head and (int(head[1]), int(head[2])) >= (5, 12))


def gdr_lines(state: NodeState, env: Mapping[str, str], devices: list[str], version: str) -> list[str]:
    """NCCL 2.19+'s "NET/IB : GPU Direct RDMA (PATH) enabled for HCA N 'NAME" lines, peermem first (as
    net_ib.cc prints them; the quote is never closed), and its note of NCCL_DMABUF_ENABLE."""
    if _version_tuple(version) < (2, 19, 0):
        return []
    out = []
    dmabuf_env = env.get("NCCL_DMABUF_ENABLE")
    if dmabuf_env is not None:
        out.append(f"NCCL_DMABUF_ENABLE set by environment to {dmabuf_env}.")
    peermem = state.module_loaded("nvidia_peermem")
    dmabuf = dmabuf_supported(state) and dmabuf_env != "0"
    for i, dev in enumerate(devices):
        name = dev.split(":", 1)[0]
        if peermem:
            out.append(f"NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA {i} '{name}")
        if dmabuf:
            out.append(f"NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA {i} '{name}")
    return out


def _info_lines(state: NodeState, gpus: list[GpuState], env: Mapping[str, str], pid: int, path: str) -> list[str]:
    """NCCL_DEBUG=INFO lines of communicator setup (corpus/nccl_debug/01 and 04)."""
    host = state.host
    version = state.perf.nccl_version or "2.18.3+cuda12.2"
    cuda = state.driver.cuda_version.split(".")
    cuda_int = int(cuda[0]) * 1000 + (int(cuda[1]) * 10 if len(cuda) > 1 else 0)
    ifname = env.get("NCCL_SOCKET_IFNAME", "eth0").split(",")[0].lstrip("^=") or "eth0"
    octet = int(hashlib.sha256(host.encode()).hexdigest()[:2], 16) % 250 + 2
    oob = f"{ifname}:10.0.0.{octet}<0>"
    nranks = len(gpus)

    def line(rank: int, tid: int, text: str) -> str:
        return f"{host}:{pid}:{tid} [{rank}] NCCL INFO {text}\n"

    # NCCL logs the variables it was given (public NCCL 2.2x INFO logs): "NCCL_SOCKET_IFNAME set by
    # environment to eth0" before the bootstrap, "NCCL_IB_HCA set to mlx5_0,mlx5_1" before NET/IB.
    out = []
    if env.get("NCCL_SOCKET_IFNAME"):
        out.append(line(0, pid, f"NCCL_SOCKET_IFNAME set by environment to {env['NCCL_SOCKET_IFNAME']}"))
    out.append(line(0, pid, f"Bootstrap : Using {oob}"))
    out.append(line(0, pid, "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"))
    out.append(line(0, pid, f"cudaDriverVersion {cuda_int}"))
    out.append(f"NCCL version {version}\n")
    devices = ib_devices(state, env)
    first_tid = pid + 20
    if env.get("NCCL_IB_HCA"):
        out.append(line(0, first_tid, f"NCCL_IB_HCA set to {env['NCCL_IB_HCA']}"))
    if devices:
        listing = " ".join(f"[{i}]{d}" for i, d in enumerate(devices))
        out.append(line(0, first_tid, f"NET/IB : Using {listing} [RO]; OOB {oob}"))
        out.extend(line(0, first_tid, text) for text in gdr_lines(state, env, devices, version))
        network = "IB"
    else:
        out.append(line(0, first_tid, "NET/IB : No device found."))
        out.append(line(0, first_tid, f"NET/Socket : Using [0]{oob}"))
        network = "Socket"
    for rank in range(nranks):
        out.append(line(rank, first_tid + rank, f"Using network {network}"))
    comm_id = f"0x{hashlib.sha256(f'{host}:commid'.encode()).hexdigest()[:16]}"
    for rank, g in enumerate(gpus):
        out.append(
            line(
                rank,
                first_tid + rank,
                f"comm {_comm(state, rank)} rank {rank} nranks {nranks} cudaDev "
                f"{rank} nvmlDev {g.index} busId {_bus_id_short(g)} commId {comm_id} - Init START",
            )
        )
    hopper_nvswitch = bool(state.nvswitches) and all(g.architecture == "Hopper" for g in gpus)
    for rank in range(nranks):
        if gpus[rank].cpu_affinity:
            out.append(
                line(
                    rank, first_tid + rank, f"Setting affinity for GPU {gpus[rank].index} to {gpus[rank].cpu_affinity}"
                )
            )
        if hopper_nvswitch and env.get("NCCL_NVLS_ENABLE", "1") != "0":
            out.append(line(rank, first_tid + rank, f"NVLS multicast support is available on dev {rank}"))
    channels = 16 if path != "pcie" else 2
    order = "   ".join(str(r) for r in range(nranks))
    for c in range(min(channels, 2)):
        out.append(line(0, first_tid, f"Channel {c:02d}/{channels} :    {order}"))
    if path == "pcie":
        transport = "SHM/direct/direct"
    elif _version_tuple(version) >= (2, 19, 0):
        transport = "P2P/CUMEM"  # NCCL 2.19+ maps peer memory through cuMem (corpus/nccl_debug/04)
    else:
        transport = "P2P/direct pointer"  # one process driving every GPU (corpus/nccl_debug/01)
    if nranks > 1:
        for c in range(channels):
            for rank in range(nranks):
                peer = (rank + 1) % nranks
                out.append(
                    line(
                        rank, first_tid + rank, f"Channel {c:02d}/0 : {rank}[{rank}] -> {peer}[{peer}] via {transport}"
                    )
                )
    for rank in range(nranks):
        out.append(line(rank, first_tid + rank, "Connected all rings"))
    if path == "nvls":
        for rank in range(nranks):
            out.append(line(rank, first_tid + rank, "Connected NVLS tree"))
        out.append(
            line(
                0,
                first_tid,
                f"{channels} coll channels, {channels} nvls channels, {channels} p2p channels, "
                f"{channels} p2p channels per peer",
            )
        )
    else:
        out.append(
            line(
                0,
                first_tid,
                f"{channels} coll channels, 0 nvls channels, {channels} p2p channels, "
                f"{channels // 2 or 1} p2p channels per peer",
            )
        )
    for rank, g in enumerate(gpus):
        out.append(
            line(
                rank,
                first_tid + rank,
                f"comm {_comm(state, rank)} rank {rank} nranks {nranks} cudaDev "
                f"{rank} nvmlDev {g.index} busId {_bus_id_short(g)} commId {comm_id} - Init COMPLETE",
            )
        )
    return out
