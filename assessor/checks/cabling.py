"""Cabling check: every rail HCA is the one nearest its GPU and is cabled to the switch port the site's plan says."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.common import join_limited, label_for_index
from assessor.checks.result import Result
from assessor.checks.topo import HOPS
from assessor.facts import IbLink, NodeFacts, Topology

CHECK = "ib.cabling"
_NEAR = ("PIX", "PXB")  # a GPU's own rail HCA sits behind its PCIe switch
_GPU_ROW = re.compile(r"^GPU(\d+)$")


@dataclass(frozen=True)
class PlanRow:
    hca: str  # mlx5_2
    switch: str  # ib-leaf-03 (as the switch's node description names it)
    port: int  # the switch port
    hca_port: int = 1
    gpu: int | None = None  # the GPU whose rail this HCA is


class PlanError(ValueError):
    pass


def switch_name(description: str) -> str:
    """``MF0;ib-leaf-03:MQM9700/U1`` -> ``ib-leaf-03`` (the host name NVIDIA switches put in their node
    description); any other description as written, lower-cased."""
    text = description.strip()
    if ";" in text:
        text = text.split(";", 1)[1]
        text = text.split(":", 1)[0]
    return text.lower()


def read_plan(raw: Any) -> list[PlanRow]:
    """The plan's rows; PlanError naming the row and key for what is not one."""
    if not isinstance(raw, list) or not raw:
        raise PlanError("plan is a list of rows: [{hca: mlx5_0, switch: ib-leaf-01, port: 1, gpu: 0}, ...]")
    rows: list[PlanRow] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise PlanError(f"plan[{i}] is not a mapping of hca, switch, port (and gpu)")
        unknown = sorted(set(item) - {"hca", "switch", "port", "hca_port", "gpu"})
        if unknown:
            raise PlanError(f"plan[{i}]: unknown key {unknown[0]!r} (keys: hca, switch, port, hca_port, gpu)")
        for key in ("hca", "switch", "port"):
            if key not in item:
                raise PlanError(f"plan[{i}]: no {key!r}")
        for key in ("port", "hca_port", "gpu"):
            value = item.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise PlanError(f"plan[{i}].{key}: {value!r} is not a port or GPU number")
        rows.append(
            PlanRow(
                str(item["hca"]),
                str(item["switch"]),
                int(item["port"]),
                int(item.get("hca_port") or 1),
                item.get("gpu"),
            )
        )
    seen: set[tuple[str, int]] = set()
    for i, row in enumerate(rows):
        if (row.hca, row.hca_port) in seen:
            raise PlanError(f"plan[{i}]: {row.hca} port {row.hca_port} is planned twice")
        seen.add((row.hca, row.hca_port))
    return rows


def _where(switch: str, port: int | None) -> str:
    return f"{switch} port {port}"


def _host_links(links: list[IbLink], host: str | None, devices: set[str]) -> tuple[dict[tuple[str, int], IbLink], str]:
    """This node's cables by (device, port), and the host name they were found under ('' when none)."""
    by_host: dict[str, dict[tuple[str, int], IbLink]] = {}
    for link in links:
        head, _, device = link.ca.strip().rpartition(" ")
        if device in devices and head:
            by_host.setdefault(head, {})[(device, link.port)] = link
    if host:
        for name in (host, host.split(".", 1)[0]):
            for found, rows in by_host.items():
                if found == name or found.split(".", 1)[0] == name:
                    return rows, found
    if len(by_host) == 1:
        ((found, rows),) = by_host.items()
        return rows, found
    return {}, ""


def _nearest_nics(topology: Topology, gpu: int) -> tuple[str, list[str]] | None:
    """The nearest path type from GPU ``gpu`` to any NIC, and the NICs (by device name) at that distance."""
    row = topology.matrix.get(f"GPU{gpu}")
    if row is None:
        return None
    paths: dict[str, str] = {}
    for column, cell in row.items():
        if _GPU_ROW.match(column) or cell.strip().upper() not in HOPS[1:]:
            continue
        paths[topology.nic_names.get(column, column)] = cell.strip().upper()
    if not paths:
        return None
    best = min(paths.values(), key=HOPS.index)
    return best, sorted(n for n, hop in paths.items() if hop == best)


@check(
    CHECK,
    title="Cabling against the site's plan",
    facts=("ib_links", "topology", "gpus"),
    params=(
        Param(
            "plan",
            "list",
            None,
            "the site's cabling plan, one row per rail HCA: {hca: mlx5_2, switch: ib-leaf-03, port: 1, gpu: 2} "
            "(hca_port when not 1; gpu: the GPU whose rail it is, checked against nvidia-smi topo -m); "
            "none: each leaf's rail is read from the other nodes on it",
        ),
        Param("host", "str", "", "the node's name in the fabric's node descriptions (default: the snapshot's host)"),
    ),
    doc=(
        "Reads the cables from `ibnetdiscover` (or `iblinkinfo`) and compares each rail HCA's far end with the "
        "site's cabling plan: the leaf switch and port each HCA must land on. Two rails crossed at the leaf, or "
        "a cable in the wrong leaf, keep every port Active at full rate, so ibstat looks healthy, but a "
        "rail-optimised fabric then sends a GPU's traffic into another rail's leaf and through the spines. "
        "Where the plan names each HCA's GPU, `nvidia-smi topo -m` must show that HCA as the GPU's nearest "
        "NIC (PIX or PXB). Without a plan it reads the rails from the fabric itself: on a rail-optimised fabric "
        "every other node has the same HCA on a leaf, so this node's HCA on a leaf of another rail is misplaced."
    ),
    remedy=(
        "Raise a ticket for the data centre naming both ends of each misplaced cable: the HCA and the switch "
        "port it is on, and the port the plan gives it (crossed rails: swap the two cables at the leaf). "
        "Reordering NCCL_IB_HCA does not move a cable."
    ),
)
def ib_cabling(facts: NodeFacts, params: dict[str, Any]) -> Result:
    if not params.get("plan"):
        return _rails_without_plan(facts, str(params.get("host") or facts.host or ""))
    try:
        plan = read_plan(params.get("plan"))
    except PlanError as exc:
        return result(CHECK, "error", f"the cabling plan is not usable: {exc}", hint="fix the plan in the lab's params")
    links: list[IbLink] = need(facts, "ib_links")
    host = str(params.get("host") or facts.host or "")
    mine, found_host = _host_links(links, host, {r.hca for r in plan})
    expected = {r.hca: _where(r.switch, r.port) for r in plan}
    if not mine:
        hosts = sorted({link.ca.rpartition(" ")[0] for link in links if " " in link.ca})
        return result(
            CHECK,
            "skip",
            f"no cable of {host or 'this node'}'s {', '.join(sorted({r.hca for r in plan}))} in the fabric topology"
            + (f" (hosts seen: {', '.join(hosts[:6])})" if hosts else ""),
            expected=expected,
            hint="capture ibnetdiscover from this node (its HCAs' node descriptions carry its host name), or set host",
        )
    at_port: dict[tuple[str, int], str] = {}
    for link in links:
        if link.peer and link.peer_port is not None:
            at_port[(switch_name(link.peer), link.peer_port)] = link.ca
    observed: dict[str, str] = {}
    wrong: dict[str, tuple[tuple[str, int], tuple[str, int]]] = {}
    unknown: list[str] = []
    for row in plan:
        cable = mine.get((row.hca, row.hca_port))
        if cable is None or not cable.peer or cable.peer_port is None:
            unknown.append(row.hca)
            continue
        actual = (switch_name(cable.peer), cable.peer_port)
        planned = (switch_name(row.switch), row.port)
        observed[row.hca] = _where(*actual)
        if actual != planned:
            wrong[row.hca] = (actual, planned)
    fails: list[str] = []
    done: set[str] = set()
    for a, (a_actual, a_planned) in wrong.items():
        if a in done:
            continue
        partner = next(
            (
                b
                for b, (b_actual, b_planned) in wrong.items()
                if b != a and b_actual == a_planned and b_planned == a_actual
            ),
            None,
        )
        if partner is not None:
            done |= {a, partner}
            fails.append(
                f"{a} and {partner} are crossed: {a} is on {_where(*a_actual)} (plan: {_where(*a_planned)}), "
                f"{partner} on {_where(*a_planned)} (plan: {_where(*a_actual)}); swap the two cables"
            )
            continue
        done.add(a)
        there = at_port.get(a_planned)
        now = f"{there} is there now" if there else "nothing is cabled there"
        fails.append(f"{a} is on {_where(*a_actual)}, the plan puts it on {_where(*a_planned)} ({now})")
    topology = facts.topology
    pairing_unverified = False
    for row in plan:
        if row.gpu is None:
            continue
        if topology is None:
            pairing_unverified = True
            continue
        nearest = _nearest_nics(topology, row.gpu)
        if nearest is None:
            pairing_unverified = True
            continue
        hop, nics = nearest
        label = label_for_index(row.gpu, facts.gpus)
        if hop not in _NEAR:
            fails.append(
                f"{label}: no NIC behind its PCIe switch (nearest {', '.join(nics)} at {hop}); plan: {row.hca}"
            )
        elif row.hca not in nics:
            fails.append(f"{label}: nearest NIC is {', '.join(nics)} ({hop}), the plan's rail HCA is {row.hca}")
    where = f" ({found_host})" if found_host else ""
    if fails:
        return result(
            CHECK,
            "fail",
            join_limited(fails),
            observed=observed,
            expected=expected,
            hint="a cable is physical work: ticket the data centre with both ends of each misplaced cable (crossed "
            "rails: swap the two cables at the leaf); changing NCCL_IB_HCA does not move a cable",
        )
    if unknown and not observed:
        return result(
            CHECK,
            "skip",
            f"no cable seen from {', '.join(unknown)}{where}",
            expected=expected,
            hint="capture ibnetdiscover from this node",
        )
    if unknown:
        return result(
            CHECK,
            "warn",
            f"{len(observed)} HCAs cabled as planned; no cable seen from {', '.join(unknown)} "
            "(port down, or not in this output)",
            observed=observed,
            expected=expected,
            hint="ibstat shows whether those ports are up; recapture ibnetdiscover in full",
        )
    if pairing_unverified:
        return result(
            CHECK,
            "warn",
            f"{len(observed)} HCAs cabled as planned{where}; which GPU each rail serves is not verified "
            "(no nvidia-smi topo -m)",
            observed=observed,
            expected=expected,
            hint="capture nvidia-smi topo -m with the topology",
        )
    return result(
        CHECK, "pass", f"{len(observed)} HCAs cabled as the plan says{where}", observed=observed, expected=expected
    )


def _rails_without_plan(facts: NodeFacts, host: str) -> Result:
    """Without a plan, what a rail-optimised fabric says of itself: every leaf carries one rail, the same HCA
    of every node, so this node's HCA on a leaf whose other nodes have another HCA there is in the wrong leaf."""
    links: list[IbLink] = need(facts, "ib_links")
    by_leaf: dict[str, dict[str, list[str]]] = {}  # leaf -> device -> hosts with that device there
    for link in links:
        head, _, device = link.ca.strip().rpartition(" ")
        if head and device and link.peer:
            by_leaf.setdefault(switch_name(link.peer), {}).setdefault(device, []).append(head)
    mine, found_host = _host_links(links, host, {d for devices in by_leaf.values() for d in devices})
    rails: dict[str, str] = {}  # leaf -> the device every other node has there
    for leaf, devices in by_leaf.items():
        others = {d: [h for h in hosts if h != found_host] for d, hosts in devices.items()}
        counts = sorted(((len(h), d) for d, h in others.items() if h), reverse=True)
        if counts and counts[0][0] >= 2 and (len(counts) == 1 or counts[0][0] > 2 * counts[1][0]):
            rails[leaf] = counts[0][1]
    plan_hint = "give the site's plan: plan: [{hca: mlx5_0, switch: ib-leaf-01, port: 1, gpu: 0}, ...]"
    if not mine or not rails:
        return result(
            CHECK,
            "skip",
            f"{len(links)} cables from CA ports in the fabric topology; no cabling plan to compare them with, "
            "and no rail-optimised leaves to read one from",
            hint=plan_hint,
        )
    observed = {device: _where(switch_name(link.peer or ""), link.peer_port) for (device, _), link in mine.items()}
    fails = []
    checked = 0
    for (device, _port), link in sorted(mine.items()):
        leaf = switch_name(link.peer or "")
        rail = rails.get(leaf)
        if rail is None:
            continue
        checked += 1
        if rail != device:
            home = next((other for other, d in rails.items() if d == device), None)
            where = f"; the other nodes' {device} are on {home}" if home else ""
            fails.append(
                f"{device} is on {_where(leaf, link.peer_port)}, a leaf whose other nodes have their {rail} "
                f"there{where}"
            )
    expected = "each HCA on the leaf where every other node has the same HCA (one rail per leaf)"
    if fails:
        return result(
            CHECK,
            "fail",
            join_limited(fails),
            observed=observed,
            expected=expected,
            hint="a cable is physical work: ticket the data centre with both ends of each misplaced cable; "
            "with the site's plan as params the check names the port each cable belongs on",
        )
    if not checked:
        return result(
            CHECK, "skip", "no leaf of this node's HCAs carries a single rail", observed=observed, hint=plan_hint
        )
    return result(
        CHECK,
        "pass",
        f"{checked} HCAs each on the leaf of their rail ({found_host}; no plan given: the rails read from the fabric)",
        observed=observed,
        expected=expected,
    )
