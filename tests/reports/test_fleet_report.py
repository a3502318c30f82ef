"""The fleet readiness report: matrix, failing hosts first, evidence, counts, unreachable hosts."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main
from tests.support.snapshots import BROKEN_H100, HEALTHY_A100, corpus_snapshot


def gpulab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout


def assessed(tmp_path: Path) -> Path:
    """Results of a healthy A100, the broken H100 and a host that refused the connection."""
    healthy = corpus_snapshot(tmp_path / "healthy", HEALTHY_A100)
    broken = corpus_snapshot(tmp_path / "broken", BROKEN_H100)
    out = tmp_path / "results.json"
    checks = ["-c", "nccl.busbw:min_gbps=200", "-c", "ib.ports_active", "-c", "gpu.xid", "-c", "nccl.transport"]
    code, _ = gpulab(
        "assess",
        "-t",
        f"snapshot:{healthy}",
        "-t",
        f"snapshot:{broken}",
        "-t",
        "ssh://nobody@127.0.0.1:1",
        *checks,
        "--json",
        str(out),
        "-f",
        "json",
    )
    assert code == 3
    return out


def test_fleet_document_puts_failing_hosts_first_with_evidence(tmp_path: Path) -> None:
    results = assessed(tmp_path)
    code, out = gpulab("report", "fleet", str(results), "-f", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["checks"] == ["nccl.busbw", "ib.ports_active", "gpu.xid", "nccl.transport"]
    first, second = doc["hosts"]
    assert first["target"].endswith("broken") and first["state"] == "failing"
    assert second["state"] == "passing" or second["state"] == "warning"
    failures = {f["check"]: f for f in first["failures"]}
    assert failures["ib.ports_active"]["evidence"] == [
        "ibstat: CA 'mlx5_11' Port 1: State: Down; Physical state: Polling"
    ]
    assert "Polling" in failures["ib.ports_active"]["hint"]
    xid = failures["gpu.xid"]["evidence"]
    assert xid[0].startswith("dmesg line 1: XID 79 (PCI:0000:b3:00.0)") and len(xid) == 4
    assert failures["nccl.busbw"]["evidence"][0].startswith("nccl-tests: size 2147483648 bytes: busbw 164.97")
    per = {c["check"]: c for c in doc["per_check"]}
    assert per["ib.ports_active"]["fail"] == 1 and per["ib.ports_active"]["pass"] == 1
    assert doc["unreachable"] == [
        {
            "host": "ssh://nobody@127.0.0.1:1",
            "target": "ssh://nobody@127.0.0.1:1",
            "error": doc["unreachable"][0]["error"],
        }
    ]
    assert "refused" in doc["unreachable"][0]["error"]
    assert doc["summary"]["unreachable"] == 1 and doc["summary"]["failing"] == 1


def test_fleet_html_and_markdown_show_the_evidence_and_the_unreachable_host(tmp_path: Path) -> None:
    from tests.reports.test_candidate_report import parse

    results = assessed(tmp_path)
    html = tmp_path / "fleet.html"
    assert gpulab("report", "fleet", str(results), "-o", str(html))[0] == 0
    words = parse(html.read_text(encoding="utf-8")).words
    assert "ibstat: CA 'mlx5_11' Port 1: State: Down; Physical state: Polling" in words
    assert "Unreachable hosts" in words and "refused" in words
    code, md = gpulab("report", "fleet", str(tmp_path), "-f", "md")  # a directory of results
    assert code == 0
    assert "State: Down; Physical state: Polling" in md and "<details>" in md


def test_fleet_csv_has_a_row_per_host_unreachable_last(tmp_path: Path) -> None:
    import csv
    import io

    results = assessed(tmp_path)
    code, out = gpulab("report", "fleet", str(results), "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows[0]["state"] == "failing" and rows[-1]["state"] == "unreachable"
    assert rows[0]["ib.ports_active"] == "fail" and rows[-1]["error"].startswith("unreachable")


def test_the_output_suffix_picks_the_format(tmp_path: Path) -> None:
    results = assessed(tmp_path)
    for name, start in (
        ("f.md", "## gpulab fleet"),
        ("f.csv", "host,target"),
        ("f.xml", "<?xml"),
        ("f.html", "<!DOCTYPE"),
    ):
        assert gpulab("report", "fleet", str(results), "-o", str(tmp_path / name))[0] == 0
        assert (tmp_path / name).read_text(encoding="utf-8").startswith(start), name
