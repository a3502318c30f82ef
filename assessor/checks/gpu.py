"""GPU checks: count, model, persistence, ECC, row remapping, PCIe, throttling, heat, Xid, NVLink."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.common import gpu_label, join_limited, labels, need_gpus, reading, verdict
from assessor.checks.fabric import find_service, service_problem
from assessor.checks.result import Result, Status
from assessor.facts import Gpu, KernelEvent, NodeFacts, NvLink, Topology
from assessor.pci import bus_key

PERSISTENCED = "nvidia-persistenced"


def _service_active(facts: NodeFacts, name: str) -> bool | None:
    """Whether systemd unit ``name`` is active; None when services were not captured or it is absent."""
    for service in facts.services or ():
        if service.name in (name, f"{name}.service"):
            return service.active_state == "active"
    return None


@check(
    "gpu.count",
    title="GPU count",
    facts=("gpus",),
    params=(Param("expected", "int", None, "number of GPUs the node must show (None: at least one)"),),
    doc=(
        "Counts the GPUs the driver sees. A GPU that fell off the bus (Xid 79), failed to initialise or was "
        "never seated disappears from the list, so a short count is the first sign of a hardware fault. An "
        "output cut or filtered to fewer GPUs (`nvidia-smi -q -i 0`, a paste cut after GPU 0) is counted by its "
        "own 'Attached GPUs' header, unless it says a GPU's handle could not be read (a lost GPU)."
    ),
    remedy=(
        "Compare `lspci -d 10de:` with `nvidia-smi -L`; read dmesg for Xid 79 or 'fallen off the bus'. "
        "Reboot once; if the GPU is still missing, reseat or RMA it."
    ),
)
def gpu_count(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need(facts, "gpus")
    expected = params.get("expected")
    count = len(gpus)
    # A cut or filtered output (-q -i 0, a paste cut after GPU 0) lists fewer GPUs than its own header
    # counts; the header is the driver's count.
    listed = ""
    if facts.gpus_attached is not None and facts.gpus_attached > count:
        listed = f" (the driver's count: the output lists {count}, the rest was cut or filtered)"
        count = facts.gpus_attached
    hint = "compare lspci -d 10de: with nvidia-smi -L, look for Xid 79 in dmesg (gpu.xid); reboot, then reseat or RMA"
    if count == 0:
        return result("gpu.count", "fail", "no GPUs found", observed=0, expected=expected or ">= 1", hint=hint)
    # NVML still counts a GPU that fell off the bus, but nothing about it can be read.
    silent = [g.index for g in gpus if g.name is None and g.uuid is None and g.bus_id is None]
    if silent:
        why = facts.problems.get("gpus")
        return result(
            "gpu.count",
            "fail",
            f"{count - len(silent)} of {count} GPUs answer; GPU {', '.join(map(str, silent))} does not"
            + (f" ({why})" if why else ""),
            observed=count - len(silent),
            expected=int(expected) if expected is not None else count,
            hint=hint,
        )
    if expected is not None and count != int(expected):
        seen = f"indices {', '.join(str(g.index) for g in gpus)}" if not listed else listed.strip(" ()")
        return result(
            "gpu.count",
            "fail",
            f"found {count} GPUs ({seen}), expected {expected}",
            observed=count,
            expected=int(expected),
            hint=hint,
        )
    return result(
        "gpu.count",
        "pass",
        f"{count} GPUs{listed}",
        observed=count,
        expected=int(expected) if expected is not None else ">= 1",
    )


@check(
    "gpu.model",
    title="GPU model",
    facts=("gpus",),
    params=(Param("expected", "str", None, "substring every GPU name must contain, case-insensitive, e.g. H100"),),
    doc=(
        "Verifies that every GPU is the same model, and the expected one when a profile names it. A mixed node "
        "runs collectives at the speed of its slowest GPU and breaks profiles' reference numbers."
    ),
    remedy="Replace the odd GPU, or use the profile written for this hardware.",
)
def gpu_model(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need_gpus(facts)
    expected = params.get("expected")
    named = [g for g in gpus if g.name]
    unknown = [gpu_label(g) for g in gpus if not g.name]
    by_name: dict[str, list[int]] = {}
    for g in named:
        by_name.setdefault(str(g.name), []).append(g.index)
    fails: list[str] = []
    if len(by_name) > 1:
        fails.append("mixed models: " + ", ".join(f"GPU {_ranges(ix)} {name}" for name, ix in by_name.items()))
    if expected:
        for g in named:
            if str(expected).lower() not in str(g.name).lower():
                fails.append(f"{gpu_label(g)} is {g.name}, not {expected}")
    observed: Any = next(iter(by_name)) if len(by_name) == 1 else {n: ix for n, ix in by_name.items()}
    return verdict(
        "gpu.model",
        fails=fails,
        warns=[],
        unknown=unknown,
        checked=len(named),
        ok=f"{len(named)}x {observed}",
        what="GPU name",
        observed=observed,
        expected=expected,
        fail_hint="replace the odd GPU or assess the node with the profile for its hardware",
    )


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    out: list[str] = []
    start = prev = indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(out)


@check(
    "gpu.persistence",
    title="Persistence mode",
    facts=("gpus", "services"),
    doc=(
        "Verifies that each GPU stays initialised between jobs: persistence mode on as the GPU itself reports "
        "it (`nvidia-smi -pm 0` turns it off under a running nvidia-persistenced), or, where the GPUs do not "
        "report the mode, the nvidia-persistenced daemon active. Without it every CUDA start pays the driver "
        "load, and the GPU state (clocks, ECC settings applied at load) is torn down whenever the last client "
        "exits."
    ),
    remedy=(
        "Enable the daemon (`systemctl enable --now nvidia-persistenced`), or `nvidia-smi -pm 1` until reboot; "
        "a GPU reporting Disabled under a running daemon was turned off by hand: `nvidia-smi -pm 1`."
    ),
)
def gpu_persistence(facts: NodeFacts, params: dict[str, Any]) -> Result:
    daemon = _service_active(facts, PERSISTENCED)
    gpus = facts.gpus or []
    reported = [g for g in gpus if g.persistence_mode is not None]
    if daemon and not reported:
        # The GPUs say nothing (or were not captured): the running daemon is the evidence left.
        return result("gpu.persistence", "pass", "nvidia-persistenced is active", observed="nvidia-persistenced active")
    if daemon is False and not reported:
        # Likewise the other way: the daemon that keeps the GPUs initialised is down, and no GPU says otherwise.
        problem = service_problem(find_service(facts.services or [], PERSISTENCED), PERSISTENCED)
        return result(
            "gpu.persistence",
            "fail",
            f"{problem}, and no GPU reports its persistence mode"
            + ("" if facts.gpus is not None else " (no GPU list captured)"),
            observed=problem,
            expected="nvidia-persistenced active, or persistence mode on",
            hint="systemctl enable --now nvidia-persistenced; journalctl -u nvidia-persistenced says why it stopped",
        )
    gpus = need_gpus(facts)
    off = [gpu_label(g) for g in gpus if g.persistence_mode is False]
    unknown = [gpu_label(g) for g in gpus if g.persistence_mode is None]
    checked = len(gpus) - len(unknown)
    # The GPU's own report wins over the daemon: `nvidia-smi -pm 0` turns the mode off under a
    # running nvidia-persistenced, and the GPUs then lose their state like any other.
    daemon_note = " although nvidia-persistenced is active" if daemon else ""
    if daemon and unknown and not off:
        unknown = []  # the daemon keeps the silent GPUs initialised too
        checked = len(gpus)
    return verdict(
        "gpu.persistence",
        fails=[f"persistence mode off on {labels(off)}{daemon_note}"] if off else [],
        warns=[],
        unknown=unknown,
        checked=checked,
        ok=f"persistence mode on for {checked} GPUs",
        what="persistence mode",
        observed={"off": len(off), "on": checked - len(off)},
        expected="on",
        fail_hint="systemctl enable --now nvidia-persistenced (or nvidia-smi -pm 1 until reboot)",
    )


@check(
    "gpu.ecc_mode",
    title="ECC enabled",
    facts=("gpus",),
    doc=(
        "Verifies that ECC is enabled on every GPU and that no mode change is pending. Data-centre GPUs should "
        "never run with ECC off: memory errors would corrupt results silently."
    ),
    remedy="`nvidia-smi -i N -e 1`, then reset the GPU (`nvidia-smi -i N -r`) or reboot to apply the pending mode.",
)
def gpu_ecc_mode(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need_gpus(facts)
    fails, warns, unknown = [], [], []
    for g in gpus:
        if g.ecc_mode_current is None:
            unknown.append(gpu_label(g))
        elif not g.ecc_mode_current:
            pending = " (enabled pending: reset to apply)" if g.ecc_mode_pending else ""
            fails.append(f"ECC disabled on {gpu_label(g)}{pending}")
        elif g.ecc_mode_pending is False:
            warns.append(f"{gpu_label(g)}: ECC will turn off at the next reset (pending disabled)")
    checked = len(gpus) - len(unknown)
    return verdict(
        "gpu.ecc_mode",
        fails=fails,
        warns=warns,
        unknown=unknown,
        checked=checked,
        ok=f"ECC enabled on {checked} GPUs",
        what="ECC mode",
        observed={"disabled": len(fails), "pending_change": len(warns)},
        expected="enabled",
        fail_hint="nvidia-smi -i N -e 1, then nvidia-smi -i N -r (or reboot) to apply",
        warn_hint="the pending mode applies at the next GPU reset or reboot: set nvidia-smi -i N -e 1 to keep ECC on",
        unknown_hint="ECC mode is not reported: the GPU may not support ECC, or recapture nvidia-smi -q -x",
    )


@check(
    "gpu.ecc_errors",
    title="ECC error counters",
    facts=("gpus",),
    params=(
        Param(
            "max_corrected",
            "int",
            ref.ECC_MAX_CORRECTED,
            "volatile corrected errors at or above which a GPU warns (20M, Azure customTests)",
        ),
    ),
    doc=(
        "Reads the ECC counters: any volatile (since boot) uncorrectable error fails, a high corrected count "
        "warns, and uncorrectable errors in the aggregate (lifetime) counters warn. Uncorrectable errors kill "
        "jobs and mean memory rows are being remapped; a corrected storm is often the step before."
    ),
    remedy=(
        "Drain the node; reset the GPU to apply row remapping (see gpu.row_remap); run `dcgmi diag -r 3`. "
        "Repeated uncorrectable errors after a reset make the GPU an RMA candidate."
    ),
)
def gpu_ecc_errors(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need_gpus(facts)
    limit = int(params.get("max_corrected") or ref.ECC_MAX_CORRECTED)
    fails, warns, unknown = [], [], []
    observed: dict[str, dict[str, int]] = {}
    for g in gpus:
        if g.ecc_volatile_uncorrected is None and g.ecc_volatile_corrected is None:
            unknown.append(gpu_label(g))
            continue
        counts = {
            k: v
            for k, v in (
                ("volatile_uncorrected", g.ecc_volatile_uncorrected),
                ("volatile_corrected", g.ecc_volatile_corrected),
                ("aggregate_uncorrected", g.ecc_aggregate_uncorrected),
            )
            if v
        }
        if counts:
            observed[str(g.index)] = counts
        if g.ecc_volatile_uncorrected:
            fails.append(f"{gpu_label(g)}: {g.ecc_volatile_uncorrected} uncorrectable ECC errors since boot")
        if g.ecc_volatile_corrected is not None and g.ecc_volatile_corrected >= limit:
            warns.append(f"{gpu_label(g)}: {g.ecc_volatile_corrected} corrected ECC errors (limit {limit})")
        if g.ecc_aggregate_uncorrected:
            warns.append(f"{gpu_label(g)}: {g.ecc_aggregate_uncorrected} uncorrectable ECC errors in its lifetime")
    checked = len(gpus) - len(unknown)
    return verdict(
        "gpu.ecc_errors",
        fails=fails,
        warns=warns,
        unknown=unknown,
        checked=checked,
        ok=f"no uncorrectable ECC errors on {checked} GPUs",
        what="ECC counters",
        observed=observed or None,
        expected={"volatile_uncorrected": 0, "volatile_corrected": f"< {limit}"},
        fail_hint="drain the node, reset the GPU (nvidia-smi -i N -r) to apply row remapping, run dcgmi diag -r 3; "
        "RMA if uncorrectable errors return",
        warn_hint="watch the counters (nvidia-smi -q -d ECC); check gpu.row_remap and run dcgmi diag -r 3",
        unknown_hint="ECC counters not reported: ECC may be off (gpu.ecc_mode) or recapture nvidia-smi -q -x",
    )


@check(
    "gpu.row_remap",
    title="Row remapping",
    facts=("gpus",),
    doc=(
        "Reads the row remapper (A100, H100, H200): a pending remap means a GPU reset is needed before the "
        "spare row is used; a remap failure means the bank ran out of spare rows. Pre-Ampere GPUs retire "
        "pages instead and report nothing here."
    ),
    remedy="Pending: drain and reset the GPU (`nvidia-smi -i N -r`) or reboot. Failure: the GPU is an RMA candidate.",
    params=(Param("gpus", "list", None, "GPU indices to check (None: every GPU)"),),
)
def gpu_row_remap(facts: NodeFacts, params: dict[str, Any]) -> Result:
    every = need_gpus(facts)
    wanted = params.get("gpus")
    by_index = {g.index: g for g in every}
    chosen = sorted(by_index) if wanted is None else [int(i) for i in wanted]
    missing = [i for i in chosen if i not in by_index]
    gpus = [by_index[i] for i in chosen if i in by_index]
    fails = [f"GPU {i} not found" for i in missing]
    unknown: list[str] = []
    observed: dict[str, dict[str, Any]] = {}
    hints = ["check the gpus parameter against nvidia-smi -L"] if missing else []
    for g in gpus:
        if g.remap_failure is None and g.remap_pending is None:
            unknown.append(gpu_label(g))
            continue
        if g.remap_failure:
            fails.append(f"{gpu_label(g)}: row remapping failed (RMA candidate)")
            hints.append("a remap failure makes the GPU an RMA candidate: drain it and open a case with the vendor")
        if g.remap_pending:
            fails.append(f"{gpu_label(g)}: row remap pending (GPU reset needed)")
            hints.append("drain the GPU and reset it (nvidia-smi -i N -r) or reboot to apply the pending remap")
        if g.remap_failure or g.remap_pending or g.remap_uncorrectable:
            observed[str(g.index)] = {
                "pending": g.remap_pending,
                "failure": g.remap_failure,
                "uncorrectable_rows": g.remap_uncorrectable,
            }
    checked = len(gpus) - len(unknown)
    return verdict(
        "gpu.row_remap",
        fails=fails,
        warns=[],
        unknown=unknown,
        checked=checked,
        ok=f"no pending or failed row remaps on {checked} GPUs",
        what="row remapping",
        observed=observed or None,
        expected={"pending": False, "failure": False},
        fail_hint="; ".join(dict.fromkeys(hints)) or "",
        unknown_hint="row remapping is reported by A100/H100/H200 only (older GPUs retire pages instead)",
    )


@check(
    "gpu.pcie_link",
    title="PCIe link speed and width",
    facts=("gpus",),
    params=(
        Param("min_gen", "int", None, "lowest acceptable PCIe generation (None: the GPU's maximum)"),
        Param("min_width", "int", None, "lowest acceptable link width (None: the GPU's maximum)"),
        Param("idle_ok", "bool", True, "a generation downshift on an idle GPU warns instead of failing"),
    ),
    doc=(
        "Compares each GPU's current PCIe link with its maximum (Gen4 x16 on A100, Gen5 x16 on H100/H200). "
        "A narrow link (x8, x4) is a seating, riser or cable fault and always fails. The generation drops to "
        "Gen1 on an idle GPU to save power, so a low generation on an idle GPU only warns. Idle is what the "
        "driver's gpu_idle clock-event reason says, or what utilisation (5 % or less), the performance state "
        "(P5 or lower) and the power draw (under 30 % of the limit) say: a process holding memory clears the "
        "idle reason of a GPU that does nothing."
    ),
    remedy=(
        "Rerun under load to rule out idle downshift (e.g. during nccl-tests). A degraded width or a low "
        "generation under load: reseat the GPU or riser, check the slot's BIOS settings, then RMA."
    ),
)
def gpu_pcie_link(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need_gpus(facts)
    min_gen, min_width, idle_ok = params.get("min_gen"), params.get("min_width"), bool(params.get("idle_ok", True))
    fails, warns, unknown = [], [], []
    observed: dict[str, str] = {}
    for g in gpus:
        want_gen = int(min_gen) if min_gen is not None else g.pcie_gen_max
        want_width = int(min_width) if min_width is not None else g.pcie_width_max
        if g.pcie_gen_current is None or g.pcie_width_current is None or want_gen is None or want_width is None:
            unknown.append(gpu_label(g))
            continue
        link = f"Gen{g.pcie_gen_current} x{g.pcie_width_current}"
        if g.pcie_width_current < want_width:
            fails.append(f"{gpu_label(g)}: link {link}, width below x{want_width}")
            observed[str(g.index)] = link
        elif g.pcie_gen_current < want_gen:
            idle, why = gpu_idle(g)
            message = f"{gpu_label(g)}: link {link}, below Gen{want_gen}"
            observed[str(g.index)] = link
            if idle_ok and idle:
                warns.append(message + f" (idle GPU{why}: may be power-saving downshift)")
            else:
                fails.append(message + (f" under load{why}" if not idle else " on an idle GPU"))
    checked = len(gpus) - len(unknown)
    expected = {"gen": min_gen or "max", "width": min_width or "max"}
    return verdict(
        "gpu.pcie_link",
        fails=fails,
        warns=warns,
        unknown=unknown,
        checked=checked,
        ok=f"PCIe links at the expected speed and width on {checked} GPUs",
        what="PCIe link",
        observed=observed or None,
        expected=expected,
        fail_hint="reseat the GPU or riser and check the slot's BIOS link settings; RMA if it stays degraded",
        warn_hint="rerun the capture while the GPU is busy (e.g. during nccl-tests) to rule out idle downshift",
    )


# At or below these a GPU does no work: utilisation in percent, and power as a share of its limit.
IDLE_UTILIZATION_PCT = 5.0
IDLE_POWER_SHARE = 0.3
BUSY_UTILIZATION_PCT = 10.0


def gpu_idle(g: Gpu) -> tuple[bool, str]:
    """Whether the GPU is idle, and the readings that say so (``", P8, 0 % utilisation"``).

    The gpu_idle clock-event reason is the driver's own word, but a process that merely holds GPU memory
    clears it; utilisation, the performance state and the power draw say it as an engineer reads it. With
    none of them known the GPU counts as idle (a downshift warns rather than fails on no evidence).
    """
    reasons = g.throttle_reasons
    util = reading(g.utilization_gpu_pct)
    pstate = _pstate_number(g.performance_state)
    draw, limit = reading(g.power_draw_w), reading(g.power_limit_w)
    low_power = draw is not None and limit is not None and limit > 0 and draw <= limit * IDLE_POWER_SHARE
    readings = [
        x
        for x in (
            g.performance_state if pstate is not None else None,
            f"{util:g} % utilisation" if util is not None else None,
            f"{draw:g} W of {limit:g} W" if low_power and draw is not None and limit is not None else None,
        )
        if x
    ]
    why = f", {', '.join(readings)}" if readings else ""
    if reasons and "gpu_idle" in reasons:
        return True, why
    if util is not None and util >= BUSY_UTILIZATION_PCT:
        return False, why
    low_state = pstate is not None and pstate >= 5
    if util is not None and util <= IDLE_UTILIZATION_PCT and (low_state or low_power):
        return True, why
    if util is None and low_state:
        return True, why
    return reasons is None and util is None and pstate is None, why


def _pstate_number(state: str | None) -> int | None:
    match = re.fullmatch(r"P(\d{1,2})", (state or "").strip())
    return int(match.group(1)) if match else None


THROTTLE_HINTS = {
    "hw_slowdown": "HW slowdown: check power supplies and cooling, read nvidia-smi -q -d PERFORMANCE",
    "hw_thermal_slowdown": "HW thermal slowdown: check fans, airflow and inlet temperature",
    "hw_power_brake_slowdown": "power brake asserted: check the PSUs and the chassis power-brake signal",
    "sw_thermal_slowdown": "SW thermal slowdown: the GPU is near its limit; check inlet temperature and airflow",
}


@check(
    "gpu.throttle",
    title="Clock throttling",
    facts=("gpus",),
    params=(
        Param("fail_on", "list", list(ref.THROTTLE_FAIL), "throttle reasons that fail (NVML names)"),
        Param("warn_on", "list", list(ref.THROTTLE_WARN), "throttle reasons that warn"),
    ),
    doc=(
        "Reads each GPU's active clock-throttle reasons. Hardware slowdown (0x8), HW thermal (0x40) and power "
        "brake (0x80) mean the board is protecting itself from heat or a power fault and fail; SW thermal "
        "(0x20) warns. Idle, application clocks, SW power cap and sync boost are normal."
    ),
    remedy="Fix the cause named in the hint (cooling, power supply, power brake), then recapture under load.",
)
def gpu_throttle(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need_gpus(facts)
    fail_on = set(params.get("fail_on") or ())
    warn_on = set(params.get("warn_on") or ())
    fails, warns, unknown = [], [], []
    seen: set[str] = set()
    observed: dict[str, list[str]] = {}
    for g in gpus:
        if g.throttle_reasons is None:
            unknown.append(gpu_label(g))
            continue
        bad = [r for r in g.throttle_reasons if r in fail_on]
        soft = [r for r in g.throttle_reasons if r in warn_on and r not in fail_on]
        if bad:
            fails.append(f"{gpu_label(g)}: {', '.join(bad)}")
        if soft:
            warns.append(f"{gpu_label(g)}: {', '.join(soft)}")
        if bad or soft:
            observed[str(g.index)] = bad + soft
            seen.update(bad + soft)
    checked = len(gpus) - len(unknown)
    hint = "; ".join(THROTTLE_HINTS.get(r, r) for r in sorted(seen)) or "check cooling and power"
    return verdict(
        "gpu.throttle",
        fails=fails,
        warns=warns,
        unknown=unknown,
        checked=checked,
        ok=f"no harmful throttling on {checked} GPUs",
        what="throttle reasons",
        observed=observed or None,
        expected={"fail_on": sorted(fail_on), "warn_on": sorted(warn_on)},
        fail_hint=hint,
        warn_hint=hint,
    )


@check(
    "gpu.temperature",
    title="GPU temperature",
    facts=("gpus",),
    params=(
        Param(
            "max_c",
            "int",
            None,
            "highest acceptable temperature in °C (None: the GPU's slowdown threshold minus 5, else 85)",
        ),
    ),
    doc=(
        "Compares each GPU's temperature with a limit just under its own slowdown threshold: a GPU that hot "
        "is about to throttle, so its results and lifetime suffer."
    ),
    remedy=(
        "Check fans, blanking panels, inlet temperature and the rack's airflow; reseat a GPU whose heatsink is loose."
    ),
)
def gpu_temperature(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus = need_gpus(facts)
    max_c = params.get("max_c")
    fails, unknown = [], []
    limits: dict[str, int] = {}
    observed: dict[str, int] = {}
    for g in gpus:
        temperature = reading(g.temperature_c)
        if temperature is None:
            unknown.append(gpu_label(g))
            continue
        if max_c is not None:
            limit = int(max_c)
        elif g.temperature_slowdown_c is not None:
            limit = g.temperature_slowdown_c - ref.TEMPERATURE_MARGIN_C
        else:
            limit = ref.TEMPERATURE_FALLBACK_MAX_C
        limits[str(g.index)] = limit
        observed[str(g.index)] = int(temperature)
        if temperature > limit:
            fails.append(f"{gpu_label(g)} at {temperature:g} °C (limit {limit} °C)")
    checked = len(gpus) - len(unknown)
    distinct = set(limits.values())
    expected: Any = f"<= {distinct.pop()} °C" if len(distinct) == 1 else {k: f"<= {v}" for k, v in limits.items()}
    hottest = max(observed.values()) if observed else None
    return verdict(
        "gpu.temperature",
        fails=fails,
        warns=[],
        unknown=unknown,
        checked=checked,
        ok=f"{checked} GPUs within limits (hottest {hottest} °C)",
        what="temperature",
        observed=observed or None,
        expected=expected,
        fail_hint="check fans, airflow, blanking panels and inlet temperature",
    )


# ---- Xid -------------------------------------------------------------------------------------


def _xid_policy() -> tuple[set[int], set[int]]:
    """(critical, warn) Xid codes of the policy in assessor/data/xids.yaml."""
    from assessor.checks import xids

    return set(xids.critical_xids()), set(xids.warn_xids())


def _xid_text(code: int) -> tuple[str | None, str | None]:
    """(name, action) for an Xid the policy names; (None, None) for a code it lacks."""
    from assessor.checks import xids

    entry = xids.catalogue().get(code)
    return (entry.name, entry.action) if entry else (None, None)


def _gpu_by_bus(gpus: list[Gpu] | None) -> dict[str, Gpu]:
    out: dict[str, Gpu] = {}
    for g in gpus or ():
        key = bus_key(g.bus_id)
        if key:
            out[key] = g
    return out


@check(
    "gpu.xid",
    title="Xid errors in the kernel log",
    facts=("kernel_events", "gpus"),
    params=(Param("ignore", "list", [], "Xid codes to ignore, e.g. [13, 31] on a node shared by user jobs"),),
    doc=(
        "Reads the GPU errors the driver logs (NVRM Xid, NVSwitch SXid, 'fallen off the bus'). Critical Xids "
        "(48 DBE, 64 remap failure, 74 NVLink, 79 off the bus, 95 uncontained, 119/120 GSP, …) fail; "
        "application-level ones (13, 31, 43, 45, 94, 109) and any other code warn; SXids warn. Each finding "
        "names the GPU by index and bus id and quotes NVIDIA's Xid catalogue."
    ),
    remedy=(
        "Follow the catalogue's resolution for the code: restart the application, reset the GPU "
        "(`nvidia-smi -r`), or reboot; repeated hardware Xids (48, 64, 74, 79, 95) mean RMA."
    ),
)
def gpu_xid(facts: NodeFacts, params: dict[str, Any]) -> Result:
    events: list[KernelEvent] = need(facts, "kernel_events")
    ignore = {int(c) for c in params.get("ignore") or ()}
    critical, warn_set = _xid_policy()
    by_bus = _gpu_by_bus(facts.gpus)
    # Drivers print several lines per event (Xid 13 has one per SM): count each (code, device) once.
    found: Counter[tuple[str, int | None, str]] = Counter()
    printed: dict[tuple[str, int | None, str], str] = {}
    quoted: dict[tuple[str, int | None, str], str] = {}  # the first dmesg line of each finding, for reports
    for event in events:
        if event.kind not in ("xid", "fallen_off_bus", "sxid"):
            continue
        code = event.code if event.code is not None else (79 if event.kind == "fallen_off_bus" else None)
        if code is not None and code in ignore:
            continue
        kind = "sxid" if event.kind == "sxid" else "xid"
        # Key on bus:device so "0000:44:00" (Xid) and "0000:44:00.0" (fallen off the bus) are one device.
        device = bus_key(event.bus_id) or event.bus_id or "?"
        printed.setdefault((kind, code, device), event.bus_id or "?")
        line_at = f"dmesg line {event.line}" if event.line else "dmesg"
        quoted.setdefault(
            (kind, code, device), f"{line_at}: {kind.upper()} {code} (PCI:{event.bus_id}): {event.message}"
        )
        found[(kind, code, device)] += 1
    fails: list[str] = []
    warns: list[str] = []
    hints: list[str] = []
    observed: list[dict[str, Any]] = []
    for (kind, code, device), times in found.items():
        bus = printed[(kind, code, device)]
        if kind == "sxid":
            warns.append(f"SXid {code} on NVSwitch {bus}" + (f" (x{times})" if times > 1 else ""))
            observed.append({"sxid": code, "bus": bus, "count": times})
            continue
        gpu = by_bus.get(device)
        where = f"{gpu_label(gpu)}" if gpu else f"PCI {bus}"
        description, resolution = _xid_text(code) if code is not None else (None, None)
        text = f"Xid {code} on {where}" + (f": {description}" if description else "")
        text += f" (x{times})" if times > 1 else ""
        observed.append({"xid": code, "bus": bus, "gpu": gpu.index if gpu else None, "count": times})
        if resolution:
            # Critical codes' actions first: they are what the operator must do now.
            hints.insert(0 if code in critical else len(hints), f"Xid {code}: {resolution}")
        (fails if code in critical else warns).append(text)
    if not found:
        # events holds only what the parser keeps (Xid, SXid, off the bus, PCIe): none is the usual healthy log;
        # a file that is not a kernel log never gets here (the parser refuses it: gpu.xid is then error)
        others = f" that counts ({len(events)} kernel events read)" if events else ""
        return result("gpu.xid", "pass", f"no Xid or SXid in the kernel log{others}", observed=[])
    default_hint = (
        "look the code up in NVIDIA's Xid catalogue; reset the GPU (nvidia-smi -i N -r) or reboot, "
        "and RMA a GPU that repeats hardware Xids"
    )
    hint = " ".join(list(dict.fromkeys(hints))[:3]) or default_hint
    status: Status = "fail" if fails else "warn"
    message = join_limited(fails + warns)
    expected = {"critical": sorted(critical), "warn": sorted(warn_set)}
    found_xid = result("gpu.xid", status, message, observed=observed, expected=expected, hint=hint)
    found_xid.evidence = list(quoted.values())
    return found_xid


# ---- NVLink ----------------------------------------------------------------------------------

NVLINK_ERR_HINT = "nvidia-smi nvlink -e; reset the counters (nvidia-smi nvlink -r 0) and watch whether they grow"
_NV_RE = re.compile(r"^NV(\d+)$")


# No GPU has more NVLinks than this (H100, H200, B200: 18): NV# values to its peers that add up to
# more can only be one bonded set seen through NVSwitches, not links of their own.
MAX_NVLINKS = 18
_GPU_COLUMN = re.compile(r"^GPU(\d+)$")


def _topo_links(topology: Topology | None, index: int, switched: bool) -> int | None:
    """NVLinks of GPU ``index`` from ``nvidia-smi topo -m``; None when the matrix says nothing of the GPU.

    Each pair's cell is read from the GPU's row, or from the peer's row where the GPU's own row was not
    captured (the matrix is symmetric). On NVSwitch boards every pair shows the GPU's whole bonded set
    (NV12 to every peer on an A100 SXM, NV18 on H100/B200, also on a 4-GPU GB200 tray), so the largest
    NV# is the link count; on direct point-to-point boards (DGX-1, 4-GPU HGX A100, NVL pairs) each
    pair has its own links, so they add up. Values that add up past any GPU's link count are switched.
    """
    if topology is None:
        return None
    me = f"GPU{index}"
    peers = [d for d in topology.devices if _GPU_COLUMN.match(d) and d != me]
    peers += [r for r in topology.matrix if _GPU_COLUMN.match(r) and r != me and r not in peers]
    row = topology.matrix.get(me)
    cells: list[str] = []
    for peer in peers:
        cell = row.get(peer) if row is not None else None
        if cell is None and peer in topology.matrix:
            cell = topology.matrix[peer].get(me)
        if cell is not None:
            cells.append(cell.strip())
    if not cells:
        return None
    counts = [int(m.group(1)) for c in cells if (m := _NV_RE.match(c))]
    if not counts:
        return 0
    uniform_mesh = len(set(counts)) == 1 and len(counts) >= 7
    if switched or uniform_mesh or sum(counts) > MAX_NVLINKS:
        return max(counts)
    return sum(counts)


def _topo_gpus(topology: Topology) -> list[Gpu]:
    """The GPUs a ``topo -m`` matrix names (columns and rows), for a snapshot that holds no GPU list."""
    indices = sorted({int(m.group(1)) for d in [*topology.devices, *topology.matrix] if (m := _GPU_COLUMN.match(d))})
    return [Gpu(index=i) for i in indices]


def _nvlink_lists(facts: NodeFacts) -> tuple[list[Gpu], dict[int, list[NvLink]]]:
    """The GPUs and each one's NVLinks (by index): NVML's, else ``nvidia-smi nvlink -s``'s.

    With only ``nvidia-smi nvlink -s`` captured, its GPU headers are the GPU list; with only
    ``nvidia-smi topo -m``, its GPU rows and columns are.
    """
    status = facts.nvlink_status or []
    if facts.gpus is None and status:
        gpus = [Gpu(index=s.gpu, name=s.name, uuid=s.uuid) for s in status]
    elif facts.gpus is None and facts.topology is not None and "gpus" not in facts.problems:
        gpus = _topo_gpus(facts.topology)
        if not gpus:
            raise MissingFacts("nvidia-smi topo -m names no GPU, and the snapshot holds no GPU list")
    else:
        gpus = need_gpus(facts)
    by_uuid = {s.uuid: s for s in status if s.uuid and s.uuid != "..."}
    by_index = {s.gpu: s for s in status}
    links: dict[int, list[NvLink]] = {}
    for g in gpus:
        if g.nvlinks is not None:
            links[g.index] = g.nvlinks
        elif (found := by_uuid.get(g.uuid or "") or by_index.get(g.index)) is not None:
            links[g.index] = found.links
    return gpus, links


@check(
    "gpu.nvlink",
    title="NVLink links active",
    facts=("gpus", "topology", "nvlink_status"),
    params=(
        Param(
            "expected_links",
            "int",
            ref.AUTO,
            "active NVLinks each GPU must have ('auto': A100 SXM 12, H100/H200 SXM 18; none for PCIe parts)",
        ),
    ),
    doc=(
        "Counts each GPU's active NVLinks (from NVML, `nvidia-smi nvlink -s`, or the NV# of each GPU pair in "
        "`nvidia-smi topo -m`) against the number the board has, and reports any nonzero NVLink error counter. "
        "Without a reference count, an SXM GPU that lists some links inactive fails (its links are baseboard "
        "traces), and GPUs read from topo -m are judged against each other: one with fewer links than its "
        "peers fails. A down link halves or worse the GPU's all-reduce bandwidth, and dcgmi diag passes with "
        "every NVLink down."
    ),
    remedy=(
        "Check `nvidia-smi nvlink -s` and `nvidia-smi nvlink -e`; on NVSwitch systems make sure the fabric "
        "manager is active (fabric.state). Reset the GPU or reboot; links that stay down need a vendor case."
    ),
)
def gpu_nvlink(facts: NodeFacts, params: dict[str, Any]) -> Result:
    gpus, link_lists = _nvlink_lists(facts)
    wanted = params.get("expected_links", ref.AUTO)
    topology = facts.topology
    switched = len([d for d in (topology.devices if topology else ()) if d.startswith("GPU")]) >= 8 or any(
        g.fabric_state and g.fabric_state.lower() not in ("not supported", "n/a") for g in gpus
    )
    fails, warns, unknown, no_reference = [], [], [], []
    observed: dict[str, int] = {}
    judged = 0
    from_topology: dict[int, int] = {}  # GPU index -> NVLinks topo -m shows, for GPUs without a reference
    for g in gpus:
        if wanted in (None, ref.AUTO):
            expected = ref.NVLINK_LINKS.get(ref.model_family(g.name) or "") if ref.is_sxm(g.name) else None
        else:
            expected = int(wanted)
        nvlinks = link_lists.get(g.index)
        for link in nvlinks or ():
            bad = {k: v for k, v in link.errors.items() if v}
            if bad:
                counters = ", ".join(f"{k}={v}" for k, v in sorted(bad.items()))
                warns.append(f"{gpu_label(g)} link {link.link}: {counters}")
        if nvlinks is not None:
            active: int | None = sum(1 for link in nvlinks if link.active)
        else:
            active = _topo_links(topology, g.index, switched)
        if expected is None:
            inactive = [str(link.link) for link in nvlinks or () if not link.active]
            if active and inactive:
                # No reference count, but some links up and others down is a board with a link lost.
                lost = f"{gpu_label(g)}: {active} NVLinks active, links {', '.join(inactive)} inactive"
                if ref.is_sxm(g.name):
                    # On an SXM board every link is a trace to the baseboard: each one the GPU lists must be up
                    # (a PCIe card's bridge may leave links unconnected by design).
                    fails.append(lost)
                    judged += 1
                    observed[str(g.index)] = active
                else:
                    warns.append(lost)
                continue
            if nvlinks is None and active is not None and wanted in (None, ref.AUTO):
                from_topology[g.index] = active  # judged against its peers below
                continue
            no_reference.append(g.name or gpu_label(g))
            continue
        if active is None:
            unknown.append(gpu_label(g))
            continue
        judged += 1
        observed[str(g.index)] = active
        if active < expected:
            down = [str(link.link) for link in nvlinks or () if not link.active]
            which = f" (down: {', '.join(down)})" if down else ""
            fails.append(f"{gpu_label(g)}: {active}/{expected} NVLinks active{which}")
    best = max(from_topology.values(), default=0)
    by_index = {g.index: g for g in gpus}
    for index, active in sorted(from_topology.items()):
        if best == 0:
            # No GPU shows an NVLink to any peer: a PCIe system, or every link down; only a count can tell.
            no_reference.append(by_index[index].name or gpu_label(by_index[index]))
            continue
        # Without a reference count the GPUs are judged against each other: the matrix shows every pair.
        judged += 1
        observed[str(index)] = active
        if active < best:
            fails.append(
                f"{gpu_label(by_index[index])}: {active} NVLinks to its peers in nvidia-smi topo -m, "
                f"the other GPUs {best}"
            )
    if judged == 0 and not unknown and not warns:
        names = sorted(set(no_reference))
        return result(
            "gpu.nvlink",
            "skip",
            f"no NVLink reference for {', '.join(names)}: set expected_links to check",
            hint="set expected_links in the profile (e.g. the bridge link count of an NVL pair)",
        )
    expected_shown = (
        wanted
        if wanted not in (None, ref.AUTO)
        else (
            sorted({ref.NVLINK_LINKS[f] for f in {ref.model_family(g.name) for g in gpus} if f in ref.NVLINK_LINKS})
            or None
        )
    )
    if judged == 0 and not unknown:
        # Only error counters or partly inactive links to report, on GPUs without a link-count reference.
        hint = NVLINK_ERR_HINT
        if any("inactive" in w for w in warns):
            hint = "set expected_links to judge the count; reset the GPU or reboot, then check nvidia-smi nvlink -s"
        return result("gpu.nvlink", "warn", join_limited(warns), observed=observed or None, hint=hint)
    return verdict(
        "gpu.nvlink",
        fails=fails,
        warns=warns,
        unknown=unknown,
        checked=judged,
        ok=f"all NVLinks active on {judged} GPUs",
        what="NVLink state",
        observed=observed or None,
        expected=expected_shown,
        fail_hint="nvidia-smi nvlink -s; on NVSwitch systems check fabric.state; reset the GPU or reboot, "
        "then open a vendor case for links that stay down",
        warn_hint=NVLINK_ERR_HINT,
        unknown_hint="capture nvml.json, nvidia-smi nvlink -s or nvidia-smi topo -m so the link state is known",
    )
