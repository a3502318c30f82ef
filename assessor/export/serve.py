"""``gpulab serve``: the latest assessment as a Prometheus / OpenMetrics endpoint.

Two sources of results:

- :class:`Assessments` re-runs the assessment when a scrape finds the last one older than the interval,
  in a thread of its own: a scrape never waits for it, so a stalled tool never holds a scrape; it is
  answered at once with the last results and ``gpulab_assessment_running 1``. Only one assessment runs
  at a time, however often Prometheus scrapes.
- :class:`ResultsFile` serves a results document another run wrote (``gpulab assess --json FILE``),
  read again when the file changes; a file that stops being valid leaves the last good results served
  and ``gpulab_results_file_valid 0``.

The endpoint is prometheus_client's own server (:func:`prometheus_client.start_http_server`): it picks
the OpenMetrics format when the scraper's ``Accept`` asks for it, the Prometheus text format otherwise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from prometheus_client.core import GaugeMetricFamily, Metric

from assessor.errors import GpulabError, InputError
from assessor.export.prometheus import PREFIX, ResultsCollector


class Source(Protocol):
    def latest(self) -> dict[str, Any] | None:
        """The results document to serve now (None before there is one)."""
        ...

    def state(self) -> Iterator[Metric]:
        """The families that say how fresh the results are."""
        ...


class Assessments:
    """Results of ``assess()``, run again on a scrape once ``interval`` seconds have passed since the last
    run started; ``report`` hears of a run that raised (it never stops the endpoint)."""

    def __init__(
        self,
        assess: Callable[[], dict[str, Any]],
        *,
        interval: float,
        report: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._assess = assess
        self.interval = interval
        self._report = report
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._doc: dict[str, Any] | None = None
        self._running_since: float | None = None
        self._started: float | None = None  # clock() when the last run started
        self._last_success: float | None = None  # wall() when the last good run ended
        self._last_duration: float | None = None
        self._last_failed = False
        self._thread: threading.Thread | None = None

    def refresh(self) -> bool:
        """Start a run in the background unless one is running or the last started under ``interval`` ago."""
        with self._lock:
            now = self._clock()
            if self._running_since is not None:
                return False
            if self._started is not None and now - self._started < self.interval:
                return False
            self._started = self._running_since = now
            self._thread = threading.Thread(target=self._run, name="gpulab-assess", daemon=True)
            self._thread.start()
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run in progress (tests, a first run before serving); True when none is left."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _run(self) -> None:
        began = self._clock()
        doc: dict[str, Any] | None = None
        failure = None
        try:
            doc = self._assess()
        except GpulabError as exc:
            failure = str(exc)
        except Exception as exc:  # a bug in one run must not take the endpoint down
            failure = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._running_since = None
            self._last_duration = self._clock() - began
            self._last_failed = doc is None
            if doc is not None:
                self._doc = doc
                self._last_success = self._wall()
        if failure is not None and self._report is not None:
            self._report(f"assessment failed: {failure}")

    def latest(self) -> dict[str, Any] | None:
        self.refresh()
        with self._lock:
            return self._doc

    def state(self) -> Iterator[Metric]:
        with self._lock:
            running, success = self._running_since, self._last_success
            duration, failed = self._last_duration, self._last_failed
            now = self._clock()
        yield _gauge("assessment_running", "1 while an assessment runs.", 0.0 if running is None else 1.0)
        if running is not None:
            yield _gauge("assessment_running_seconds", "How long the running assessment has taken.", now - running)
        if success is not None:
            yield _gauge("assessment_last_success_timestamp_seconds", "When the last good assessment ended.", success)
        if duration is not None:
            yield _gauge("assessment_duration_seconds", "How long the last assessment took.", duration)
            yield _gauge("assessment_last_failed", "1 when the last assessment raised.", 1.0 if failed else 0.0)


class ResultsFile:
    """A results document on disk, read again when its size or time changes."""

    def __init__(self, path: Path, report: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._report = report
        self._lock = threading.Lock()
        self._doc: dict[str, Any] | None = None
        self._stamp: tuple[int, int] | str | None = "not read yet"
        self._valid = False

    def latest(self) -> dict[str, Any] | None:
        with self._lock:
            try:
                info = self.path.stat()
                stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
            except OSError as exc:
                stamp, why = None, f"{self.path}: cannot read: {exc.strerror or exc}"
            if stamp == self._stamp:
                return self._doc
            self._stamp = stamp  # a change is read (and told) once, not on every scrape
            if stamp is None:
                self._valid = False
                self._tell(why)
                return self._doc
            try:
                self._doc, self._valid = read_results(self.path), True
            except GpulabError as exc:
                self._valid = False
                self._tell(str(exc))
            return self._doc

    def _tell(self, text: str) -> None:
        if self._report is not None:
            self._report(text)

    def state(self) -> Iterator[Metric]:
        with self._lock:
            valid = self._valid
        yield _gauge("results_file_valid", "1 when the results file was read and is a valid document.", float(valid))


def read_results(path: Path) -> dict[str, Any]:
    """A results document (``gpulab.results/1``) from a file, validated (InputError naming the file)."""
    import json

    from assessor.content import MAX_DOCUMENT_BYTES, read_text
    from assessor.reports.documents import no_cycle_collection, validate

    try:
        text = read_text(path, limit=MAX_DOCUMENT_BYTES, what="a results file")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        with no_cycle_collection():  # a fleet's results: millions of objects and no cycle
            doc = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{path}:{getattr(exc, 'lineno', '?')}: not JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a results document (gpulab.results/1)")
    try:
        return validate(doc, "results")
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)


def start(source: Source, *, port: int, bind: str = "127.0.0.1") -> Any:
    """Serve ``source`` on ``bind``:``port`` (0: a free port) in a daemon thread; the server (``server_port``,
    ``shutdown()``). InputError when the address cannot be had."""
    from prometheus_client import start_http_server
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ResultsCollector(source.latest, source.state))
    try:
        server, _thread = start_http_server(port, addr=bind, registry=registry)
    except OSError as exc:
        raise InputError(f"cannot listen on {bind} port {port}: {exc.strerror or exc}") from None
    return server
