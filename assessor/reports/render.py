"""Render a validated document in a format: HTML and Markdown through the Jinja2 templates in
``reports/templates/``, CSV through the csv module, JUnit through :mod:`assessor.reports.junit`, JSON as is.

Every value a template prints passes through the format's neutraliser (``finalize``): HTML autoescapes and
shows invisible characters as escapes; Markdown escapes pipes, HTML and emphasis and defangs bare URLs;
JSON escapes what a terminal would hide. A template cannot forget (:mod:`assessor.neutralise`).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from markupsafe import Markup, escape

from assessor import neutralise as safe
from assessor.errors import InputError
from assessor.reports.documents import kind_of, validate

FORMATS = ("html", "md", "csv", "junit", "json")
SUFFIX = {"html": ".html", "md": ".md", "csv": ".csv", "junit": ".xml", "json": ".json"}


def _html_finalize(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return safe.visible(value)
    return value


def _md_finalize(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return safe.md(value)


def _json_text(value: Any) -> str:
    """Observed and expected values as compact JSON, never Python's repr."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


def when(value: Any) -> str:
    """An ISO 8601 time as "2026-11-07 14:09 UTC" (as given when it is not one)."""
    import datetime as dt

    if not value:
        return ""
    try:
        t = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M") + (" UTC" if t.tzinfo is not None else "")


def _num(value: Any) -> str:
    return "" if value is None else f"{float(value):g}"


def _pct(value: Any) -> str:
    return "" if value is None else f"{float(value):g} %"


def _lines(values: Any) -> Any:
    """Several lines of data (evidence) as one HTML-escaped block, line feeds kept."""
    return Markup("\n").join(escape(safe.visible(v)) for v in values)


def _short(value: Any, limit: int = 160) -> str:
    text = _json_text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@cache
def environment(fmt: str) -> Any:
    """The Jinja2 environment of a format (html or md), loading from the report templates folder."""
    import jinja2

    from assessor.reports.content import templates_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=fmt == "html",
        finalize=_html_finalize if fmt == "html" else _md_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["json"] = _json_text
    env.filters["short"] = _short
    env.filters["pct"] = _pct
    env.filters["num"] = _num
    env.filters["when"] = when
    if fmt == "html":
        env.filters["lines"] = _lines
    env.globals["level_names"] = {
        0: "not yet Foundation",
        1: "Foundation",
        2: "Operational",
        3: "Professional",
        4: "Expert",
        5: "Architect",
    }
    return env


def render(
    doc: dict[str, Any],
    fmt: str,
    *,
    results: list[dict[str, Any]] | None = None,
    lms: str | None = None,
    validated: bool = False,
) -> str:
    """The document in ``fmt``. JUnit renders the results documents a fleet document was made from; ``lms``
    (canvas, moodle) writes a cohort's CSV in that LMS's import layout. ``validated``: the document is one
    gpulab's own builders just made, and they validated it (a fleet, cohort or candidate document from
    :mod:`assessor.reports.build`): it is not checked a second time. Any other is validated here."""
    kind = kind_of(doc)
    if kind is None:
        raise InputError("not a gpulab document")
    if not validated:
        validate(doc, kind)
    if lms is not None and (fmt != "csv" or kind != "cohort"):
        raise InputError(
            f"--lms {lms} is a layout of the cohort gradebook CSV: `gpulab report cohort ... -f csv --lms {lms}`"
        )
    if fmt == "json":
        return (rows_json(doc) if kind == "fleet" else safe.json_document(doc)) + "\n"
    if fmt == "csv":
        from assessor.reports import csvout

        return csvout.render(doc, lms=lms)
    if fmt == "junit":
        from assessor.reports import junit

        if kind == "results":
            return junit.render(doc)
        if kind == "fleet" and results is not None:
            return junit.render(merge_results(results))
        raise InputError(f"--format junit is for fleet reports (check results), not {kind} reports")
    if fmt not in ("html", "md"):
        raise InputError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    if kind not in ("results", "fleet"):
        return str(environment(fmt).get_template(f"{kind}.{fmt}.j2").render(doc=doc))
    from assessor.reports import fleet

    if kind == "results":
        doc = fleet.build([doc])
    # what a readable report shows of a fleet of any size: the document itself holds every host
    return str(environment(fmt).get_template(f"fleet.{fmt}.j2").render(doc=doc, view=fleet.overview(doc)))


def rows_json(doc: Any) -> str:
    """A document that grows with the fleet (a fleet or results document) as JSON, laid out as a person reads
    it: dicts and lists that hold rows (dicts) one item a line, indented two spaces a level; every other
    value, a row included, on one line. It loads back to the same document, shows nothing hidden
    (:func:`assessor.neutralise.json_document`), and is written by the json module's C encoder: indented JSON
    is written in Python, several seconds at 10,000 hosts."""
    return _layout(doc, "")


@cache
def _encoder() -> json.JSONEncoder:
    return json.JSONEncoder(ensure_ascii=False)  # one line, the C encoder; as json.dumps(value, ensure_ascii=False)


def _layout(value: Any, pad: str) -> str:
    inner = pad + "  "
    if type(value) is list and value and all(type(v) is dict for v in value):
        return "[\n" + ",\n".join(inner + _layout(v, inner) for v in value) + "\n" + pad + "]"
    if (
        type(value) is dict
        and value
        and (not pad or any(type(v) is list and v and type(v[0]) is dict for v in value.values()))
    ):
        items = (inner + _layout(str(k), inner) + ": " + _layout(v, inner) for k, v in value.items())
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    return safe.json_visible(_encoder().encode(value))


def merge_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several results documents as one (targets in order; summary recounted), validated."""
    if len(results) == 1:
        return results[0]
    from assessor.checks.result import STATUSES

    targets = [t for d in results for t in d["targets"]]
    summary: dict[str, int] = {
        "hosts": len(targets),
        "unreachable": sum(1 for t in targets if t.get("error")),
        "failing_hosts": sum(
            1 for t in targets if not t.get("error") and any(r["status"] in ("fail", "error") for r in t["results"])
        ),
        **{s: sum(1 for t in targets for r in t["results"] if r["status"] == s) for s in STATUSES},
        "total": sum(len(t["results"]) for t in targets),
    }
    profiles = sorted({str(d["profile"]) for d in results if d.get("profile")})
    doc: dict[str, Any] = {"schema": results[0]["schema"]}
    if profiles:
        doc["profile"] = ", ".join(profiles)
    doc["summary"] = summary
    doc["targets"] = targets
    return validate(doc, "results")
