"""A diagnosis of a physical fault: which component, what is wrong with it, which action the data centre takes.

Where the real remedy is physical (reseat a cable, replace an optic, reseat or RMA a GPU), a lab cannot ask the
candidate to do it; it asks for the ticket they would raise instead. The answer names each faulty component
(an HCA such as ``mlx5_2``, or a GPU such as ``GPU 6``), the finding (what the node shows: a link with no
partner, one that trained slow, a GPU off the bus), the action (or an ordered escalation list of actions), and
why. The ``why`` is free text for the instructor; it must be there.

Every lab grades actions by one policy (:data:`POLICY`, written out in docs/TICKETS.md): for each finding, the
action the technicians take first and the escalations that follow, rung by rung. A lab names only the faulty
components and their findings; it never chooses actions of its own. A row is right when its component is
faulty, its finding is what the node shows, and its actions start at the finding's first rung and only climb.

Feedback is no oracle: it names only the candidate's own rows, and for them only what the public policy says
(an action that is not the first, an escalation out of order). Whether a named component is faulty, or which
of the rows is right, is never said: only how many are.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.labs.design.answer import Schema, check_section
from assessor.labs.design.base import as_located, grader
from assessor.yamlio import Located

SECTION = "diagnosis"
POLICY_DOC = "docs/TICKETS.md"

# What the node shows, in the words of the tools.
FINDINGS: dict[str, str] = {
    "no-link": "port Down / Polling: no link partner (cable, optic or switch port)",
    "degraded-rate": "port Active below the fabric's rate: trained a speed grade down (marginal cable or optic)",
    "degraded-width": "PCIe link below its maximum width under load (seating, riser, slot)",
    "off-the-bus": "GPU fell off the bus (Xid 79): not reachable until the node is power-cycled",
    "row-remap-failure": "the row remapper reports a failure (Xid 64): a memory bank has no spare row left",
    "thermal-slowdown": "HW thermal slowdown under load: the GPU protects itself from heat",
    "no-subnet-manager": "ports Initializing / LinkUp with no SM LID: the fabric has no subnet manager",
    "signal-errors": "port Active at full rate, but mlxlink counts BER over the limit and link recoveries (bad signal)",
    "firmware-mismatch": "a component runs firmware off the fleet's baseline that the node cannot update itself",
    "miscabled": "port Active at full rate on another switch port than the cabling plan gives it (rails crossed)",
}

# What the data centre (or the fabric team) is asked to do.
ACTIONS: tuple[str, ...] = (
    "reseat-cable",
    "replace-cable",
    "replace-transceiver",
    "check-switch-port",
    "reseat-gpu",
    "rma-gpu",
    "power-cycle",
    "check-cooling",
    "restore-subnet-manager",
    "update-firmware",
    "recable",
)

# THE action policy: per finding, its rungs in order. The first rung is what is accepted first (one action);
# a later rung is an escalation, asked for only if the rungs before it did not help. Actions on one rung are
# alternatives (a copper cable has its transceivers built in; an optical link's module and fibre are swapped
# apart). Sources and reasons: docs/TICKETS.md.
POLICY: dict[str, tuple[tuple[str, ...], ...]] = {
    "no-link": (("reseat-cable",), ("replace-cable", "replace-transceiver"), ("check-switch-port",)),
    "degraded-rate": (("reseat-cable",), ("replace-cable", "replace-transceiver"), ("check-switch-port",)),
    "degraded-width": (("reseat-gpu",), ("rma-gpu",)),
    "off-the-bus": (("power-cycle",), ("reseat-gpu",), ("rma-gpu",)),
    "row-remap-failure": (("rma-gpu",),),
    "thermal-slowdown": (("check-cooling",), ("reseat-gpu",), ("rma-gpu",)),
    "no-subnet-manager": (("restore-subnet-manager",),),
    "signal-errors": (("reseat-cable",), ("replace-cable", "replace-transceiver"), ("check-switch-port",)),
    "firmware-mismatch": (("update-firmware",),),
    "miscabled": (("recable",),),
}


def first_action(finding: str) -> str:
    """The one action the policy accepts first for ``finding``."""
    return POLICY[finding][0][0]


def policy_line(finding: str) -> str:
    """One finding's ladder in words, as the docs and the lab READMEs write it:
    ``- `no-link`: `reseat-cable`, then `replace-cable` or `replace-transceiver`, then `check-switch-port` ``."""
    rungs = [" or ".join(f"`{a}`" for a in rung) for rung in POLICY[finding]]
    ladder = ", then ".join(rungs) if len(rungs) > 1 else f"{rungs[0]}, no escalation"
    return f"- `{finding}`: {ladder}"


def policy_problem(finding: str, actions: list[str]) -> str | None:
    """Why ``actions`` (a row's action, or its escalation list in order) break the policy for ``finding``, or
    None when they follow it. Public: it depends on the policy alone, never on the node."""
    ladder = POLICY[finding]
    rung_of = {a: i for i, rung in enumerate(ladder) for a in rung}
    first = first_action(finding)
    if actions[0] != first:
        if actions[0] in rung_of:
            return f"{actions[0]} is an escalation for {finding}: {first} comes first"
        return f"{actions[0]} is not an action for {finding} (it starts with {first})"
    for before, after in itertools.pairwise(actions):
        if after not in rung_of:
            return f"{after} is not an action for {finding}"
        if rung_of[after] < rung_of[before]:
            return f"{after} comes before {before} for {finding}: an escalation only climbs"
    return None


ROW: Schema = {"component": "str", "finding": "str", "action?": "str", "actions?": "words", "why": "str"}
SCHEMA: Schema = {"findings": [ROW]}

ANSWER_FORMAT = (
    """\
diagnosis:
  findings:                  # one row per faulty component; healthy ones are left out
    - {component: <mlx5_2 | GPU 6 | the fabric>, finding: <finding>, action: <action>, why: <what you saw>}
    - {component: ..., finding: ..., actions: [<first action>, <escalation>, ...], why: ...}
findings: """
    + ", ".join(FINDINGS)
    + "\nactions: "
    + ", ".join(ACTIONS)
    + "\nthe policy (what comes first, then each escalation):\n"
    + "\n".join(policy_line(f) for f in POLICY)
    + "\n"
)

_GPU = re.compile(r"^gpu\s*#?\s*(\d+)\b")
_HCA = re.compile(r"^([a-z]+\d+_\d+)")


# What names the fabric as a whole (its subnet manager), however a candidate words it.
_FABRIC = re.compile(r"^(?:the\s+)?(?:ib\s+|infiniband\s+)?(?:fabric|subnet\s*manager|sm|opensm|ufm)\b")


def component_key(name: str) -> str:
    """``GPU 6``, ``gpu6`` -> ``gpu6``; ``mlx5_2 port 1``, ``mlx5_2:1`` -> ``mlx5_2``; ``the fabric``,
    ``subnet manager``, ``SM``, ``UFM`` -> ``fabric``; else lower-cased text."""
    text = " ".join(str(name).strip().lower().split())
    if m := _GPU.match(text):
        return f"gpu{int(m.group(1))}"
    if m := _HCA.match(text):
        return m.group(1)
    if _FABRIC.match(text):
        return "fabric"
    return text


def _word(value: str) -> str:
    return "-".join(str(value).strip().lower().replace("_", " ").split())


def row_actions(row: dict[str, Any]) -> list[str]:
    """A row's actions in order, normalised: its ``action``, or its ``actions`` escalation list."""
    raw: list[Any] = list(row["actions"]) if row.get("actions") is not None else [row.get("action")]
    return [_word(str(a)) for a in raw]


def validate(located: Located) -> None:
    """Keys and types, then findings and actions from the fixed vocabulary: ``action`` or ``actions`` (an
    escalation list, no action twice), never both; each component named once."""
    section = check_section(located, SECTION, SCHEMA)
    seen: set[str] = set()
    for i, row in enumerate(section["findings"]):
        at = (SECTION, "findings", i)
        if _word(row["finding"]) not in FINDINGS:
            raise located.error(
                (*at, "finding"), f"unknown finding {row['finding']!r} (findings: {', '.join(FINDINGS)})"
            )
        if ("action" in row) == ("actions" in row):
            raise located.error(
                at, "give action (the first action) or actions (an escalation list, first action first), one of them"
            )
        key = "action" if "action" in row else "actions"
        given = [row["action"]] if key == "action" else list(row["actions"])
        for j, action in enumerate(given):
            where = (*at, key) if key == "action" else (*at, key, j)
            if _word(action) not in ACTIONS:
                raise located.error(where, f"unknown action {action!r} (actions: {', '.join(ACTIONS)})")
            if _word(action) in {_word(a) for a in given[:j]}:
                raise located.error(where, f"{_word(action)} is named twice in the escalation list")
        component = component_key(row["component"])
        if component in seen:
            raise located.error((*at, "component"), f"{row['component']} is named twice")
        seen.add(component)


def check_params(params: dict[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with a lab's params (param name, problem): ``expected`` lists the faulty components, each
    a component and a finding from the vocabulary and nothing else (the actions are the policy's, for every
    lab alike); ``min_right`` is at most their number."""
    expected = params.get("expected")
    out: list[tuple[str, str]] = []
    if not isinstance(expected, list) or not expected:
        return [("expected", "list the faulty components: [{component: mlx5_2, finding: no-link}, ...]")]
    keys: set[str] = set()
    for i, item in enumerate(expected):
        if not isinstance(item, dict) or set(item) != {"component", "finding"}:
            extra = sorted(set(item) - {"component", "finding"}) if isinstance(item, dict) else []
            why = (
                f"expected[{i}] gives {', '.join(extra)}: a lab names the component and its finding only; the "
                f"actions are the one policy's ({POLICY_DOC})"
                if "actions" in extra or "action" in extra
                else f"expected[{i}] is {{component: ..., finding: ...}}"
            )
            out.append(("expected", why))
            continue
        if _word(item["finding"]) not in POLICY:
            out.append(
                ("expected", f"expected[{i}]: unknown finding {item['finding']!r} (findings: {', '.join(POLICY)})")
            )
        key = component_key(item["component"])
        if key in keys:
            out.append(("expected", f"expected[{i}]: {item['component']} is named twice"))
        keys.add(key)
    min_right = params.get("min_right")
    if isinstance(min_right, int) and not isinstance(min_right, bool) and not 0 <= min_right <= len(expected):
        out.append(("min_right", f"min_right {min_right} is not between 0 and the {len(expected)} expected"))
    return out


@grader(
    "design.diagnosis",
    title="Diagnosis of a physical fault",
    section=SECTION,
    params=(
        Param(
            "expected",
            "list",
            None,
            "the faulty components and what the node shows: [{component: mlx5_2, finding: no-link}] (required); "
            f"the actions accepted are the one policy's ({POLICY_DOC})",
        ),
        Param(
            "min_right",
            "int",
            0,
            "how many faulty components must be diagnosed right (0: all of them); a lab's partial-credit rule "
            "relaxes it, so one of two findings right earns part of the points",
        ),
    ),
    doc=(
        "Grades the ticket a candidate raises for a fault only the data centre can fix: every faulty component "
        "named with what the node shows (finding) and the policy's first action for it (or an escalation list "
        "that starts there and only climbs), and no healthy component named. Feedback names only the "
        "candidate's own rows, and only what the public policy says about them."
    ),
    answer_format=ANSWER_FORMAT,
    validate=validate,
    check_params=check_params,
)
def grade_diagnosis(answer: dict[str, Any], params: dict[str, Any]) -> Result:
    """Grade the diagnosis section against ``params['expected']`` and the one action policy."""
    expected = params.get("expected")
    if not expected or not isinstance(expected, list):
        raise ValueError("design.diagnosis needs the expected parameter (a list of faulty components)")
    problems = check_params(params)
    if problems:
        raise ValueError("; ".join(why for _, why in problems))
    validate(as_located(answer))
    rows = {component_key(r["component"]): r for r in answer[SECTION]["findings"]}
    want = {component_key(e["component"]): _word(e["finding"]) for e in expected}
    need = int(params.get("min_right") or 0) or len(want)
    # What the policy says of each of the candidate's own rows: public, whatever the node shows.
    notes = []
    right = 0
    for key, row in rows.items():
        finding, actions = _word(row["finding"]), row_actions(row)
        problem = policy_problem(finding, actions)
        if problem:
            notes.append(f"{row['component']}: {problem}")
        elif want.get(key) == finding:
            right += 1
    extra = any(key not in want for key in rows)
    observed = {r["component"]: f"{_word(r['finding'])} -> {', '.join(row_actions(r))}" for r in rows.values()}
    faulty = _count(len(want), "faulty component")
    if extra or right < need:
        # how many of the candidate's rows are right, never which, nor whether a component is faulty
        message = f"{right} of your {_count(len(rows), 'row')} right ({faulty} to diagnose)"
        if notes:
            message += "; " + "; ".join(notes[:6])
        return Result(
            "design.diagnosis",
            "fail",
            message,
            observed=observed,
            expected=f"{faulty}, each with what the node shows and the policy's first action ({POLICY_DOC})",
            hint="a row is right when its component is faulty, its finding is what the node shows and its "
            "actions follow the policy; the policy: "
            + "; ".join(policy_line(f).removeprefix("- ").replace("`", "") for f in POLICY),
        )
    return Result(
        "design.diagnosis",
        "pass",
        f"{right} of {faulty} diagnosed, with the policy's actions"
        + (f" ({need} needed)" if right < len(want) else ""),
        observed=observed,
        expected=faulty,
    )


def _count(n: int, noun: str) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
