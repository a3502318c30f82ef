"""JUnit XML from the results document, for CI servers (Jenkins, GitLab, GitHub).

Valid against Jenkins xunit's ``junit-10.xsd`` and the Ant JUnit schema at once (both in
tests/data/schemas/): one ``testsuite`` per host with ``timestamp``, ``hostname``, ``package`` and ``id``;
``properties`` first, ``system-out`` and ``system-err`` last; no attribute on ``<testsuites>`` (the Ant
schema allows none; totals are on each suite).
One ``testcase`` per check: fail -> <failure>, error -> <error>, skip -> <skipped>. A warning passes and
is shown as a ``warning.<check>`` property of its host and in the host's system-out (the Ant schema allows
nothing else on a passing case). Bodies carry observed and expected as JSON and the evidence lines.
Durations are the capture timings of the sources each check read. A host that could not be assessed is
one <error type="unreachable"> case named ``connect``. Every text is reduced to valid XML characters, with
control characters shown as escapes.
"""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from typing import Any

from assessor.neutralise import xml_text


def _time(seconds: float | None) -> str:
    return f"{max(0.0, float(seconds or 0.0)):.3f}"


def _timestamp(text: str | None) -> str:
    """ISO 8601 without zone or fraction, in UTC (the Ant schema's pattern)."""
    when = None
    if text:
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            when = None
    when = when or dt.datetime.now(dt.UTC)
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _sub(parent: ET.Element, tag: str, **attrs: str) -> ET.Element:
    return ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})


def details(result: dict[str, Any]) -> str:
    """A failure body: message, observed and expected as JSON, evidence lines, hint."""
    lines = [result["message"]]
    for key in ("observed", "expected"):
        if result.get(key) is not None:
            lines.append(f"{key}: {_json(result[key])}")
    for line in result.get("evidence") or ():
        lines.append(f"evidence: {line}")
    if result.get("hint"):
        lines.append(f"hint: {result['hint']}")
    return xml_text("\n".join(xml_text(line) for line in lines), lines=True)


def render(doc: dict[str, Any]) -> str:
    """The JUnit XML of a results document (gpulab.results/1)."""
    profile = doc.get("profile") or ""
    # The Ant schema allows no attribute on <testsuites>: totals live on each suite, where CI servers add them up.
    suites = ET.Element("testsuites")
    for number, target in enumerate(doc["targets"]):
        name = xml_text(target.get("host") or target["target"]).strip() or "unknown"
        package = xml_text(f"gpulab.{profile or 'checks'}").replace(" ", "_")
        suite = _sub(
            suites,
            "testsuite",
            name=name,
            package=package,
            id=str(number),
            timestamp=_timestamp(target.get("captured_at")),
            hostname=name,
        )
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        props = _sub(suite, "properties")
        _sub(props, "property", name="target", value=target["target"])
        if profile:
            _sub(props, "property", name="profile", value=profile)
        warnings: list[str] = []
        for result in target["results"]:
            if result["status"] == "warn":
                warnings.append(f"WARN {result['check']}: {result['message']}")
                _sub(props, "property", name=f"warning.{result['check']}", value=result["message"])
        if target.get("error"):
            case = _sub(suite, "testcase", classname=f"{name}.connect", name="connect", time="0.000")
            error = _sub(case, "error", message=target["error"], type="unreachable")
            error.text = xml_text(target["error"])
            counts["tests"] += 1
            counts["errors"] += 1
        spent = 0.0
        for result in target["results"]:
            counts["tests"] += 1
            seconds = float(result.get("duration_s") or 0.0)
            spent += seconds
            case = _sub(
                suite,
                "testcase",
                classname=f"{name}.{result['check'].split('.')[0]}",
                name=result["check"],
                time=_time(seconds),
            )
            status, message = result["status"], result["message"]
            if status == "fail":
                counts["failures"] += 1
                _sub(case, "failure", message=message, type="fail").text = details(result)
            elif status == "error":
                counts["errors"] += 1
                _sub(case, "error", message=message, type="error").text = details(result)
            elif status == "skip":
                counts["skipped"] += 1
                _sub(case, "skipped", message=message)
        for key, value in counts.items():
            suite.set(key, str(value))
        suite.set("time", _time(float(target.get("duration_s") or spent)))
        out = _sub(suite, "system-out")
        out.text = xml_text("\n".join(xml_text(w) for w in warnings), lines=True) if warnings else None
        _sub(suite, "system-err")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
