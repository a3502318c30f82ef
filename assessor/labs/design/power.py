"""Rack power and cooling for a GPU cluster: how many nodes a rack's power budget takes, and the heat to remove.

Rules and sources:

- Node power is the node's *maximum* draw, not its typical one: a rack is provisioned for the worst case.
  DGX H100 / H200: 10.2 kW max (NVIDIA DGX H100/H200 User Guide, "Hardware Specifications": system power
  usage ~10.2 kW max); DGX A100: 6.5 kW max (DGX A100 User Guide).
- Nodes per rack: as many as fit the rack's power budget (and its space, when the lab gives a limit). The
  DGX SuperPOD data-center design for DGX H100 puts four systems in a rack: 4 x 10.2 = 40.8 kW; sites with
  less power per rack spread the same nodes over more racks
  (https://docs.nvidia.com/dgx-superpod/design-guides/dgx-superpod-data-center-design-h100/latest/).
- Cooling: every watt the IT equipment draws ends up as heat in the room, so the cooling to provide equals
  the IT load (nodes + switches), kW for kW (1 kW = 3,412 BTU/h; 1 ton of refrigeration = 3.517 kW).
- Facility power, when the lab gives a PUE: PUE = total facility power / IT equipment power (The Green
  Grid, "PUE: A Comprehensive Examination of the Metric", WP#49), so facility kW = IT kW x PUE.

Carried error (:func:`assessor.labs.design.base.compare`'s ``follows``): an answer computed from another answer
is right when it follows correctly from the candidate's own value of that answer. Cooling and facility power
follow from the candidate's ``total_it_kw``, the racks and a full rack's draw from their ``nodes_per_rack``,
where the check grades that answer too: a wrong IT load is wrong once, in ``total_it_kw``, and the cooling and
facility power that follow from it are not counted wrong again. A rack over its budget and cooling below the
real IT load still fail, whatever the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.labs.design.answer import Schema, check_section
from assessor.labs.design.base import as_located, check_parts, compare, grader, parts_param
from assessor.yamlio import Located

SECTION = "power"

# Maximum system power, kW (DGX H100/H200 and DGX A100 user guides, "Hardware Specifications").
DGX_H100_KW = 10.2
DGX_A100_KW = 6.5

SCHEMA: Schema = {
    "nodes_per_rack": "count",
    "compute_racks": "count",
    "rack_kw": "number",
    "total_it_kw": "number",
    "cooling_kw": "number",
    "facility_kw?": "number",
}

ANSWER_FORMAT = """\
power:
  nodes_per_rack: <nodes in each compute rack>
  compute_racks: <racks for all the nodes>
  rack_kw: <maximum draw of a full compute rack, kW>
  total_it_kw: <nodes and switches at maximum draw, kW>
  cooling_kw: <heat to remove, kW>
  facility_kw: <only when the lab gives a PUE: total facility power, kW>
"""

PARTS = ("nodes_per_rack", "compute_racks", "rack_kw", "total_it_kw", "cooling_kw", "facility_kw")

RULES = {
    "nodes_per_rack": "as many nodes as the rack's power budget (and space limit, if given) takes at maximum draw",
    "compute_racks": "nodes / nodes per rack, rounded up",
    "rack_kw": "nodes per rack x node maximum power",
    "total_it_kw": "nodes x node power + switches x switch power",
    "cooling_kw": "every watt drawn becomes heat: cooling = total IT power",
    "facility_kw": "IT power x PUE",
}


@dataclass(frozen=True)
class PowerPlan:
    """The computed rack plan for one set of inputs."""

    nodes: int
    node_kw: float
    budget_kw_per_rack: float
    nodes_per_rack: int
    compute_racks: int
    rack_kw: float
    total_it_kw: float
    cooling_kw: float
    facility_kw: float | None

    def answer(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "nodes_per_rack": self.nodes_per_rack,
            "compute_racks": self.compute_racks,
            "rack_kw": round(self.rack_kw, 3),
            "total_it_kw": round(self.total_it_kw, 3),
            "cooling_kw": round(self.cooling_kw, 3),
        }
        if self.facility_kw is not None:
            out["facility_kw"] = round(self.facility_kw, 3)
        return out


def compute(
    nodes: int,
    budget_kw_per_rack: float,
    node_kw: float = DGX_H100_KW,
    *,
    max_nodes_per_rack: int | None = None,
    switches: int = 0,
    switch_kw: float = 0.0,
    pue: float | None = None,
) -> PowerPlan:
    """The densest rack plan within the budget; ValueError when not even one node fits a rack."""
    if nodes < 1 or node_kw <= 0 or budget_kw_per_rack <= 0:
        raise ValueError(
            f"nodes, node_kw and budget_kw_per_rack must be positive (got {nodes}, {node_kw}, {budget_kw_per_rack})"
        )
    # A small epsilon so 4 x 10.2 against a 40.8 kW budget counts as fitting despite float rounding.
    per_rack = math.floor(budget_kw_per_rack / node_kw + 1e-9)
    if max_nodes_per_rack is not None:
        per_rack = min(per_rack, max_nodes_per_rack)
    if per_rack < 1:
        raise ValueError(f"a {node_kw:g} kW node does not fit a {budget_kw_per_rack:g} kW rack budget")
    total = nodes * node_kw + switches * switch_kw
    return PowerPlan(
        nodes=nodes,
        node_kw=node_kw,
        budget_kw_per_rack=budget_kw_per_rack,
        nodes_per_rack=per_rack,
        compute_racks=math.ceil(nodes / per_rack),
        rack_kw=per_rack * node_kw,
        total_it_kw=total,
        cooling_kw=total,
        facility_kw=total * pue if pue is not None else None,
    )


def validate(located: Located) -> None:
    """The power section has every key, counts whole and kW numbers >= 0 (InputError with file, line, key)."""
    check_section(located, SECTION, SCHEMA)


@grader(
    "design.power",
    title="Rack power and cooling",
    section=SECTION,
    params=(
        Param("nodes", "int", None, "GPU nodes to place (required)"),
        Param("budget_kw_per_rack", "float", None, "power the site delivers to one rack, kW (required)"),
        Param("node_kw", "float", DGX_H100_KW, "maximum power of one node, kW (DGX H100 10.2, DGX A100 6.5)"),
        Param("max_nodes_per_rack", "int", None, "space limit on nodes per rack (None: power is the only limit)"),
        Param("switches", "int", 0, "fabric switches whose power the IT load includes"),
        Param("switch_kw", "float", 0.0, "maximum power of one switch, kW"),
        Param("pue", "float", None, "facility PUE; when given the answer must include facility_kw"),
        Param("tolerance_pct", "float", 1.0, "how far a kW answer may be from the computed one, percent"),
        parts_param(PARTS),
    ),
    doc=(
        "Computes the densest rack plan within the rack power budget (nodes per rack at maximum draw, compute "
        "racks, full-rack kW), the IT load with the fabric switches, the cooling it needs (kW for kW) and, "
        "with a PUE, the facility power; counts must match exactly, kW within tolerance_pct. A rack over "
        "budget or cooling below the IT load fails whatever the arithmetic."
    ),
    answer_format=ANSWER_FORMAT,
    validate=validate,
)
def grade_power(answer: dict[str, Any], params: dict[str, Any]) -> Result:
    """Grade the power section against :func:`compute` for the lab's params."""
    for required in ("nodes", "budget_kw_per_rack"):
        if params.get(required) is None:
            raise ValueError(f"design.power needs the {required} parameter")
    plan = compute(
        int(params["nodes"]),
        float(params["budget_kw_per_rack"]),
        float(params["node_kw"]),
        max_nodes_per_rack=params.get("max_nodes_per_rack"),
        switches=int(params.get("switches") or 0),
        switch_kw=float(params.get("switch_kw") or 0.0),
        pue=float(params["pue"]) if params.get("pue") is not None else None,
    )
    validate(as_located(answer))
    parts = check_parts("design.power", params.get("parts"), PARTS)
    got = dict(answer[SECTION])
    extra: list[str] = []
    rack_kw, cooling = got.get("rack_kw"), got.get("cooling_kw")
    if (
        (parts is None or "rack_kw" in parts)
        and isinstance(rack_kw, (int, float))
        and rack_kw > plan.budget_kw_per_rack + 1e-9
    ):
        extra.append(f"a {rack_kw:g} kW rack exceeds the {plan.budget_kw_per_rack:g} kW budget")
    follows = carried(got, plan)
    cooled = parts is None or "cooling_kw" in parts
    if cooled and isinstance(cooling, (int, float)) and cooling < plan.total_it_kw * 0.99:
        # below the real IT load: a failure whatever the arithmetic, unless it is the candidate's own IT load
        # carried (that wrong load is counted wrong in total_it_kw)
        own = follows.get("cooling_kw") if parts is None or "total_it_kw" in parts else None
        if own is None or abs(cooling - own[0]) > abs(own[0]) * 0.01:
            extra.append(f"cooling_kw {cooling:g} is less than the IT load it must remove")
    tolerance = float(params.get("tolerance_pct") or 0.0)
    return compare(
        "design.power",
        got=got,
        want=plan.answer(),
        rules=RULES,
        reveal=bool(params.get("reveal")),
        ok=(
            f"{plan.nodes} nodes in {plan.compute_racks} racks of {plan.nodes_per_rack} "
            f"({plan.rack_kw:g} kW each, budget {plan.budget_kw_per_rack:g}); "
            f"{plan.total_it_kw:g} kW IT load and cooling"
        ),
        hint=(
            f"inputs: {plan.nodes} nodes at {plan.node_kw:g} kW, {plan.budget_kw_per_rack:g} kW per rack; "
            "size for maximum draw, not typical"
        ),
        extra_fails=extra,
        tolerance_pct={k: tolerance for k in ("rack_kw", "total_it_kw", "cooling_kw", "facility_kw")},
        parts=parts,
        follows=follows,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def carried(got: dict[str, Any], plan: PowerPlan) -> dict[str, tuple[Any, str]]:
    """What each answer computed from another answer would be from the candidate's own value of it (the
    carried-error rule): key -> (value, the key it is computed from). Only where the candidate's value differs
    from the computed one (otherwise the rule gives the computed value itself) and can be computed from."""
    out: dict[str, tuple[Any, str]] = {}
    it = _number(got.get("total_it_kw"))
    if it is not None and it > 0 and abs(it - plan.total_it_kw) > 1e-9:
        out["cooling_kw"] = (it, "total_it_kw")
        if plan.facility_kw is not None:
            out["facility_kw"] = (round(it * plan.facility_kw / plan.total_it_kw, 3), "total_it_kw")
    per_rack = got.get("nodes_per_rack")
    if (
        isinstance(per_rack, int)
        and not isinstance(per_rack, bool)
        and per_rack >= 1
        and per_rack != plan.nodes_per_rack
    ):
        out["compute_racks"] = (math.ceil(plan.nodes / per_rack), "nodes_per_rack")
        out["rack_kw"] = (round(per_rack * plan.node_kw, 3), "nodes_per_rack")
    return out
