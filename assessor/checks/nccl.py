"""NCCL checks on an nccl-tests run: bandwidth, correctness, and the transport NCCL chose."""

from __future__ import annotations

from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import NcclRun, NodeFacts


def _size(n: int) -> str:
    """8589934592 -> '8 GiB'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def _hosts(run: NcclRun) -> set[str]:
    """The hosts of the run: its '# Rank' lines, else the host prefixes of its NCCL lines."""
    return {d.host for d in run.devices if d.host} or set(run.debug.hosts)


def _ranks(run: NcclRun) -> int | None:
    return run.nranks or run.debug.nranks or None


# What each failure nccl-tests stops on says about the node, by a phrase of CUDA's or NCCL's message.
_FAILURE_HINTS: tuple[tuple[str, str], ...] = (
    (
        "system not yet initialized",
        "CUDA cannot initialise the GPUs: on an NVSwitch system the fabric manager must be running and the fabric "
        "trained (fabric.state); after a GPU reset or a driver reload, load nvidia_drm again and start "
        "nvidia-persistenced, nvidia-fabricmanager and nvidia-dcgm",
    ),
    (
        "driver version is insufficient",
        "the loaded kernel module is missing or older than the CUDA runtime: check driver.loaded (nvidia-smi, "
        "lsmod); reboot or reload the nvidia modules",
    ),
    (
        "display driver / cuda driver",
        "the kernel module and the user-space driver differ (driver.loaded): reboot or reload the nvidia modules",
    ),
    (
        "invalid device ordinal",
        "fewer GPUs are usable than the run asked for: a GPU is lost or in MIG mode (gpu.count, gpu.mig_mode)",
    ),
    ("no cuda-capable device", "CUDA sees no GPU: check driver.loaded and gpu.count"),
    ("out of memory", "the sizes do not fit the GPUs' memory, or other processes hold it: lower -e or free the GPUs"),
)
_NCCL_FAILURE_HINT = "NCCL could not start: rerun with NCCL_DEBUG=WARN (or INFO) for the WARN line that says why"
_OTHER_FAILURE_HINT = "read the run's output around the failure line, then rerun"


def failure_hint(failure: str) -> str:
    """What to look at for the line an nccl-tests run stopped on."""
    lowered = failure.lower()
    for phrase, hint in _FAILURE_HINTS:
        if phrase in lowered:
            return hint
    return _NCCL_FAILURE_HINT if "nccl failure" in lowered else _OTHER_FAILURE_HINT


def _is_all_reduce(run: NcclRun) -> bool | None:
    """True/False when the test is known or evident from the table; None when unknown.

    Without a test name, rows with redop 'none' or a root >= 0 come from broadcast, all_gather,
    alltoall or the like, never from all_reduce.
    """
    if run.test:
        return "all_reduce" in run.test
    if any((r.redop or "").lower() == "none" or (r.root is not None and r.root >= 0) for r in run.rows):
        return False
    return None


@check(
    "nccl.busbw",
    title="NCCL bus bandwidth",
    facts=("nccl", "gpus"),
    params=(
        Param(
            "min_gbps",
            "float",
            ref.AUTO,
            "lowest acceptable busbw in GB/s at the largest message size ('auto', one-node all_reduce: "
            "8x A100 228, 8x H100 460, 8x H200 431)",
        ),
        Param("tolerance_pct", "float", 0, "accept this many percent below min_gbps"),
    ),
    doc=(
        "Compares nccl-tests busbw at the largest message size with the reference for the GPUs (the "
        "'# Avg bus bandwidth' line averages every size, tiny ones included, and misleads). Runs with fewer "
        "than 2 ranks or all-zero busbw are rejected: they measure nothing."
    ),
    remedy=(
        "Check NVLink (gpu.nvlink), the fabric manager (fabric.state), PCIe links (gpu.pcie_link) and, across "
        "nodes, the IB ports, GPUDirect and the transport NCCL chose (nccl.transport); rerun with a single "
        "large size, e.g. all_reduce_perf -b 16G -e 16G -g 8."
    ),
)
def nccl_busbw(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: NcclRun = need(facts, "nccl")
    if not run.tests_output:
        return result(
            "nccl.busbw",
            "skip",
            "no nccl-tests table in the capture (an NCCL_DEBUG log alone has no bandwidth figures)",
            hint="run all_reduce_perf (nccl-tests) and capture its whole output",
        )
    if run.failure and not run.rows:
        return result(
            "nccl.busbw",
            "fail",
            f"nccl-tests stopped before measuring: {run.failure}",
            observed={"failure": run.failure},
            expected="a run that completes",
            hint=failure_hint(run.failure),
        )
    if run.nranks == 0 and not run.rows:
        return result(
            "nccl.busbw",
            "error",
            "no result rows and no '# Using devices' lines: the run did not get going",
            hint="capture the whole nccl-tests output, header included",
        )
    if 0 < run.nranks < 2:
        return result(
            "nccl.busbw",
            "error",
            f"not a bandwidth test: {run.nranks} rank",
            observed={"ranks": run.nranks},
            hint="run with at least 2 GPUs, e.g. all_reduce_perf -g 8",
        )
    peak = run.peak_busbw()
    if peak is None:
        return result(
            "nccl.busbw",
            "error",
            "the run printed no result rows",
            observed={"ranks": run.nranks},
            hint="the test did not finish: read its output (nccl.errors) and rerun",
        )
    if all(not (r.oop_busbw or r.ip_busbw) for r in run.rows):
        return result(
            "nccl.busbw",
            "error",
            "not a bandwidth test: busbw is 0 at every size",
            observed={"ranks": run.nranks, "busbw": 0},
            hint="rerun with at least 2 ranks and large sizes",
        )
    largest = max(r.size_bytes for r in run.rows)
    hosts = _hosts(run)
    # Rows pasted without the "# Using devices" header: busbw is still in them, but how many
    # ranks ran, on which GPUs and hosts, is not.
    unknown_note = " (ranks and GPUs unknown: the '# Using devices' header was not captured)" if not run.nranks else ""
    min_gbps = params.get("min_gbps", ref.AUTO)
    if min_gbps in (None, ref.AUTO):
        names: list[str | None] = [d.name for d in run.devices if d.name] or [g.name for g in facts.gpus or ()]
        family = ref.family_of_names(names)
        if family is None or family not in ref.NCCL_ALLREDUCE_BUSBW_GBPS:
            shown = sorted({n for n in names if n}) or ["unknown GPUs"]
            return result(
                "nccl.busbw",
                "skip",
                f"no busbw reference for {', '.join(shown)}: set min_gbps{unknown_note}",
                observed={"busbw": peak},
                hint="set min_gbps in the profile",
            )
        if len(hosts) > 1:
            return result(
                "nccl.busbw",
                "skip",
                f"no busbw reference for a {len(hosts)}-node run (the references are one-node): set min_gbps",
                observed={"busbw": peak},
                hint="set min_gbps; NDR gives ~46-48 GB/s per NIC",
            )
        if _is_all_reduce(run) is False:
            return result(
                "nccl.busbw",
                "skip",
                f"the references are for all_reduce_perf, not {run.test or 'this test'}: set min_gbps",
                observed={"busbw": peak},
                hint="set min_gbps for this test, or run all_reduce_perf",
            )
        minimum = ref.NCCL_ALLREDUCE_BUSBW_GBPS[family]
    else:
        minimum = float(min_gbps)
    tolerance = float(params.get("tolerance_pct") or 0)
    floor = minimum * (1 - tolerance / 100)
    observed = {"busbw": peak, "size": _size(largest), "ranks": run.nranks or None}
    expected = f">= {minimum:g} GB/s" + (f" (-{tolerance:g}%: {floor:.1f})" if tolerance else "")
    ranks = f"{run.nranks} ranks" if run.nranks else "ranks unknown"
    where = f"{peak:g} GB/s at {_size(largest)} ({ranks}){unknown_note}"
    if peak >= floor:
        return result("nccl.busbw", "pass", f"busbw {where}", observed=observed, expected=expected)
    slow = result(
        "nccl.busbw",
        "fail",
        f"busbw {where}, below {floor:g} GB/s",
        observed=observed,
        expected=expected,
        hint="check gpu.nvlink, fabric.state and gpu.pcie_link; across nodes ib.rate, ib.peermem and "
        "nccl.transport; rerun with one large size (-b 16G -e 16G)",
    )
    row = max(run.rows, key=lambda r: r.size_bytes)  # the row the verdict reads, for reports
    slow.evidence = [
        f"nccl-tests: size {row.size_bytes} bytes: busbw {row.oop_busbw} GB/s out-of-place, "
        f"{row.ip_busbw} GB/s in-place"
    ]
    return slow


@check(
    "nccl.errors",
    title="NCCL run errors",
    facts=("nccl",),
    doc=(
        "Verifies that the nccl-tests run computed correct results (#wrong is 0, no out-of-bounds values) and "
        "that NCCL logged no WARN line (IB completion errors, timeouts, failed connections). Wrong results "
        "mean corrupted data on some path; a WARN usually precedes a hang or a crash."
    ),
    remedy=(
        "Read the named WARN line: IB completion errors point at a port or cable (ib.ports_active, "
        "ib.rate); wrong results at a GPU or link (gpu.xid, gpu.nvlink, dcgm.diag)."
    ),
)
def nccl_errors(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: NcclRun = need(facts, "nccl")
    fails: list[str] = []
    if run.failure:
        fails.append(f"nccl-tests stopped: {run.failure}")
    wrong = [r for r in run.rows if (r.oop_wrong or 0) > 0 or (r.ip_wrong or 0) > 0]
    if wrong:
        sizes = ", ".join(_size(r.size_bytes) for r in wrong[:3])
        fails.append(f"wrong results at {len(wrong)} sizes ({sizes})")
    if run.out_of_bounds:
        fails.append(f"{run.out_of_bounds} out-of-bounds values")
    warnings = run.debug.warnings
    if warnings:
        more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
        # An IB completion error names the failing path; show it before generic follow-ups.
        first = next((w for w in warnings if "Got completion" in w), warnings[0])
        fails.append(f"NCCL WARN: {first.strip()}{more}")
    observed: dict[str, Any] = {
        "wrong_sizes": len(wrong),
        "out_of_bounds": run.out_of_bounds,
        "warnings": len(warnings),
    }
    expected: dict[str, Any] = {"wrong_sizes": 0, "out_of_bounds": 0, "warnings": 0}
    if run.failure:
        observed["failure"] = run.failure
        expected["failure"] = None
    if fails:
        hint = (
            failure_hint(run.failure)
            if run.failure
            else (
                "IB completion errors point at a port or cable (ib.ports_active, ib.rate); wrong results at a "
                "GPU or link (gpu.xid, gpu.nvlink, dcgm.diag -r 3)"
            )
        )
        if warnings and not run.rows and not run.failure:
            # No result row after the WARN: the run died of it (or the capture holds only the log).
            fails[-1] = ("the run stopped on an NCCL error: " if run.tests_output else "") + fails[-1]
        failed = result("nccl.errors", "fail", "; ".join(fails), observed=observed, expected=expected, hint=hint)
        evidence = [run.failure] if run.failure else []
        failed.evidence = evidence + [f"NCCL WARN {w.strip()}" for w in warnings[:3]] or None
        return failed
    if not run.rows and not run.tests_output:
        return result(
            "nccl.errors",
            "pass",
            "no NCCL WARN lines in the NCCL_DEBUG log (no nccl-tests table: results not checked)",
            observed=observed,
            expected=expected,
        )
    if not run.rows:
        return result(
            "nccl.errors",
            "fail",
            "the run printed no result rows: it did not complete",
            observed=observed,
            expected=expected,
            hint="read the run's output for the crash or hang, rerun",
        )
    if all(r.oop_wrong is None and r.ip_wrong is None for r in run.rows):
        return result(
            "nccl.errors",
            "warn",
            "no WARN lines, but validation was off (#wrong is N/A)",
            observed=observed,
            expected=expected,
            hint="rerun with -c 1 so nccl-tests checks the results",
        )
    return result(
        "nccl.errors",
        "pass",
        f"{len(run.rows)} sizes, no wrong results, no NCCL WARN",
        observed=observed,
        expected=expected,
    )


def _auto_bool(value: Any) -> bool | None:
    """None for 'auto' (decide from the run), else the boolean."""
    if value in (None, ref.AUTO):
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


@check(
    "nccl.transport",
    title="NCCL transport",
    facts=("nccl", "ib_ports"),
    params=(
        Param("multi_node", "bool", ref.AUTO, "whether the run spans nodes ('auto': from the ranks' hosts)"),
        Param(
            "require_gdrdma",
            "bool",
            ref.AUTO,
            "whether NET/IB channels must use GPUDirect RDMA ('auto': on multi-node InfiniBand runs)",
        ),
        Param(
            "hcas",
            "list",
            None,
            "the HCAs NCCL must use, exactly (the compute rails, e.g. [mlx5_0, mlx5_1]): read from "
            "'NET/IB : Using [0]mlx5_0:1/IB ...'; a missing rail or an extra (storage) HCA fails",
        ),
    ),
    doc=(
        "Reads NCCL_DEBUG=INFO lines for the network NCCL chose and the transports of its channels. A multi-node "
        "run on sockets ('NET/IB : No device found' then 'Using network Socket') is an order of magnitude slow; "
        "IB without GDRDMA stages every transfer through host memory. IBext (a net plugin) counts as IB. An "
        "NCCL_DEBUG log without a results table is judged too: its lines' host prefixes and NET/ channels say "
        "whether the job spans nodes."
    ),
    remedy=(
        "Sockets: make the HCAs visible to NCCL (rdma-core and /dev/infiniband in the container, NCCL_IB_HCA, "
        "ibstat). No GDRDMA: `modprobe nvidia_peermem` and check the GPU-NIC PCIe affinity (topo.nic_affinity)."
    ),
)
def nccl_transport(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: NcclRun = need(facts, "nccl")
    debug = run.debug
    if debug.network is None and not debug.transports:
        return result(
            "nccl.transport",
            "skip",
            "the NCCL log names no network and no channel transport"
            if run.debug.hosts or run.debug.warnings or run.debug.nccl_version
            else "no NCCL_DEBUG=INFO lines in the run",
            hint="rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and capture its output",
        )
    transports = list(debug.transports)
    hosts = _hosts(run)
    uses_net = any(t.startswith("NET/") for t in transports)
    multi = _auto_bool(params.get("multi_node"))
    if multi is None:
        # Channels through NET/ only exist between nodes, so they prove a multi-node run too.
        multi = len(hosts) > 1 or uses_net
    network = debug.network or ""
    is_ib = network.upper().startswith("IB") or any(t.startswith("NET/IB") for t in transports)
    is_socket = network.lower() == "socket" or any(t.startswith("NET/Socket") for t in transports)
    require = _auto_bool(params.get("require_gdrdma"))
    if require is None:
        require = multi and is_ib
    observed = {
        "network": debug.network,
        "transports": transports,
        "hosts": len(hosts) or None,
        "ranks": _ranks(run),
        "gdrdma": debug.gdrdma,
    }
    expected = {"network": "IB" if multi else "any", "gdrdma": bool(require)}
    if multi and is_socket:
        cause = (
            "NCCL fell back to sockets: NET/IB : No device found"
            if debug.ib_no_device
            else ("NCCL uses sockets between nodes")
        )
        size = [f"{len(hosts)} nodes" if len(hosts) > 1 else "", f"{_ranks(run)} ranks" if _ranks(run) else ""]
        if any(size):
            cause += f" ({', '.join(x for x in size if x)})"
        return result(
            "nccl.transport",
            "fail",
            cause,
            observed=observed,
            expected=expected,
            hint="make the HCAs visible to NCCL: ibstat, rdma-core and /dev/infiniband in the container, "
            "NCCL_IB_HCA; check ib.ports_active",
        )
    active_hcas = sorted({p.ca for p in facts.ib_ports or () if p.state == "Active"})
    if is_socket and active_hcas:
        # One node needs no network, but sockets on a node with live HCAs mean NCCL cannot see them,
        # and every multi-node job started from here will crawl.
        cause = "NET/IB : No device found, then Using network Socket" if debug.ib_no_device else "Using network Socket"
        return result(
            "nccl.transport",
            "fail",
            f"NCCL fell back to sockets ({cause}) although {len(active_hcas)} HCAs are Active "
            f"({', '.join(active_hcas[:4])}{', ...' if len(active_hcas) > 4 else ''})",
            observed={**observed, "active_hcas": len(active_hcas)},
            expected={**expected, "network": "IB"},
            hint="make the HCAs visible to NCCL: check NCCL_IB_HCA names Active HCAs, rdma-core and "
            "/dev/infiniband in the container, and NCCL_IB_DISABLE is not set",
        )
    if multi and not is_ib:
        return result(
            "nccl.transport",
            "fail",
            f"multi-node run on network {debug.network or 'unknown'}, not IB",
            observed=observed,
            expected=expected,
            hint="check that NCCL sees the HCAs (NCCL_DEBUG=INFO shows 'NET/IB : Using ...')",
        )
    if require and not debug.gdrdma:
        if debug.gdrdma is None:
            return result(
                "nccl.transport",
                "warn",
                "cannot tell whether GPUDirect RDMA is used (no NET/IB channels)",
                observed=observed,
                expected=expected,
                hint="rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH to see the channels",
            )
        return result(
            "nccl.transport",
            "fail",
            "NET/IB channels without GDRDMA: GPUDirect RDMA is not used",
            observed=observed,
            expected=expected,
            hint="modprobe nvidia_peermem (ib.peermem) and check GPU-NIC affinity (topo.nic_affinity)",
        )
    rails = params.get("hcas")
    if rails:
        problem = _rail_problem(debug.ib_devices, [str(r) for r in rails])
        if problem:
            return result(
                "nccl.transport",
                "fail",
                problem,
                observed={**observed, "hcas": _hca_names(debug.ib_devices)},
                expected={**expected, "hcas": sorted(str(r) for r in rails)},
                hint="NCCL_IB_HCA (in /etc/nccl.conf or the job's environment) must name the compute rails "
                "and no storage HCA; an entry without '=' is a prefix (mlx5_1 also matches mlx5_10)",
            )
    if not multi and is_socket:
        return result(
            "nccl.transport",
            "pass",
            "single node: network Socket is unused (intra-node traffic goes over NVLink/P2P)",
            observed=observed,
            expected=expected,
        )
    summary = f"network {debug.network or 'unknown'}" + (", GDRDMA" if debug.gdrdma else "")
    scope = "multi-node" if multi else "single node"
    return result("nccl.transport", "pass", f"{scope}: {summary}", observed=observed, expected=expected)


def _hca_names(devices: list[str]) -> list[str]:
    """``mlx5_0:1/IB`` -> ``mlx5_0``: the HCAs of NCCL's ``NET/IB : Using`` line, sorted."""
    return sorted({d.split(":", 1)[0].split("/", 1)[0] for d in devices})


def _rail_problem(devices: list[str], rails: list[str]) -> str | None:
    """Why the HCAs NCCL used are not exactly ``rails``; None when they are."""
    used = set(_hca_names(devices))
    if not used:
        return "NCCL used no IB HCA (no 'NET/IB : Using' line)"
    missing = sorted(set(rails) - used)
    extra = sorted(used - set(rails))
    parts = []
    if missing:
        parts.append(f"{len(missing)} of {len(rails)} rails unused ({', '.join(missing)})")
    if extra:
        parts.append(f"HCAs that are not rails used ({', '.join(extra)})")
    return "; ".join(parts) or None
