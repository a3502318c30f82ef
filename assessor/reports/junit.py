"""JUnit XML derived from the results document, for CI systems (Jenkins, GitLab, GitHub).

One ``testsuite`` per host, named after it; one ``testcase`` per check. fail -> <failure>,
error -> <error>, skip -> <skipped>; a warn passes with its message in <system-out>. A host
that could not be assessed is one <error> test case named ``connect``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any


def render(doc: dict[str, Any]) -> str:
    suites = ET.Element("testsuites", name=f"gpulab {doc.get('profile') or ''}".strip())
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for target in doc["targets"]:
        name = target.get("host") or target["target"]
        suite = ET.SubElement(suites, "testsuite", name=name)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="target", value=target["target"])
        if target.get("error"):
            case = ET.SubElement(suite, "testcase", classname=f"{name}.connect", name="connect", time="0")
            _text(ET.SubElement(case, "error", message=target["error"], type="unreachable"), target["error"])
            counts["tests"] += 1
            counts["errors"] += 1
        for result in target["results"]:
            counts["tests"] += 1
            case = ET.SubElement(
                suite, "testcase", classname=f"{name}.{result['check'].split('.')[0]}", name=result["check"], time="0"
            )
            status, message = result["status"], result["message"]
            body = _details(result)
            if status == "fail":
                counts["failures"] += 1
                _text(ET.SubElement(case, "failure", message=message, type="fail"), body)
            elif status == "error":
                counts["errors"] += 1
                _text(ET.SubElement(case, "error", message=message, type="error"), body)
            elif status == "skip":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=message)
            elif status == "warn":
                _text(ET.SubElement(case, "system-out"), f"WARN: {body}")
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", "0")
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _details(result: dict[str, Any]) -> str:
    lines = [result["message"]]
    for key in ("observed", "expected", "hint"):
        if result.get(key) is not None:
            lines.append(f"{key}: {result[key]}")
    return "\n".join(lines)


def _text(element: ET.Element, text: str) -> None:
    element.text = text
