"""Prometheus metrics of a results document, read back by the official client's parser."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from assessor.cli import main
from assessor.export import prometheus
from tests.support.snapshots import BROKEN_H100, corpus_snapshot


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample of a text exposition by family name, parsed by prometheus_client's own parser."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        out.setdefault(family.name, []).extend((dict(s.labels), s.value) for s in family.samples)
    return out


def doc(targets: list[dict[str, Any]], profile: str | None = "hgx-h100") -> dict[str, Any]:
    out: dict[str, Any] = {"schema": "gpulab.results/1", "targets": targets}
    if profile is not None:
        out["profile"] = profile
    return out


def result(check: str, status: str, observed: Any = None) -> dict[str, Any]:
    out = {"check": check, "status": status, "message": f"{check} says {status}"}
    if observed is not None:
        out["observed"] = observed
    return out


NODE = {
    "target": "ssh://gpu-01",
    "host": "gpu-01",
    "captured_at": "2025-03-04T05:06:07+00:00",
    "results": [
        result("gpu.count", "fail", 7),
        result("gpu.temperature", "warn", 83.5),
        result("driver.loaded", "pass", True),  # a flag, not a number
        result("gpu.xid", "error", [79, 48]),  # a list, not one number
        result("dcgm.diag", "skip"),
        result("nccl.busbw", "pass", float("nan")),  # not a finite number
        result("ib.rate", "pass", 400),
    ],
}


def test_each_check_is_one_gauge_with_its_status_as_a_number_and_as_a_label() -> None:
    got = samples(prometheus.text(doc([NODE])))
    status = {s[0]["check"]: s for s in got["gpulab_check_status"]}
    assert {c: (labels["status"], value) for c, (labels, value) in status.items()} == {
        "gpu.count": ("fail", 2.0),
        "gpu.temperature": ("warn", 1.0),
        "driver.loaded": ("pass", 0.0),
        "gpu.xid": ("error", 3.0),
        "dcgm.diag": ("skip", -1.0),
        "nccl.busbw": ("pass", 0.0),
        "ib.rate": ("pass", 0.0),
    }
    labels = status["gpu.count"][0]
    assert labels == {"host": "gpu-01", "check": "gpu.count", "status": "fail", "profile": "hgx-h100"}
    assert prometheus.STATUS_VALUES == {"pass": 0, "warn": 1, "fail": 2, "error": 3, "skip": -1}


def test_observed_values_are_kept_only_where_they_are_one_finite_number() -> None:
    got = samples(prometheus.text(doc([NODE])))
    observed = {labels["check"]: value for labels, value in got["gpulab_check_observed"]}
    assert observed == {"gpu.count": 7.0, "gpu.temperature": 83.5, "ib.rate": 400.0}
    assert all(set(labels) == {"host", "check", "profile"} for labels, _ in got["gpulab_check_observed"])


def test_the_capture_time_is_one_gauge_per_host_in_unix_seconds() -> None:
    later = {**NODE, "host": "gpu-02", "captured_at": "2025-03-04T06:06:07Z"}
    got = samples(prometheus.text(doc([NODE, later])))
    times = {labels["host"]: value for labels, value in got["gpulab_capture_timestamp_seconds"]}
    expected = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.UTC).timestamp()
    assert times == {"gpu-01": expected, "gpu-02": expected + 3600}


def test_a_host_that_could_not_be_assessed_says_so_and_has_no_checks() -> None:
    gone = {"target": "ssh://gpu-09", "host": None, "results": [], "error": "connection refused"}
    got = samples(prometheus.text(doc([NODE, gone], profile=None)))
    assessed = {labels["host"]: value for labels, value in got["gpulab_host_assessed"]}
    assert assessed == {"gpu-01": 1.0, "ssh://gpu-09": 0.0}  # no host name: the target names it
    assert {labels["profile"] for labels, _ in got["gpulab_host_assessed"]} == {""}
    assert "ssh://gpu-09" not in {labels["host"] for labels, _ in got["gpulab_check_status"]}
    counts = {(labels["host"], labels["status"]): value for labels, value in got["gpulab_host_checks"]}
    assert counts[("gpu-01", "pass")] == 3.0 and counts[("gpu-01", "fail")] == 1.0
    assert counts[("ssh://gpu-09", "fail")] == 0.0


def test_labels_from_a_node_are_neutralised_bounded_and_unique() -> None:
    evil = "gpu-1\x1b]52;c;aGk=\x07\n\u202eevil"
    node = {**NODE, "host": evil, "results": [result("gpu.count\x1b[2J", "bogus-status", 1)]}
    twin = {**NODE, "host": evil}
    huge = {**NODE, "host": "h" * 5000}
    text = prometheus.text(doc([node, twin, huge]))
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    got = samples(text)
    hosts = [labels["host"] for labels, _ in got["gpulab_host_assessed"]]
    assert hosts[0] == "gpu-1\\e]52;c;aGk=\\x07\\n\\u202eevil"
    assert hosts[1] == hosts[0] + "#2"  # the same host twice: two series, never one label set twice
    assert len(hosts[2]) == prometheus.MAX_LABEL_CHARS and hosts[2].endswith("...")
    first = [labels for labels, _ in got["gpulab_check_status"] if labels["host"] == hosts[0]]
    # an unknown status from a file is not a new label value: it reads as an error
    assert first == [{"host": hosts[0], "check": "gpu.count\\e[2J", "status": "error", "profile": "hgx-h100"}]
    assert not any("message" in labels or "says" in str(labels) for labels, _ in got["gpulab_check_status"])


def test_the_textfile_is_written_beside_its_name_and_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renames: list[tuple[str, str]] = []
    rename = os.rename

    def spy(src: str, dst: str) -> None:
        renames.append((src, dst))
        assert not Path(dst).exists() or Path(dst).read_text() == "old\n"  # the old file stays whole until then
        rename(src, dst)

    monkeypatch.setattr(os, "rename", spy)
    path = tmp_path / "collector" / "gpulab.prom"
    path.parent.mkdir()
    path.write_text("old\n")
    prometheus.write_textfile(doc([NODE]), str(path))
    [(src, dst)] = renames
    assert dst == str(path) and Path(src).parent == path.parent and src != dst
    assert not src.endswith(".prom")  # node_exporter never reads the half-written file
    assert sorted(p.name for p in path.parent.iterdir()) == ["gpulab.prom"]
    assert samples(path.read_text())["gpulab_check_status"]


def test_the_textfile_must_be_a_prom_file(tmp_path: Path) -> None:
    from assessor.errors import InputError

    with pytest.raises(InputError, match=r"\*\.prom"):
        prometheus.write_textfile(doc([NODE]), str(tmp_path / "metrics.txt"))


def test_assess_writes_the_textfile_of_a_real_snapshot(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    out = tmp_path / "textfile" / "gpulab.prom"
    run = CliRunner().invoke(
        main, ["assess", "-t", f"snapshot:{snap}", "-p", "hgx-h100", "--prometheus", str(out)], catch_exceptions=False
    )
    assert run.exit_code == 1  # the node is broken
    assert f"written: {out}" in run.stderr
    got = samples(out.read_text())
    status = {labels["check"]: (labels["status"], value) for labels, value in got["gpulab_check_status"]}
    assert status["gpu.xid"] == ("fail", 2.0)
    assert status["ib.ports_active"] == ("fail", 2.0)
    assert status["dcgm.diag"] == ("skip", -1.0)
    assert {labels["profile"] for labels, _ in got["gpulab_check_status"]} == {"hgx-h100"}


def test_assess_refuses_a_textfile_node_exporter_would_not_read(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    run = CliRunner().invoke(main, ["assess", "-t", f"snapshot:{snap}", "--prometheus", str(tmp_path / "m.txt")])
    assert run.exit_code == 2 and "*.prom" in run.stderr
