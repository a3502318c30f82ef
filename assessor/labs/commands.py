"""What `gpulab lab start|grade|solve|reset` do once their options are parsed.

The CLI (:mod:`assessor.cli.labs`) parses the options, calls one function here and prints what it says or
returns; every decision between is made here: one node or a cohort (:func:`assessor.labs.cohort.is_cohort`),
which lab and variant, which step, where a grade is kept, what the candidate is told to do next. Lines are
handed to ``say`` (``click.echo``'s signature) as they are known, so what a step printed stays printed when a
later part fails, as it always did.

Every line handed to ``say`` is raw data: a node's name and stderr, a target, an inventory path, a candidate's
name, a lab's text. It is neutralised (credentials redacted, :mod:`assessor.neutralise`'s rule) in one place,
at the point of printing: the CLI's ``say`` (:func:`assessor.cli.labs._say`). Nothing here escapes a line,
so nothing is escaped twice and a caller other than the terminal gets the data as it is.

A grade is one pass (:mod:`assessor.labs.grade`): the lab is found once, the node captured once, the lab
resolved against the candidate's open start once, evaluated, recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assessor.errors import InputError

if TYPE_CHECKING:
    from assessor.labs.attempts import DatabaseError
    from assessor.labs.cohort import Cohort, HostGrade
    from assessor.labs.grading import Grade
    from assessor.labs.model import Lab
    from assessor.targets import TargetOptions

Say = Callable[..., Any]


@dataclass(frozen=True)
class Graded:
    """What `lab grade` came to: one grade (a node, or a design lab's answer) or a cohort's, host by host."""

    lab: Lab
    grade: Grade | None = None
    failure: DatabaseError | None = None  # why that one grade could not be recorded
    hosts: list[HostGrade] | None = None  # a cohort's grades
    out: str | None = None  # the gradebook they were kept in


def grade(
    lab_id: str,
    *,
    target: str | None = None,
    answer: str | None = None,
    answers: str | None = None,
    candidate: str | None = None,
    db: str | None = None,
    timeout: float = 120.0,
    out: str | None = None,
    inventory: str | None = None,
    options: TargetOptions | None = None,
    limit: str | None = None,
    forks: int = 32,
    candidates_file: str | None = None,
) -> Graded:
    """`lab grade`: one node (or a design lab's answer), or every host of a cohort; each grade kept in the
    gradebook ``out`` when given."""
    from assessor.labs import cohort
    from assessor.labs.loader import find_lab

    lab = find_lab(lab_id)
    if not lab.is_design and cohort.is_cohort(inventory, target, limit, candidates_file, candidate):
        hosts = cohort.grade_inventory(
            lab,
            inventory or "",
            limit=limit,
            candidates_file=candidates_file,
            answer=answer,
            answers=answers,
            options=options,
            db=db,
            forks=forks,
            timeout=timeout,
            out=out,
        )
        return Graded(lab, hosts=hosts, out=out)
    if answers:
        raise InputError("--answers DIR is for a cohort (--inventory, no --target): one node takes --answer FILE")
    from assessor.labs import grade as one_pass

    who = candidate or _default_candidate()
    result, failure = one_pass.grade_and_record(
        lab,
        candidate=who,
        spec=target,
        answer=answer,
        db=db,
        options=None if lab.is_design else options,
        inventory=inventory,
        timeout=timeout,
    )
    if out:
        from assessor.labs.gradebook import write_grade

        spec = target or f"answer:{answer}"
        write_grade(out, result, candidate=who, host=spec if inventory else (result.extras.get("host") or who))
    return Graded(lab, grade=result, failure=failure, out=out)


def start(
    lab_id: str,
    *,
    say: Say,
    target: str | None = None,
    candidate: str | None = None,
    db: str | None = None,
    replace_node: bool = False,
    replace: bool = False,
    inventory: str | None = None,
    options: TargetOptions | None = None,
    limit: str | None = None,
    forks: int = 32,
    candidates_file: str | None = None,
) -> int | None:
    """`lab start`: set the node (or every host of a cohort) up and record the start; tell the candidate what
    to do next. Returns the exit code of a cohort's start (None: one node's, which raises when it fails)."""
    from assessor.labs import attempts, cohort, lifecycle, next_steps
    from assessor.labs.loader import find_lab

    lab = find_lab(lab_id)
    who = candidate or attempts.default_candidate()
    ssh = _ssh(options)
    if cohort.is_cohort(inventory, target, limit, candidates_file, candidate):
        group = cohort.load(inventory or "", limit=limit, candidates_file=candidates_file)
        code = _cohort_step(lab, "start", group, options, forks, db, say, replace=replace)
        grade_line = next_steps.command(
            "lab",
            "grade",
            lab.id,
            inventory=inventory,
            limit=limit,
            candidates=candidates_file,
            answers="TICKETS_DIR" if lab.takes_answer else None,
            **ssh,
            db=db,
        )
        say(f"grade the cohort with `{grade_line} --out gradebook`")
        return code
    now = attempts.now()
    steps, begun = lifecycle.start_and_record(
        lab, target, options, candidate=who, db=db, inventory=inventory, replace_node=replace_node, replace=replace
    )
    for line in next_steps.after_start(
        lab, steps, begun, now=now, who=who, candidate=candidate, target=target, inventory=inventory, db=db, ssh=ssh
    ):
        say(line)
    return None


def solve(
    lab_id: str,
    *,
    say: Say,
    target: str | None = None,
    out: str | None = None,
    db: str | None = None,
    inventory: str | None = None,
    options: TargetOptions | None = None,
    limit: str | None = None,
    forks: int = 32,
    candidates_file: str | None = None,
) -> int | None:
    """`lab solve`: the reference solution on the node (or every host of a cohort), and a lab's reference answer
    or ticket shown (or written to ``out``). Returns a cohort's exit code (None: one node's)."""
    from assessor.labs import cohort, lifecycle
    from assessor.labs.loader import find_lab, pick_variant, with_variant

    lab = find_lab(lab_id)
    if lab.is_design or (lab.takes_answer and not target and not inventory):
        _show_reference_answer(with_variant(lab, pick_variant(lab, _default_candidate())), out, db, say)
        return None
    if cohort.is_cohort(inventory, target, limit, candidates_file):
        return _on_cohort(lab, "solve", inventory, limit, candidates_file, options, forks, db, say)
    log = lifecycle.solve_and_record(lab, target, options, solved_by=_default_candidate(), db=db, inventory=inventory)
    for line in log:
        say(line)
    say(f"later grades on {target} are flagged: reference solution applied on this node")
    if lab.takes_answer:
        _show_reference_answer(lifecycle.variant_on(lab, target, db=db, inventory=inventory), out, db, say)
    return None


def reset(
    lab_id: str,
    *,
    say: Say,
    target: str | None = None,
    db: str | None = None,
    inventory: str | None = None,
    options: TargetOptions | None = None,
    limit: str | None = None,
    forks: int = 32,
    candidates_file: str | None = None,
) -> int | None:
    """`lab reset`: the node (or every host of a cohort) back to where the lab starts, every lab open there
    closed. Returns a cohort's exit code (None: one node's)."""
    from assessor.labs import cohort, lifecycle
    from assessor.labs.loader import find_lab

    lab = find_lab(lab_id)
    if cohort.is_cohort(inventory, target, limit, candidates_file):
        return _on_cohort(lab, "reset", inventory, limit, candidates_file, options, forks, db, say)
    log = lifecycle.reset_and_close(lab, target, options, closed_by=_default_candidate(), db=db, inventory=inventory)
    for line in log:
        say(line)
    return None


def _on_cohort(
    lab: Lab,
    action: str,
    inventory: str | None,
    limit: str | None,
    candidates_file: str | None,
    options: TargetOptions | None,
    forks: int,
    db: str | None,
    say: Say,
) -> int:
    """solve or reset over the cohort of ``inventory`` (``limit`` and ``candidates_file`` applied)."""
    from assessor.labs import cohort

    group = cohort.load(inventory or "", limit=limit, candidates_file=candidates_file)
    return _cohort_step(lab, action, group, options, forks, db, say)


def _cohort_step(
    lab: Lab,
    action: str,
    group: Cohort,
    options: TargetOptions | None,
    forks: int,
    db: str | None,
    say: Say,
    *,
    replace: bool = False,
) -> int:
    """start, solve or reset over a cohort: a line per host, a line per lab the step closed, a tally; the exit
    code. A start refuses (before anything runs) hosts that hold another open lab unless ``replace``; the
    attempts database learns what one node's step would tell it (lifecycle.after_cohort_step)."""
    from assessor.labs import attempts, cohort, lifecycle

    held = lifecycle.cohort_held(lab, group, db=db, replace=replace) if action == "start" else {}
    at = attempts.now()
    if action == "start":
        outcomes = cohort.start(lab, group, options, db=db, forks=forks)
    else:
        outcomes = cohort.run_step(lab, action, group, options, forks=forks)
    for line in cohort.step_summary(action, group, outcomes):
        say(line)
    done = [name for name, o in outcomes.items() if o.status == "ok"]
    by = _default_candidate()
    for line in lifecycle.after_cohort_step(lab, action, group, done, by=by, db=db, at=at, held=held):
        say(line)
    say(f"{lab.id} {action}: {cohort.step_tally(action, outcomes)}")
    return cohort.step_exit_code(outcomes)


def _show_reference_answer(lab: Lab, out: str | None, db: str | None, say: Say) -> None:
    """Show (or write to ``out``) the reference answer or ticket; the candidate's later grades are flagged."""
    from assessor.labs import lifecycle, next_steps
    from assessor.labs.loader import reference_answer

    text = reference_answer(lab)
    lifecycle.record_answer_shown(lab, shown_to=_default_candidate(), db=db)
    what = "answer" if lab.is_design else "ticket"
    if out:
        from pathlib import Path

        Path(out).write_text(text, encoding="utf-8")
        grade_line = next_steps.command("lab", "grade", lab.id, target=None if lab.is_design else "NODE", answer=out)
        say(f"reference {what} of {lab.id} written to {out}; grade it: {grade_line}")
    else:
        say(text, nl=False)


def _ssh(options: TargetOptions | None) -> dict[str, str | None]:
    """The SSH settings a next command must repeat."""
    return {
        "identity": options.identity if options else None,
        "known_hosts": options.known_hosts if options else None,
    }


def _default_candidate() -> str:
    from assessor.labs.attempts import default_candidate

    return default_candidate()
