"""``gpulab serve``: the endpoint on a free loopback port, scraped with urllib."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from assessor.cli import main
from assessor.errors import InputError
from assessor.export import serve

NODE = {
    "target": "mock:hgx-h100",
    "host": "gpu-01",
    "captured_at": "2025-03-04T05:06:07Z",
    "results": [{"check": "gpu.count", "status": "fail", "message": "7 of 8", "observed": 7}],
    "summary": {"pass": 0, "warn": 0, "fail": 1, "skip": 0, "error": 0, "total": 1},
}


def document(count: int = 7) -> dict[str, Any]:
    node = {**NODE, "results": [{**NODE["results"][0], "observed": count}]}  # type: ignore[dict-item]
    summary = {"hosts": 1, "unreachable": 0, "failing_hosts": 1, "pass": 0, "warn": 0, "fail": 1, "skip": 0}
    return {"schema": "gpulab.results/1", "summary": {**summary, "error": 0, "total": 1}, "targets": [node]}


def scrape(port: int, accept: str | None = None) -> tuple[str, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=5) as reply:
        return reply.headers["Content-Type"], reply.read().decode("utf-8")


def values(text: str, parse: Any = text_string_to_metric_families) -> dict[str, float]:
    """name{label=value,...} -> value for every sample (labels sorted), by the client's parser."""
    out = {}
    for family in parse(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


@pytest.fixture
def endpoint() -> Iterator[Any]:
    servers = []

    def start(source: Any) -> int:
        server = serve.start(source, port=0)  # a free port, on 127.0.0.1 by default
        servers.append(server)
        assert server.server_address[0] == "127.0.0.1"
        return int(server.server_port)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_endpoint_serves_the_assessment_in_both_formats(endpoint: Any) -> None:
    source = serve.Assessments(document, interval=3600)
    source.refresh()
    assert source.wait(5)
    port = endpoint(source)
    kind, text = scrape(port)
    assert kind.startswith("text/plain") and "version=0.0.4" in kind
    got = values(text)
    assert got["gpulab_check_status{check=gpu.count,host=gpu-01,profile=,status=fail}"] == 2.0
    assert got["gpulab_check_observed{check=gpu.count,host=gpu-01,profile=}"] == 7.0
    assert got["gpulab_assessment_running"] == 0.0 and got["gpulab_assessment_last_failed"] == 0.0
    # a scraper that asks for OpenMetrics gets it, with its terminating # EOF
    kind, text = scrape(port, "application/openmetrics-text; version=1.0.0")
    assert kind.startswith("application/openmetrics-text")
    assert text.endswith("# EOF\n")
    got = values(text, openmetrics_families)
    assert got["gpulab_check_status{check=gpu.count,host=gpu-01,profile=,status=fail}"] == 2.0


def test_a_stalled_assessment_never_holds_a_scrape(endpoint: Any) -> None:
    release = threading.Event()
    calls = []

    def stalled() -> dict[str, Any]:
        calls.append(1)
        release.wait(30)
        return document()

    source = serve.Assessments(stalled, interval=0)
    port = endpoint(source)
    try:
        began = time.monotonic()
        _, text = scrape(port)  # starts the assessment, does not wait for it
        _, text = scrape(port)
        assert time.monotonic() - began < 3
        got = values(text)
        assert got["gpulab_assessment_running"] == 1.0
        assert "gpulab_assessment_running_seconds" in got
        assert not any(k.startswith("gpulab_check_status") for k in got)
        assert len(calls) == 1  # one assessment at a time, however often the scrapes come
    finally:
        release.set()
    assert source.wait(5)
    got = values(scrape(port)[1])
    assert got["gpulab_check_status{check=gpu.count,host=gpu-01,profile=,status=fail}"] == 2.0


def test_a_new_assessment_starts_only_once_the_interval_has_passed() -> None:
    now = [100.0]
    counts = iter(range(1, 10))
    source = serve.Assessments(lambda: document(next(counts)), interval=60, clock=lambda: now[0])

    def observed() -> Any:
        doc = source.latest()  # within the interval: no new run
        return doc and doc["targets"][0]["results"][0]["observed"]

    assert observed() is None  # the first scrape starts the first run and does not wait for it
    assert source.wait(5) and observed() == 1
    now[0] += 59
    assert source.refresh() is False and observed() == 1
    now[0] += 2
    assert source.refresh() is True
    assert source.wait(5) and observed() == 2


def test_an_assessment_that_raises_keeps_the_last_results_and_says_so() -> None:
    told: list[str] = []
    runs = iter([document(), InputError("no such inventory")])

    def flaky() -> dict[str, Any]:
        item = next(runs)
        if isinstance(item, Exception):
            raise item
        return item

    now = [0.0]
    source = serve.Assessments(flaky, interval=10, report=told.append, clock=lambda: now[0])
    assert source.refresh() and source.wait(5)
    now[0] += 10
    assert source.refresh() and source.wait(5)
    assert source.latest() == document()  # the last good results are still served
    state = {f.name: f.samples[0].value for f in source.state()}
    assert state["gpulab_assessment_last_failed"] == 1.0
    assert told == ["assessment failed: no such inventory"]


def test_a_results_file_is_served_and_read_again_when_it_changes(tmp_path: Path, endpoint: Any) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document(7)))
    told: list[str] = []
    port = endpoint(serve.ResultsFile(path, told.append))
    got = values(scrape(port)[1])
    assert got["gpulab_check_observed{check=gpu.count,host=gpu-01,profile=}"] == 7.0
    assert got["gpulab_results_file_valid"] == 1.0
    path.write_text(json.dumps(document(6)) + " ")  # another size: read again
    assert values(scrape(port)[1])["gpulab_check_observed{check=gpu.count,host=gpu-01,profile=}"] == 6.0
    path.write_text('{"schema": "gpulab.results/1", "targets": "nope"}')
    got = values(scrape(port)[1])
    assert got["gpulab_results_file_valid"] == 0.0
    assert got["gpulab_check_observed{check=gpu.count,host=gpu-01,profile=}"] == 6.0  # the last good results
    assert len(told) == 1 and str(path) in told[0] and "not a valid gpulab.results/1" in told[0]
    values(scrape(port)[1])
    assert len(told) == 1  # told once per change, not once per scrape


def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(InputError, match=f"cannot listen on 127.0.0.1 port {port}"):
            serve.start(serve.ResultsFile(Path("none.json")), port=port)


def test_serve_listens_on_loopback_unless_told_otherwise() -> None:
    from assessor.cli.serve import serve as command

    bind = next(p for p in command.params if p.name == "bind")
    assert bind.default == "127.0.0.1"


def test_serve_refuses_results_and_targets_together(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document()))
    run = CliRunner().invoke(main, ["serve", "--results", str(path), "-t", "mock:hgx-h100", "--port", "0"])
    assert run.exit_code == 2 and "--results serves a results file" in run.stderr


def test_label_node_needs_the_node_name() -> None:
    run = CliRunner().invoke(main, ["serve", "-t", "mock:hgx-h100", "--label-node", "--port", "0"])
    assert run.exit_code == 2 and "--label-node needs --node-name" in run.stderr


def test_the_cli_starts_without_the_prometheus_client_or_the_export_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, assessor.cli; "
        "print([m for m in sys.modules if m.startswith(('prometheus_client', 'assessor.export', 'kubernetes'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
