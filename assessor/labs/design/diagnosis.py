"""A diagnosis of a physical fault: which component, what is wrong with it, which action the data centre takes.

Where the real remedy is physical (reseat a cable, replace an optic, reseat or RMA a GPU), a lab cannot ask the
candidate to do it; it asks for the ticket they would raise instead. The answer names each faulty component
(an HCA such as ``mlx5_2``, or a GPU such as ``GPU 6``), the finding (what the node shows: a link with no
partner, one that trained slow, a GPU off the bus), the action, and why. The grader checks every expected
component is named with the right finding and an accepted action, and that no healthy component is sent to
the data centre. The ``why`` is free text for the instructor; it must be there.

Findings and actions are fixed words, so "the two repairs swapped" is a wrong answer, not a matter of wording.
"""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.labs.design.answer import Schema, check_section
from assessor.labs.design.base import as_located, grader
from assessor.yamlio import Located

SECTION = "diagnosis"

# What the node shows, in the words of the tools.
FINDINGS: dict[str, str] = {
    "no-link": "port Down / Polling: no link partner (cable, optic or switch port)",
    "degraded-rate": "port Active below the fabric's rate: trained a speed grade down (marginal cable or optic)",
    "degraded-width": "PCIe link below its maximum width under load (seating, riser, slot)",
    "off-the-bus": "GPU fell off the bus (Xid 79): not reachable until the node is power-cycled",
    "no-subnet-manager": "ports Initializing / LinkUp with no SM LID: the fabric has no subnet manager",
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
    "restore-subnet-manager",
)

SCHEMA: Schema = {"findings": [{"component": "str", "finding": "str", "action": "str", "why": "str"}]}

ANSWER_FORMAT = (
    """\
diagnosis:
  findings:                  # one row per faulty component; healthy ones are left out
    - {component: <mlx5_2 | GPU 6>, finding: <finding>, action: <action>, why: <what you saw>}
findings: """
    + ", ".join(FINDINGS)
    + "\nactions: "
    + ", ".join(ACTIONS)
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


def validate(located: Located) -> None:
    """Keys and types, then findings and actions from the fixed vocabulary; each component named once."""
    section = check_section(located, SECTION, SCHEMA)
    seen: set[str] = set()
    for i, row in enumerate(section["findings"]):
        if _word(row["finding"]) not in FINDINGS:
            raise located.error(
                (SECTION, "findings", i, "finding"),
                f"unknown finding {row['finding']!r} (findings: {', '.join(FINDINGS)})",
            )
        if _word(row["action"]) not in ACTIONS:
            raise located.error(
                (SECTION, "findings", i, "action"), f"unknown action {row['action']!r} (actions: {', '.join(ACTIONS)})"
            )
        key = component_key(row["component"])
        if key in seen:
            raise located.error((SECTION, "findings", i, "component"), f"{row['component']} is named twice")
        seen.add(key)


@grader(
    "design.diagnosis",
    title="Diagnosis of a physical fault",
    section=SECTION,
    params=(
        Param(
            "expected",
            "list",
            None,
            "the faulty components: [{component: mlx5_2, finding: no-link, actions: [reseat-cable, ...]}] (required)",
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
        "named with what the node shows (finding) and an accepted action, and no healthy component named."
    ),
    answer_format=ANSWER_FORMAT,
    validate=validate,
)
def grade_diagnosis(answer: dict[str, Any], params: dict[str, Any]) -> Result:
    """Grade the diagnosis section against ``params['expected']``."""
    expected = params.get("expected")
    if not expected or not isinstance(expected, list):
        raise ValueError("design.diagnosis needs the expected parameter (a list of faulty components)")
    validate(as_located(answer))
    rows = {component_key(r["component"]): r for r in answer[SECTION]["findings"]}
    want = {component_key(e["component"]): e for e in expected}
    need = int(params.get("min_right") or 0) or len(want)
    # Feedback names the candidate's own rows and the field that is wrong in each; it never names a faulty
    # component the ticket left out (that would be the answer), only how many there are.
    fails: list[str] = []
    right = 0
    for key, item in want.items():
        row = rows.get(key)
        if row is None:
            continue
        if _word(row["finding"]) != _word(item["finding"]):
            fails.append(f"{row['component']}: the finding does not match what the node shows")
        elif _word(row["action"]) not in {_word(a) for a in item.get("actions") or ()}:
            fails.append(f"{row['component']}: {_word(row['action'])} does not fix a {_word(row['finding'])} fault")
        else:
            right += 1
    missing = sum(1 for key in want if key not in rows)
    if missing:
        fails.append(f"{_count(missing, 'faulty component')} not in the ticket")
    extra = [rows[k]["component"] for k in rows if k not in want]
    fails += [f"{name} is healthy: no ticket for it" for name in extra]
    observed = {rows[k]["component"]: f"{_word(r['finding'])} -> {_word(r['action'])}" for k, r in rows.items()}
    wrong = len(want) - right + len(extra)
    total = len(want) + len(extra)
    if fails and (extra or right < need):
        return Result(
            "design.diagnosis",
            "fail",
            f"{wrong} of {_count(total, 'finding')} wrong: " + "; ".join(fails[:6]),
            observed=observed,
            expected=f"{_count(len(want), 'faulty component')}, each with its finding and an action that fixes it",
            hint="findings: " + "; ".join(f"{k}: {v}" for k, v in FINDINGS.items()),
        )
    return Result(
        "design.diagnosis",
        "pass",
        f"{right} of {_count(len(want), 'faulty component')} diagnosed"
        + (f" ({need} needed)" if right < len(want) else ""),
        observed=observed,
        expected=_count(len(want), "faulty component"),
    )


def _count(n: int, noun: str) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
