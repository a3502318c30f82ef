"""Slurm's own view of the node: in service (not drained, down or invalid, no reason left) with the GPUs it has.

Both read ``scontrol show node -o`` (``slurm_nodes``): the controller's record, which is what decides whether
jobs land on the node, whatever the node's own tools say.
"""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import NodeFacts, SlurmNode

# Base states a node serves jobs in; every flag after a '+' (DRAIN, INVALID_REG, FAIL, MAINTENANCE, ...) and a
# trailing '*' (not responding) take it out of service.
IN_SERVICE = ("IDLE", "ALLOCATED", "MIXED", "COMPLETING")
_GRES_GPU = re.compile(r"^gpu(?::(?P<type>[^:(,]+))?:(?P<count>\d+)")


def _the_node(facts: NodeFacts, params: dict[str, Any]) -> SlurmNode:
    nodes: list[SlurmNode] = need(facts, "slurm_nodes")
    wanted = params.get("node") or ((facts.host or "").split(".")[0] or None)
    if wanted is not None:
        for node in nodes:
            if node.name == wanted:
                return node
    if len(nodes) == 1 and params.get("node") is None:
        return nodes[0]
    raise MissingFacts(
        f"Slurm knows no node {wanted!r} (scontrol show node lists {', '.join(n.name for n in nodes) or 'none'})"
    )


def gres_gpus(gres: str | None) -> dict[str, int]:
    """GPU count per type (``""`` untyped) of a ``Gres=`` value.

    >>> gres_gpus("gpu:h100:8(S:0-1)")
    {'h100': 8}
    >>> gres_gpus("gpu:1g.10gb:7,gpu:2g.20gb:1,nic:2")
    {'1g.10gb': 7, '2g.20gb': 1}
    """
    out: dict[str, int] = {}
    for part in re.split(r",(?![^()]*\))", gres or ""):
        m = _GRES_GPU.match(part.strip())
        if m:
            kind = m.group("type") or ""
            out[kind] = out.get(kind, 0) + int(m.group("count"))
    return out


@check(
    "slurm.node_state",
    title="Slurm has the node in service: not drained, down or invalid, and no reason left on it",
    facts=("slurm_nodes",),
    params=(Param("node", "str", None, "the node's Slurm name (None: the node's host name)"),),
    doc=(
        "Reads the controller's record of the node (scontrol show node -o). Passes when its state is IDLE, "
        "ALLOCATED, MIXED or COMPLETING with no flag (DRAIN, INVALID_REG, FAIL, MAINTENANCE, ...) and not "
        "marked not responding (*), and no Reason is left on it: a reason stays after the cause is gone until an "
        "admin clears it."
    ),
    remedy=(
        "sinfo -R (or scontrol show node NODE) says why: fix that cause first (gres.conf against the node's GPUs, "
        "the GPU itself), scontrol reconfigure or restart slurmd, then scontrol update nodename=NODE state=resume."
    ),
)
def node_state(facts: NodeFacts, params: dict[str, Any]) -> Result:
    node = _the_node(facts, params)
    base, _, flags = node.state.rstrip("*").partition("+")
    not_responding = node.state.endswith("*")
    shown = f"{node.state}" + (f", Reason={node.reason}" if node.reason else "")
    if base in IN_SERVICE and not flags and not not_responding and not node.reason:
        return result(
            "slurm.node_state", "pass", f"{node.name} is {node.state}", observed=node.state, expected="in service"
        )
    if base in IN_SERVICE and not flags and not not_responding:
        return result(
            "slurm.node_state",
            "fail",
            f"{node.name} is {node.state} but a reason is left on it: {node.reason}",
            observed=shown,
            expected="no reason",
            hint="clear it once the cause is fixed: scontrol update nodename=NODE state=resume",
        )
    why = f" ({node.reason})" if node.reason else ""
    return result(
        "slurm.node_state",
        "fail",
        f"{node.name} is out of service: {node.state}{why}",
        observed=shown,
        expected=f"one of {', '.join(IN_SERVICE)}, no flag, no reason",
        hint="fix what the reason names, then scontrol reconfigure (or restart slurmd) and resume the node",
    )


@check(
    "slurm.gres",
    title="Slurm's GPU GRES of the node match the GPUs (or MIG devices) the node has",
    facts=("slurm_nodes", "gpus"),
    params=(
        Param("node", "str", None, "the node's Slurm name (None: the node's host name)"),
        Param(
            "mig_types",
            "bool",
            False,
            "each MIG profile must be a GRES type of its own: Gres=gpu:PROFILE:N for the node's N MIG devices of "
            "that profile (gpu:1g.10gb:7), the whole GPUs under any other type or none",
        ),
    ),
    doc=(
        "Compares the node's Gres=gpu[:TYPE]:N in the controller's record (scontrol show node -o) with the GPUs "
        "the node's tools see: one per GPU, or one per MIG device on a GPU in MIG mode. Passes when the counts "
        "are equal and the controller has not marked the registration invalid (INVALID_REG: slurmd reported "
        "fewer than configured). With mig_types, the count of each MIG profile's type must also equal the node's "
        "MIG devices of that profile (nvidia-smi mig -lgi names them), so that a job asking for "
        "--gres=gpu:1g.10gb:1 gets one."
    ),
    remedy=(
        "Make slurm.conf's Gres= and gres.conf's Name=gpu [Type=] File= lines name what the node has "
        "(/dev/nvidiaN per GPU), then scontrol reconfigure (or restart slurmd) and resume the node."
    ),
)
def gres(facts: NodeFacts, params: dict[str, Any]) -> Result:
    node = _the_node(facts, params)
    gpus = need(facts, "gpus")
    migs = mig_device_profiles(facts)
    expected = sum(len(migs.get(gpu.index, [])) or 1 for gpu in gpus)
    counts = gres_gpus(node.gres)
    configured = sum(counts.values())
    shown = node.gres or "(null)"
    if "INVALID" in node.state:
        return result(
            "slurm.gres",
            "fail",
            f"slurmctld refused {node.name}'s registration ({node.state}): {node.reason or 'no reason given'}",
            observed=shown,
            expected=f"gpu:{expected}",
            hint="slurmd reports the GPUs gres.conf names: make gres.conf and slurm.conf agree with the node",
        )
    if configured != expected:
        return result(
            "slurm.gres",
            "fail",
            f"{node.name} has Gres={shown} in Slurm, the node has {expected} GPU device(s)",
            observed=shown,
            expected=f"gpu:{expected}",
            hint="set Gres= in slurm.conf and the File= lines of gres.conf to the node's GPUs",
        )
    if params.get("mig_types"):
        wanted: dict[str, int] = {}
        for name in (name for names in migs.values() for name in names):
            if not name:
                raise MissingFacts("the profile of a MIG device is not in the capture (nvidia-smi mig -lgi)")
            wanted[name] = wanted.get(name, 0) + 1
        whole = expected - sum(wanted.values())
        have_whole = sum(n for kind, n in counts.items() if kind not in wanted)
        wrong = [
            f"gpu:{kind}:{counts.get(kind, 0)} (the node has {n})"
            for kind, n in wanted.items()
            if counts.get(kind) != n
        ]
        if have_whole != whole:
            wrong.append(f"{have_whole} whole GPU(s) (the node has {whole})")
        if wrong:
            typed = [f"gpu:{kind}:{n}" for kind, n in wanted.items()] + ([f"gpu:TYPE:{whole}"] if whole else [])
            return result(
                "slurm.gres",
                "fail",
                f"{node.name} has Gres={shown} in Slurm, not one GRES type per MIG profile: {'; '.join(wrong)}",
                observed=shown,
                expected=",".join(typed),
                hint="type each MIG device in gres.conf (Name=gpu Type=PROFILE MultipleFiles=...) and in "
                "slurm.conf's Gres=, then restart slurmctld and slurmd",
            )
    return result("slurm.gres", "pass", f"{node.name} has Gres={shown}: {expected} GPU device(s)", observed=shown)


def _profile(name: str | None) -> str:
    text = (name or "").strip().lower()
    return text.removeprefix("mig ").strip()


def mig_device_profiles(facts: NodeFacts) -> dict[int, list[str]]:
    """The profile of each MIG device (``1g.10gb``; ``""`` when the capture does not say) per GPU in MIG mode.

    A MIG device is a compute instance: read from the GPU instances with their compute instances (NVML), else
    from the MIG devices nvidia-smi's table or ``-q -x`` lists, named after their GPU instance. A GPU in MIG
    mode with none of these captured is missing data, never a whole GPU.
    """
    gpus = need(facts, "gpus")
    in_mig = {gpu.index for gpu in gpus if gpu.mig_mode_current}
    if not in_mig:
        return {}
    instances = [gi for gi in facts.mig_instances or [] if gi.gpu in in_mig]
    out: dict[int, list[str]] = {}
    if facts.mig_instances is not None and all(gi.compute_instances is not None for gi in instances):
        for gi in instances:
            for ci in gi.compute_instances or []:
                out.setdefault(gi.gpu, []).append(_profile(ci.name or gi.name))
        return out
    names = {(gi.gpu, gi.gi_id): gi.name for gi in instances}
    if facts.mig_devices is not None:
        pairs = [(d.gpu, d.gi_id) for d in facts.mig_devices]
    elif facts.mig_compute_gis is not None:
        pairs = [(gpu, gi_id) for gpu, gi_ids in facts.mig_compute_gis.items() for gi_id in gi_ids]
    else:
        shown = ", ".join(str(i) for i in sorted(in_mig))
        raise MissingFacts(f"GPU {shown} in MIG mode, but no listing of its MIG devices was captured")
    for gpu, gi_id in pairs:
        if gpu in in_mig:
            out.setdefault(gpu, []).append(_profile(names.get((gpu, gi_id))))
    return out
