"""``gpulab lab ...`` and ``gpulab progress``: the lab lifecycle and a candidate's levels.

Only click is imported at the top; everything else loads inside the command that needs it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import click

from assessor.cli.options import cohort_options, ssh_options, target_options

_DB_HELP = "Attempts database (default $GPULAB_DB, else $XDG_DATA_HOME/gpulab/attempts.db)."
_CANDIDATE_HELP = "Whose attempt this is (default: the OS user)."


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


def _say(text: Any = "", nl: bool = True, err: bool = False) -> None:
    """Print a line of a lab command: every line :mod:`assessor.labs.commands` (and what it calls) hands over is
    raw data, neutralised here, at the point of printing, and nowhere before: credentials redacted, then one
    line by :func:`assessor.neutralise.visible` (a line feed in a candidate's name or a node's message is shown
    as ``\\n``, so no line can pass for one that gpulab printed). A body printed without a final line feed (a lab's
    reference answer, YAML the user saves) keeps its line feeds, every other invisible character an escape."""
    from assessor.neutralise import visible, visible_lines
    from assessor.secrets import redact

    shown = visible(redact(str(text))) if nl else visible_lines(str(text))
    click.echo(shown, nl=nl, err=err)


def _error(exc: Any, prefix: str = "gpulab: error: ") -> None:
    """An error (or warning) line quoting a node, a file or what the user typed: redacted and neutralised."""
    from assessor.neutralise import message
    from assessor.secrets import redact

    click.echo(message(redact(str(exc)), prefix=prefix), err=True)


def _text(value: Any, style: str = "") -> Any:
    """Node or candidate data as a rich Text: never markup, never an emoji code, control characters escaped."""
    from rich.text import Text

    from assessor.neutralise import visible

    return Text(visible("" if value is None else value), style=style)


@contextlib.contextmanager
def _usage() -> Iterator[None]:
    """Options of a cohort given with those of one node (or person): click's usage error, as for any option."""
    from assessor.labs.cohort import OptionsConflict

    try:
        yield
    except OptionsConflict as exc:
        raise click.UsageError(str(exc)) from None


@contextlib.contextmanager
def _reaching() -> Iterator[None]:
    """A node that could not be reached (a lab step's Unreachable): one line, exit 3, as `gpulab assess` says
    of a host it could not assess."""
    from assessor.labs.drivers import Unreachable

    try:
        yield
    except Unreachable as exc:
        _error(exc)  # neutralise.message(redact(...), prefix="gpulab: error: "), as the top-level handler
        sys.exit(3)


@click.group()
def lab() -> None:
    """Hands-on labs: list, read, start, grade, hint, solve and reset them.

    A lab is labs/<domain>/<id>/ (lab.yaml and README.md). Node labs run on a simulated node
    (--target mock:node.json, made by `gpulab sim init`) or a real one (ssh://host); design labs
    are graded from a YAML answer file (--answer).
    """


@lab.command("list")
@click.option("--domain", help="Only this domain (drivers, mig, nccl, infiniband, health, slurm, containers, design).")
@click.option("--level", type=click.IntRange(1, 5), help="Only this level (1-5).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--candidate", help="Whose state to show per lab (default: the OS user).")
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
def lab_list(domain: str | None, level: int | None, as_json: bool, candidate: str | None, db: str | None) -> None:
    """The labs, grouped by domain and level, each with the candidate's state (not started, started, passed,
    not passed) and best score. Exit 2 when a lab is malformed (each problem is printed) or the attempts
    database cannot be read (the labs are still listed)."""
    import json

    from assessor.labs import views
    from assessor.labs.model import DOMAINS

    if domain is not None and domain not in DOMAINS:
        raise click.BadParameter(f"{domain!r} is not one of {', '.join(DOMAINS)}", param_hint="--domain")
    listed = views.listing(domain=domain, level=level, candidate=candidate, db=db)
    states = listed.states
    if as_json:
        click.echo(json.dumps(listed.records(), indent=2))
    else:
        from rich.table import Table

        console = _console()
        for d, mine in listed.by_domain():
            table = Table(title=f"{d}", title_justify="left", show_lines=False)
            for col in ("id", "level", "title", "min", "runs on") + (("state", "best") if states else ()):
                table.add_column(col)
            for x in mine:
                # a lab folder's values (title, id) are data: plain Text, never rich markup, escapes shown
                cells = [
                    _text(x.id),
                    _text(f"{x.level} {x.level_name}"),
                    _text(x.title),
                    _text(str(x.time_limit_min)),
                    _text(", ".join(x.runs_on)),
                ]
                if states:
                    st = states[x.id]
                    cells += [
                        _text(st["state"]),
                        _text("" if st["best_percent"] is None else f"{st['best_percent']:g} %"),
                    ]
                table.add_row(*cells)
            console.print(table)
        if not listed.labs:
            _say(f"no labs under {listed.root}" + (" match" if domain or level else ""))
    for err in listed.errors:
        _error(err)
    if listed.failure is not None:
        _error(listed.failure)
    if listed.errors or listed.failure is not None:
        sys.exit(2)


@lab.command("status")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def lab_status(candidate: str | None, db: str | None, as_json: bool) -> None:
    """The candidate's open labs: where, since when, time left, hints used."""
    import json

    from assessor.labs import views

    opened = views.open_labs(candidate=candidate, db=db)
    who, rows = opened.candidate, opened.rows
    if as_json:
        click.echo(json.dumps({"candidate": who, "open": rows}, indent=2))
        return
    if not rows:
        _say(f"no open lab for {who}: start one with `gpulab lab start ID --target ...`")
        return
    for r in rows:
        left = r["time_left_min"]
        clock = f"{left:g} min left" if left is not None and left >= 0 else f"late by {-(left or 0):g} min"
        hints = f"hints used {r['hints_used']} of {r['hints_available']}"
        _say(f"{r['lab']}: on {r['target']} since {r['started_at']}; {clock}; {hints}")


@lab.command("coverage")
@click.argument("exam", metavar="EXAM")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (docs/COVERAGE.md).")
def lab_coverage(exam: str, as_json: bool) -> None:
    """How much of EXAM's official objectives (NCP-AII, NCP-AIO, NCA-AIIO, NCP-AIN) the labs train: each
    objective with the labs that name it, and the share of the exam's weight touched and fully covered
    (labs/objectives.yaml; the rule in docs/COVERAGE.md). Exit 2 when a lab or the objectives file is malformed."""
    import json

    from assessor.labs import coverage

    cov = coverage.gather(exam)
    if as_json:
        click.echo(json.dumps(coverage.document(cov), indent=2))
    else:
        for line in coverage.lines(cov):
            _say(line)
    for err in cov.errors:
        _error(err)
    if cov.errors:
        sys.exit(2)


@lab.command("show")
@click.argument("lab_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Metadata and README text as JSON.")
@click.option("--candidate", help="Whose variant of the lab to show (default: the OS user).")
def lab_show(lab_id: str, as_json: bool, candidate: str | None) -> None:
    """A lab's metadata and its README, rendered as text (a lab with variants: the candidate's variant)."""
    import json

    from assessor.labs import views

    shown_lab = views.show(lab_id, candidate=candidate)
    x, readme = shown_lab.lab, shown_lab.readme
    if as_json:
        click.echo(json.dumps({**views.lab_record(x), "readme": readme}, indent=2))
        return
    from rich.markdown import Markdown
    from rich.markup import escape

    from assessor.neutralise import visible, visible_lines

    def shown(value: Any) -> str:
        """A lab folder's value inside markup: escapes shown, rich markup escaped."""
        return escape(visible(value))

    console = _console()
    console.print(f"[bold]{shown(x.id)}[/bold] — {shown(x.title)}")
    console.print(
        shown(
            f"domain {x.domain}, level {x.level} ({x.level_name}); time limit {x.time_limit_min} min; "
            f"pass at {x.pass_percent:g} % of {x.total_points:g} points"
        )
    )
    fixture = f", fixture {x.fixture}" if x.fixture else ""
    console.print(shown(f"target: {x.target}{fixture}; runs on {', '.join(x.runs_on)}"))
    console.print(shown(f"trains: {'; '.join(x.exam_domains)}"))
    if x.objectives:
        console.print(shown(f"objectives: {', '.join(str(o) for o in x.objectives)}"))
    console.print(shown(f"graded by: {', '.join(views.lab_record(x)['graded_by'])}"))
    example = views.example_path(x)
    if example is not None:
        what = "answer" if x.is_design else "ticket (for the data centre)"
        console.print(shown(f"example {what} file: {example} (its format: copy it, write yours)"))
    console.print("")
    # the README is rendered as Markdown, every character a terminal would act on shown as an escape first
    console.print(Markdown(visible_lines(readme.replace("\r\n", "\n").expandtabs(4))))


@lab.command("start")
@click.argument("lab_id", metavar="ID")
@click.option(
    "--target", "-t", metavar="TARGET", help="mock:FILE.json, ssh://host or a host of --inventory (design labs: none)."
)
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option(
    "--replace-node", is_flag=True, help="Replace a simulated node of another fixture with a fresh one of the lab's."
)
@click.option(
    "--replace",
    is_flag=True,
    help="The node holds another open lab: close it (recorded as abandoned, its clock stopped) and start this one.",
)
@ssh_options
@cohort_options
def lab_start(
    lab_id: str,
    target: str | None,
    candidate: str | None,
    db: str | None,
    replace_node: bool,
    replace: bool,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Set the node up for the lab (or break it, for troubleshooting labs) and start its clock.

    The start records the candidate, the node (host, GPU serials and UUIDs, the simulator's node id) and
    what already passes on it: a grade counts only on that node, and only for what changed since. A second
    start while one is open keeps the first clock (`gpulab lab close` or an instructor's `lab reset` closes
    it). A node holds one open lab: on a node that holds another (any candidate's) the start is refused, exit
    2, naming it, unless --replace. On a real node (ssh://host, or a host of --inventory) the lab's setup
    playbook runs through Ansible; a node that cannot be reached: exit 3.
    With --inventory and no --target: every host of the inventory (--limit selects some) at once, each the
    node of its candidate (the host's gpulab_candidate, or --candidates FILE), one start recorded per host.
    """
    from assessor.labs import commands

    with _usage(), _reaching():
        code = commands.start(
            lab_id,
            say=_say,
            target=target,
            candidate=candidate,
            db=db,
            replace_node=replace_node,
            replace=replace,
            inventory=inventory,
            options=target_options(identity, known_hosts, accept_new_host_keys),
            limit=limit,
            forks=forks,
            candidates_file=candidates_file,
        )
    if code is not None:
        sys.exit(code)


@lab.command("grade")
@click.argument("lab_id", metavar="ID")
@click.option(
    "--target",
    "-t",
    metavar="TARGET",
    help="The node: mock:FILE.json, mock:NAME, ssh://host, local, snapshot:DIR, a host of --inventory.",
)
@click.option(
    "--answer",
    type=click.Path(dir_okay=False, exists=True),
    help="Your answer file (YAML): a design lab's design, or the ticket a lab with a physical fault asks for.",
)
@click.option(
    "--answers",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="A cohort's tickets: DIR/<candidate>.yaml for each candidate (labs that grade a ticket).",
)
@click.option("--json", "as_json", is_flag=True, help="The grade as JSON (schema gpulab.grade/1).")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per captured command.")
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep each grade (gpulab.grade/1) in the gradebook DIR, beside every earlier grade of every lab (a host"
    " that could not be graded: why); `gpulab report cohort DIR` reads it.",
)
@ssh_options
@cohort_options
def lab_grade(
    lab_id: str,
    target: str | None,
    answer: str | None,
    answers: str | None,
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

    A grade is recorded as an attempt when it belongs to the candidate's open start on the same node;
    otherwise it is shown with the reason it was not recorded. Tamper evidence (a state file edited by
    hand, a reference solution applied) is shown and recorded as flags. A grade after the time limit is
    marked late. Exit 0 when the lab is passed, 1 when not, 2 for bad input or an unusable attempts
    database (the grade is still shown).
    With --inventory and no --target: every host of the inventory (--limit selects some) is captured at once
    and graded for its candidate; --out DIR keeps the gradebook, --json prints it (a list of grades); exit 3
    when a host was unreachable.
    """
    import json

    from assessor.labs import commands

    with _usage():
        done = commands.grade(
            lab_id,
            target=target,
            answer=answer,
            answers=answers,
            candidate=candidate,
            db=db,
            timeout=timeout,
            out=out,
            inventory=inventory,
            options=target_options(identity, known_hosts, accept_new_host_keys),
            limit=limit,
            forks=forks,
            candidates_file=candidates_file,
        )
    if done.hosts is not None:
        sys.exit(_print_cohort_grade(done, as_json))
    result: Any = done.grade
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        _print_grade(done.lab, result)
        if result.passed:  # the debrief gives the reference solution away: only after a pass
            _print_short_debrief(done.lab, result, candidate)
    if done.failure is not None:
        _error(done.failure)
        sys.exit(2)
    sys.exit(0 if result.passed else 1)


def _print_short_debrief(x: Any, g: Any, candidate: str | None) -> None:
    """A few lines of the debrief under a passing grade (assessor.labs.debrief); never fails the grade."""
    from assessor.errors import GpulabError
    from assessor.labs import debrief, debrief_inputs
    from assessor.labs.attempts import default_candidate

    try:
        lines = debrief.short_lines(debrief_inputs.after_grade(x, g, candidate=candidate or default_candidate()))
    except (GpulabError, OSError) as exc:
        lines = [f"Debrief: not available ({exc})"]
    for line in lines:
        _say(line)


@lab.command("debrief")
@click.argument("lab_id", metavar="ID")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="The debrief as JSON.")
def lab_debrief(lab_id: str, candidate: str | None, db: str | None, as_json: bool) -> None:
    """After a pass: what each check proved, the reference solution beside your commands (the node's shell
    history, where it keeps one) and where a real node prints otherwise than the simulator.

    Of your latest passing attempt; exit 2 when you have none (the debrief gives the solution away).
    """
    from assessor.labs import debrief, debrief_inputs
    from assessor.labs.attempts import default_candidate

    d = debrief_inputs.for_lab(lab_id, candidate=candidate or default_candidate(), db=db)
    if as_json:
        from assessor.neutralise import json_document

        click.echo(json_document(d.to_json()))
        return
    for line in debrief.full_lines(d):
        _say(line)


def _print_cohort_grade(done: Any, as_json: bool) -> int:
    """A cohort's grades: a line per host (stderr with --json), the grades as JSON, a tally; the exit code."""
    import json

    from assessor.labs import cohort

    for line in cohort.grade_summary(done.hosts):
        _say(line, err=as_json)
    if as_json:
        click.echo(json.dumps([g.grade.to_json() for g in done.hosts if g.grade is not None], indent=2))
    _say(f"{done.lab.id} grade: {cohort.grade_tally(done.hosts)}", err=as_json)
    if done.out:
        report = cohort.command("report", "cohort", done.out)
        _say(f"gradebook: {done.out}; the cohort report: `{report}`", err=as_json)
    return cohort.grade_exit_code(done.hosts)


def _print_grade(x: Any, g: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from assessor.labs.grading import ALREADY_TRUE

    console = _console()
    table = Table(title=_text(f"{x.id} — {x.title}"), title_justify="left")
    for col in ("check", "result", "points", "observed", "message / hint"):
        table.add_column(col, overflow="fold")
    from assessor.labs.wording import in_words, labels_for_scores

    # a check the lab uses twice is labelled by what tells its uses apart (mig.mode (GPU 0)); values in words
    named = labels_for_scores(getattr(x, "checks", ()), [s.check for s in g.scores])
    for label, s in zip(named, g.scores, strict=True):
        verdict = "PASS" if s.credit >= 1 else ("PARTIAL" if s.credit > 0 else "FAIL")
        if s.role == "guard":
            verdict = "HELD (guard)" if s.credit >= 1 else "BROKEN (guard)"
        elif s.note == ALREADY_TRUE:
            verdict = "PASS (true at start)"
        elif s.status in ("skip", "error") or (s.status == "warn" and s.credit == 0):
            verdict += f" ({s.status})"
        # messages and observed values come from the node: plain Text, one escaped line per part
        text = Text.assemble(_text(s.message))
        if s.note:
            text.append("\n")
            text.append_text(_text(s.note))
        if s.note == ALREADY_TRUE:
            pass  # nothing to fix: no hint
        elif s.credit < 1 and s.hint:
            text.append("\nhint: ")
            text.append_text(_text(s.hint))
        elif s.credit < 1:
            text.append(f"\nhint: `gpulab lab hint {x.id}` (its use is recorded)")
        observed = _fmt(in_words(s.observed, s.check))
        table.add_row(_text(label), Text(verdict), Text(f"{s.earned:g}/{s.points:g}"), _text(observed), text)
    console.print(table)
    from assessor.labs.gradebook import verdict as comes_to

    # passed or not, each broken guard's message, whether it counts, recorded or not (why), each flag:
    # node and candidate data, shown as plain escaped text
    score = f"Score {g.points:g}/{g.max_points:g} ({g.percent:g} %): {comes_to(g, detail=True)}"
    console.print(_text(score), soft_wrap=True)  # one line, never cut where a reason or a flag is
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
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
def lab_hint(lab_id: str, candidate: str | None, db: str | None) -> None:
    """Reveal the lab's next hint (in the order its checks are graded), with those shown before.

    Hints come one at a time and each one's use is recorded with the open start: grades and
    `gpulab progress` show how many were used.
    """
    from assessor.labs import views

    hints = views.hint(lab_id, candidate=candidate, db=db)
    from assessor.labs.wording import labels

    named = labels(hints.lab.checks)  # a check the lab uses twice, labelled apart: mig.mode (GPU 0)
    for i, c in enumerate(hints.shown, 1):
        _say(f"{i}. {named[i - 1]} ({_worth(c)}): {c.hint}")
    if not hints.new:
        _say(f"all {hints.total} hints of {hints.lab.id} are shown")
    else:
        _say(f"hint {len(hints.shown)} of {hints.total} revealed and recorded for {hints.candidate}; {hints.left} left")


def _worth(c: Any) -> str:
    return "guard, no points" if c.is_guard else f"{c.points:g} points"


@lab.command("solve")
@click.argument("lab_id", metavar="ID")
@click.option("--target", "-t", metavar="TARGET", help="mock:FILE.json, ssh://host or a host of --inventory.")
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False),
    help="Labs graded from an answer file: copy the reference answer (a design, or a ticket) here.",
)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@ssh_options
@cohort_options
def lab_solve(
    lab_id: str,
    target: str | None,
    out: str | None,
    db: str | None,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Apply the reference solution (instructors and CI): afterwards the lab grades 100 %.

    Later grades of the lab on that node are flagged: the attempts database records the solve, and a
    simulated node (local, or served over SSH) carries the mark itself for any grader. A design lab's
    solution is its reference answer; a node lab whose remedy is physical also has a reference ticket:
    shown (or written to --out), and the candidate's later grades are flagged. Without --target such a lab
    shows only its ticket. A node that cannot be reached: exit 3.
    With --inventory and no --target: on every host of the inventory (--limit selects some) at once.
    """
    from assessor.labs import commands

    with _usage(), _reaching():
        code = commands.solve(
            lab_id,
            say=_say,
            target=target,
            out=out,
            db=db,
            inventory=inventory,
            options=target_options(identity, known_hosts, accept_new_host_keys),
            limit=limit,
            forks=forks,
            candidates_file=candidates_file,
        )
    if code is not None:
        sys.exit(code)


@lab.command("reset")
@click.argument("lab_id", metavar="ID")
@click.option("--target", "-t", metavar="TARGET", help="mock:FILE.json, ssh://host or a host of --inventory.")
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@ssh_options
@cohort_options
def lab_reset(
    lab_id: str,
    target: str | None,
    db: str | None,
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
    limit: str | None,
    forks: int,
    candidates_file: str | None,
) -> None:
    """Return the whole node to where the lab starts from: a simulated node (mock:FILE.json, or served over
    SSH) is re-imaged as the lab's fixture, files included; a real node runs the lab's reset playbook.

    An instructor's command: it also closes every lab open on that node, so the next `lab start` starts a
    new clock (the reset is recorded). A node that cannot be reached: exit 3, nothing closed.
    With --inventory and no --target: every host of the inventory (--limit selects some) at once.
    """
    from assessor.labs import commands

    with _usage(), _reaching():
        code = commands.reset(
            lab_id,
            say=_say,
            target=target,
            db=db,
            inventory=inventory,
            options=target_options(identity, known_hosts, accept_new_host_keys),
            limit=limit,
            forks=forks,
            candidates_file=candidates_file,
        )
    if code is not None:
        sys.exit(code)


@lab.command("close")
@click.argument("lab_id", metavar="[LAB]", required=False)
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
def lab_close(lab_id: str | None, candidate: str | None, db: str | None) -> None:
    """Close your open lab (LAB, or your only open one): give it up without a reset.

    Its clock stops and it is recorded as closed (abandoned); later grades of it are shown, not recorded,
    until you start it again (a new clock). The node is left as it is, and free for another lab. Exit 2 when
    LAB is not open for you, or you name none and have several open (`gpulab lab status` lists them).
    """
    from assessor.labs import views

    closed = views.close(lab_id, candidate=candidate, db=db)
    if not closed.labs:
        _say(f"no open lab for {closed.candidate}: nothing to close")
    for s in closed.labs:
        _say(
            f"closed {s.described} on {s.target} as abandoned: its clock is stopped; "
            f"`gpulab lab start {s.lab_id}` starts it afresh"
        )


# How many of the latest attempts `gpulab progress` lists unless asked for the whole history.
RECENT_ATTEMPTS = 20


@click.command()
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--json", "as_json", is_flag=True, help="History, levels and their explanations as JSON.")
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option(
    "--exam",
    metavar="EXAM",
    help="How ready you are for this exam (NCA-AIIO, NCP-AII, NCP-AIO, NCP-AIN), by its domains, from your labs "
    "and your submitted `gpulab exam` sittings of it; the study plan then aims at it.",
)
@click.option(
    "--history",
    "whole_history",
    is_flag=True,
    help=f"Every attempt, not only the last {RECENT_ATTEMPTS} and the flagged ones.",
)
def progress(candidate: str | None, as_json: bool, db: str | None, exam: str | None, whole_history: bool) -> None:
    """A candidate's lab history and skill levels (per domain and overall), each level explained, and the study
    plan: the labs to take next, in order. With --exam, readiness for that exam by its domains (docs/LEVELS.md).
    The attempts table holds the last attempts and every flagged one (--history: all of them)."""
    import json

    from assessor.labs import views

    p = views.progress(
        candidate=candidate, db=db, exam=exam, recent=None if as_json or whole_history else RECENT_ATTEMPTS
    )
    who, history, result, mismatches, summaries = p.candidate, p.history, p.levels, p.mismatches, p.summaries
    if as_json:
        from assessor.reports.documents import progress_document

        ready = p.readiness.to_json() if p.readiness else None
        doc = progress_document(
            who,
            history,
            result,
            p.passed,
            mismatches,
            labs=summaries,
            flags=p.flags,
            study_plan=p.plan.to_json(),
            readiness=ready,
        )
        click.echo(json.dumps(doc, indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    console = _console()
    if p.total:
        shown = history  # every attempt, or the last ones and every flagged one before them
        title = Text.assemble("attempts of ", _text(who))
        if len(shown) < p.total:
            title.append(f" (the last {RECENT_ATTEMPTS} and the flagged ones: {len(shown)} of {p.total})")
        table = Table(title=title, title_justify="left")
        for col in ("graded (UTC)", "lab", "score", "result", "host", "flags"):
            table.add_column(col, overflow="fold")
        for a in shown:
            verdict = ("passed" if a.passed else "not passed") + (", late" if a.late else "")
            table.add_row(
                _text(a.graded_at[:16].replace("T", " ")),
                _text(a.lab_id),
                Text(f"{a.percent:g} %"),
                Text(verdict),
                _text(a.host or a.target),
                _text("; ".join(a.flags)),
            )
        console.print(table)
        if len(shown) < p.total:
            console.print(f"{p.total - len(shown)} earlier attempts: `gpulab progress --history` lists them all")
        per_lab = Table(title="best per lab (flagged attempts do not count)", title_justify="left")
        for col in ("lab", "best", "passed", "time taken", "hints used", "attempts", "flagged"):
            per_lab.add_column(col)
        for lab_id, row in summaries.items():
            taken = row["time_taken_s"]
            per_lab.add_row(
                _text(lab_id),
                Text("" if row["best_percent"] is None else f"{row['best_percent']:g} %"),
                Text("yes" if row["passed"] else "no"),
                Text("" if taken is None else f"{taken // 60} min {taken % 60} s"),
                Text("" if row["hints_used"] is None else str(row["hints_used"])),
                Text(str(row["attempts"])),
                Text(str(row["flagged"])),
            )
        console.print(per_lab)
    else:
        console.print(Text.assemble("no attempts recorded for ", _text(who), " yet"))
    console.print("\n[bold]Levels[/bold]")
    for v in result.domains.values():
        if v.tallies:
            console.print(Text.assemble("  ", _text(v.explanation)))
    console.print(Text.assemble("\n", _text(result.explanation, "bold")))
    console.print(Text.assemble("\nHow levels are given: ", _text(result.rule)))
    from assessor.labs import readiness, study_plan

    for line in ["", *([*readiness.lines(p.readiness), ""] if p.readiness else []), *study_plan.lines(p.plan)]:
        console.print(_text(line))
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
    for flag in p.flags:
        console.print(Text.assemble(("FLAG", "bold"), ": ", _text(flag)))
    for err in p.errors:
        _error(err, prefix="gpulab: warning: lab skipped: ")
