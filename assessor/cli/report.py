"""``gpulab report``: candidate, cohort and fleet reports in HTML, Markdown, CSV, JUnit or JSON."""

from __future__ import annotations

import click


@click.command()
@click.argument("kind", type=click.Choice(["candidate", "cohort", "fleet"]))
@click.argument("inputs", nargs=-1, metavar="INPUT...")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["html", "md", "csv", "junit", "json"]),
    help="html (one self-contained file), md, csv (cohort: the gradebook), junit (fleet), json (the document);"
    " default: from the --out suffix (.md .csv .xml .json), else html.",
)
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="Write the report here (default: stdout).")
@click.option(
    "--candidate", "candidates", multiple=True, metavar="NAME", help="Whose report (repeatable for a cohort)."
)
@click.option(
    "--candidates", "candidates_file", type=click.Path(dir_okay=False), help="Cohort: a file of names, one a line."
)
@click.option("--cohort", metavar="NAME", help="Cohort: its name (and its members, when the database records cohorts).")
@click.option("--db", type=click.Path(dir_okay=False), help="Attempts database (default $GPULAB_DB, else the user's).")
def report(
    kind: str,
    inputs: tuple[str, ...],
    fmt: str | None,
    out: str | None,
    candidates: tuple[str, ...],
    candidates_file: str | None,
    cohort: str | None,
    db: str | None,
) -> None:
    """Write a report from check results, grades or the attempts database.

    \b
    KIND     candidate: one person's levels, labs and next steps
             cohort:    gradebook, level distribution, failed checks, team readiness
             fleet:     host x check matrix with the evidence of each failure
    INPUT    results or grade JSON files (gpulab assess --json, gpulab lab grade --json),
             directories of them, or an attempts database; none: the attempts database.

    Exit 0 when written, 2 for bad input.
    """
    from assessor.reports import build

    names = list(candidates)
    if candidates_file:
        names += build.read_candidates(candidates_file)
    made = build.make(kind, list(inputs), candidates=names or None, cohort=cohort, db=db)
    written = build.write(made, fmt or build.format_for(out), out)
    if out is None:
        click.echo(written, nl=False)
    else:
        click.echo(f"{kind} report written to {written}")
