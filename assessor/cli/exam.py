"""``gpulab exam ...``: a timed practice exam by an NVIDIA exam's blueprint, its result and its debrief.

Only click is imported at the top; everything else loads inside the command that needs it. Every line of data
is printed through the lab commands' printer (:func:`assessor.cli.labs._say`: redacted, neutralised).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from assessor.cli.options import ssh_options, target_options

_DB_HELP = "Attempts database; exam sessions are kept in exams/ beside it (default $GPULAB_DB, else the user's)."
_CANDIDATE_HELP = "Whose exam this is (default: the OS user)."
_SESSION_HELP = "The session id (default: your open session, else your latest)."


def _say(text: str = "", err: bool = False) -> None:
    from assessor.cli.labs import _say as say

    say(text, err=err)


def _who(candidate: str | None) -> str:
    from assessor.labs.attempts import default_candidate

    return candidate or default_candidate()


@click.group()
def exam() -> None:
    """Timed practice exams: NCA-AIIO, NCP-AII, NCP-AIO, NCP-AIN (labs/exams.yaml).

    `exam start EXAM` draws hands-on tasks (labs) in proportion to the exam's domain weights
    (labs/blueprints.yaml), each node task on a fresh simulated node of its own, and starts the clock (the real
    exam's duration by default). While it runs, `exam grade N` records a grade and says only that it was
    recorded; `exam submit` ends it and shows the score per exam domain, pass or not, the time used and the
    debrief of every task. docs/EXAM.md explains the rules.
    """


@exam.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def exam_list(as_json: bool) -> None:
    """The exams, their duration, tasks, pass mark and the share of the blueprint the labs examine."""
    import json

    from assessor.labs.exam_draw import draw
    from assessor.labs.exam_spec import load_exams
    from assessor.labs.loader import load_catalogue

    exams = load_exams()
    labs = load_catalogue().labs
    rows: list[dict[str, Any]] = []
    for spec in exams.exams.values():
        plan = draw(spec.name, spec.weights, labs, spec.tasks, 0)
        total = float(sum(spec.weights.values()))
        covered = sum(float(w) for d, w in spec.weights.items() if d not in plan.not_examined) * 100 / total
        rows.append(
            {
                "exam": spec.name,
                "title": spec.title,
                "minutes": spec.minutes,
                "tasks": spec.tasks,
                "pass_percent": spec.pass_percent,
                "examined_pct": round(covered, 2),
                "not_examined": list(plan.not_examined),
                "format": spec.format,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        _say(
            f"{r['exam']}: {r['title']}: {r['minutes']} min, {r['tasks']} tasks, pass mark {r['pass_percent']:g} %; "
            f"the labs examine {r['examined_pct']:g} % of its blueprint"
            + (f" (not: {', '.join(r['not_examined'])})" if r["not_examined"] else "")
        )


@exam.command("start")
@click.argument("exam_name", metavar="EXAM")
@click.option("--minutes", type=click.IntRange(1, 24 * 60), help="Length of the sitting (default: the real exam's).")
@click.option("--tasks", type=click.IntRange(1, 100), help="How many tasks to draw (default: labs/exams.yaml).")
@click.option("--seed", type=click.IntRange(0), help="The draw's seed (default: a new one, kept in the session).")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option(
    "--target",
    "-t",
    "targets",
    multiple=True,
    metavar="TARGET",
    help="A node for the node tasks, in order (repeatable): mock:FILE.json or ssh://host. Default: a fresh "
    "simulated node per task in the session's folder.",
)
@ssh_options
def exam_start(
    exam_name: str,
    minutes: int | None,
    tasks: int | None,
    seed: int | None,
    candidate: str | None,
    db: str | None,
    targets: tuple[str, ...],
    inventory: str | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new_host_keys: bool,
) -> None:
    """Start a timed practice exam of EXAM (NCA-AIIO, NCP-AII, NCP-AIO, NCP-AIN).

    Refused while you sit another whose time is not up; one whose time is up is submitted by the clock first.
    """
    from assessor.labs import exam_run
    from assessor.labs.exam_spec import load_exams

    started = exam_run.start(
        exam_name,
        candidate=_who(candidate),
        db=db,
        minutes=minutes,
        tasks=tasks,
        seed=seed,
        targets=targets,
        options=target_options(identity, known_hosts, accept_new_host_keys),
        inventory=inventory,
    )
    for line in exam_run.start_lines(started, load_exams().get(started.session.exam)):
        _say(line)


@exam.command("status")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--session", "session_id", help=_SESSION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def exam_status(candidate: str | None, db: str | None, session_id: str | None, as_json: bool) -> None:
    """Time left and the tasks, each with only whether a grade is recorded."""
    from assessor.labs import exam_run

    st = exam_run.status(candidate=_who(candidate), db=db, session_id=session_id)
    if as_json:
        from assessor.neutralise import json_document

        click.echo(json_document(st.to_json()))
        return
    for line in exam_run.status_lines(st):
        _say(line)


@exam.command("show")
@click.argument("task", metavar="TASK")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--session", "session_id", help=_SESSION_HELP)
def exam_show(task: str, candidate: str | None, db: str | None, session_id: str | None) -> None:
    """A task's instructions (its lab's README, with this sitting's variant), where to do it and how to grade it."""
    from rich.markdown import Markdown

    from assessor.cli.labs import _console
    from assessor.labs import exam_run
    from assessor.neutralise import visible_lines

    t, lab, readme = exam_run.show(task, candidate=_who(candidate), db=db, session_id=session_id)
    _say(f"task {t.n}: {lab.id} — {lab.title} [{t.domain}]")
    if t.target:
        _say(f"your node: {t.target} (enter it: gpulab sim shell {t.target.removeprefix('mock:')})")
    if lab.takes_answer:
        what = "answer" if lab.is_design else "ticket"
        example = lab.path / (lab.answer_example or "")
        _say(f"hand in your {what} with `gpulab exam grade {t.n} --answer FILE` (format: {example})")
    else:
        _say(f"grade it with `gpulab exam grade {t.n}`")
    _console().print(Markdown(visible_lines(readme.replace("\r\n", "\n").expandtabs(4))))


@exam.command("grade")
@click.argument("task", metavar="TASK")
@click.option(
    "--answer",
    type=click.Path(dir_okay=False, exists=True),
    help="Your answer file: a design task's design, or the ticket a task with a physical fault asks for.",
)
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--session", "session_id", help=_SESSION_HELP)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per captured command.")
@click.option("--identity", metavar="KEYFILE", help="SSH private key (a task on an SSH node).")
@click.option("--known-hosts", metavar="FILE", help="known_hosts file besides ~/.ssh/known_hosts.")
def exam_grade(
    task: str,
    answer: str | None,
    candidate: str | None,
    db: str | None,
    session_id: str | None,
    timeout: float,
    identity: str | None,
    known_hosts: str | None,
) -> None:
    """Grade TASK (its number or lab id) and record the grade: it says only recorded or not recorded.

    The last grade before the deadline is the one that counts; grades after it are kept and do not count.
    Exit 0 when recorded, 1 when not (why is said), 2 for bad input or a submitted exam.
    """
    from assessor.labs import exam_run

    done = exam_run.grade(
        task,
        candidate=_who(candidate),
        db=db,
        answer=answer,
        session_id=session_id,
        timeout=timeout,
        options=target_options(identity, known_hosts, False),
    )
    _say(done.line())
    sys.exit(0 if done.recorded else 1)


@exam.command("submit")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--session", "session_id", help=_SESSION_HELP)
@click.option("--json", "as_json", is_flag=True, help="The result as JSON (gpulab.exam-result/1).")
def exam_submit(candidate: str | None, db: str | None, session_id: str | None, as_json: bool) -> None:
    """End the exam: the score per exam domain, overall, pass or not, time used, and each task's debrief.

    A submit after the deadline is marked late. Exit 0 when passed, 1 when not.
    """
    from assessor.labs import exam_run
    from assessor.reports.exam import render

    done = exam_run.submit(candidate=_who(candidate), db=db, session_id=session_id)
    s = done.session
    if done.already:
        _say(f"exam session {s.id} was submitted at {s.submitted_at}: its result as it stands", err=True)
    assert s.result is not None
    if as_json:
        click.echo(render(s.result, "json"), nl=False)
    else:
        from assessor.neutralise import visible_lines

        click.echo(visible_lines(render(s.result, "text")), nl=False)
    sys.exit(0 if s.result.get("passed") else 1)


@exam.command("report")
@click.option("--candidate", help=_CANDIDATE_HELP)
@click.option("--db", type=click.Path(dir_okay=False), help=_DB_HELP)
@click.option("--session", "session_id", help=_SESSION_HELP)
@click.option(
    "--format", "-f", "fmt", type=click.Choice(["text", "md", "html", "json"]), default="text", show_default=True
)
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="Write the report here (default: stdout).")
def exam_report(candidate: str | None, db: str | None, session_id: str | None, fmt: str, out: str | None) -> None:
    """The result of a submitted exam session as text, Markdown, HTML or JSON."""
    from assessor.errors import InputError
    from assessor.labs import exam_session
    from assessor.reports.exam import render

    s = exam_session.find(exam_session.exams_root(db), _who(candidate), session_id)
    if s.result is None:
        raise InputError(f"exam session {s.id} is not submitted yet: `gpulab exam submit` ends it and scores it")
    text = render(s.result, fmt)
    if out:
        from pathlib import Path

        Path(out).write_text(text, encoding="utf-8")
        _say(f"{fmt} report of {s.id} written to {out}")
    else:
        from assessor.neutralise import visible_lines

        click.echo(text if fmt in ("json", "html") else visible_lines(text), nl=False)
