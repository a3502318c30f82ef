"""Prometheus metrics from a results document (``gpulab.results/1``), made with the official client.

The families (every one a gauge; ``profile`` is the profile the run used, "" for none):

``gpulab_check_status{host, check, status, profile}``
    one sample per check and host: the status as a number (:data:`STATUS_VALUES`: pass 0, warn 1, fail 2,
    error 3, skip -1) and as the ``status`` label, so ``gpulab_check_status >= 2`` finds what failed and
    ``gpulab_check_status{status="fail"}`` reads the same.
``gpulab_check_observed{host, check, profile}``
    what the check saw, where that is one number (a GPU count, a bandwidth, a temperature).
``gpulab_capture_timestamp_seconds{host, profile}``
    when the host's tool outputs were captured, in Unix seconds.
``gpulab_host_assessed{host, profile}``
    1 when the host was assessed, 0 when it could not be (unreachable, no NVIDIA tools).
``gpulab_host_checks{host, status, profile}``
    how many of the host's checks have each status.

Every label value that came from a node or a file (host names, check ids, the profile) is shown through
:func:`assessor.neutralise.visible` and cut to :data:`MAX_LABEL_CHARS`; quoting and escaping for the text
format is the client's job. No message, hint or evidence becomes a label: the label sets stay bounded by
hosts x checks x the five statuses. Two targets that report the same host name get ``#2``, ``#3``... so no
two samples share a label set.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from assessor.checks.result import STATUSES
from assessor.errors import InputError
from assessor.neutralise import visible

# The status as a number: higher is worse; a skip (a fact gpulab could not see) is below a pass.
STATUS_VALUES: dict[str, int] = {"pass": 0, "warn": 1, "fail": 2, "error": 3, "skip": -1}
MAX_LABEL_CHARS = 200  # a host name from a node is at most 253 characters in DNS; nothing here needs more

PREFIX = "gpulab_"


def label(value: Any) -> str:
    """A label value from outside: every character that is not plainly visible escaped, bounded in length."""
    text = visible("" if value is None else value)
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 3] + "..."


def capture_time(text: Any) -> float | None:
    """Unix seconds of an ISO 8601 time (``captured_at``); None when absent or not a time."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)  # gpulab writes UTC
    return when.timestamp()


def number(value: Any) -> float | None:
    """The observed value as a sample, where it is one finite number (not a flag, not a list)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def host_labels(targets: list[dict[str, Any]]) -> list[str]:
    """Each target's host label, in order: its host (else its target spec), made unique."""
    seen: dict[str, int] = {}
    out = []
    for target in targets:
        base = label(target.get("host") or target.get("target") or "unknown")
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return out


def families(doc: dict[str, Any]) -> list[Metric]:
    """The metric families of one results document (see the module docstring)."""
    profile = label(doc.get("profile") or "")
    status = GaugeMetricFamily(
        PREFIX + "check_status",
        "Check status by host: pass=0, warn=1, fail=2, error=3, skip=-1 (also the status label).",
        labels=["host", "check", "status", "profile"],
    )
    observed = GaugeMetricFamily(
        PREFIX + "check_observed",
        "What the check observed, where that is a single number.",
        labels=["host", "check", "profile"],
    )
    captured = GaugeMetricFamily(
        PREFIX + "capture_timestamp_seconds",
        "When the host's tool outputs were captured (Unix time).",
        labels=["host", "profile"],
    )
    assessed = GaugeMetricFamily(
        PREFIX + "host_assessed",
        "1 when the host was assessed, 0 when it could not be (unreachable, no NVIDIA tools).",
        labels=["host", "profile"],
    )
    counts = GaugeMetricFamily(
        PREFIX + "host_checks",
        "Checks of the host with each status.",
        labels=["host", "status", "profile"],
    )
    targets = list(doc.get("targets") or [])
    for host, target in zip(host_labels(targets), targets, strict=True):
        assessed.add_metric([host, profile], 0.0 if target.get("error") else 1.0)
        when = capture_time(target.get("captured_at"))
        if when is not None:
            captured.add_metric([host, profile], when)
        tally = dict.fromkeys(STATUSES, 0)
        checks_seen: set[str] = set()
        for result in target.get("results") or []:
            verdict = result.get("status")
            if verdict not in STATUS_VALUES:
                verdict = "error"  # never an unbounded label value, whatever a file holds
            check = label(result.get("check") or "unknown")
            if check in checks_seen:
                continue  # one sample per check and host: the first result of a check stands
            checks_seen.add(check)
            tally[verdict] += 1
            status.add_metric([host, check, verdict, profile], float(STATUS_VALUES[verdict]))
            value = number(result.get("observed"))
            if value is not None:
                observed.add_metric([host, check, profile], value)
        for name, count in tally.items():
            counts.add_metric([host, name, profile], float(count))
    return [status, observed, captured, assessed, counts]


class ResultsCollector(Collector):
    """A collector that yields the families of whatever document ``latest()`` holds at scrape time, plus
    ``extra()``'s own families (the endpoint's state)."""

    def __init__(self, latest: Any, extra: Any = None) -> None:
        self._latest = latest
        self._extra = extra

    def collect(self) -> Iterator[Metric]:
        doc = self._latest()
        if doc is not None:
            yield from families(doc)
        if self._extra is not None:
            yield from self._extra()

    def describe(self) -> Iterable[Metric]:
        return []  # the families depend on the document: nothing to describe at registration


def registry(doc: dict[str, Any]) -> CollectorRegistry:
    """A registry holding exactly the metrics of ``doc`` (no process or platform metrics)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ResultsCollector(lambda: doc))
    return reg


def text(doc: dict[str, Any]) -> str:
    """The Prometheus text exposition of ``doc`` (what node_exporter's textfile collector reads)."""
    from prometheus_client import generate_latest

    return generate_latest(registry(doc)).decode("utf-8")


def write_textfile(doc: dict[str, Any], path: str) -> str:
    """Write ``doc``'s metrics for node_exporter's textfile collector: to a temporary file in the same
    directory, then renamed over ``path``, so the collector never reads half a file."""
    from prometheus_client import write_to_textfile

    target = Path(path)
    if target.name == "" or target.is_dir():
        raise InputError(f"{path}: --prometheus needs a file name (node_exporter reads DIR/NAME.prom)")
    if not target.name.endswith(".prom"):
        # node_exporter reads only *.prom files from its --collector.textfile.directory
        raise InputError(f"{path}: node_exporter's textfile collector reads only files named *.prom")
    try:
        if target.parent != Path(""):
            target.parent.mkdir(parents=True, exist_ok=True)
        write_to_textfile(os.fspath(target), registry(doc))
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return str(target)
