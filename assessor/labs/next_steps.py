"""What a lab command tells the user to do next, as complete command lines they can paste.

Built from what the command did; nothing here changes anything (the start's own lines are kept as they are).
The lines are raw data (a target, a candidate's name, an inventory path): the CLI neutralises each where it
prints it (:mod:`assessor.labs.commands`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datetime as dt

    from assessor.labs.model import Lab


def command(*words: str | None, **options: str | bool | None) -> str:
    """A complete gpulab command line, quoted for a POSIX shell: ``command("lab", "grade", "mig-301",
    inventory="inv.yml", target="node01")`` -> ``gpulab lab grade mig-301 --inventory inv.yml --target node01``.

    Options that are None or False are left out; True is a flag.
    """
    parts = ["gpulab", *(w for w in words if w)]
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        parts += [flag] if value is True else [flag, str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def after_start(
    lab: Lab,
    steps: list[str],
    begun: Any,
    *,
    now: dt.datetime,
    who: str,
    candidate: str | None,
    target: str | None,
    inventory: str | None,
    db: str | None,
    ssh: Mapping[str, str | None],
) -> list[str]:
    """The lines `lab start` prints on one node, in order: the steps worth saying (a node replaced, a lab
    closed), how much was set up, the candidate's variant where the instructions name it, a clock already
    running, how to enter the node and how to grade. What the scenario did stays unsaid: naming the fault
    would give a troubleshooting lab away. ``candidate`` is as given (None: the OS user, ``who``)."""
    from assessor.labs.attempts import iso

    lines = [line for line in steps if "--replace-node" in line or line.startswith("closed ")]
    if lab.is_design:  # no node: nothing was set up, and the answer's format is in the lab's folder
        lines.append(
            f"{lab.id} is a design lab: no node to set up; write your answer as "
            f"{lab.path / (lab.answer_example or '')} shows (`gpulab lab show {lab.id}` explains)"
        )
    else:
        done = f"{len(steps)} step{'' if len(steps) == 1 else 's'} applied" if steps else "nothing to change"
        lines.append(f"{lab.id}: the node is set up for the lab ({done} on {target})")
    if lab.variants:
        from assessor.labs.loader import pick_variant, placeholders, read_readme

        # only what the instructions name: a variant the candidate must find (mig-101's GPU) stays unsaid
        named = placeholders(read_readme(lab))
        chosen = ", ".join(f"{k} = {v}" for k, v in pick_variant(lab, who).items() if k in named)
        if chosen:
            lines.append(f"your variant of {lab.id}: {chosen} (read {{name}} in the instructions as these)")
    if begun.started_at < now.replace(microsecond=0):
        lines.append(
            f"{lab.id} was already started by {who} at {iso(begun.started_at)}: that clock keeps running "
            f"(`{command('lab', 'close', lab.id, candidate=candidate, db=db)}` or an instructor's `gpulab lab reset` "
            "closes it)"
        )
    if lab.is_design:
        grade = command("lab", "grade", lab.id, answer="FILE", candidate=candidate, db=db)
    else:
        ticket = "ticket.yaml" if lab.takes_answer else None
        grade = command(
            "lab", "grade", lab.id, inventory=inventory, target=target, answer=ticket, **ssh, candidate=candidate, db=db
        )
        if ticket:
            lines.append(
                f"{lab.id} grades what you do on the node and your ticket for the data centre: write it as "
                f"{lab.path / (lab.answer_example or '')} shows (`gpulab lab show {lab.id}` explains)"
            )
    if target and not lab.is_design:
        from assessor.labs.capture import target_key

        key = target_key(target, inventory)
        if key.startswith("mock:/"):
            alone = command("sim", "shell", candidate=candidate, db=db)
            by_path = command("sim", "shell", key.removeprefix("mock:"))
            lines.append(f"enter the node with `{alone}` (your open lab's node) or `{by_path}`")
    lines.append(
        f"{lab.id} started for {who}: {lab.time_limit_min} min from the start; "
        f"read it with `gpulab lab show {lab.id}`, grade it with `{grade}`"
    )
    return lines
