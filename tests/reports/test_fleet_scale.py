"""The fleet report at fleet sizes: readable HTML and Markdown of thousands of hosts (grouped by failing check,
the rest counted), every host in the JSON, CSV and JUnit, each document validated once, and the fast paths
(compiled schema check, JSON one row a line, JUnit written as text) saying what the slow ones said."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assessor.checks.result import Result, TargetResults, document
from assessor.errors import InputError
from assessor.reports import build, documents, fleet, junit, outputs, render
from tests.reports.test_candidate_report import parse

HOSTS = 3000
HOSTILE = "<img src=x onerror=alert(1)>\u202egpu\x1b]0;t\x07"  # markup, a bidi override, an OSC title
# (check, status, every how many hosts): three groups of failures, one of warnings
FAULTS = (
    ("gpu.xid", "fail", 7),
    ("ib.ports_active", "error", 13),
    ("nccl.busbw", "fail", 29),
    ("nccl.errors", "warn", 5),
)
CHECKS = ("driver.loaded", "gpu.count", "gpu.xid", "ib.ports_active", "nccl.busbw", "nccl.errors")


def synthetic_fleet(hosts: int = HOSTS) -> dict[str, Any]:
    """A results document of ``hosts`` hosts: faults on a regular share of them, two reasons for being
    unreachable, one host named with markup and terminal escapes (failing every check that fails anywhere, so
    that it comes first)."""
    targets = []
    for i in range(hosts):
        name = HOSTILE if i == 7 else f"gpu{i:05d}"
        if i % 101 == 50:
            why = "unreachable: connection timed out" if i % 2 else "unreachable: connection refused"
            targets.append(TargetResults(f"ssh://{name}", name, [], error=why))
            continue
        results = []
        for check in CHECKS:
            fault = next((f for f in FAULTS if f[0] == check and (i % f[2] == 0 or i == 7)), None)
            if fault is None:
                results.append(Result(check, "pass", f"{check} as expected"))
            else:
                results.append(
                    Result(check, fault[1], f"{check} {fault[1]} on {name}", evidence=[f"line 1: {name}"], hint="fix")
                )
        targets.append(TargetResults(f"ssh://{name}", name, results, captured_at="2026-12-01T08:00:00+00:00"))
    return document(targets, "hgx-h100")


@pytest.fixture(scope="module")
def fleet_doc() -> dict[str, Any]:
    return fleet.build([documents.validate(synthetic_fleet(), "results")])


def expected_counts(doc: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {
        c["check"]: (c["fail"], c["error"], c["warn"]) for c in doc["per_check"] if c["fail"] + c["error"] + c["warn"]
    }


# ---- readable at 3,000 hosts --------------------------------------------------------------------------------


def test_the_html_of_3000_hosts_is_bounded_and_shows_every_failing_check_with_its_count(
    fleet_doc: dict[str, Any],
) -> None:
    html = render.render(fleet_doc, "html", validated=True)
    assert len(html.encode()) < 400_000  # every host in the matrix would be well over a megabyte
    groups = html.split('id="by-check"', 1)[1].split("</section>", 1)[0]
    shown = {
        m[0]: (int(m[1]), int(m[2]), int(m[3]))
        for m in re.findall(
            r'<tr><td><code>([a-z._]+)</code></td><td class="num">(\d+)</td><td class="num">(\d+)</td>'
            r'<td class="num">(\d+)</td>',
            groups,
        )
    }
    assert shown == expected_counts(fleet_doc)
    assert shown["gpu.xid"][0] == sum(1 for i in range(HOSTS) if i % 7 == 0 and i % 101 != 50)
    assert shown["ib.ports_active"][1] == sum(1 for i in range(HOSTS) if (i % 13 == 0 or i == 7) and i % 101 != 50)
    # most hosts failing first: xid (1 in 7) before the errors (1 in 13) before busbw (1 in 29), warnings last
    assert list(shown) == ["gpu.xid", "ib.ports_active", "nccl.busbw", "nccl.errors"]
    words = parse(html).words
    total = sum(shown["gpu.xid"])
    assert f"and {total - 8} more" in words  # the hosts of a group past the first, counted
    # the matrix: its bound of hosts, failing first; what is left out counted, the JSON and CSV named
    matrix = html.split('id="matrix"', 1)[1].split("</section>", 1)[0]
    assert matrix.count('<tr><td class="host-') == fleet.MATRIX_ROWS
    assert matrix.count('class="host-failing"') == fleet.MATRIX_ROWS  # more failing hosts than rows
    summary = fleet_doc["summary"]
    left = summary["hosts"] - summary["unreachable"] - fleet.MATRIX_ROWS
    note = re.search(r"(\d+) more not shown \((\d+) failing or with warnings, (\d+) passing\)", words)
    assert note is not None and int(note[1]) == left and int(note[2]) + int(note[3]) == left
    assert int(note[3]) == summary["passing"]
    assert "-f csv, -f json" in words
    # unreachable hosts by reason, each counted
    assert re.search(r"unreachable: connection timed out (\d+)", words) is not None
    reasons = dict(re.findall(r"unreachable: connection (timed out|refused) (\d+)", words))
    assert sum(int(v) for v in reasons.values()) == summary["unreachable"]


def test_a_host_named_with_markup_and_escapes_is_shown_as_text_in_the_groups(fleet_doc: dict[str, Any]) -> None:
    html = render.render(fleet_doc, "html", validated=True)
    groups = html.split('id="by-check"', 1)[1].split("</section>", 1)[0]
    assert "<img" not in html and "\u202e" not in html and "\x1b" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;\\u202egpu\\e]0;t\\x07" in groups
    md = render.render(fleet_doc, "md", validated=True)
    assert re.search(r"(?<!\\)<img", md) is None and "\u202e" not in md and "\x1b" not in md
    assert "\\<img src=x onerror=alert(1)\\>\\\\u202egpu" in md.split("### Failing checks", 1)[1]


def test_the_markdown_of_3000_hosts_fits_a_job_summary_and_counts_every_failing_check(
    fleet_doc: dict[str, Any],
) -> None:
    md = render.render(fleet_doc, "md", validated=True)
    assert len(md.encode()) < 256_000  # a GitHub job summary takes at most 1 MiB
    section = md.split("### Failing checks", 1)[1].split("###", 1)[0]
    rows = dict(
        (m[0].replace("\\_", "_"), (int(m[1]), int(m[2]), int(m[3])))
        for m in re.findall(r"^\| ([a-z._\\]+) \| (\d+) \| (\d+) \| (\d+) \| \S", section, re.M)
    )
    assert rows == expected_counts(fleet_doc)
    assert f"the first {fleet.MATRIX_ROWS} of {len(fleet_doc['hosts'])} hosts" in md


def test_a_small_fleet_is_shown_whole(fleet_doc: dict[str, Any]) -> None:
    small = fleet.build([synthetic_fleet(40)])
    view = fleet.overview(small)
    assert [row["host"] for row in view["matrix"]] == small["hosts"] and view["matrix_more"]["hosts"] == 0
    assert view["evidence"] == [h for h in small["hosts"] if h["failures"]] and view["evidence_more"] == 0
    html = render.render(small, "html", validated=True)
    assert all(f">{h['host']}<" in html for h in small["hosts"] if "<" not in h["host"])
    assert "more not shown" not in parse(html).words


def test_the_overview_counts_what_it_leaves_out() -> None:
    doc = fleet.build([synthetic_fleet(300)])
    limits = fleet.Limits(matrix_rows=10, evidence_hosts=3, group_hosts=2, unreachable_rows=1)
    view = fleet.overview(doc, limits)
    flagged = [h for h in doc["hosts"] if h["failures"]]
    assert view["evidence"] == flagged[:3] and view["evidence_more"] == len(flagged) - 3
    for group in view["groups"]:
        assert len(group["hosts"]) == 2 and group["more"] == group["fail"] + group["error"] + group["warn"] - 2
        # a host whose evidence is shown is linked to it, by its place among the hosts with failures
        for x in group["hosts"]:
            place = next(n for n, h in enumerate(flagged, start=1) if h["host"] == x["host"])
            assert x["anchor"] == (place if place <= 3 else None)
    assert len(view["unreachable"]) == 1
    assert view["unreachable"][0]["count"] + view["unreachable_more"] == doc["summary"]["unreachable"]
    assert view["matrix_more"]["hosts"] == len(doc["hosts"]) - 10
    assert [row["anchor"] for row in view["matrix"]] == [1, 2, 3, *([None] * 7)]


# ---- every host in the JSON, CSV and JUnit ------------------------------------------------------------------


def test_the_json_csv_and_junit_of_3000_hosts_hold_every_host(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    outputs.write_all(synthetic_fleet(), json_file=str(results))
    made = build.make("fleet", [str(results)])
    hosts = made.document["summary"]["hosts"]
    assert hosts == HOSTS
    doc = json.loads(build.write(made, "json", None))
    assert doc == made.document and len(doc["hosts"]) + len(doc["unreachable"]) == HOSTS
    rows = list(csv.DictReader(io.StringIO(build.write(made, "csv", None))))
    assert len(rows) == HOSTS and sum(r["state"] == "unreachable" for r in rows) == doc["summary"]["unreachable"]
    xml = ET.fromstring(build.write(made, "junit", None))
    assert len(xml.findall("testsuite")) == HOSTS


def test_json_rows_are_one_a_line_and_load_back_to_the_document(fleet_doc: dict[str, Any]) -> None:
    text = render.render(fleet_doc, "json", validated=True)
    assert json.loads(text) == fleet_doc
    lines = text.splitlines()
    # a passing host is one line; a failing one spans its failures, one a line
    assert sum(1 for line in lines if line.startswith('    {"host": ') and '"cells": ' in line) == sum(
        1 for h in fleet_doc["hosts"] if not h["failures"]
    )
    assert sum(1 for line in lines if line.startswith('        {"check": ')) == sum(
        len(h["failures"]) for h in fleet_doc["hosts"]
    )
    # nothing invisible: the bidi override and ESC of the hostile host name are JSON escapes
    assert "\u202e" not in text and "\x1b" not in text and "\\u202e" in text and "\\u001b" in text
    assert render.rows_json({}) == "{}" and render.rows_json({"a": []}) == '{\n  "a": []\n}'


def test_junit_is_written_exactly_as_elementtree_writes_it() -> None:
    from tests.reports.test_hostile import hostile_results

    for doc in (synthetic_fleet(60), hostile_results()):
        text = junit.render(doc)
        tree = ET.fromstring(text.encode())
        ET.indent(tree)
        assert text == '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(tree, encoding="unicode") + "\n"


# ---- each document validated once --------------------------------------------------------------------------


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, int]]:
    """Every validation of a document: (schema, id of the document) -> how many times."""
    seen: Counter[tuple[str, int]] = Counter()
    passes = documents._passes

    def counted(name: str, doc: Any) -> bool:
        seen[(name, id(doc))] += 1
        return passes(name, doc)

    monkeypatch.setattr(documents, "_passes", counted)
    return seen


@pytest.mark.parametrize("fmt", ["html", "md", "csv", "junit", "json"])
def test_report_fleet_validates_its_input_and_its_document_once_each(
    fmt: str, tmp_path: Path, validations: Counter[tuple[str, int]]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(synthetic_fleet(50)), encoding="utf-8")
    made = build.make("fleet", [str(results)])
    build.write(made, fmt, str(tmp_path / f"fleet.{fmt}"))
    assert sorted(name for name, _ in validations) == ["fleet", "results"]
    assert set(validations.values()) == {1}


def test_two_inputs_and_their_merged_junit_are_each_validated_once(
    tmp_path: Path, validations: Counter[tuple[str, int]]
) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(synthetic_fleet(20)), encoding="utf-8")
    made = build.make("fleet", [str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    xml = build.write(made, "junit", None)
    assert xml.count("<testsuite ") == 40
    # two inputs, the fleet document, the merged results: four documents, four validations
    assert sorted(name for name, _ in validations) == ["fleet", "results", "results", "results"]
    assert set(validations.values()) == {1}


def test_assess_outputs_validate_the_results_once_and_the_summary_once(
    tmp_path: Path, validations: Counter[tuple[str, int]]
) -> None:
    doc = synthetic_fleet(30)
    written = outputs.write_all(
        doc,
        json_file=str(tmp_path / "r.json"),
        junit_file=str(tmp_path / "r.xml"),
        markdown_file=str(tmp_path / "r.md"),
    )
    assert len(written) == 3
    assert validations[("results", id(doc))] == 1
    assert sorted(name for name, _ in validations) == ["fleet", "results"]


def test_a_document_not_built_here_is_still_validated_when_rendered(fleet_doc: dict[str, Any]) -> None:
    broken = {**fleet_doc, "hosts": [{**fleet_doc["hosts"][0], "state": "on fire"}]}
    with pytest.raises(InputError, match=r"not a valid gpulab.fleet/1 document at hosts/0/state"):
        render.render(broken, "html")


# ---- the compiled check says what the reference validator says ----------------------------------------------


def mutations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Documents that are each wrong in one way, and a few that are right in an odd way."""
    target = doc["targets"][0]
    result = target["results"][0]

    def with_result(**change: Any) -> dict[str, Any]:
        fixed = {k: v for k, v in {**result, **change}.items() if v is not None}
        return {**doc, "targets": [{**target, "results": [fixed]}]}

    return [
        {k: v for k, v in doc.items() if k != "summary"},
        {**doc, "schema": "gpulab.results/2"},
        {**doc, "extra": 1},
        {**doc, "targets": "none"},
        {**doc, "targets": [{**target, "host": 7}]},
        {**doc, "targets": [{k: v for k, v in target.items() if k != "results"}]},
        with_result(status="broken"),
        with_result(status=None),
        with_result(check="GPU.XID"),
        with_result(check="gpu.xid\n"),  # the reference's pattern ($ before a final line feed) lets it pass
        with_result(message=["not", "text"]),
        with_result(duration_s=-1),
        with_result(duration_s=True),
        with_result(evidence=[1, 2]),
        with_result(observed={"deep": [[[{"x": None}]]]}),
        with_result(expected=float("nan")),
        with_result(hint=10**30),
    ]


def test_the_compiled_check_never_passes_what_the_reference_refuses() -> None:
    doc = synthetic_fleet(3)
    reference = documents._validator("results")
    for wrong in mutations(doc):
        if documents._passes("results", wrong):
            assert reference.is_valid(wrong), wrong
        # and validate() answers as the reference does, with its message
        if reference.is_valid(wrong):
            assert documents.validate(wrong, "results") is wrong
        else:
            with pytest.raises(InputError, match=r"not a valid gpulab\.results/1 document at "):
                documents.validate(wrong, "results")


def test_without_the_compiled_checker_the_reference_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_rs(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "jsonschema_rs":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    documents._checker.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_rs)
    try:
        assert documents._checker("results") is documents._validator("results")
        doc = synthetic_fleet(3)
        assert documents.validate(doc, "results") is doc
        with pytest.raises(InputError, match="at targets/0/results/0/status"):
            documents.validate(mutations(doc)[6], "results")
    finally:
        documents._checker.cache_clear()


# ---- the fast paths of the neutralisers and the JUnit writer ------------------------------------------------


def test_the_ascii_fast_paths_of_the_neutralisers_escape_exactly_what_the_rule_escapes() -> None:
    from assessor import neutralise as safe

    def by_the_rule(text: str) -> str:
        return safe._CONTROL.sub(safe._escape_control, text)

    for code in range(128):  # every C0 control and DEL among plain ASCII, and each plain character
        text = f"gpu{chr(code)}07"
        assert safe.visible(text) == by_the_rule(text), repr(text)
        assert safe.xml_text(text) == safe._NOT_XML.sub("\ufffd", by_the_rule(text)), repr(text)
        kept = "\n".join(by_the_rule(line) for line in f"{text}\n{text}".split("\n"))
        assert safe.xml_text(f"{text}\n{text}", lines=True) == kept, repr(text)
    assert safe.visible("a\x1b[31mb\x7f") == "a\\e[31mb\\x7f" and safe.xml_text("x\x0by") == "x\\x0by"


def test_an_unreachable_host_with_a_warning_keeps_its_own_name_in_the_connect_case() -> None:
    warned = Result("gpu.temperature", "warn", "hot")
    doc = document([TargetResults("ssh://n1", "n1", [warned], error="unreachable: lost")], "hgx-h100")
    suite = ET.fromstring(junit.render(doc)).find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("n1.connect", "connect"),
        ("n1.gpu", "gpu.temperature"),
    ]
    assert suite.get("tests") == "2" and suite.get("errors") == "1"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["warning.gpu.temperature"] == "hot"


# ---- a fleet larger than 64 MiB of results, and the cycle collector -----------------------------------------


def test_a_results_file_over_64_mib_is_read(tmp_path: Path) -> None:
    from assessor.content import MAX_DOCUMENT_BYTES

    results = tmp_path / "results.json"
    text = json.dumps(synthetic_fleet(20))
    with results.open("w", encoding="utf-8") as f:  # 10,500 HGX hosts write about 65 MiB
        f.write(text[:-1] + " " * ((65 << 20) - len(text)) + "}")
    assert (64 << 20) < results.stat().st_size <= MAX_DOCUMENT_BYTES
    made = build.make("fleet", [str(results)])
    assert made.document["summary"]["hosts"] == 20


def test_report_runs_with_the_cycle_collector_paused_and_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from click.testing import CliRunner

    from assessor.cli import main

    results = tmp_path / "results.json"
    results.write_text(json.dumps(synthetic_fleet(10)), encoding="utf-8")
    seen: list[bool] = []
    write = build.write

    def watched(*args: Any, **kwargs: Any) -> str:
        seen.append(gc.isenabled())
        return write(*args, **kwargs)

    monkeypatch.setattr(build, "write", watched)
    assert gc.isenabled()
    done = CliRunner().invoke(main, ["report", "fleet", str(results), "-f", "csv", "-o", str(tmp_path / "f.csv")])
    assert done.exit_code == 0, done.output
    assert seen == [False] and gc.isenabled()
    bad = CliRunner().invoke(main, ["report", "fleet", str(tmp_path / "missing.json")])
    assert bad.exit_code == 2 and gc.isenabled()  # an error on the way out leaves it running too


def test_the_fleet_statuses_are_the_checks_statuses_and_the_schemas() -> None:
    from assessor.checks.result import STATUSES

    def status_enums(node: Any) -> list[list[str]]:
        if isinstance(node, dict):
            found = (
                [node["status"]["enum"]] if isinstance(node.get("status"), dict) and "enum" in node["status"] else []
            )
            return found + [e for v in node.values() for e in status_enums(v)]
        return [e for v in node for e in status_enums(v)] if isinstance(node, list) else []

    assert fleet.STATUSES == STATUSES
    enums = status_enums(documents.schema("results"))
    assert enums and all(tuple(e) == STATUSES for e in enums)


def test_report_fleet_starts_without_loading_the_checks(tmp_path: Path) -> None:
    import subprocess
    import sys

    results = tmp_path / "results.json"
    results.write_text(json.dumps(synthetic_fleet(5)), encoding="utf-8")
    argv = ["report", "fleet", str(results), "-f", "csv", "-o", str(tmp_path / "fleet.csv")]
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "assessor.cli", *argv], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "assessor.reports.fleet" in imported
    assert not [m for m in imported if m.startswith("assessor.checks")]
