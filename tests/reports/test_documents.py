"""The published schemas and the documents layer."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.reports import documents
from tests.reports.builders import grade_doc, write_json


@pytest.mark.parametrize("name", ["results", "grade", "progress", "candidate", "cohort", "fleet"])
def test_schema_command_prints_each_published_schema(name: str) -> None:
    result = CliRunner().invoke(main, ["schema", name])
    assert result.exit_code == 0
    printed = json.loads(result.stdout)
    jsonschema.validators.validator_for(printed).check_schema(printed)
    assert printed["properties"]["schema"]["const"] == documents.SCHEMA_IDS[name]


def test_an_invalid_document_is_refused_naming_where() -> None:
    doc = grade_doc("ada", "drv-101")
    doc["percent"] = "ninety"
    with pytest.raises(InputError, match=r"gpulab.grade/1 document at percent"):
        documents.validate(doc)


def test_grade_flags_are_read_however_a_grader_stored_them() -> None:
    assert documents.flags_of(["copied", "late start"]) == ("copied", "late start")
    assert documents.flags_of('["tamper: nvml.json edited"]') == ("tamper: nvml.json edited",)
    assert documents.flags_of("a, b") == ("a", "b")
    assert documents.flags_of({"tamper": "fixture changed", "reviewed": True}) == (
        "tamper: fixture changed",
        "reviewed",
    )
    assert documents.flags_of(None) == ()


def test_inputs_sort_grades_results_and_databases(tmp_path: Path) -> None:
    write_json(tmp_path / "g1.json", grade_doc("ada", "drv-101", flags=["tamper: fixture edited"]))
    write_json(tmp_path / "other.json", {"not": "ours"})  # a directory may hold other JSON
    read = documents.read_inputs([str(tmp_path)])
    assert [r.lab_id for r in read.records] == ["drv-101"]
    assert read.records[0].flags == ("tamper: fixture edited",)
    with pytest.raises(InputError, match="not a gpulab results or grade document"):
        documents.read_inputs([str(tmp_path / "other.json")])
    with pytest.raises(InputError, match="no such file"):
        documents.read_inputs([str(tmp_path / "missing.json")])


def test_report_of_a_missing_input_is_exit_2_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", "fleet", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "no such file" in result.stderr and len(result.stderr.strip().splitlines()) == 1
