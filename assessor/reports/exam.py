"""The exam result report: a ``gpulab.exam-result/1`` document (:mod:`assessor.labs.exam_score`) as text,
Markdown, HTML or JSON, through the templates ``reports/templates/exam.{txt,md,html}.j2``.

HTML and Markdown use the report environments of :mod:`assessor.reports.render` (the same neutralisers and
filters as every report); text has its own, whose finaliser shows every invisible character of a value as an
escape (:func:`assessor.neutralise.visible`). JSON is the document, as :func:`assessor.neutralise.json_document`
writes it. The document is checked against ``assessor/reports/schemas/exam.schema.json`` first.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from assessor import neutralise as safe
from assessor.errors import InputError

FORMATS = ("text", "md", "html", "json")
SUFFIX = {"text": ".txt", "md": ".md", "html": ".html", "json": ".json"}
SCHEMA_ID = "gpulab.exam-result/1"


@cache
def schema() -> dict[str, Any]:
    from importlib import resources

    text = (resources.files("assessor.reports") / "schemas" / "exam.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def validate(doc: Any) -> dict[str, Any]:
    """The document, after checking it against the exam result schema; InputError naming the first problem."""
    import jsonschema

    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_ID:
        raise InputError(f"not a {SCHEMA_ID} document")
    cls = jsonschema.validators.validator_for(schema())
    error = next(iter(cls(schema()).iter_errors(doc)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise InputError(f"not a valid {SCHEMA_ID} document at {where}: {error.message[:300]}")
    return doc


def render(doc: dict[str, Any], fmt: str) -> str:
    """The result in ``fmt`` (text, md, html, json)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    validate(doc)
    if fmt == "json":
        return safe.json_document(doc) + "\n"
    if fmt == "text":
        env = _text_environment()
        name = "exam.txt.j2"
    else:
        from assessor.reports.render import environment

        env = environment(fmt)
        name = f"exam.{fmt}.j2"
    return str(env.get_template(name).render(doc=doc))


def _text_finalize(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return safe.visible(value)
    return value


@cache
def _text_environment() -> Any:
    """Plain text: no escaping beyond :func:`~assessor.neutralise.visible` (no line of data can pass for one of
    the report's own), the report filters a text template needs."""
    import jinja2

    from assessor.reports.content import templates_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=False,
        finalize=_text_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["pct"] = lambda v: "" if v is None else f"{float(v):g} %"
    env.filters["num"] = lambda v: "" if v is None else f"{float(v):g}"
    from assessor.reports.render import when

    env.filters["when"] = when
    return env
