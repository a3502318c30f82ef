"""JUnit for CI servers: valid against Jenkins xunit's junit-10.xsd and the Ant JUnit schema."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from assessor.checks.result import Result, TargetResults, document
from assessor.reports import junit

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"


@pytest.fixture(scope="module")
def jenkins() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "jenkins-xunit" / "junit-10.xsd"))


@pytest.fixture(scope="module")
def ant() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "ant-junit" / "JUnit.xsd"))


def run_doc() -> dict:
    node = TargetResults(
        "ssh://node01",
        "node01",
        [
            Result("gpu.count", "pass", "8 GPUs"),
            Result(
                "nccl.busbw",
                "fail",
                "busbw 120 GB/s, below 450 GB/s",
                observed={"busbw": 120.0, "ranks": 8},
                expected=">= 450 GB/s",
                hint="check gpu.nvlink",
                evidence=["nccl-tests: size 8589934592 bytes: busbw 120.0 GB/s out-of-place"],
            ),
            Result("nccl.errors", "warn", "validation was off (#wrong is N/A)", hint="rerun with -c 1"),
            Result("dcgm.diag", "skip", "no dcgm diag facts"),
            Result("ib.ports_active", "error", "ibstat.txt: line 3: not ibstat output"),
        ],
        captured_at="2026-12-01T08:30:27+00:00",
        timings={"nccl-tests.txt": 12.3456, "nvml.json": 0.25, "ibstat.txt": 0.1},
    )
    ghost = TargetResults("ssh://ghost", "ghost", [], error="unreachable: connection refused")
    return document([node, ghost], "hgx-h100")


def test_junit_validates_against_jenkins_and_ant_schemas(
    jenkins: xmlschema.XMLSchema, ant: xmlschema.XMLSchema
) -> None:
    xml = junit.render(run_doc())
    jenkins.validate(xml)
    ant.validate(xml)


def test_junit_one_suite_per_host_with_time_stamp_host_and_real_durations() -> None:
    root = ET.fromstring(junit.render(run_doc()))
    assert root.attrib == {}  # the Ant schema allows no attribute there (and no `skipped` for Jenkins)
    node, ghost = root.findall("testsuite")
    assert node.attrib["hostname"] == "node01" and node.attrib["timestamp"] == "2026-12-01T08:30:27"
    assert node.attrib["time"] == "12.696"
    cases = {c.attrib["name"]: c for c in node.findall("testcase")}
    assert cases["nccl.busbw"].attrib["time"] == "12.596"  # the nccl-tests run and nvml.json it read
    assert cases["gpu.count"].attrib["time"] == "0.250"  # nvml.json
    body = cases["nccl.busbw"].find("failure").text
    assert 'observed: {"busbw": 120.0, "ranks": 8}' in body  # JSON, not Python's repr
    assert "evidence: nccl-tests: size 8589934592" in body and "hint: check gpu.nvlink" in body
    props = {p.attrib["name"]: p.attrib["value"] for p in node.find("properties")}
    assert props["warning.nccl.errors"] == "validation was off (#wrong is N/A)"
    assert "WARN nccl.errors" in node.find("system-out").text
    assert ghost.attrib["errors"] == "1" and ghost.attrib["tests"] == "1"
    assert [s.attrib["failures"] for s in (node, ghost)] == ["1", "0"]
    (connect,) = ghost.findall("testcase")
    assert connect.attrib["name"] == "connect" and connect.find("error").attrib["type"] == "unreachable"


def test_junit_of_an_assess_run_validates_with_capture_durations(
    tmp_path: Path, jenkins: xmlschema.XMLSchema, ant: xmlschema.XMLSchema
) -> None:
    from click.testing import CliRunner

    from assessor.cli import main

    out = tmp_path / "r.xml"
    result = CliRunner().invoke(main, ["assess", "-t", "mock:hgx-h100", "-p", "hgx-h100", "--junit", str(out)])
    assert result.exit_code == 0
    xml = out.read_text(encoding="utf-8")
    jenkins.validate(xml)
    ant.validate(xml)
    suite = ET.fromstring(xml).find("testsuite")
    assert float(suite.attrib["time"]) > 0
    assert sum(float(c.attrib["time"]) for c in suite.findall("testcase")) > 0
