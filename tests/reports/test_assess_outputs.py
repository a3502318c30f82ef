"""`gpulab assess` writes JSON, JUnit and Markdown beside the table; exit codes 0, 1, 2, 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from tests.support.snapshots import BROKEN_H100, corpus_snapshot

DEAD = "ssh://nobody@127.0.0.1:1"  # nothing listens on port 1: connection refused at once


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_one_run_writes_json_junit_and_markdown_beside_the_table(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    files = {k: tmp_path / f"out.{k}" for k in ("json", "xml", "md")}
    code, out, err = gpulab(
        "assess",
        "-t",
        f"snapshot:{snap}",
        "-t",
        "mock:hgx-h100",
        "-p",
        "hgx-h100",
        "--json",
        str(files["json"]),
        "--junit",
        str(files["xml"]),
        "--markdown",
        str(files["md"]),
    )
    assert code == 1, out + err
    assert "FAIL" in out and "mlx5_11" in out  # the terminal table is still there
    doc = json.loads(files["json"].read_text())
    assert doc["summary"]["hosts"] == 2 and doc["summary"]["failing_hosts"] == 1
    per_host = [t["summary"] for t in doc["targets"]]
    assert sum(s["fail"] for s in per_host) == doc["summary"]["fail"] > 0
    assert all(s["total"] == 26 for s in per_host)
    assert doc["targets"][1]["duration_s"] > 0 and doc["targets"][1]["captured_at"]
    md = files["md"].read_text()
    assert "2 hosts" in md and "**1 failing**" in md
    assert "ib.ports\\_active fail" in md and "Hint: " in md
    assert "<details><summary>All results (2 hosts × 26 checks)</summary>" in md
    assert files["xml"].read_text().startswith("<?xml")
    assert all(str(p) in err for p in files.values())


def test_exit_0_when_every_check_passes() -> None:
    code, _, _ = gpulab("assess", "-t", "mock:hgx-h100", "-c", "gpu.count:expected=8", "-f", "json")
    assert code == 0


def test_exit_3_when_a_host_is_unreachable_even_with_failures(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    code, out, _ = gpulab("assess", "-t", f"snapshot:{snap}", "-t", DEAD, "-c", "ib.ports_active", "-f", "json")
    assert code == 3
    doc = json.loads(out)
    assert doc["summary"]["unreachable"] == 1 and doc["summary"]["fail"] == 1


def test_exit_codes_are_documented_in_help() -> None:
    code, out, _ = gpulab("assess", "--help")
    assert code == 0
    for line in ("0    every check passed", "1    a check failed", "2    bad input", "3    one or more hosts"):
        assert line in out


def test_unwritable_output_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = gpulab(
        "assess", "-t", "mock:hgx-h100", "-c", "gpu.count", "--json", str(tmp_path / "file" / "r.json")
    )
    assert code == 2 and "cannot write" in err


def test_out_keeps_an_error_record_so_offline_grading_counts_the_same(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    first = tmp_path / "first.json"
    code, _, _ = gpulab(
        "assess", "-t", "mock:hgx-h100", "-t", DEAD, "-p", "hgx-h100", "--out", str(keep), "--json", str(first)
    )
    assert code == 3
    record = json.loads((keep / "ssh___nobody_127.0.0.1_1" / "meta.json").read_text())
    assert "refused" in record["error"]
    again = tmp_path / "again.json"
    targets = [f"snapshot:{d}" for d in sorted(keep.iterdir())]
    args = [x for t in targets for x in ("-t", t)]
    code2, _, _ = gpulab("assess", *args, "-p", "hgx-h100", "--json", str(again))
    assert code2 == 3
    a, b = json.loads(first.read_text()), json.loads(again.read_text())
    assert a["summary"] == b["summary"]
    assert sorted(t.get("error", "") for t in a["targets"]) == sorted(t.get("error", "") for t in b["targets"])


@pytest.mark.parametrize("fmt", ["json", "junit"])
def test_stdout_formats_still_work(fmt: str) -> None:
    code, out, _ = gpulab("assess", "-t", "mock:hgx-h100", "-c", "gpu.count", "-f", fmt)
    assert code == 0 and ("gpulab.results/1" in out if fmt == "json" else "<testsuite " in out)
