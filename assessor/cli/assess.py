"""``gpulab assess``, ``gpulab capture`` and ``gpulab parse``: from targets to results."""

from __future__ import annotations

import sys
from typing import Any

import click

from assessor.cli.options import Reach, active_option, active_tests, check_options, reach_options


@click.command()
@reach_options
@check_options
@click.option(
    "--format", "-f", "fmt", type=click.Choice(["table", "json", "junit"]), default="table", show_default=True
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False),
    help="Keep each target's snapshot under DIR/<host>/ (an unreachable host: meta.json with the error).",
)
@click.option("--json", "json_file", type=click.Path(dir_okay=False), help="Also write the results JSON here.")
@click.option("--junit", "junit_file", type=click.Path(dir_okay=False), help="Also write JUnit XML here (CI servers).")
@click.option(
    "--markdown",
    "markdown_file",
    type=click.Path(dir_okay=False),
    help="Also write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--prometheus",
    "prometheus_file",
    type=click.Path(dir_okay=False),
    help="Also write Prometheus metrics here, for node_exporter's textfile collector (DIR/NAME.prom).",
)
@active_option
def assess(
    reach: Reach,
    profile: str | None,
    check_opts: tuple[str, ...],
    fmt: str,
    out: str | None,
    json_file: str | None,
    junit_file: str | None,
    markdown_file: str | None,
    prometheus_file: str | None,
    active: str,
) -> None:
    """Assess targets against a readiness profile.

    --format picks what goes to stdout; --json, --junit, --markdown and --prometheus write more
    outputs from the same run, beside it.

    \b
    Exit codes:
      0    every check passed (or only warned)
      1    a check failed or errored
      2    bad input (nothing was assessed)
      3    one or more hosts could not be assessed (with or without failures)
      130  interrupted (what finished is still reported)
    """
    import json
    import os
    from pathlib import Path

    from assessor.assess import fleet, profiles
    from assessor.assess import pipeline as runner
    from assessor.checks import result as results
    from assessor.reports import terminal as render

    if profile:
        prof = profiles.load(profile)
    elif check_opts:
        prof = profiles.Profile("checks", "checks given on the command line", ())
    else:
        prof = profiles.everything()
    prof = runner.with_overrides(prof, list(check_opts))
    jobs = reach.jobs()
    bar = fleet.Progress(len(jobs)) if len(jobs) > 1 else None
    try:
        run = fleet.run(
            jobs,
            prof,
            forks=reach.forks,
            timeout=reach.timeout,
            out=Path(out) if out else None,
            progress=bar,
            active=active_tests(active),
        )
    finally:
        if bar is not None:
            bar.close()
    doc = results.document(run.results, prof.name)
    from assessor.reports import outputs

    written = outputs.write_all(doc, json_file=json_file, junit_file=junit_file, markdown_file=markdown_file)
    if prometheus_file:
        from assessor.export import prometheus

        written.append(prometheus.write_textfile(doc, prometheus_file))
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2))
    elif fmt == "junit":
        from assessor.reports import junit

        click.echo(junit.render(doc), nl=False)
    else:
        render.table(run.results, prof)
    from assessor.neutralise import visible

    for path in written:
        click.echo(visible(f"written: {path}"), err=True)
    if run.interrupted:
        sys.stdout.flush()
        os._exit(130)  # worker threads may still wait on the network: do not wait for them
    sys.exit(results.exit_code(run.results))


@click.command()
@reach_options
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(file_okay=False),
    help="Snapshot directory to write (DIR/<host>/ for several targets).",
)
@active_option
def capture(
    reach: Reach,
    out: str,
    active: str,
) -> None:
    """Capture targets' tool outputs into snapshot directories (default target: local)."""
    import datetime
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from assessor import __version__ as version
    from assessor.capture import snapshot
    from assessor.capture.snapshot import dir_name
    from assessor.errors import GpulabError
    from assessor.neutralise import visible

    tests = active_tests(active)
    jobs = reach.jobs(default=("local",))
    single = len(jobs) == 1
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

    def one(job: Any) -> tuple[Any, Any, str | None]:
        try:
            snap = job.target.snapshot(timeout=reach.timeout, active=tests)
        except GpulabError as exc:
            return job, None, str(exc)
        dest = Path(out) if single else Path(out) / dir_name(job.label)
        snapshot.write(snap, dest, {"target": job.target.spec, "gpulab_version": version, "time": stamp})
        return job, snap, None

    failed = False
    with ThreadPoolExecutor(max_workers=reach.forks) as pool:
        for job, snap, error in pool.map(one, jobs):
            if error is not None:
                failed = True
                click.echo(f"{visible(job.label)}: error: {visible(error)}", err=True)
                continue
            if single:
                for name, source in sorted(snap.sources.items()):
                    note = source.status if source.status == "ok" else f"{source.status}: {source.message or ''}"
                    click.echo(f"{name:24} {visible(note)}")  # messages come from the node
            click.echo(f"{visible(job.label)}: snapshot written to {visible(snap.path)}")
    sys.exit(1 if failed else 0)


@click.command()
@click.argument("kind", metavar="KIND")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), required=False, default="-")
def parse(kind: str, file: str) -> None:
    """Show the facts gpulab reads from one tool output (FILE, or - for stdin).

    KIND is a kind from `gpulab parse kinds`, or `auto` to recognise the output by its content
    (gpulab says which kind it found, or why it cannot tell).
    """
    import json
    from pathlib import Path

    from assessor import parsers
    from assessor.errors import InputError
    from assessor.facts import to_jsonable
    from assessor.neutralise import visible

    if kind == "kinds":
        for spec in parsers.KINDS.values():
            click.echo(f"{spec.name:22} {spec.about}")
        return
    if kind != parsers.AUTO:
        parsers.kind(kind)  # an unknown kind is bad input before any file is read
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror or exc}") from None
    text = data.decode("utf-8", "replace")
    if kind == parsers.AUTO:
        found, facts = parsers.parse_auto(text, source=file)
        click.echo(visible(f"{file}: recognised as {found} ({parsers.KINDS[found].about})"), err=True)
        spec = parsers.KINDS[found]
    else:
        spec = parsers.kind(kind)
        facts = parsers.parse(spec.name, text, source=file)
    click.echo(json.dumps({f: to_jsonable(getattr(facts, f)) for f in spec.fields}, indent=2))
