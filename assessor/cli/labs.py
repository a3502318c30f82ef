"""``gpulab lab ...`` and ``gpulab progress``: the lab lifecycle and a candidate's levels.

Only click is imported at the top; everything else loads inside the command that needs it.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from assessor.cli.options import cohort_options, ssh_options, target_options

_DB_HELP = "Attempts database (default $GPULAB_DB, else $XDG_DATA_HOME/gpulab/attempts.db)."
_CANDIDATE_HELP = "Whose attempt this is (default: the OS user)."


def _candidate(name: str | None) -> str:
    from assessor.labs.attempts import default_candidate

    return name or default_candidate()


def _console() -> Any:
    from rich.console import Console

    # stdout as it is now (click's test runner swaps it), no colour codes when piped, no emoji codes
    # (":ab:" in a bus id is data); saved to a file, lines are wide enough that nothing is cut
    tty = sys.stdout.isatty()
    return Console(file=sys.stdout, highlight=False, emoji=False, width=None if tty else 200)


def _fmt(value: Any, limit: int | None = 60) -> str:
    """A value for a table cell: JSON for structures, control characters shown as escapes; shortened with
    "…" only on a terminal (``limit``), never in a file."""
    import json

    from assessor.neutralise import visible

    if value is None:
        return ""
    text = visible(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    if limit is None or not sys.stdout.isatty() or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _text(value: Any, style: str = "") -> Any:
    """Node or candidate data as a rich Text: never markup, never an emoji code, control characters escaped."""
    from rich.text import Text

    from assessor.neutralise import visible

    return Text(visible("" if value is None else value), style=style)


def _cohort_of(
    inventory: str | None,
    target: str | None,
    limit: str | None,
    candidates_file: str | None,
    candidate: str | None = None,
) -> Any:
    """The cohort when --inventory comes without --target (every selected host at once); None for one target."""
    if not inventory or target:
        if limit or candidates_file:
            raise click.UsageError(
                "--limit and --candidates select the hosts of a cohort: give --inventory FILE without --target"
            )
        return None
    if candidate:
        raise click.UsageError(
            "--candidate names one person: a cohort's candidates come from each host's gpulab_candidate "
            "in the inventory, or --candidates FILE"
        )
    from assessor.labs import cohort

    return cohort.load(inventory, limit=limit, candidates_file=candidates_file)


def _cohort_step(x: Any, action: str, group: Any, options: Any, forks: int, db: str | None = None) -> int:
    """start, solve or reset over a cohort: a line per host, a tally; the exit code."""
    from assessor.labs import cohort

    if action == "start":
        outcomes = cohort.start(x, group, options, db=db, forks=forks)
    else:
        outcomes = cohort.run_step(x, action, group, options, forks=forks)
    for line in cohort.step_summary(action, group, outcomes):
        click.echo(line)
    click.echo(f"{x.id} {action}: {cohort.step_tally(action, outcomes)}")
    return cohort.step_exit_code(outcomes)


@click.group()
def lab() -> None:
    """Hands-on labs: list, read, start, grade, hint, solve and reset them.

    A lab is labs/<domain>/<id>/ (lab.yaml and README.md). Node labs run on a simulated node
    (--target mock:node.json, made by `gpulab sim init`) or a real one (ssh://host); design labs
    are graded from a YAML answer file (--answer).
    """


@lab.command("list")
@click.option("--domain", help="Only this domain (drivers, mig, nccl, infiniband, health, design).")
@click.option("--level", type=click.IntRange(1, 5), help="Only this level (1-5).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def lab_list(domain: str | None, level: int | None, as_json: bool) -> None:
    """The labs, grouped by domain and level. Exit 2 when a lab is malformed (each problem is printed)."""
    import json

    from assessor.labs.loader import load_catalogue
    from assessor.labs.model import DOMAINS, LEVEL_NAMES

    if domain is not None and domain not in DOMAINS:
        raise click.BadParameter(f"{domain!r} is not one of {', '.join(DOMAINS)}", param_hint="--domain")
    cat = load_catalogue()
    labs = [x for x in cat.labs if (domain is None or x.domain == domain) and (level is None or x.level == level)]
    if as_json:
        click.echo(json.dumps([_lab_json(x) for x in labs], indent=2))
    else:
        from rich.table import Table

        console = _console()
        for d in DOMAINS:
            mine = [x for x in labs if x.domain == d]
            if not mine:
                continue
            table = Table(title=f"{d}", title_justify="left", show_lines=False)
            for col in ("id", "level", "title", "min", "runs on"):
                table.add_column(col)
            for x in mine:
                table.add_row(
                    x.id, f"{x.level} {LEVEL_NAMES[x.level]}", x.title, str(x.time_limit_min), ", ".join(x.runs_on)
                )
            console.print(table)
        if not labs:
            click.echo(f"no labs under {cat.root}" + (" match" if domain or level else ""))
    for err in cat.errors:
        click.echo(f"gpulab: error: {err}", err=True)
    if cat.errors:
        sys.exit(2)


def _lab_json(x: Any) -> dict[str, Any]:
    return {
        "id": x.id,
        "title": x.title,
        "domain": x.domain,
        "level": x.level,
        "level_name": x.level_name,
        "exam_domains": list(x.exam_domains),
        "time_limit_min": x.time_limit_min,
        "target": x.target,
        "runs_on": list(x.runs_on),
        "fixture": x.fixture,
        "pass_percent": x.pass_percent,
        "points": x.total_points,
        "checks": [c.id for c in x.checks],
        "path": str(x.path),
        "sha256": x.digest,
    }


@lab.command("show")
@click.argument("lab_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Metadata and README text as JSON.")
def lab_show(lab_id: str, as_json: bool) -> None:
    """A lab's metadata and its README, rendered as text."""
    import json

    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    readme = x.readme.read_text(encoding="utf-8")
    if as_json:
        click.echo(json.dumps({**_lab_json(x), "readme": readme}, indent=2))
        return
    from rich.markdown import Markdown

    console = _console()
    console.print(f"[bold]{x.id}[/bold] — {x.title}")
    console.print(
        f"domain {x.domain}, level {x.level} ({x.level_name}); time limit {x.time_limit_min} min; "
        f"pass at {x.pass_percent:g} % of {x.total_points:g} points"
    )
    console.print(
        f"target: {x.target}" + (f", fixture {x.fixture}" if x.fixture else "") + f"; runs on {', '.join(x.runs_on)}"
    )
    console.print(f"trains: {'; '.join(x.exam_domains)}")
    console.print(f"graded by: {', '.join(c.id for c in x.checks)}\n")
    console.print(Markdown(readme))


@lab.command("start")
@click.argument("lab_id", metavar="ID")
@click.option(
    "--target", "-t", metavar="TARGET", help="mock:FILE.json, ssh://host or a host of --inventory (design labs: none)."
)
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@ssh_options
@cohort_options
def lab_start(
    lab_id: str,
    target: str | None,
    candidate: str | None,
    db: str | None,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Set the node up for the lab (or break it, for troubleshooting labs) and start its clock.

    On a real node (ssh://host, or a host of --inventory) the lab's setup playbook runs through Ansible.
    With --inventory and no --target: every host of the inventory (--limit selects some) at once, each the
    node of its candidate (the host's gpulab_candidate, or --candidates FILE), one start recorded per host.
    """
    from assessor.labs import attempts, lifecycle
    from assessor.labs.cohort import command
    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    options = target_options(identity, known_hosts, accept_new_host_keys)
    ssh = {"identity": identity, "known_hosts": known_hosts}
    group = _cohort_of(inventory, target, limit, candidates_file, candidate)
    if group is not None:
        code = _cohort_step(x, "start", group, options, forks, db)
        grade = command(
            "lab", "grade", x.id, inventory=inventory, limit=limit, candidates=candidates_file, **ssh, db=db
        )
        click.echo(f"grade the cohort with `{grade} --out gradebook`")
        sys.exit(code)
    steps = lifecycle.start(x, target, options, inventory=inventory)
    # what the scenario did stays unsaid: naming the fault would give a troubleshooting lab away
    click.echo(f"{x.id}: the node is set up for the lab ({len(steps)} steps applied to {target or 'nothing'})")
    who = _candidate(candidate)
    with attempts.opened(db) as conn:
        attempts.record_start(
            conn, candidate=who, lab_id=x.id, target=target or "design", lab_hash=x.digest, started_at=attempts.now()
        )
    if x.is_design:
        grade = command("lab", "grade", x.id, answer="FILE", candidate=candidate, db=db)
    else:
        grade = command("lab", "grade", x.id, inventory=inventory, target=target, **ssh, candidate=candidate, db=db)
    click.echo(
        f"{x.id} started for {who}: {x.time_limit_min} min from now; read it with `gpulab lab show {x.id}`, "
        f"grade it with `{grade}`"
    )


@lab.command("grade")
@click.argument("lab_id", metavar="ID")
@click.option(
    "--target",
    "-t",
    metavar="TARGET",
    help="The node: mock:FILE.json, mock:NAME, ssh://host, local, snapshot:DIR, a host of --inventory.",
)
@click.option("--answer", type=click.Path(dir_okay=False, exists=True), help="Design labs: your answer file (YAML).")
@click.option("--json", "as_json", is_flag=True, help="The grade as JSON (schema gpulab.grade/1).")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per captured command.")
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write each grade (gpulab.grade/1) to DIR/<host>.json: the gradebook `gpulab report cohort DIR` reads.",
)
@ssh_options
@cohort_options
def lab_grade(
    lab_id: str,
    target: str | None,
    answer: str | None,
    as_json: bool,
    candidate: str | None,
    db: str | None,
    timeout: float,
    out: str | None,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Grade the lab: each check with what was observed, points and partial credit, total, pass or not.

    Every grade is recorded in the attempts database. A grade after the time limit is marked late.
    With --inventory and no --target: every host of the inventory (--limit selects some) is captured at once
    and graded for its candidate; --out DIR keeps the gradebook, --json prints it (a list of grades).
    Exit 0 when the lab is passed (by every host), 1 when not, 2 for bad input, 3 when a host was unreachable.
    """
    import json

    from assessor.errors import InputError
    from assessor.labs import attempts, grading
    from assessor.labs import capture as labcapture
    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    group = None if x.is_design else _cohort_of(inventory, target, limit, candidates_file, candidate)
    if group is not None:
        sys.exit(
            _cohort_grade(
                x,
                group,
                target_options(identity, known_hosts, accept_new_host_keys),
                db=db,
                forks=forks,
                timeout=timeout,
                out=out,
                as_json=as_json,
            )
        )
    who = _candidate(candidate)
    if x.is_design:
        if not answer:
            raise InputError(
                f"{x.id} is a design lab: grade your answer file with --answer FILE "
                f"(format: {x.path / (x.answer_example or '')})"
            )
        from assessor.labs import designs

        located = designs.load_answer(answer, [c.id for c in x.checks])
        ident = attempts.Identity(host=None)
        spec = f"answer:{answer}"
    else:
        if not target:
            raise InputError(f"`lab grade {x.id}` needs --target (the node you worked on, e.g. mock:node.json)")
        options = target_options(identity, known_hosts, accept_new_host_keys)
        facts = labcapture.capture_facts(x, target, timeout=timeout, options=options, inventory=inventory)
        ident = labcapture.identity(facts)
        spec = target
    with attempts.opened(db) as conn:
        started = attempts.last_start(conn, who, x.id)
        now = attempts.now()
        if x.is_design:
            result = grading.grade_answer(x, located, graded_at=now, started_at=started)
        else:
            result = grading.grade_facts(x, facts, graded_at=now, started_at=started)
        result.extras.update({"candidate": who, "target": spec, "host": ident.host, "lab_sha256": x.digest})
        attempts.record_attempt(
            conn,
            candidate=who,
            lab_id=x.id,
            lab_domain=x.domain,
            lab_level=x.level,
            lab_hash=x.digest,
            target=spec,
            identity=ident,
            graded_at=now,
            started_at=started,
            late=result.late,
            percent=result.percent,
            points=result.points,
            max_points=result.max_points,
            passed=result.passed,
            checks=[s.to_json() for s in result.scores],
        )
    if out:
        from assessor.labs.cohort import CohortHost, HostGrade, write_gradebook

        host = CohortHost(spec if inventory else (ident.host or who), spec, who, "option")
        write_gradebook([HostGrade(host, "graded", result)], out)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        _print_grade(x, result)
    sys.exit(0 if result.passed else 1)


def _cohort_grade(
    x: Any, group: Any, options: Any, *, db: str | None, forks: int, timeout: float, out: str | None, as_json: bool
) -> int:
    """Grade every host of a cohort: a line per host (stderr with --json), the gradebook; the exit code."""
    import json

    from assessor.labs import cohort

    grades = cohort.grade(x, group, options, db=db, forks=forks, timeout=timeout)
    if out:
        cohort.write_gradebook(grades, out)
    for line in cohort.grade_summary(grades):
        click.echo(line, err=as_json)
    if as_json:
        click.echo(json.dumps([g.grade.to_json() for g in grades if g.grade is not None], indent=2))
    click.echo(f"{x.id} grade: {cohort.grade_tally(grades)}", err=as_json)
    if out:
        report = cohort.command("report", "cohort", out)
        click.echo(f"gradebook: {out}; the cohort report: `{report}`", err=as_json)
    return cohort.grade_exit_code(grades)


def _print_grade(x: Any, g: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    console = _console()
    table = Table(title=_text(f"{x.id} — {x.title}"), title_justify="left")
    for col in ("check", "result", "points", "observed", "message / hint"):
        table.add_column(col, overflow="fold")
    for s in g.scores:
        verdict = "PASS" if s.credit >= 1 else ("PARTIAL" if s.credit > 0 else "FAIL")
        if s.status in ("skip", "error") or (s.status == "warn" and s.credit == 0):
            verdict += f" ({s.status})"
        # messages and observed values come from the node: plain Text, one escaped line per part
        text = Text.assemble(_text(s.message))
        if s.note:
            text.append("\n")
            text.append_text(_text(s.note))
        if s.credit < 1:
            text.append("\nhint: ")
            text.append_text(_text(s.hint))
        table.add_row(_text(s.check), Text(verdict), Text(f"{s.earned:g}/{s.points:g}"), _text(_fmt(s.observed)), text)
    console.print(table)
    verdict = "PASSED" if g.passed else "NOT PASSED"
    console.print(
        f"Score {g.points:g}/{g.max_points:g} ({g.percent:g} %): {verdict} ({g.pass_percent:g} % needed)", markup=False
    )
    if g.started_at is None:
        console.print(
            f"no start recorded: the time limit ({g.time_limit_min} min) runs from `gpulab lab start`", markup=False
        )
    elif g.late:
        console.print(
            f"LATE: graded {g.elapsed_min:.0f} min after the start, limit {g.time_limit_min} min "
            "(the grade stands, marked late)",
            markup=False,
        )
    else:
        console.print(f"time: {g.elapsed_min:.0f} of {g.time_limit_min} min", markup=False)


@lab.command("hint")
@click.argument("lab_id", metavar="ID")
def lab_hint(lab_id: str) -> None:
    """The lab's hints, in the order its checks are graded."""
    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    for i, c in enumerate(x.checks, 1):
        click.echo(f"{i}. {c.id} ({c.points:g} points): {c.hint}")


@lab.command("solve")
@click.argument("lab_id", metavar="ID")
@click.option("--target", "-t", metavar="TARGET", help="mock:FILE.json, ssh://host or a host of --inventory.")
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="Design labs: copy the reference answer here.")
@ssh_options
@cohort_options
def lab_solve(
    lab_id: str,
    target: str | None,
    out: str | None,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Apply the reference solution (instructors and CI): afterwards the lab grades 100 %.

    With --inventory and no --target: on every host of the inventory (--limit selects some) at once.
    """
    from assessor.labs import lifecycle
    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    if x.is_design:
        assert x.solution_answer is not None  # the loader requires it on design labs
        text = (x.path / x.solution_answer).read_text(encoding="utf-8")
        if out:
            from pathlib import Path

            Path(out).write_text(text, encoding="utf-8")
            click.echo(f"reference answer of {x.id} written to {out}; grade it: gpulab lab grade {x.id} --answer {out}")
        else:
            click.echo(text, nl=False)
        return
    options = target_options(identity, known_hosts, accept_new_host_keys)
    group = _cohort_of(inventory, target, limit, candidates_file)
    if group is not None:
        sys.exit(_cohort_step(x, "solve", group, options, forks))
    for line in lifecycle.solve(x, target, options, inventory=inventory):
        click.echo(line)


@lab.command("reset")
@click.argument("lab_id", metavar="ID")
@click.option("--target", "-t", metavar="TARGET", help="mock:FILE.json, ssh://host or a host of --inventory.")
@ssh_options
@cohort_options
def lab_reset(
    lab_id: str,
    target: str | None,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Restore the node to the lab's healthy fixture (a real node: the lab's reset playbook).

    With --inventory and no --target: every host of the inventory (--limit selects some) at once.
    """
    from assessor.labs import lifecycle
    from assessor.labs.loader import find_lab

    x = find_lab(lab_id)
    options = target_options(identity, known_hosts, accept_new_host_keys)
    group = _cohort_of(inventory, target, limit, candidates_file)
    if group is not None:
        sys.exit(_cohort_step(x, "reset", group, options, forks))
    for line in lifecycle.reset(x, target, options, inventory=inventory):
        click.echo(line)


@click.command()
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--json", "as_json", is_flag=True, help="History, levels and their explanations as JSON.")
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
def progress(candidate: str | None, as_json: bool, db: str | None) -> None:
    """A candidate's lab history and skill levels (per domain and overall), each level explained."""
    import json

    from assessor.labs import attempts, levels
    from assessor.labs.loader import load_catalogue

    who = _candidate(candidate)
    cat = load_catalogue()
    rules = levels.load_rules(cat.root)
    with attempts.opened(db) as conn:
        history = attempts.attempts(conn, candidate=who)
    known = {x.id for x in cat.labs}
    best = attempts.best([a for a in history if a.lab_id in known])
    passed = {lab_id for lab_id, a in best.items() if a.passed}
    result = levels.compute(rules, cat.labs, passed)
    mismatches = attempts.machine_mismatches(history)
    if as_json:
        from assessor.reports.documents import progress_document

        click.echo(json.dumps(progress_document(who, history, result, passed, mismatches), indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    console = _console()
    if history:
        table = Table(title=Text.assemble("attempts of ", _text(who)), title_justify="left")
        for col in ("graded (UTC)", "lab", "score", "result", "host"):
            table.add_column(col)
        for a in history:
            verdict = ("passed" if a.passed else "not passed") + (", late" if a.late else "")
            table.add_row(
                _text(a.graded_at[:16].replace("T", " ")),
                _text(a.lab_id),
                Text(f"{a.percent:g} %"),
                Text(verdict),
                _text(a.host or a.target),
            )
        console.print(table)
    else:
        console.print(Text.assemble("no attempts recorded for ", _text(who), " yet"))
    console.print("\n[bold]Levels[/bold]")
    for v in result.domains.values():
        if v.tallies:
            console.print(Text.assemble("  ", _text(v.explanation)))
    console.print(Text.assemble("\n", _text(result.explanation, "bold")))
    console.print(Text.assemble("\nHow levels are given: ", _text(result.rule)))
    for lab_id, machines in sorted(mismatches.items()):
        console.print(
            Text.assemble(
                ("WARNING", "bold"),
                ": ",
                _text(who),
                f"'s attempts at {lab_id} came from different machines: ",
                _text("; ".join(machines)),
            )
        )
    for err in cat.errors:
        click.echo(f"gpulab: warning: lab skipped: {err}", err=True)
