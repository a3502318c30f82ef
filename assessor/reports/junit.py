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


def _attr(value: str) -> str:
    """An attribute value as ElementTree escapes it (XML characters, and CR, LF and tab as references)."""
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\r", "&#13;")
        .replace("\n", "&#10;")
        .replace("\t", "&#09;")
    )


def _text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _tag(tag: str, attrs: dict[str, str], body: str | None = None) -> str:
    """One element with no children, as ElementTree writes it: every attribute value through
    :func:`xml_text`, then escaped."""
    start = "<" + tag + "".join(f' {k}="{_attr(xml_text(v))}"' for k, v in attrs.items())
    return f"{start}>{_text(body)}</{tag}>" if body else start + " />"


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
    """The JUnit XML of a results document (gpulab.results/1).

    Written as text, element by element, exactly as ElementTree would write it indented (two spaces a level):
    a 10,000-host fleet is some 300,000 test cases, which ElementTree takes several seconds to build and write.
    """
    profile = doc.get("profile") or ""
    package = _attr(xml_text(f"gpulab.{profile or 'checks'}").replace(" ", "_"))
    quoted: dict[str, str] = {}  # each check's name and class suffix and each skip's message, made safe once

    def safe(value: str) -> str:
        found = quoted.get(value)
        if found is None:
            found = quoted[value] = _attr(xml_text(value))
        return found

    tails: dict[tuple[str, float, str | None], str] = {}  # (check, seconds, skip message) -> rest of its case

    def case_tail(check: str, seconds: float, skipped: str | None) -> str:
        """A test case after its host's name: class suffix, name, time, and a skip's <skipped>."""
        named = f'{safe("." + check.split(".")[0])}" name="{safe(check)}" time="{_time(seconds)}"'
        if skipped is None:
            return named + " />"
        return f'{named}>\n      <skipped message="{safe(skipped)}" />\n    </testcase>'

    profile_property = [_tag("property", {"name": "profile", "value": profile})] if profile else []
    stamps: dict[str | None, str] = {}  # captured_at -> the suite's timestamp (a fleet is captured in minutes)

    def stamp(captured_at: str | None) -> str:
        if captured_at not in stamps:
            stamps[captured_at] = _attr(_timestamp(captured_at))
        return stamps[captured_at]

    # The Ant schema allows no attribute on <testsuites>: totals live on each suite, where CI servers add them up.
    out: list[str] = []
    for number, target in enumerate(doc["targets"]):
        name = xml_text(target.get("host") or target["target"]).strip() or "unknown"
        host = _attr(name)
        props = [f'<property name="target" value="{_attr(xml_text(target["target"]))}" />', *profile_property]
        warnings: list[str] = []
        cases: list[str] = []
        results = target["results"]
        tests, failures, errors, skips = len(results), 0, 0, 0
        if target.get("error"):
            error = _tag("error", {"message": target["error"], "type": "unreachable"}, xml_text(target["error"]))
            connect = _attr(xml_text(f"{name}.connect"))
            cases.append(
                f'<testcase classname="{connect}" name="connect" time="0.000">\n      {error}\n    </testcase>'
            )
            tests += 1
            errors += 1
        spent = 0.0
        opening = f'<testcase classname="{host}'
        for result in results:
            seconds = float(result.get("duration_s") or 0.0)
            spent += seconds
            status = result["status"]
            if status == "pass" or status == "warn" or status == "skip":
                check = result["check"]
                if status == "warn":  # a property of its host, and a line of the host's system-out
                    warnings.append(f"WARN {check}: {result['message']}")
                    props.append(f'<property name="{safe("warning." + check)}" value="{safe(result["message"])}" />')
                # the same on every host that gave the same result: written once, after the host's name
                skipped = None
                if status == "skip":
                    skipped = result["message"]
                    skips += 1
                key = (check, seconds, skipped)
                tail = tails.get(key)
                if tail is None:
                    tail = tails[key] = case_tail(check, seconds, skipped)
                cases.append(opening + tail)
                continue
            message = result["message"]
            if status == "fail":
                failures += 1
                inner = _tag("failure", {"message": message, "type": "fail"}, details(result))
            else:
                errors += 1
                inner = _tag("error", {"message": message, "type": "error"}, details(result))
            head = opening + case_tail(result["check"], seconds, None)[: -len(" />")]
            cases.append(f"{head}>\n      {inner}\n    </testcase>")
        seconds_spent = _time(float(target.get("duration_s") or spent))
        system_out = xml_text("\n".join(xml_text(w) for w in warnings), lines=True) if warnings else None
        head = (
            f'<testsuite name="{host}" package="{package}" id="{number}" '
            f'timestamp="{stamp(target.get("captured_at"))}" hostname="{host}"'
            + f' tests="{tests}" failures="{failures}" errors="{errors}" skipped="{skips}"'
            + f' time="{seconds_spent}">'
        )
        children = [
            "<properties>\n      " + "\n      ".join(props) + "\n    </properties>",
            *cases,
            f"<system-out>{_text(system_out)}</system-out>" if system_out else "<system-out />",
            "<system-err />",
        ]
        out.append(head + "\n    " + "\n    ".join(children) + "\n  </testsuite>")
    body = "<testsuites>\n  " + "\n  ".join(out) + "\n</testsuites>" if out else "<testsuites />"
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
