"""InfiniBand checks: port state, rate and link layer, GPUDirect RDMA, measured bandwidth."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.common import join_limited, reading
from assessor.checks.node import kernel_of
from assessor.checks.result import Result
from assessor.facts import IbPort, NodeFacts, PerftestRun

SM_HINT = "no subnet manager: start opensm or check the fabric's SM (the link is up but nobody configured it)"
DOWN_HINT = "check the cable and transceiver, the switch port, and `mlxlink -d <ca>`; Polling means no link partner"


def port_name(port: IbPort) -> str:
    return f"{port.ca} port {port.port}"


def select_ports(ports: list[IbPort], wanted: list[str] | None) -> tuple[list[tuple[IbPort, bool]], list[str]]:
    """Ports named by ``wanted`` (``mlx5_0`` or ``mlx5_0/1``), each with whether it was named explicitly.

    With ``wanted`` None every port is selected, none explicitly. Returns the selection and the
    names that matched no port.
    """
    if not wanted:
        return [(p, False) for p in ports], []
    chosen: list[tuple[IbPort, bool]] = []
    missing: list[str] = []
    for name in wanted:
        ca, _, num = str(name).partition("/")
        hits = [p for p in ports if p.ca == ca and (not num or str(p.port) == num)]
        if not hits:
            missing.append(str(name))
        chosen.extend((p, True) for p in hits if all(p is not c for c, _ in chosen))
    return chosen, missing


def _layer_matches(port: IbPort, layer: str | None) -> bool:
    return layer is None or (port.link_layer or "").lower() == layer.lower()


def _auto_reference(facts: NodeFacts, table: dict[str, float], param: str) -> float:
    """The reference for this node's GPU family; MissingFacts (skip) when there is none."""
    try:
        gpus = need(facts, "gpus")
    except MissingFacts as exc:
        raise MissingFacts(f"{param} is auto but the GPU model is unknown ({exc}); set {param}") from exc
    family = ref.node_family(gpus)
    if family is None or family not in table:
        names = sorted({g.name or "unknown" for g in gpus})
        raise MissingFacts(f"no reference {param} for {', '.join(names) or 'no GPUs'}: set {param} in the profile")
    return table[family]


@check(
    "ib.ports_active",
    title="InfiniBand ports active",
    facts=("ib_ports",),
    params=(
        Param("ports", "list", None, "CA names or ca/port to check, e.g. [mlx5_0, mlx5_3/1] (None: all)"),
        Param("link_layer", "str", None, "only ports of this link layer, InfiniBand or Ethernet (None: any)"),
        Param("min_ports", "int", None, "at least this many ports must be Active"),
    ),
    doc=(
        "Verifies that every HCA port is Active with physical state LinkUp. Ports administratively Disabled "
        "are ignored unless named in `ports`. `Initializing` with `LinkUp` means the cable is fine but no "
        "subnet manager configured the port; `Down`/`Polling` means there is no link at all."
    ),
    remedy=(
        "Down/Polling: check the cable, transceiver and switch port (`mlxlink -d <ca>`). Initializing: start "
        "a subnet manager (opensm) or fix the fabric's SM. Then rerun ibstat."
    ),
)
def ib_ports_active(facts: NodeFacts, params: dict[str, Any]) -> Result:
    ports: list[IbPort] = need(facts, "ib_ports")
    chosen, missing = select_ports(ports, params.get("ports"))
    layer = params.get("link_layer")
    min_ports = params.get("min_ports")
    fails = [f"{name} not found" for name in missing]
    hints: list[str] = ["check the ports parameter against ibstat -l"] if missing else []
    unknown: list[str] = []
    active = 0
    considered = 0
    observed: dict[str, str] = {}
    evidence: list[str] = []  # the ibstat lines that show each fault, for reports
    not_counted: list[str] = []  # ports down but outside the check: named, so nobody misses them
    for port, explicit in chosen:
        down = (port.state or "").lower() not in ("active", "")
        if not _layer_matches(port, layer):
            if down:
                not_counted.append(f"{port_name(port)} {port.state} ({port.physical_state or 'unknown'})")
            continue
        if (port.physical_state or "").lower() == "disabled" and not explicit:
            # administratively off: not a fault unless the profile names the port
            not_counted.append(f"{port_name(port)} {port.state or 'unknown'} (Disabled)")
            continue
        considered += 1
        if port.state is None:
            unknown.append(port_name(port))
            continue
        if port.state.lower() == "active":
            active += 1
            continue
        phys = port.physical_state or "unknown physical state"
        observed[f"{port.ca}/{port.port}"] = f"{port.state} ({phys})"
        fails.append(f"{port_name(port)} is {port.state} ({phys})")
        evidence.append(f"ibstat: CA '{port.ca}' Port {port.port}: State: {port.state}; Physical state: {phys}")
        if port.state.lower() in ("initializing", "init", "armed") and phys.lower() == "linkup":
            hints.append(SM_HINT)
        else:
            hints.append(DOWN_HINT)
    expected: dict[str, Any] = {"state": "Active"}
    if min_ports is not None:
        expected["min_ports"] = int(min_ports)
        if active < int(min_ports):
            fails.append(f"{active} Active ports, expected at least {min_ports}")
            # Ports listed above already carry their cause (no SM, no link); blame cables only
            # when the shortfall is all there is.
            if not hints:
                hints.append(DOWN_HINT)
    if considered == 0 and not fails:
        what = f"{layer} ports" if layer else "InfiniBand ports"
        return result(
            "ib.ports_active",
            "fail",
            f"no {what} found ({len(ports)} ports in all)"
            + (f" (not counted: {join_limited(not_counted)})" if not_counted else ""),
            observed={"ports": len(ports)},
            expected=expected,
            hint="check that the HCA driver (mlx5_core, ib_core) is loaded and ibstat lists the CAs",
        )
    observed_out: dict[str, Any] = {"active": active, "considered": considered, **observed}
    aside = f" (not counted: {join_limited(not_counted)})" if not_counted else ""
    if not_counted:
        observed_out["not_counted"] = len(not_counted)
    if fails:
        failed = result(
            "ib.ports_active",
            "fail",
            join_limited(fails) + aside,
            observed=observed_out,
            expected=expected,
            hint="; ".join(dict.fromkeys(hints)),
        )
        failed.evidence = evidence or None
        return failed
    if unknown:
        return result(
            "ib.ports_active",
            "warn",
            f"state unknown for {', '.join(unknown)}{aside}",
            observed=observed_out,
            expected=expected,
            hint="recapture ibstat",
        )
    return result("ib.ports_active", "pass", f"{active} ports Active{aside}", observed=observed_out, expected=expected)


@check(
    "ib.rate",
    title="InfiniBand port rate",
    facts=("ib_ports", "gpus"),
    params=(
        Param(
            "min_gbps",
            "float",
            ref.AUTO,
            "lowest acceptable port rate in Gb/s ('auto': 400 NDR on H100/H200 nodes, 200 HDR on A100)",
        ),
        Param("link_layer", "str", "InfiniBand", "link layer of the ports to check (Ethernet for RoCE)"),
    ),
    doc=(
        "Verifies that every Active port of the compute fabric links at full rate. A port that trained at a "
        "lower rate (a bad cable or transceiver, a mismatched switch) is Active yet slows every collective "
        "that crosses it."
    ),
    remedy="Replace the cable or transceiver of the slow port; check the switch port's speed settings (`mlxlink`).",
)
def ib_rate(facts: NodeFacts, params: dict[str, Any]) -> Result:
    ports: list[IbPort] = need(facts, "ib_ports")
    layer = params.get("link_layer") or None
    min_gbps = params.get("min_gbps", ref.AUTO)
    minimum = _auto_reference(facts, ref.IB_RATE_GBPS, "min_gbps") if min_gbps in (None, ref.AUTO) else float(min_gbps)
    active = [p for p in ports if _layer_matches(p, layer) and (p.state or "").lower() == "active"]
    # Ports that are not Active have no rate to judge (ib.ports_active judges them), but a pass must
    # not hide them: they are named beside the verdict.
    down = [
        f"{port_name(p)} {p.state or 'unknown'}"
        for p in ports
        if _layer_matches(p, layer) and (p.state or "").lower() != "active"
    ]
    aside = f" (not measured: {join_limited(down)})" if down else ""
    if not active:
        return result(
            "ib.rate",
            "skip",
            f"no Active {layer + ' ' if layer else ''}ports to measure{aside}",
            expected=f">= {minimum:g} Gb/s",
            hint="see ib.ports_active; for RoCE set link_layer: Ethernet",
        )
    # A NaN rate compares False with every limit: it is unknown, never fast enough.
    slow = [p for p in active if reading(p.rate_gbps) is not None and p.rate_gbps < minimum]  # type: ignore[operator]
    unknown = [port_name(p) for p in active if reading(p.rate_gbps) is None]
    observed = {f"{p.ca}/{p.port}": p.rate_gbps for p in active}
    expected = f">= {minimum:g} Gb/s"
    if slow:
        message = join_limited([f"{port_name(p)} at {p.rate_gbps:g} Gb/s" for p in slow])
        return result(
            "ib.rate",
            "fail",
            f"{message} (expected >= {minimum:g}){aside}",
            observed=observed,
            expected=expected,
            hint="replace the slow port's cable or transceiver; check the switch port (mlxlink -d <ca>)",
        )
    if len(unknown) == len(active):
        return result(
            "ib.rate", "skip", f"rate unknown for {', '.join(unknown)}", expected=expected, hint="recapture ibstat"
        )
    if unknown:
        return result(
            "ib.rate",
            "warn",
            f"rate unknown for {', '.join(unknown)}{aside}",
            observed=observed,
            expected=expected,
            hint="recapture ibstat",
        )
    return result(
        "ib.rate",
        "pass",
        f"{len(active)} Active ports at >= {minimum:g} Gb/s{aside}",
        observed=observed,
        expected=expected,
    )


@check(
    "ib.link_layer",
    title="HCA link layer",
    facts=("ib_ports",),
    params=(
        Param("expected", "str", "InfiniBand", "link layer every selected port must have (InfiniBand or Ethernet)"),
        Param("ports", "list", None, "CA names or ca/port to check (None: all), to leave out a front-end NIC"),
        Param(
            "min_ports",
            "int",
            None,
            "with ports unset: pass when at least this many ports have the expected layer, naming the others "
            "(front-end or storage NICs) without failing them (None: every port must match)",
        ),
    ),
    doc=(
        "Verifies that the compute ports run the expected link layer. A ConnectX port set to Ethernet on an "
        "InfiniBand fabric (or the reverse) never comes up on the fabric; mlxconfig LINK_TYPE decides it."
    ),
    remedy="`mlxconfig -d <device> set LINK_TYPE_P1=1` (1 = InfiniBand, 2 = Ethernet), then reboot or reset the HCA.",
)
def ib_link_layer(facts: NodeFacts, params: dict[str, Any]) -> Result:
    ports: list[IbPort] = need(facts, "ib_ports")
    expected = str(params.get("expected") or "InfiniBand")
    chosen, missing = select_ports(ports, params.get("ports"))
    wrong = [p for p, _ in chosen if p.link_layer is not None and p.link_layer.lower() != expected.lower()]
    unknown = [port_name(p) for p, _ in chosen if p.link_layer is None]
    observed = {f"{p.ca}/{p.port}": p.link_layer for p, _ in chosen}
    fails = [f"{name} not found" for name in missing] + [f"{port_name(p)} is {p.link_layer}" for p in wrong]
    min_ports = params.get("min_ports")
    others = ""
    if min_ports is not None and not params.get("ports"):
        matching = sum(1 for p, _ in chosen if (p.link_layer or "").lower() == expected.lower())
        if matching >= int(min_ports):
            # Enough compute ports: the rest are other NICs (DGX/HGX nodes carry Ethernet storage ports).
            others = "; other ports: " + ", ".join(f"{port_name(p)} {p.link_layer}" for p in wrong) if wrong else ""
            fails = []
            unknown = []
            chosen = [(p, e) for p, e in chosen if (p.link_layer or "").lower() == expected.lower()]
        else:
            shortfall = f"{matching} {expected} ports, expected at least {min_ports}"
            # A suffix after the odd ports, so the limit on listed ports never hides the count.
            others = f" ({shortfall})" if fails else ""
            fails = fails or [shortfall]
    if fails:
        return result(
            "ib.link_layer",
            "fail",
            join_limited(fails) + others,
            observed=observed,
            expected=expected,
            hint=f"set the port type with mlxconfig -d <device> set LINK_TYPE_P1="
            f"{1 if expected.lower() == 'infiniband' else 2}, then reboot; or leave the port out with "
            "the ports parameter if it is a front-end NIC",
        )
    if not chosen or len(unknown) == len(chosen):
        return result(
            "ib.link_layer",
            "skip",
            "no port reports its link layer" if chosen else "no ports",
            expected=expected,
            hint="recapture ibstat",
        )
    if unknown:
        return result(
            "ib.link_layer",
            "warn",
            f"link layer unknown for {', '.join(unknown)}",
            observed=observed,
            expected=expected,
            hint="recapture ibstat",
        )
    return result(
        "ib.link_layer", "pass", f"{len(chosen)} ports are {expected}{others}", observed=observed, expected=expected
    )


PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
# DMA-BUF for RDMA (ib_umem_dmabuf, ibv_reg_dmabuf_mr) entered the kernel in 5.12; NVIDIA's GPU Operator
# documentation lists that, the open GPU kernel modules and a network stack with DMA-BUF support as what
# GPUDirect RDMA through DMA-BUF needs.
DMABUF_MIN_KERNEL = (5, 12)
OFED_UNIT = "openibd.service"  # installed by MLNX_OFED / DOCA-OFED, absent with the inbox stack


def dmabuf_capable(facts: NodeFacts) -> tuple[bool | None, list[str]]:
    """Whether the node can give GPUDirect RDMA through DMA-BUF: (verdict, what was seen or is missing).

    True: open kernel modules, a kernel at least 5.12 and the inbox RDMA stack. False: the module or the
    kernel says no. None: unknown, or an MLNX_OFED stack whose DMA-BUF support only NCCL's log can show.
    """
    seen: list[str] = []
    missing: list[str] = []
    verdict: bool | None = True
    driver = facts.driver
    open_module = driver.open_kernel_module if driver is not None else None
    if open_module is None:
        verdict = None
        missing.append("kernel module flavour unknown (no /proc/driver/nvidia/version)")
    elif open_module:
        seen.append("open kernel modules")
    else:
        verdict = False
        missing.append("proprietary kernel module (DMA-BUF needs the open modules)")
    release, _ = kernel_of(facts.uname)
    head = re.match(r"(\d+)\.(\d+)", release or "")
    numbers = (int(head.group(1)), int(head.group(2))) if head else ()
    if len(numbers) < 2:
        if verdict is not False:
            verdict = None
        missing.append("kernel release unknown (no uname -a)")
    elif numbers[:2] < DMABUF_MIN_KERNEL:
        verdict = False
        missing.append(f"kernel {release} is older than 5.12")
    else:
        seen.append(f"kernel {release}")
    # The inbox RDMA stack of a 5.12+ kernel registers DMA-BUF memory; whether an MLNX_OFED/DOCA-OFED build
    # (openibd) does depends on its version, which only NCCL's own log then shows.
    ofed = next((s for s in facts.services or [] if s.name == OFED_UNIT), None)
    if facts.services is None:
        verdict = None if verdict else verdict
        missing.append("RDMA stack unknown (no services captured)")
    elif ofed is not None and (ofed.load_state or "loaded") != "not-found":
        verdict = None if verdict else verdict
        missing.append("MLNX_OFED (openibd) stack: NCCL_DEBUG=INFO shows whether it registers DMA-BUF")
    else:
        seen.append("the inbox RDMA stack")
    return verdict, seen if verdict else missing


def _gdr_summary(facts: NodeFacts) -> tuple[list[str], str | None]:
    """NCCL's own word from an NCCL_DEBUG=INFO log: its GPU Direct RDMA paths and NCCL_DMABUF_ENABLE."""
    if facts.nccl is None:
        return [], None
    return list(facts.nccl.debug.gdr_paths), facts.nccl.debug.dmabuf_enable


@check(
    "ib.peermem",
    title="GPUDirect RDMA",
    facts=("modules", "driver", "uname", "nccl"),
    doc=(
        "Verifies that the HCA can read and write GPU memory directly (GPUDirect RDMA), through either "
        "kernel path NVIDIA supports: DMA-BUF, which NVIDIA's GPU Operator documentation recommends "
        "(open GPU kernel modules, Linux 5.12 or later, a network stack with DMA-BUF support; NCCL then "
        "logs 'GPU Direct RDMA (DMABUF) enabled'), or the legacy nvidia_peermem module (shipped with the "
        "driver since R470; older nv_peer_mem). The result names the path. Without either NCCL moves "
        "inter-node traffic through host memory and loses much of its bandwidth (no GDRDMA in its logs)."
    ),
    remedy=(
        "On open kernel modules with a 5.12+ kernel let NCCL use DMA-BUF (do not set NCCL_DMABUF_ENABLE=0). "
        "Otherwise `modprobe nvidia_peermem` (after the MLNX_OFED/inbox RDMA stack is loaded) and persist it "
        "in /etc/modules-load.d/."
    ),
)
def ib_peermem(facts: NodeFacts, params: dict[str, Any]) -> Result:
    expected = "DMA-BUF or nvidia_peermem"
    modules = facts.modules
    loaded = [m.name for m in modules or [] if m.name in PEERMEM_MODULES]
    nccl_paths, dmabuf_env = _gdr_summary(facts)
    capable, why = dmabuf_capable(facts)
    if loaded:
        also = "; DMA-BUF is available too and NVIDIA recommends it" if capable else ""
        return result(
            "ib.peermem",
            "pass",
            f"GPUDirect RDMA through {loaded[0]} (loaded){also}",
            observed=loaded[0],
            expected=expected,
        )
    if "DMABUF" in nccl_paths:
        return result(
            "ib.peermem",
            "pass",
            "GPUDirect RDMA through DMA-BUF: NCCL logs 'GPU Direct RDMA (DMABUF) enabled'",
            observed="DMA-BUF",
            expected=expected,
        )
    if modules is None and "nvidia-peermem" in nccl_paths:
        return result(
            "ib.peermem",
            "pass",
            "GPUDirect RDMA through nvidia_peermem: NCCL logs 'GPU Direct RDMA (nvidia-peermem) enabled'",
            observed="nvidia_peermem",
            expected=expected,
        )
    if capable and dmabuf_env != "0":
        return result(
            "ib.peermem",
            "pass",
            f"GPUDirect RDMA through DMA-BUF: {', '.join(why)} (nvidia_peermem is not needed)",
            observed="DMA-BUF",
            expected=expected,
        )
    if modules is None:
        need(facts, "modules")  # skips (or errors) without the module list: nothing shows either path
    if capable and dmabuf_env == "0":
        return result(
            "ib.peermem",
            "fail",
            "nvidia_peermem is not loaded and NCCL_DMABUF_ENABLE=0 turns NCCL's DMA-BUF path off",
            observed=None,
            expected=expected,
            hint="remove NCCL_DMABUF_ENABLE=0 (environment, /etc/nccl.conf) or modprobe nvidia_peermem",
        )
    return result(
        "ib.peermem",
        "fail",
        f"no GPUDirect RDMA path: neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF "
        f"{'is unavailable' if capable is False else 'is not shown'} ({'; '.join(why)})",
        observed=None,
        expected=expected,
        hint=(
            "modprobe nvidia_peermem (load the RDMA stack first) and add it to /etc/modules-load.d/; "
            "with the open kernel modules and a 5.12+ kernel, DMA-BUF needs no module"
        ),
    )


# perftest divides bytes/s by 0x100000 for MB/sec and by 125000000 for Gb/sec: its MB is 2**20 bytes.
@check(
    "ib.write_bw",
    title="RDMA write bandwidth",
    facts=("ib_write_bw", "gpus"),
    params=(
        Param(
            "min_gbps",
            "float",
            ref.AUTO,
            "lowest acceptable BW average in Gb/s ('auto': A100 180, H100 380, H200 360; GPUDirect, 8 MB)",
        ),
    ),
    doc=(
        "Compares the BW average of a perftest ib_write_bw run at its largest message size with the port's "
        "reference (MB/sec output, 2^20 bytes per MB in perftest, is converted to Gb/s). It measures one HCA "
        "and its path to a peer node, "
        "catching slow cables, PCIe downshifts and missing GPUDirect."
    ),
    remedy=(
        "Check the port's rate (ib.rate), the HCA's PCIe link, and GPUDirect (ib.peermem); rerun with "
        "--report_gbits and 8 MB messages (-s 8388608) against a known-good peer."
    ),
)
def ib_write_bw(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: PerftestRun = need(facts, "ib_write_bw")
    if not run.rows:
        return result(
            "ib.write_bw",
            "error",
            "ib_write_bw printed no results (did the server side run?)",
            hint="start ib_write_bw on the peer first, then the client; capture the client side",
        )
    average = run.average_gbits()
    if average is None:
        return result(
            "ib.write_bw",
            "error",
            "ib_write_bw printed no BW average at its largest size",
            hint="recapture the client-side output of ib_write_bw --report_gbits",
        )
    min_gbps = params.get("min_gbps", ref.AUTO)
    minimum = (
        _auto_reference(facts, ref.IB_WRITE_BW_GBITS, "min_gbps") if min_gbps in (None, ref.AUTO) else float(min_gbps)
    )
    largest = max(r.size_bytes for r in run.rows)
    device = f" on {run.device}" if run.device else ""
    observed = {"gbits": round(average, 2), "size_bytes": largest}
    expected = f">= {minimum:g} Gb/s"
    if average >= minimum:
        return result(
            "ib.write_bw", "pass", f"{average:.2f} Gb/s{device} at {largest} B", observed=observed, expected=expected
        )
    message = f"{average:.2f} Gb/s{device} at {largest} B, expected >= {minimum:g}"
    if largest < 1 << 20:
        # Small messages cannot reach line rate: this run says nothing about the link.
        return result(
            "ib.write_bw",
            "warn",
            message + " (largest message too small to measure bandwidth)",
            observed=observed,
            expected=expected,
            hint="rerun with -s 8388608 (8 MB) or -a --report_gbits",
        )
    return result(
        "ib.write_bw",
        "fail",
        message,
        observed=observed,
        expected=expected,
        hint="check ib.rate, the HCA's PCIe link (lspci -vv LnkSta) and ib.peermem; rerun against a "
        "known-good peer to tell which side is slow",
    )
