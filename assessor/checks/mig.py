"""MIG checks: the mode on each GPU, and the GPU-instance layout."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.common import gpu_label, join_limited, labels, need_gpus
from assessor.checks.result import Result
from assessor.facts import GpuInstance, NodeFacts

RESET_HINT = "reset the GPU (nvidia-smi -i N -r) or reboot so the pending MIG mode takes effect"


@check(
    "mig.mode",
    title="MIG mode",
    facts=("gpus", "mig_profiles", "mig_instances"),
    params=(
        Param("expected", "bool", True, "MIG mode the GPUs must be in"),
        Param("gpus", "list", None, "GPU indices to check (None: every GPU)"),
    ),
    doc=(
        "Verifies that MIG mode is on (or off) on the chosen GPUs and that no mode change is pending. On "
        "Ampere the new mode stays pending until the GPU is reset, and a GPU without MIG support (V100, L40S, "
        "consumer parts) can never be enabled. Without GPU facts, `nvidia-smi mig -lgip`/`-lgipp` (which list "
        "every MIG-enabled GPU, and say 'No MIG-enabled devices found' when there is none) and the GPUs that "
        "hold instances in `-lgi` are the evidence."
    ),
    remedy=(
        "`nvidia-smi -i N -mig 1` (as root, with no process on the GPU), then reset it (`nvidia-smi -i N -r`) "
        "or reboot if the mode shows as pending."
    ),
)
def mig_mode(facts: NodeFacts, params: dict[str, Any]) -> Result:
    if facts.gpus is None and "gpus" not in facts.problems:
        listed = _mig_enabled_listed(facts)
        if listed is not None:
            return _mode_from_listing(listed, facts.mig_profiles is not None, params)
    gpus = need_gpus(facts)
    expected = bool(params.get("expected", True))
    wanted = params.get("gpus")
    by_index = {g.index: g for g in gpus}
    chosen = sorted(by_index) if wanted is None else [int(i) for i in wanted]
    word = "enabled" if expected else "disabled"
    fails: list[str] = []
    hints: list[str] = []
    observed: dict[str, Any] = {}
    unsupported: dict[str, list[str]] = {}  # model -> GPUs, so an 8-GPU V100 box gives one line
    for index in chosen:
        g = by_index.get(index)
        if g is None:
            fails.append(f"GPU {index} not found")
            hints.append("check the gpus parameter against nvidia-smi -L")
            continue
        current, pending = g.mig_mode_current, g.mig_mode_pending
        observed[str(index)] = {"current": current, "pending": pending}
        if current is None:
            if expected:
                unsupported.setdefault(g.name or "unknown model", []).append(gpu_label(g))
            continue
        if pending is not None and pending != current:
            state = "enable" if pending else "disable"
            fails.append(f"{gpu_label(g)}: MIG {state} pending")
            hints.append(RESET_HINT)
            continue
        if current != expected:
            fails.append(f"{gpu_label(g)}: MIG {'enabled' if current else 'disabled'}, expected {word}")
            hints.append(f"nvidia-smi -i {index} -mig {int(expected)} (as root, GPU idle), then reset if pending")
    for model, gpu_labels in unsupported.items():
        fails.insert(0, f"MIG not supported on {model}: {labels(gpu_labels)}")
        hints.insert(0, "MIG needs an A100, A30, H100, H200 or newer data-centre GPU")
    if fails:
        return result(
            "mig.mode",
            "fail",
            join_limited(fails),
            observed=observed,
            expected=word,
            hint="; ".join(dict.fromkeys(hints)),
        )
    return result(
        "mig.mode", "pass", f"MIG {word} on GPU {', '.join(map(str, chosen))}", observed=observed, expected=word
    )


def _mig_enabled_listed(facts: NodeFacts) -> set[int] | None:
    """The GPUs ``nvidia-smi mig`` shows in MIG mode; None when it says nothing about it.

    ``-lgip``/``-lgipp`` list the profiles of every MIG-enabled GPU (none: "No MIG-enabled devices found"),
    so their list is complete; ``-lgi`` shows only the GPUs that hold a GPU instance.
    """
    if facts.mig_profiles is not None:
        return {p.gpu for p in facts.mig_profiles} | {gi.gpu for gi in facts.mig_instances or ()}
    if facts.mig_instances:
        return {gi.gpu for gi in facts.mig_instances}
    return None


def _mode_from_listing(listed: set[int], complete: bool, params: dict[str, Any]) -> Result:
    expected = bool(params.get("expected", True))
    wanted = params.get("gpus")
    word = "enabled" if expected else "disabled"
    source = "nvidia-smi mig -lgip" if complete else "nvidia-smi mig -lgi"
    shown = ", ".join(map(str, sorted(listed))) or "none"
    observed = {"mig_enabled_gpus": sorted(listed), "source": source}
    hint = "capture nvidia-smi -q -x (or the NVML collector) so every GPU's MIG mode and pending mode are known"
    if expected:
        chosen = sorted(listed) if wanted is None else [int(i) for i in wanted]
        missing = [i for i in chosen if i not in listed]
        if not listed and complete:
            return result(
                "mig.mode",
                "fail",
                f"no GPU is in MIG mode ({source}: No MIG-enabled devices found)",
                observed=observed,
                expected=word,
                hint="nvidia-smi -i N -mig 1 (as root, GPU idle), then reset the GPU if the mode shows pending",
            )
        if missing and complete:
            return result(
                "mig.mode",
                "fail",
                f"MIG not enabled on GPU {', '.join(map(str, missing))} ({source} lists MIG-enabled GPU {shown})",
                observed=observed,
                expected=word,
                hint="nvidia-smi -i N -mig 1 (as root, GPU idle), then reset the GPU if the mode shows pending",
            )
        if missing or wanted is None:
            unknown = f"; MIG mode unknown for GPU {', '.join(map(str, missing))}" if missing else ""
            rest = "" if missing else "; GPUs it does not list have MIG off or were not captured (no GPU list)"
            return result(
                "mig.mode",
                "warn",
                f"MIG enabled on GPU {shown} per {source}{unknown or rest}",
                observed=observed,
                expected=word,
                hint=hint,
            )
        return result("mig.mode", "pass", f"MIG enabled on GPU {shown} per {source}", observed=observed, expected=word)
    on = sorted(listed) if wanted is None else [int(i) for i in wanted if int(i) in listed]
    if on:
        return result(
            "mig.mode",
            "fail",
            f"MIG enabled on GPU {', '.join(map(str, on))} per {source}, expected disabled",
            observed=observed,
            expected=word,
            hint="nvidia-smi -i N -mig 0 (as root, instances destroyed first), then reset the GPU",
        )
    if complete:
        return result("mig.mode", "pass", f"no GPU in MIG mode per {source}", observed=observed, expected=word)
    return result(
        "mig.mode", "skip", f"{source} cannot show a GPU with MIG off", observed=observed, expected=word, hint=hint
    )


def profile_name(name: str) -> str:
    """``MIG 3g.40gb`` -> ``3g.40gb`` (the form nvidia-smi -lgi prints and profiles use)."""
    name = name.strip()
    if name.upper().startswith("MIG "):
        name = name[4:]
    return name.strip().lower()


def _slices(name: str) -> int:
    match = re.match(r"(\d+)g", name)
    return int(match.group(1)) if match else 0


def _describe(counts: Counter[str]) -> str:
    if not counts:
        return "no GPU instances"
    ordered = sorted(counts.items(), key=lambda kv: (-_slices(kv[0]), kv[0]))
    return " + ".join(name if n == 1 else f"{name} x{n}" for name, n in ordered)


def _create_command(index: int, names: list[str]) -> str:
    # Larger instances first: auto-placement fails on some orders (-cgi 19,19,14,9 does, 9,19,14,19 does not).
    ordered = sorted(names, key=lambda n: -_slices(n))
    return (
        f"nvidia-smi mig -i {index} -dci && nvidia-smi mig -i {index} -dgi && "
        f"nvidia-smi mig -i {index} -cgi {','.join(ordered)} -C"
    )


@check(
    "mig.layout",
    title="MIG instance layout",
    facts=("mig_instances", "gpus", "mig_profiles"),
    params=(
        Param(
            "layout",
            "list|dict",
            None,
            "GPU instance profiles every MIG GPU must hold, e.g. [3g.40gb, 3g.40gb, 1g.10gb]; or a dict "
            "{gpu index: [profiles]} for per-GPU layouts",
        ),
        Param(
            "require_compute_instances",
            "bool",
            False,
            "every GPU instance of the layout must hold a compute instance (a MIG device in nvidia-smi -L)",
        ),
    ),
    doc=(
        "Compares the GPU instances on each MIG-enabled GPU (nvidia-smi mig -lgi) with the layout a profile or "
        "lab asks for, as a multiset of profile names (order and placement do not matter). GPU instances do "
        "not survive a reboot or GPU reset, so a node can pass mig.mode and still have no instances."
    ),
    remedy=(
        "Destroy the instances (`nvidia-smi mig -i N -dci`, `-dgi`) and create the layout with "
        "`nvidia-smi mig -i N -cgi <profiles> -C`, larger profiles first."
    ),
)
def mig_layout(facts: NodeFacts, params: dict[str, Any]) -> Result:
    layout = params.get("layout")
    if not layout or not isinstance(layout, (list, dict)):
        return result(
            "mig.layout",
            "error",
            "mig.layout needs the layout parameter (a list, or a dict per GPU)",
            hint="set params: {layout: [3g.40gb, 3g.40gb, 1g.10gb]} in the profile or lab",
        )
    instances: list[GpuInstance] = need(facts, "mig_instances")
    have: dict[int, Counter[str]] = {}
    for gi in instances:
        have.setdefault(gi.gpu, Counter())[profile_name(gi.name)] += 1
    if isinstance(layout, dict):
        want = {int(k): Counter(profile_name(str(n)) for n in v) for k, v in layout.items()}
    else:
        # The MIG-enabled GPUs; without GPU facts, the GPUs that hold instances.
        mig_gpus = sorted(have) if facts.gpus is None else [g.index for g in facts.gpus if g.mig_mode_current]
        if not mig_gpus:
            return result(
                "mig.layout",
                "fail",
                "MIG is not enabled on any GPU, so no layout can exist",
                observed={},
                expected=_describe(Counter(profile_name(str(n)) for n in layout)),
                hint="enable MIG first (see mig.mode), then create the instances",
            )
        want = {i: Counter(profile_name(str(n)) for n in layout) for i in mig_gpus}
    fails: list[str] = []
    commands: list[str] = []
    if params.get("require_compute_instances"):
        fails, commands = _missing_compute_instances(instances, sorted(want), facts.mig_compute_gis or {})
    offered: dict[int, list[str]] = {}
    for profile in facts.mig_profiles or ():
        if profile.name:  # -lgipp alone names no profile
            offered.setdefault(profile.gpu, []).append(profile_name(profile.name))
    for index, counts in sorted(want.items()):
        got = have.get(index, Counter())
        if got != counts:
            label = f"GPU {index}"
            for g in facts.gpus or ():
                if g.index == index:
                    label = gpu_label(g)
            finding = f"{label} has {_describe(got)}, expected {_describe(counts)}"
            unknown_names = sorted(n for n in counts if index in offered and n not in offered[index])
            if unknown_names:
                # The layout asks for profiles this GPU does not have (an A100 layout on an H100, say).
                finding += (
                    f"; it offers no {', '.join(unknown_names)} "
                    f"(nvidia-smi mig -lgip: {', '.join(dict.fromkeys(offered[index]))})"
                )
            fails.append(finding)
            commands.append(_create_command(index, list(counts.elements())))
    observed = {str(i): _describe(c) for i, c in sorted(have.items())}
    expected = {str(i): _describe(c) for i, c in sorted(want.items())}
    if fails:
        return result(
            "mig.layout",
            "fail",
            join_limited(fails),
            observed=observed,
            expected=expected,
            hint="; ".join(commands[:2]) + ("; likewise for the other GPUs" if len(commands) > 2 else ""),
        )
    return result(
        "mig.layout",
        "pass",
        f"MIG layout matches on GPU {', '.join(map(str, sorted(want)))}",
        observed=observed,
        expected=expected,
    )


def _missing_compute_instances(
    instances: list[GpuInstance], gpus: list[int], devices: dict[int, list[int]]
) -> tuple[list[str], list[str]]:
    """GPU instances on ``gpus`` without a compute instance: no MIG device, so nothing can run on them.

    The compute instances come from NVML (``gi.compute_instances``), else from the MIG devices of
    ``nvidia-smi -q -x`` (``devices``: GPU index -> the GPU instance id of each MIG device).
    """
    fails: list[str] = []
    commands: list[str] = []
    for gi in instances:
        if gi.gpu not in gpus:
            continue
        has_ci = bool(gi.compute_instances) if gi.compute_instances is not None else None
        if has_ci is None and gi.gpu in devices:
            has_ci = gi.gi_id in devices[gi.gpu]
        if has_ci is None:
            # Unknown is not a pass: the capture could not list compute instances (NVML unavailable).
            fails.append(f"GPU {gi.gpu} instance {gi.gi_id} ({gi.name}): compute instances unknown")
        elif not has_ci:
            fails.append(f"GPU {gi.gpu} instance {gi.gi_id} ({gi.name}) has no compute instance")
            commands.append(f"nvidia-smi mig -i {gi.gpu} -gi {gi.gi_id} -cci")
    return fails, commands
