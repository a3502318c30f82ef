"""nccl-tests over several simulated nodes on one fabric: ``mpirun -np 16 -H a:8,b:8 all_reduce_perf -g 1``.

mpirun (:func:`assessor.sim.tools.hpl.mpirun`) hands its ``-H`` list here (:func:`over_nodes`); when that list
names another node, the run spans the nodes: the local one and its peers (:mod:`assessor.sim.peers`), whose states
are read, never changed. Ranks fill each host's slots in order, one GPU each (times ``-g``).

The ring crosses the east-west fabric between the nodes, so its bus bandwidth is the smaller of

- the intra-node bandwidth of the slowest node (NVLink or PCIe, as on one node: :func:`..nccl.peak_busbw`), and
- the inter-node bandwidth: the rails NCCL uses (each node's active IB/RoCE ports that its ``NCCL_IB_HCA``
  allows; rail *i* of one node talks to rail *i* of the next), as many as the node with the fewest has, each at
  the slower of its two ports, staged through host memory unless every node has GPUDirect RDMA
  (nvidia_peermem, or DMA-BUF); over TCP sockets when a node has no rail at all.

The usual nranks factor of the collective turns that peak into algbw; the table and footer are one node's
(:func:`..nccl.table`). With ``NCCL_DEBUG=INFO`` each node prints its own NET/IB (or NET/Socket) lines, its
GPUDirect RDMA lines and the ring's channels that leave it (``[send] via NET/IB/0/GDRDMA``) and arrive
(``[receive]``), as in ``corpus/nccl_debug/04``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.nccl import (
    COLLECTIVES,
    ROOT_ENV,
    _bus_id_short,
    _bus_tests,
    _comm,
    _cuda_failure,
    _header,
    _Options,
    _parse_args,
    _version_lines,
    _version_tuple,
    cuda_problem,
    dmabuf_supported,
    footer,
    gdr_lines,
    ib_devices,
    merged_env,
    peak_busbw,
    table,
    usable_gpus,
)

# A rail moves about 94 % of its line rate (after 64b/66b encoding) in NCCL's ring: 8 x 400 Gb/s rails give
# ~370 GB/s busbw between two 8x H100 nodes, the figure NVIDIA's reference clusters report.
_RAIL_EFFICIENCY = 0.98 * 0.94
# Without GPUDirect RDMA on every end NCCL stages each transfer through host memory: an extra copy and PCIe
# crossing per hop (NCCL's NCCL_NET_GDR_LEVEL documentation); about 60 % of the rail remains.
_STAGED = 0.6
_SOCKET_GBS = 3.0  # NCCL's socket transport over a node's TCP interface, busbw GB/s (corpus/nccl_debug/08)
_NET_LATENCY_US = {"IB": 12.0, "Socket": 80.0}  # added to the intra-node latency per ring step across nodes

_ORTE_FAILED = (
    "--------------------------------------------------------------------------\n"
    "ORTE was unable to reliably start one or more daemons.\n"
    "--------------------------------------------------------------------------\n"
)


@dataclass(frozen=True)
class _Node:
    state: NodeState
    env: dict[str, str]  # the NCCL settings its ranks run with
    ranks: int  # MPI processes on it
    gpus: list[GpuState]  # the GPUs they drive, in local rank order


def mpi_hosts(spec: str, state: NodeState) -> list[tuple[str, int]] | None:
    """mpirun's ``-H`` hosts with their slots (``a:8,b:8``; a host without ``:N`` has one slot), or None when
    the list names only this node (the one-node run)."""
    from assessor.sim.peers import is_local

    hosts: list[tuple[str, int]] = []
    for item in (p.strip() for p in spec.split(",") if p.strip()):
        name, _, slots = item.partition(":")
        hosts.append((name, int(slots) if slots.isdigit() else 1))
    if not hosts or all(is_local(state, name) for name, _ in hosts):
        return None
    return hosts


def over_nodes(argv: list[str], session: Session, spec: str, nprocs: int | None) -> ToolResult | None:
    """``mpirun -H SPEC [-np N] PROGRAM ARGS``: an nccl-tests PROGRAM over the nodes of ``spec``; None when the
    program is no nccl-test or the hosts are only this node (mpirun then runs it as on one node)."""
    import os

    program = os.path.basename(argv[0]) if argv else ""
    if program not in COLLECTIVES:
        return None
    state = session.read()
    hosts = mpi_hosts(spec, state)
    if hosts is None:
        return None
    parsed = _parse_args(list(argv[1:]), program)
    if isinstance(parsed, str):
        return ToolResult(1, "", parsed + "\n")
    return across_nodes(program, parsed, session, state, hosts, nprocs)


def _mpi_failure(text: str) -> ToolResult:
    return ToolResult(1, "", text)


def _resolve(session: Session, state: NodeState, host: str) -> tuple[NodeState, Path | None] | ToolResult:
    """The node at ``host`` and its configuration root, or mpirun's failure to start its daemon there."""
    from assessor.sim.config_root import root_for_state
    from assessor.sim.peers import is_local, read_peers
    from assessor.sim.state import look_at_state

    if is_local(state, host):
        return state, session.root()
    target = (read_peers(session.path) or {}).get(host.lower())
    if target is None:
        return _mpi_failure(f"ssh: Could not resolve hostname {host}: Name or service not known\n{_ORTE_FAILED}")
    peer, _ = look_at_state(target)
    if peer is None or peer.host.lower() != host.lower():
        return _mpi_failure(f"ssh: connect to host {host} port 22: No route to host\n{_ORTE_FAILED}")
    root = root_for_state(target)
    return peer, root if root.is_dir() else None


def _place(hosts: list[tuple[str, int]], nprocs: int) -> list[tuple[str, int]] | None:
    """Open MPI's default by-slot mapping: fill each host's slots in order; None when there are too few."""
    placed: list[tuple[str, int]] = []
    left = nprocs
    for name, slots in hosts:
        if left <= 0:
            break
        take = min(slots, left)
        placed.append((name, take))
        left -= take
    return None if left > 0 else placed


def _rails(node: _Node) -> list[tuple[str, float]]:
    """The node's NCCL rails: (``mlx5_0:1/IB``, port rate Gb/s); none when NCCL_IB_DISABLE=1."""
    if node.env.get("NCCL_IB_DISABLE", "0") == "1":
        return []
    rates = {f"{h.name}:{p.port}": p.rate_gbps for h in node.state.ib_hcas for p in h.ports}
    return [(dev, rates.get(dev.split("/")[0], 0.0)) for dev in ib_devices(node.state, node.env)]


def _gdr(node: _Node) -> bool:
    """GPUDirect RDMA on this node: nvidia_peermem, or DMA-BUF (open modules, 5.12+ kernel) not switched off."""
    dmabuf = dmabuf_supported(node.state) and node.env.get("NCCL_DMABUF_ENABLE") != "0"
    return node.state.module_loaded("nvidia_peermem") or dmabuf


def inter_node_busbw(nodes: list[_Node]) -> tuple[float, str, bool, int]:
    """The busbw (GB/s) the fabric between ``nodes`` allows, the network (IB or Socket), whether GPUDirect RDMA
    is used, and the number of rails."""
    rails = [_rails(n) for n in nodes]
    if any(not r for r in rails):
        return _SOCKET_GBS, "Socket", False, 0
    count = min(len(r) for r in rails)
    gdr = all(_gdr(n) for n in nodes)
    total = sum(min(r[i][1] for r in rails) for i in range(count)) / 8 * _RAIL_EFFICIENCY
    return (total if gdr else total * _STAGED), "IB", gdr, count


def _pid(state: NodeState) -> int:
    return 3000 + int(hashlib.sha256(f"{state.host}:mpi".encode()).hexdigest()[:6], 16) % 4_000_000


def across_nodes(
    program: str,
    opts: _Options,
    session: Session,
    state: NodeState,
    hosts: list[tuple[str, int]],
    nprocs: int | None,
) -> ToolResult:
    """``program`` run by mpirun over ``hosts`` (``nprocs`` processes; None: one per slot): what nccl-tests
    prints on the node mpirun was typed on."""
    if nprocs is None:
        nprocs = sum(slots for _, slots in hosts)
    placed = _place(hosts, nprocs)
    if placed is None:
        return _mpi_failure(
            "--------------------------------------------------------------------------\n"
            f"There are not enough slots available in the system to satisfy the {nprocs}\n"
            f"slots that were requested by the application:\n\n  {program}\n\n"
            "Either request fewer slots for your application, or make more slots\navailable for use.\n"
            "--------------------------------------------------------------------------\n"
        )
    started = _version_lines(state, program) + _header(opts) + "#\n# Using devices\n"
    out = [started]
    nodes: list[_Node] = []
    base_env = {k: v for k, v in session.env.items() if k != ROOT_ENV}
    per_rank = max(opts.ngpus * opts.nthreads, 1)
    for host, ranks in placed:
        resolved = _resolve(session, state, host)
        if isinstance(resolved, ToolResult):
            return resolved
        node_state, root = resolved
        problem = cuda_problem(node_state)
        visible = usable_gpus(node_state)
        if problem is None and ranks * per_rank > len(visible):
            problem = "invalid device ordinal"
        if problem is not None:
            return _cuda_failure(node_state, problem, "".join(out))
        env = merged_env(node_state, base_env, root)
        node = _Node(node_state, env, ranks, visible[: ranks * per_rank])
        first = sum(len(n.gpus) for n in nodes)
        pid = _pid(node_state)
        for local, g in enumerate(node.gpus):
            out.append(
                f"#  Rank {first + local:2d} Group  0 Pid {pid + local // per_rank:6d} on {node_state.host:>10} "
                f"device {g.index:2d} [{_bus_tests(g)}] {g.name}\n"
            )
        memory = min(g.memory_total_mib for g in node.gpus) * 1024**2
        if opts.max_bytes * (3 if opts.check else 2) > memory:
            return _cuda_failure(node_state, "out of memory", "".join(out))
        nodes.append(node)
    nranks = sum(len(n.gpus) for n in nodes)
    intra = [peak_busbw(n.state, n.gpus, n.env, test=program) for n in nodes]
    peak = min(p for p, _ in intra)
    latency = max({"nvls": 30.0, "nvlink": 39.0}.get(path, 55.0) for _, path in intra)
    if len(nodes) > 1:
        inter, network, gdr, count = inter_node_busbw(nodes)
        peak = min(peak, inter)
        latency += _NET_LATENCY_US[network]
        if any(n.env.get("NCCL_DEBUG", "").upper() == "INFO" for n in nodes):
            out.extend(_info_lines(nodes, network, gdr, count))
    rows, busbws = table(program, opts, state.host, peak, nranks, latency)
    out.extend(rows)
    out.append(footer(program, busbws))
    return ToolResult(0, "".join(out))


def _info_lines(nodes: list[_Node], network: str, gdr: bool, count: int) -> list[str]:
    """Each node's NCCL_DEBUG=INFO lines of the network it chose and the ring channels that cross nodes."""
    out: list[str] = []
    firsts = []
    rank = 0
    for node in nodes:
        firsts.append(rank)
        rank += len(node.gpus)
    nranks = rank
    comm_id = f"0x{hashlib.sha256(f'{nodes[0].state.host}:commid'.encode()).hexdigest()[:16]}"
    for i, node in enumerate(nodes):
        host, pid = node.state.host, _pid(node.state)
        version = node.state.perf.nccl_version or "2.18.3+cuda12.2"
        octet = int(hashlib.sha256(host.encode()).hexdigest()[:2], 16) % 250 + 2
        ifname = node.env.get("NCCL_SOCKET_IFNAME", "eth0").split(",")[0].lstrip("^=") or "eth0"
        oob = f"{ifname}:10.0.0.{octet}<0>"
        first = firsts[i]
        tid = pid + 20

        def line(r: int, text: str, host: str = host, pid: int = pid, tid: int = tid) -> str:
            return f"{host}:{pid}:{tid} [{r}] NCCL INFO {text}\n"

        out.append(line(0, f"Bootstrap : Using {oob}"))
        if i == 0:
            out.append(f"NCCL version {version}\n")
        if node.env.get("NCCL_IB_HCA"):
            out.append(line(0, f"NCCL_IB_HCA set to {node.env['NCCL_IB_HCA']}"))
        devices = [d for d, _ in _rails(node)]
        if network == "IB":
            listing = " ".join(f"[{k}]{d}" for k, d in enumerate(devices))
            out.append(line(0, f"NET/IB : Using {listing} [RO]; OOB {oob}"))
            out.extend(line(0, text) for text in gdr_lines(node.state, node.env, devices, version))
        else:
            if not devices:
                out.append(line(0, "NET/IB : No device found."))
            out.append(line(0, f"NET/Socket : Using [0]{oob}"))
        for local in range(len(node.gpus)):
            out.append(line(local, f"Using network {network}"))
        last_local = len(node.gpus) - 1
        sender = first + last_local
        nxt = firsts[(i + 1) % len(nodes)]
        prev_last = firsts[i] - 1 if i else nranks - 1
        suffix = "/GDRDMA" if gdr else ""
        for c in range(max(count, 1) * 2):
            nic = c % max(count, 1)
            out.append(
                line(
                    last_local,
                    f"Channel {c:02d}/0 : {sender}[{last_local}] -> {nxt}[0] [send] via NET/{network}/{nic}{suffix}",
                )
            )
            prev_local = len(nodes[i - 1].gpus) - 1
            out.append(
                line(
                    0,
                    f"Channel {c:02d}/0 : {prev_last}[{prev_local}] -> {first}[0] [receive] "
                    f"via NET/{network}/{nic}{suffix}",
                )
            )
        if _version_tuple(version) >= (2, 19, 0) and len(node.gpus) > 1:
            out.append(line(0, f"Channel 00/0 : {first}[0] -> {first + 1}[1] via P2P/CUMEM"))
        for local, g in enumerate(node.gpus):
            out.append(
                line(
                    local,
                    f"comm {_comm(node.state, local)} rank {first + local} nranks {nranks} cudaDev {local} "
                    f"nvmlDev {g.index} busId {_bus_id_short(g)} commId {comm_id} - Init COMPLETE",
                )
            )
    return out
