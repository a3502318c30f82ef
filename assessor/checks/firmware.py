"""Firmware against the fleet's baseline, and a link's signal quality (``mlxlink``).

``firmware.baseline`` compares what each component *runs* with the versions the fleet was qualified on: the
GPUs' VBIOS (NVML, ``nvidia-smi -q``), the HCAs' firmware (``ibstat``: the running image, so an image burned
but not activated is still the old one) and the transceivers' firmware (``mlxlink -m``). Every deviating
component is named; a component whose version is unknown is never a pass.

``cable.ber`` reads ``mlxlink -c`` per port: the effective (post-FEC) BER against the ibdiagnet threshold,
errors FEC could not correct, link-down and link-error-recovery counts, optionally the raw (pre-FEC) BER, and
mlxlink's own troubleshooting verdict. It names the port and the module in its cage (vendor part and serial
number), which is what a technician replaces.
"""

from __future__ import annotations

from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.common import join_limited
from assessor.checks.result import Result
from assessor.facts import Gpu, IbPort, LinkPhy, NodeFacts

_KINDS = ("vbios", "hca", "transceiver")


def _baseline(params: dict[str, Any]) -> dict[str, str]:
    base = {k: params.get(k) for k in _KINDS}
    return {k: str(v) for k, v in base.items() if v not in (None, "")}


def _gpu_rows(facts: NodeFacts) -> list[tuple[str, str | None]]:
    gpus: list[Gpu] = need(facts, "gpus")
    return [(f"GPU {g.index}" + (f" ({g.bus_id})" if g.bus_id else ""), g.vbios) for g in gpus]


def _hca_rows(facts: NodeFacts) -> list[tuple[str, str | None]]:
    if facts.ib_ports is None and facts.adapter_firmware:
        # no ibstat: mlxfwmanager's own view, its running row where an image waits on flash
        return [(a.device or f"adapter {a.base_guid}", a.running or a.firmware) for a in facts.adapter_firmware]
    ports: list[IbPort] = need(facts, "ib_ports")
    seen: dict[str, str | None] = {}
    for p in ports:
        seen.setdefault(p.ca, p.firmware)
    return list(seen.items())


def _on_flash(facts: NodeFacts) -> dict[str, str]:
    """HCA name -> the firmware mlxfwmanager finds on its flash, where that is not the one running (matched by
    node GUID: mlxfwmanager names devices by mst device or PCI address, ibstat by RDMA name)."""
    flashed = {
        (a.base_guid or "").lower().removeprefix("0x"): a.firmware
        for a in facts.adapter_firmware or []
        if a.running and a.firmware and a.running != a.firmware
    }
    out: dict[str, str] = {}
    for p in facts.ib_ports or []:
        guid = (p.node_guid or "").lower().removeprefix("0x")
        if flashed.get(guid):
            out[p.ca] = str(flashed[guid])
    return out


def _transceiver_rows(facts: NodeFacts) -> list[tuple[str, str | None]]:
    links: list[LinkPhy] = need(facts, "link_phy")
    rows = []
    for link in links:
        where = f"{link.device or 'a port'} port {link.port or 1}"
        module = f" module {link.module_part_number} SN {link.module_serial}" if link.module_serial else ""
        rows.append((where + module, link.module_firmware))
    return rows


_ROWS = {"vbios": _gpu_rows, "hca": _hca_rows, "transceiver": _transceiver_rows}
_WHAT = {"vbios": "VBIOS", "hca": "HCA firmware", "transceiver": "transceiver firmware"}


def _node_majority(facts: NodeFacts) -> tuple[dict[str, str], str]:
    """Without a baseline: for each kind captured, the version more than half of its components run (an HGX
    node's eight GPUs and eight adapters are one model each). A kind with no such version is not compared."""
    base: dict[str, str] = {}
    why: list[str] = []
    for kind in _KINDS:
        try:
            versions = [v for _, v in _ROWS[kind](facts) if v not in (None, "", "N/A")]
        except MissingFacts:
            continue
        if not versions:
            why.append(f"no {_WHAT[kind]} version")
            continue
        top = max(sorted(set(versions)), key=versions.count)
        if versions.count(top) * 2 > len(versions):
            base[kind] = str(top)
        else:
            why.append(f"no {_WHAT[kind]} version most components run")
    return base, "; ".join(why) or "no GPU, adapter or transceiver versions captured"


@check(
    "firmware.baseline",
    title="Firmware matches the fleet baseline",
    facts=("gpus", "ib_ports", "link_phy", "adapter_firmware"),
    params=(
        Param("vbios", "str", None, "the GPUs' VBIOS version of the baseline (96.00.74.00.01); None: not compared"),
        Param("hca", "str", None, "the HCAs' running firmware of the baseline (28.41.1000); None: not compared"),
        Param("transceiver", "str", None, "the transceivers' firmware (mlxlink -m FW Version); None: not compared"),
    ),
    doc=(
        "Verifies that every GPU's VBIOS, every HCA's running firmware (ibstat: an image burned but not yet "
        "activated still runs the old one) and every transceiver's firmware (mlxlink -m) is the fleet's "
        "baseline version. Each deviating component is named; a component whose version is unknown (N/A, "
        "not in the snapshot) is an error, never a pass. Where mlxfwmanager shows another image on an adapter's "
        "flash than the one running, the result says a firmware reset is what is missing. Given no version at all, "
        "the baseline is the node's own: for each kind, the version most of its components run, so the odd one out "
        "is named."
    ),
    remedy=(
        "HCA: burn the baseline image (`flint -d DEV -i IMAGE burn` or `mlxfwmanager -u -i IMAGE`) and activate "
        "it (`mlxfwreset -d DEV reset` or a reboot). GPU VBIOS and transceivers: update through the vendor's "
        "firmware package (HGX: the baseboard's BMC) or replace the module; raise a ticket when that is not "
        "yours to do."
    ),
)
def firmware_baseline(facts: NodeFacts, params: dict[str, Any]) -> Result:
    base = _baseline(params)
    auto = not base
    if auto:
        base, why = _node_majority(facts)
        if not base:
            raise MissingFacts(f"no baseline given, and none of the node's own to compare with ({why})")
    deviating: list[str] = []
    unknown: list[str] = []
    missing: list[str] = []
    observed: dict[str, str | None] = {}
    flashed = _on_flash(facts)
    for kind, wanted in base.items():
        try:
            rows = _ROWS[kind](facts)
        except MissingFacts as exc:
            missing.append(f"{_WHAT[kind]}: {exc}")
            continue
        if not rows:
            missing.append(f"{_WHAT[kind]}: no component in the snapshot")
        for name, version in rows:
            observed[name] = version
            if version in (None, "", "N/A"):
                unknown.append(f"{name} {_WHAT[kind]} unknown")
            elif version != wanted:
                waiting = flashed.get(name) if kind == "hca" else None
                pending = f" ({waiting} on flash, not loaded: mlxfwreset or a reboot)" if waiting else ""
                deviating.append(f"{name} {_WHAT[kind]} {version}{pending}")
    expected = ", ".join(f"{_WHAT[k]} {v}" for k, v in base.items()) + (
        " (no baseline given: what most of the node's components of each kind run)" if auto else ""
    )
    if deviating:
        return result(
            "firmware.baseline",
            "fail",
            f"off the baseline: {join_limited(deviating)}"
            + (f"; also unknown: {join_limited(unknown)}" if unknown else ""),
            observed=observed,
            expected=expected,
            hint="HCA: burn the baseline image and activate it (mlxfwreset or reboot); VBIOS or transceiver: "
            "a ticket for the firmware update",
        )
    if unknown or missing:
        return result(
            "firmware.baseline",
            "error",
            f"cannot confirm the baseline: {join_limited(unknown + missing)}",
            observed=observed,
            expected=expected,
            hint="capture nvidia-smi -q, ibstat and mlxlink -m for every component",
        )
    return result(
        "firmware.baseline",
        "pass",
        f"{len(observed)} components at the baseline ({expected})",
        observed=observed,
        expected=expected,
    )


def _fmt(ber: float | None) -> str:
    return "N/A" if ber is None else f"{ber:.0e}".replace("e-0", "E-").replace("e-", "E-").replace("e+00", "")


def _port(link: LinkPhy) -> str:
    return f"{link.device or 'a port'} port {link.port or 1}"


def _module(link: LinkPhy) -> str:
    parts = [p for p in (link.module_vendor, link.module_part_number) if p]
    serial = f" SN {link.module_serial}" if link.module_serial else ""
    return f" (module {' '.join(parts)}{serial})" if parts or serial else ""


@check(
    "cable.ber",
    title="Link signal quality (BER)",
    facts=("link_phy",),
    params=(
        Param(
            "max_effective_ber",
            "float",
            ref.AUTO,
            "highest effective (post-FEC) BER ('auto': 1e-12, ibdiagnet's default BER threshold)",
        ),
        Param("max_raw_ber", "float", None, "highest raw (pre-FEC) BER the site accepts; None: not judged"),
        Param("max_link_down", "int", 0, "link-down events allowed since the counters were cleared"),
        Param("max_link_recovery", "int", 0, "link error recoveries allowed since the counters were cleared"),
        Param("ports", "list", None, "devices to judge (mlx5_3 as -d named it); None: every port in the capture"),
    ),
    doc=(
        "Verifies each port's physical layer as mlxlink -c counts it: an effective (post-FEC) BER at or below "
        "the threshold and no errors FEC could not correct, no link-down or link-error-recovery events, "
        "mlxlink's troubleshooting opcode 0, and (when given) a raw BER below the site's limit. A link can be "
        "Active at full rate and still fail here. The counters are read from a fresh run: clearing them does "
        "not mend a marginal cable, which shows its errors again within seconds. Names the port and its module."
    ),
    remedy=(
        "Clean and reseat the cable at both ends; if the BER stays high, replace the cable or the transceiver "
        "named in mlxlink -m (not the HCA), then check the switch port."
    ),
)
def cable_ber(facts: NodeFacts, params: dict[str, Any]) -> Result:
    links: list[LinkPhy] = need(facts, "link_phy")
    wanted = params.get("ports")
    if wanted:
        links = [link for link in links if link.device in wanted]
        if not links:
            raise MissingFacts(f"no mlxlink run for {', '.join(wanted)}")
    limit = params.get("max_effective_ber", ref.AUTO)
    effective_max = ref.IB_EFFECTIVE_BER_MAX if limit in (None, ref.AUTO) else float(limit)
    raw_max = params.get("max_raw_ber")
    down_max = int(params.get("max_link_down") or 0)
    recovery_max = int(params.get("max_link_recovery") or 0)
    bad: list[str] = []
    unknown: list[str] = []
    observed: dict[str, dict[str, Any]] = {}
    for link in links:
        name = _port(link)
        observed[name] = {
            "effective_ber": link.effective_ber,
            "effective_errors": link.effective_errors,
            "raw_ber": link.raw_ber,
            "link_down": link.link_down,
            "link_recovery": link.link_recovery,
            "status_opcode": link.status_opcode,
            "module_serial": link.module_serial,
        }
        if link.effective_ber is None and link.effective_errors is None:
            unknown.append(f"{name}: no counters (run mlxlink -c)")
            continue
        why = []
        if link.effective_ber is not None and link.effective_ber > effective_max:
            why.append(f"effective BER {_fmt(link.effective_ber)}")
        if link.effective_errors:
            why.append(f"{link.effective_errors} uncorrected errors")
        if raw_max is not None and link.raw_ber is not None and link.raw_ber > float(raw_max):
            why.append(f"raw BER {_fmt(link.raw_ber)}")
        if link.link_down is not None and link.link_down > down_max:
            why.append(f"{link.link_down} link down")
        if link.link_recovery is not None and link.link_recovery > recovery_max:
            why.append(f"{link.link_recovery} link error recoveries")
        if link.status_opcode not in (None, 0):
            why.append(f"mlxlink: {link.recommendation or f'opcode {link.status_opcode}'}")
        if why:
            bad.append(f"{name}{_module(link)}: {', '.join(why)}")
    expected = f"effective BER <= {_fmt(effective_max)}, no uncorrected errors, no link down or recovery" + (
        f", raw BER <= {_fmt(float(raw_max))}" if raw_max is not None else ""
    )
    if bad:
        return result(
            "cable.ber",
            "fail",
            join_limited(bad),
            observed=observed,
            expected=expected,
            hint="reseat or replace the cable/transceiver of that port (mlxlink -m names it), not the HCA",
        )
    if unknown and len(unknown) == len(links):
        return result("cable.ber", "skip", join_limited(unknown), expected=expected, hint="capture mlxlink -c")
    if unknown:
        return result("cable.ber", "warn", join_limited(unknown), observed=observed, expected=expected)
    return result(
        "cable.ber",
        "pass",
        f"{len(links)} ports clean ({expected})",
        observed=observed,
        expected=expected,
    )
