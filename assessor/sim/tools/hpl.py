"""Simulated HPL-NVIDIA (the NGC HPC-Benchmarks container's ``hpl.sh``) and the ``mpirun`` that launches it.

``mpirun -np N hpl.sh --dat FILE`` runs HPL with N ranks, one GPU each, as the container's launcher does
(``mpirun --bind-to none -np 8 ./hpl.sh --dat hpl-linux-x86_64/sample-dat/HPL-8GPUs.dat``); ``hpl.sh``
alone is one rank. The input is one of the container's sample files (``HPL-1GPU.dat``,
``HPL-NGPUs.dat``: their process grid is what the name says) or an ``HPL.dat`` of the node's own (its
Ns, NBs, Ps and Qs lines are read). The output has HPL-NVIDIA's shape (corpus ``hpl/``): its banner,
netlib HPL 2.1's banner and parameter block, a few progress lines, the result table with the per-GPU
column, the start and end times, the residual check with its norms, and netlib's closing summary. The
simulator prints at once.

The figure comes from the node's state (:func:`tflops_per_gpu`). A GPU's share of its healthy rate is the
lowest of:

- its GPU clock locked below the maximum (``nvidia-smi -lgc``): HPL is bound by the DGEMM rate, which
  follows the clock;
- its power limit below the default (``nvidia-smi -pl``): HPL runs a GPU at its power limit, so the clock
  drops with the cap; the rate is taken as the square root of the limit's share of the default (an
  approximation of the clock-voltage curve, not a measurement);
- its clocks held down by thermal slowdown (the clock the state shows against the maximum).

HPL advances in lockstep (every rank waits for the panel broadcast), so the whole run goes at the pace of its
slowest GPU: one slow GPU lowers every GPU's figure. The healthy rate is the measured figure of
:data:`HEALTHY_TFLOPS`. A GPU that fell off the bus, or a missing fabric registration on an NVSwitch board,
stops the run the way CUDA does; uncorrectable memory errors since the last reset fail the residual check.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult, run_tool

# Per-GPU HPL rate (TFLOPS) of a healthy GPU: the runs in the corpus (hpl/02: one A100 80GB, 16.98 with
# HPL-NVIDIA 24.3; hpl/05: 32 H100 SXM, 41.92). H200 has the H100's GH100 compute (67 TFLOPS FP64 Tensor Core in
# both datasheets): the H100 figure.
HEALTHY_TFLOPS: dict[str, float] = {"A100": 17.0, "H100": 41.9, "H200": 41.9}
FALLBACK_TFLOPS = 10.0  # a GPU without a measured figure: some number, compared to no reference
HPL_NVIDIA_VERSION = "24.09.0"
THERMAL = ("hw_thermal_slowdown", "sw_thermal_slowdown")

_SAMPLE = re.compile(r"HPL-(?:(?P<one>1GPU)|(?P<n>\d+)GPUs)\.dat$")
_GRID = {1: (1, 1), 2: (2, 1), 4: (2, 2), 8: (4, 2), 16: (4, 4)}


@dataclass
class _Input:
    n: int | None  # None: sized from the GPUs' memory, as the sample files are
    nb: int
    p: int
    q: int


def _family(gpu: GpuState) -> str | None:
    name = gpu.name.upper()
    return next((f for f in ("H200", "H100", "A100") if f in name), None)


def gpu_share(gpu: GpuState) -> float:
    """The share of its healthy HPL rate this GPU reaches in its present state (1.0: healthy)."""
    top = gpu.max_clocks_mhz.get("graphics") or gpu.max_clocks_mhz.get("sm")
    shares = [1.0]
    if gpu.locked_gpu_clocks_mhz and top:
        shares.append(min(1.0, min(gpu.locked_gpu_clocks_mhz[-1], top) / top))
    default = gpu.power_default_limit_w or gpu.power_limit_w
    if default and gpu.power_limit_w < default:
        shares.append(math.sqrt(gpu.power_limit_w / default))
    if top and any(r in gpu.throttle_reasons for r in THERMAL):
        shares.append(min(1.0, (gpu.clocks_mhz.get("graphics") or top) / top))
    return max(0.05, min(shares))


def tflops_per_gpu(state: NodeState, gpus: list[GpuState]) -> float:
    """The per-GPU figure of an HPL run over ``gpus``: the slowest GPU's pace, a small run-to-run spread."""
    healthy = min(HEALTHY_TFLOPS.get(_family(g) or "", FALLBACK_TFLOPS) for g in gpus)
    spread = 0.99 + int(hashlib.sha256(f"{state.host}:hpl".encode()).hexdigest()[:4], 16) % 100 / 10000
    return healthy * min(gpu_share(g) for g in gpus) * spread


# Open MPI refuses to start as root unless told twice (its help-orterun.txt; the text as users paste it, e.g. in
# GEOS's container guide and yjxiong/temporal-segment-networks#222's README note).
_AS_ROOT = (
    "--------------------------------------------------------------------------\n"
    "mpirun has detected an attempt to run as root.\n"
    "Running at root is *strongly* discouraged as any mistake (e.g., in\n"
    "defining TMPDIR) or bug can result in catastrophic damage to the OS\n"
    "file system, leaving your system in an unusable state.\n"
    "\n"
    "You can override this protection by adding the --allow-run-as-root\n"
    "option to your cmd line. However, we reiterate our strong advice\n"
    "against doing so - please do so at your own risk.\n"
    "--------------------------------------------------------------------------\n"
)


def _root_allowed(options: list[str], env: Mapping[str, str]) -> bool:
    """``--allow-run-as-root``, or both of Open MPI 4's variables set to 1."""
    if "--allow-run-as-root" in options:
        return True
    return env.get("OMPI_ALLOW_RUN_AS_ROOT") == "1" and env.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") == "1"


def mpirun(args: list[str], session: Session) -> ToolResult:
    """Open MPI's ``mpirun`` on one node: ``-np N`` ranks of the program, told their number as Open MPI tells
    them (``OMPI_COMM_WORLD_SIZE``). Options without a bearing on one node are accepted and ignored. An
    nccl-test with ``-H`` naming other nodes runs over this node and its peers (:mod:`.nccl_nodes`)."""
    with_value = {"--bind-to", "--map-by", "--mca", "-H", "--host", "--hostfile", "-hostfile", "--rank-by", "-N"}
    with_value |= {"-npernode", "--npernode"}
    ranks = 1
    ranks_given = False
    hosts: str | None = None
    env = dict(session.env)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in ("-np", "-n", "--np", "-c"):
            if i + 1 >= len(args) or not args[i + 1].isdigit():
                return ToolResult(1, "", f"mpirun: {arg} needs a number of processes\n")
            ranks, i, ranks_given = int(args[i + 1]), i + 2, True
            continue
        if arg == "-x" and i + 1 < len(args):
            name, _, value = args[i + 1].partition("=")
            if value:
                env[name] = value
            i += 2
            continue
        if arg == "--mca":
            i += 3
            continue
        if arg in ("-H", "--host", "-host") and i + 1 < len(args):
            hosts = args[i + 1]  # the nodes the ranks go to
        i += 2 if arg in with_value or arg == "-host" else 1
    if i >= len(args):
        return ToolResult(1, "", "mpirun: no executable was specified\n")
    if session.euid == 0 and not _root_allowed(args[:i], session.env):
        return ToolResult(1, "", _AS_ROOT)
    if ranks < 1:
        return ToolResult(1, "", "mpirun: the number of processes must be at least 1\n")
    env["OMPI_COMM_WORLD_SIZE"] = str(ranks)
    inner = Session(session.state, session.path, env, session.euid)
    if hosts:
        from assessor.sim.tools.nccl_nodes import over_nodes

        spanned = over_nodes(args[i:], inner, hosts, ranks if ranks_given else None)
        if spanned is not None:  # nccl-tests over this node and its peers
            return spanned
    outcome = run_tool(args[i:], inner)
    if outcome.exit_code == 127:
        return ToolResult(
            1,
            "",
            "--------------------------------------------------------------------------\n"
            "mpirun was unable to find the specified executable file, and therefore\n"
            "did not launch the job.\n"
            "--------------------------------------------------------------------------\n",
        )
    return outcome


def visible_gpus(state: NodeState, env: Mapping[str, str]) -> list[GpuState]:
    """The GPUs CUDA shows a process: not lost, not in MIG mode, and those ``CUDA_VISIBLE_DEVICES`` names (by
    index, in its order; CUDA stops at the first entry it cannot use)."""
    usable = [g for g in state.gpus if not g.lost and not g.mig_mode_current]
    wanted = env.get("CUDA_VISIBLE_DEVICES")
    if wanted is None:
        return usable
    by_index = {g.index: g for g in usable}
    out: list[GpuState] = []
    for item in wanted.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) not in by_index:
            break
        out.append(by_index[int(item)])
    return out


def _ranks(env: Mapping[str, str]) -> int:
    for key in ("OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "SLURM_NTASKS"):
        value = env.get(key, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def _read_input(path: str, session: Session) -> _Input | str:
    """The run's input, or why it cannot be read (hpl.sh's message)."""
    m = _SAMPLE.search(path)
    if m is not None:
        count = 1 if m["one"] else int(m["n"])
        p, q = _GRID.get(count, (count, 1))
        return _Input(n=None, nb=1024, p=p, q=q)
    from assessor.sim.config_root import read_config

    text = read_config(session.root(), path) if path.startswith("/") else None
    if text is None:
        return f"ERROR: could not open HPL input file {path}"
    lines = text.splitlines()

    def first_int(index: int) -> int | None:
        if index >= len(lines):
            return None
        word = (lines[index].split() or [""])[0]
        return int(word) if word.isdigit() else None

    values = [first_int(i) for i in (5, 7, 10, 11)]  # HPL.dat: Ns, NBs, Ps, Qs (the first of each)
    read = [v for v in values if v is not None and v > 0]
    if len(read) != 4:
        return f"ERROR: {path} is not an HPL input file (Ns, NBs, Ps and Qs on lines 6, 8, 11 and 12)"
    return _Input(n=read[0], nb=read[1], p=read[2], q=read[3])


def hpl_sh(args: list[str], session: Session) -> ToolResult:
    """``hpl.sh --dat FILE``: HPL-NVIDIA over this rank's GPUs (see the module docstring)."""
    if "--dat" not in args or args.index("--dat") + 1 >= len(args):
        return ToolResult(1, "", "ERROR: --dat <path to HPL.dat> is required\n")
    source = _read_input(args[args.index("--dat") + 1], session)
    if isinstance(source, str):
        return ToolResult(1, "", source + "\n")
    state = session.read()
    ranks = _ranks(session.env)
    banner = _banner()
    if ranks < source.p * source.q:
        return ToolResult(
            1,
            banner + "HPL ERROR from process # 0, on line 419 of function HPL_pdinfo:\n"
            f">>> Need at least {source.p * source.q} processes for these tests <<<\n",
        )
    drv = state.driver
    visible = visible_gpus(state, session.env)
    problem = None
    if not drv.loaded or not state.module_loaded("nvidia") or drv.version != drv.kernel_module_version:
        problem = "CUDA driver version is insufficient for CUDA runtime version"
    elif any(g.fabric_state not in (None, "Completed") for g in state.gpus):
        problem = "system not yet initialized"
    elif ranks > len(visible):
        problem = "invalid device ordinal"
    if problem is not None:
        return ToolResult(1, banner + _abort(problem, min(len(visible), ranks - 1)))
    gpus = visible[: source.p * source.q]
    return ToolResult(0, banner + _run(state, gpus, source))


def _banner() -> str:
    rule = "=" * 80
    return f"{rule}\nHPL-NVIDIA {HPL_NVIDIA_VERSION}  -- NVIDIA accelerated HPL benchmark -- NVIDIA\n{rule}\n"


def _abort(message: str, rank: int) -> str:
    """A rank's CUDA failure, then Open MPI's abort of the job."""
    rule = "-" * 74
    return (
        f"CUDA error: {message} (rank {rank})\n{rule}\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n"
        f"{rule}\n"
    )


def _size(gpus: list[GpuState], source: _Input) -> int:
    """N as the sample files choose it: the matrix (8 bytes an element) in about 80 % of the GPUs' memory."""
    if source.n is not None:
        return source.n
    memory = sum(g.memory_total_mib for g in gpus) * 1024**2
    return int(math.sqrt(0.8 * memory / 8) // source.nb) * source.nb


def _run(state: NodeState, gpus: list[GpuState], source: _Input) -> str:
    n = _size(gpus, source)
    per_gpu = tflops_per_gpu(state, gpus)
    total_gflops = per_gpu * 1000 * len(gpus)
    seconds = (2 / 3 * n**3 + 2 * n**2) / (total_gflops * 1e9)
    failed = any(g.ecc.volatile_uncorrected > 0 for g in gpus)
    residual = 3.2e-4 if not failed else 1.7e9
    check = "FAILED" if failed else "PASSED"
    rule, dash = "=" * 80, "-" * 80
    out = [
        "HPLinpack 2.1  --  High-Performance Linpack benchmark  --   October 26, 2012",
        "Written by A. Petitet and R. Clint Whaley,  Innovative Computing Laboratory, UTK",
        "Modified by Piotr Luszczek, Innovative Computing Laboratory, UTK",
        "Modified by Julien Langou, University of Colorado Denver",
        rule,
        "",
        "An explanation of the input/output parameters follows:",
        "T/V    : Wall time / encoded variant.",
        "N      : The order of the coefficient matrix A.",
        "NB     : The partitioning blocking factor.",
        "P      : The number of process rows.",
        "Q      : The number of process columns.",
        "Time   : Time in seconds to solve the linear system.",
        "Gflops : Rate of execution for solving the linear system.",
        "",
        "The following parameter values will be used:",
        "",
        f"N      : {n:>8} ",
        f"NB     : {source.nb:>8} ",
        "PMAP   : Column-major process mapping",
        f"P      : {source.p:>8} ",
        f"Q      : {source.q:>8} ",
        "",
        dash,
        "",
        "- The matrix A is randomly generated for each test.",
        "- The following scaled residual check will be computed:",
        "      ||Ax-b||_oo / ( eps * ( || x ||_oo * || A ||_oo + || b ||_oo ) * N )",
        "- The relative machine precision (eps) is taken to be               1.110223e-16",
        "- Computational tests pass if scaled residuals are less than                16.0",
        "",
    ]
    for share in (0.0173, 0.0345, 0.0458):
        left = int(n * (1 - share)) // source.nb * source.nb
        t = seconds * share * 1.6
        gf = total_gflops * (0.97 + share)
        out.append(
            f" Prog= {share * 100:.2f}%\tN_left= {left:8d}\tTime= {t:6.2f}\tTime_left= {seconds - t:6.2f}\t"
            f"iGF= {gf:10.2f}\tGF= {gf:10.2f}\tiGF_per= {gf / len(gpus):8.2f}\tGF_per= {gf / len(gpus):8.2f}"
        )
    start, end = _times(state, seconds)
    out += [
        rule,
        "T/V                N    NB     P     Q         Time          Gflops (   per GPU)",
        dash,
        f"WC0       {n:>10}  {source.nb:4d}  {source.p:4d}  {source.q:4d}  {seconds:11.2f}"
        f"       {total_gflops:.3e} ( {per_gpu * 1000:.3e})",
        f"HPL_pdgesv() start time {start}",
        f"HPL_pdgesv() end time   {end}",
        dash,
        f"||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   {residual:.12f} ...... {check}",
        rule,
        "",
        "Finished      1 tests with the following results:",
        f"              {0 if failed else 1} tests completed and passed residual checks,",
        f"              {1 if failed else 0} tests completed and failed residual checks,",
        "              0 tests skipped because of illegal input values.",
        dash,
        "",
        "End of Tests.",
        rule,
    ]
    return "\n".join(out) + "\n"


def _times(state: NodeState, seconds: float) -> tuple[str, str]:
    """HPL's ctime() start and end of the solve, on the node's clock."""
    import datetime as dt

    from assessor.sim import clock

    now = clock.now(state)
    start = now - dt.timedelta(seconds=seconds)
    return _ctime(start), _ctime(now)


def _ctime(moment: object) -> str:
    import datetime as dt

    assert isinstance(moment, dt.datetime)
    return f"{moment:%a %b} {moment.day:2d} {moment:%H:%M:%S %Y}"
