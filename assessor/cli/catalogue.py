"""``gpulab checks``, ``gpulab profiles`` and ``gpulab schema``: what gpulab knows."""

from __future__ import annotations

import click


@click.group()
def checks() -> None:
    """The check catalogue."""


@checks.command("list")
@click.option("--json", "as_json", is_flag=True)
def checks_list(as_json: bool) -> None:
    """Every check id with its title."""
    from assessor import checks as catalogue

    if as_json:
        import json

        click.echo(json.dumps([{"id": s.id, "title": s.title} for s in catalogue.REGISTRY.values()], indent=2))
        return
    for spec in sorted(catalogue.REGISTRY.values(), key=lambda s: s.id):
        click.echo(f"{spec.id:20} {spec.title}")


@checks.command("show")
@click.argument("check_id", metavar="ID")
def checks_show(check_id: str) -> None:
    """A check's documentation: what it verifies, parameters, facts, what to do on failure."""
    from assessor import checks as catalogue
    from assessor.checks.base import fact_sources

    spec = catalogue.get(check_id)
    click.echo(f"{spec.id} — {spec.title}\n\n{spec.doc}\n")
    click.echo("Parameters:")
    for p in spec.params:
        click.echo(f"  {p.name} ({p.type}, default {p.default!r}): {p.doc}")
    if not spec.params:
        click.echo("  none")
    click.echo("\nReads:")
    for name in spec.facts:
        click.echo(f"  {name}: from {fact_sources(name)}")
    click.echo(f"\nWhen it fails:\n  {spec.remedy}")


@click.group()
def profiles() -> None:
    """Readiness profiles that ship with gpulab."""


@profiles.command("list")
def profiles_list() -> None:
    """Shipped profiles with their descriptions."""
    from assessor.assess import profiles as prof
    from assessor.neutralise import visible

    for name, path in prof.shipped().items():
        p = prof.load(str(path))
        click.echo(visible(f"{name:16} {len(p.checks):3} checks  {p.description}"))


@profiles.command("show")
@click.argument("name")
def profiles_show(name: str) -> None:
    """Print a shipped profile's YAML (a starting point for your own)."""
    from assessor.assess import profiles as prof

    prof.load(name)  # validates (within its bound), and says which names exist
    path = prof.shipped().get(name)
    from pathlib import Path

    from assessor.content import MAX_YAML_BYTES, read_text
    from assessor.neutralise import visible_lines

    # a profile file is data: its line feeds kept, anything else a terminal would act on shown as an escape
    text = read_text(path or Path(name), limit=MAX_YAML_BYTES, what="a profile")
    click.echo(visible_lines(text), nl=False)


@click.command()
@click.argument(
    "name", type=click.Choice(["results", "grade", "progress", "candidate", "cohort", "fleet", "ungraded", "lab"])
)
def schema(name: str) -> None:
    """Print a published JSON Schema.

    \b
    results    gpulab.results/1: what `gpulab assess --json` writes
    grade      gpulab.grade/1: what `gpulab lab grade --json` prints
    progress   gpulab.progress/1: what `gpulab progress --json` prints
    candidate  gpulab.candidate/1, cohort gpulab.cohort/1, fleet gpulab.fleet/1: `gpulab report ... -f json`
    ungraded   gpulab.ungraded/1: a candidate `gpulab lab grade --out DIR` could not grade, and why
    lab        a lab.yaml
    """
    from importlib import resources

    if name == "lab":
        text = (resources.files("assessor") / "schemas" / "lab.schema.json").read_text(encoding="utf-8")
    else:
        from assessor.reports.documents import schema_path

        text = schema_path(name).read_text(encoding="utf-8")
    click.echo(text, nl=False)
