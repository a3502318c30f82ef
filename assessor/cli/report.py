"""``gpulab report``: candidate, cohort and fleet reports in HTML, Markdown, CSV, JUnit or JSON."""

from __future__ import annotations

from typing import Any

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
    "--candidates",
    "candidates_file",
    type=click.Path(dir_okay=False),
    help="Cohort: its candidates file (.csv, .yaml: names, hosts, e-mail, login, SIS id, section), or one name a line.",
)
@click.option(
    "--lms",
    type=click.Choice(["canvas", "moodle"]),
    help="Cohort CSV: the gradebook in this LMS's grade import layout, identities from --candidates FILE.",
)
@click.option("--cohort", metavar="NAME", help="Cohort: its name (and its members, when the database records cohorts).")
@click.option("--db", type=click.Path(dir_okay=False), help="Attempts database (default $GPULAB_DB, else the user's).")
@click.option(
    "--exam",
    metavar="EXAM",
    help="Candidate: readiness for this exam (NCA-AIIO, NCP-AII, NCP-AIO, NCP-AIN) by its domains, from the "
    "labs and the submitted exam sittings kept beside the attempts database, as `gpulab progress --exam` shows "
    "it; the study plan then aims at it.",
)
def report(**options: Any) -> None:
    """Write a report from check results, grades or the attempts database.

    \b
    KIND     candidate: one person's levels, labs, next steps and study plan
             (--exam: readiness for an exam)
             cohort:    gradebook, level distribution, failed checks, team readiness
             fleet:     host x check matrix with the evidence of each failure
    INPUT    results or grade JSON files (gpulab assess --json, gpulab lab grade --json),
             directories of them (a gradebook: lab grade --out DIR), or an attempts
             database; none: the attempts database.

    A lab's best score and pass are those `gpulab progress` gives: flagged attempts and grades not
    recorded are shown, never counted. Exit 0 when written, 2 for bad input.
    """
    from assessor.reports.documents import no_cycle_collection

    # A fleet's documents are millions of objects and no cycle: the cycle collector stays off until they are
    # freed (when _report returns), or its next pass walks every one of them (a tenth of a second at 10,000 hosts).
    with no_cycle_collection():
        _report(**options)


def _report(
    kind: str,
    inputs: tuple[str, ...],
    fmt: str | None,
    out: str | None,
    candidates: tuple[str, ...],
    candidates_file: str | None,
    cohort: str | None,
    db: str | None,
    lms: str | None,
    exam: str | None,
) -> None:
    from assessor.reports import build

    names = list(candidates)
    identities: dict[str, dict[str, str]] = {}
    if candidates_file:
        listed, identities = build.read_candidates(candidates_file)
        names += listed
    fmt = fmt or build.format_for(out)
    if lms and (kind != "cohort" or fmt != "csv"):
        raise click.UsageError(
            f"--lms {lms} writes the cohort gradebook CSV: gpulab report cohort ... -f csv --lms {lms}"
        )
    made = build.make(
        kind, list(inputs), candidates=names or None, cohort=cohort, db=db, identities=identities, exam=exam
    )
    written = build.write(made, fmt, out, lms=lms)
    from assessor.neutralise import message, visible

    # the attempts database's own flags (rows missing at its end): in every format, and on the terminal too,
    # where an LMS layout has no column for them
    for flag in made.document.get("database_flags") or []:
        click.echo(message(flag, prefix="gpulab: warning: "), err=True)

    if lms:
        from assessor.reports.csvout import unmatched

        missing = unmatched(made.document, lms)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            click.echo(
                visible(
                    f"gpulab: warning: {lms} cannot match {len(missing)} row(s) to a person, no identity in "
                    f"the candidates file: {shown}"
                ),
                err=True,
            )
    if out is None:
        click.echo(written, nl=False)
    else:
        click.echo(visible(f"{kind} report written to {written}"))
