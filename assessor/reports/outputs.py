"""The files ``gpulab assess`` writes beside its terminal table: results JSON, JUnit XML, Markdown summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assessor.errors import InputError


def _write(path: str, text: str) -> str:
    target = Path(path)
    try:
        if target.parent != Path(""):
            target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if path == "/dev/stdout" else "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return str(target)


def markdown(doc: dict[str, Any]) -> str:
    """A Markdown summary of a results document that fits a GitHub Actions job summary: counts,
    failures with their hints, the table collapsed in <details> (a large fleet: its first hosts, the rest
    counted, as :func:`assessor.reports.fleet.overview` bounds it, well under the 1 MiB a job summary takes)."""
    from assessor.reports import fleet, render

    return render.render(fleet.build([doc]), "md", validated=True)  # build() validated it


def write_all(
    doc: dict[str, Any],
    *,
    json_file: str | None = None,
    junit_file: str | None = None,
    markdown_file: str | None = None,
) -> list[str]:
    """Write each output asked for from one results document (validated first); the paths written."""
    from assessor.reports import junit, render
    from assessor.reports.documents import validate

    if not (json_file or junit_file or markdown_file):
        return []
    validate(doc, "results")
    written = []
    if json_file:
        # one check result a line: a 10,000-host document is some 60 MB this way (90 MB indented) and is
        # written in a few seconds, not twenty
        written.append(_write(json_file, render.rows_json(doc) + "\n"))
    if junit_file:
        written.append(_write(junit_file, junit.render(doc)))
    if markdown_file:
        written.append(_write(markdown_file, markdown(doc)))
    return written
