"""The ``mock:`` target: a simulated node captured exactly like a real one.

``mock:NAME`` is a fresh node from a shipped fixture, held in memory for the life of the
target; ``mock:PATH.json`` is the node whose state lives in that file (what ``gpulab sim init``
writes and the simulated tools change). :meth:`MockTarget.snapshot` runs the capture's command
list through the simulated tools and the NVML collector against the mock NVML, so everything
downstream (parsers, checks, reports) cannot tell it from a real node.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assessor.capture.run import Outcome, capture
from assessor.capture.snapshot import Snapshot
from assessor.errors import InputError
from assessor.sim.slurm_node import CLIENTS as SLURM_CLIENTS
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool


@dataclass
class MockTarget:
    spec: str
    state: NodeState | None = None  # mock:NAME: the node in memory
    path: Path | None = None  # mock:FILE.json: the state file
    # The environment the captured commands run with (e.g. NCCL_DEBUG=INFO), as a shell on the node would.
    env: Mapping[str, str] = field(default_factory=dict)
    euid: int = 0
    name: str | None = None  # the inventory host name, when an inventory names the target
    fixture: str | None = None  # mock:NAME: built on first use, so a fleet of them is cheap to open
    cpu_bound = True  # nothing to wait for: a fleet of these runs in processes, not threads

    @classmethod
    def open(cls, spec: str) -> MockTarget:
        """``mock:NAME`` or ``mock:PATH.json``; InputError for an unknown fixture or a missing state file."""
        from assessor.sim.fixtures import fixture_names, load_fixture

        rest = spec.removeprefix("mock:")
        if not rest:
            raise InputError(
                f"mock: target needs a fixture or a state file, e.g. mock:hgx-h100 or mock:./node.json "
                f"(fixtures: {', '.join(fixture_names())})"
            )
        if rest.endswith(".json") or "/" in rest:
            path = Path(rest)
            if not path.exists():
                raise InputError(
                    f"{path}: no such simulated node state; create it with "
                    f"`gpulab sim init --fixture hgx-h100 --state {path}`"
                )
            if path.is_dir():
                raise InputError(
                    f"{path}: is a directory, not a simulated node state (use snapshot:{path} for a snapshot directory)"
                )
            return cls(spec, path=path)
        if rest not in fixture_names():
            load_fixture(rest)  # raises the InputError naming the fixtures
        return cls(spec, fixture=rest)

    def session(self) -> Session:
        """A session on this node for the simulated tools: a state file is read once for all the tools a
        capture runs, and again only when one of them (or anything else) changed it."""
        if self.state is None and self.path is None and self.fixture is not None:
            from assessor.sim.fixtures import load_fixture

            self.state = load_fixture(self.fixture)
        if self.path is None:
            return Session(state=self.state, env=dict(self.env), euid=self.euid)
        return _FileSession(path=self.path, env=dict(self.env), euid=self.euid)

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot:
        """Capture every snapshot source from the simulated node."""
        session = self.session()
        host = session.read().host  # InputError here for a state file that is not one

        def runner(argv: Sequence[str], timeout: float) -> Outcome:
            start = time.monotonic()
            if argv and argv[0] in SLURM_CLIENTS:
                return self._inside(list(argv), session, timeout, start)
            result = run_tool(list(argv), session)
            elapsed = time.monotonic() - start
            if result.exit_code == 127:
                return Outcome(None, "", result.stderr, elapsed, missing=True)
            return Outcome(result.exit_code, result.stdout, result.stderr, elapsed)

        return capture(runner, host=host, timeout=timeout, active=tuple(active), nvml_json=self._nvml_json)

    def _inside(self, argv: list[str], session: Session, timeout: float, start: float) -> Outcome:
        """A Slurm client runs inside the node, where its slurmctld answers: missing on a node without Slurm
        (or one held in memory), an error on a node that is not running."""
        from assessor.sim.machine.inside import run_inside
        from assessor.sim.slurm_node import runs_slurm

        if self.path is None or not runs_slurm(session.read()):
            return Outcome(None, "", f"bash: {argv[0]}: command not found\n", 0.0, missing=True)
        done = run_inside(self.path, argv, timeout=timeout)
        if done is None:
            why = f"{argv[0]}: the simulated node is not running, nor is its slurmctld (gpulab sim shell boots it)\n"
            return Outcome(1, "", why, time.monotonic() - start)
        return Outcome(done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def _nvml_json(self) -> str:
        from assessor.capture.nvml import collect_json
        from assessor.sim.mock_nvml import MockNvml

        # the state the capture's tools read (a state file is read once for them all, again only if it changed)
        mock = MockNvml(self.session().read())
        return json.dumps(collect_json(mock))


@dataclass
class _FileSession(Session):
    """A session on a state file that reads it again only when the file changed since the last read
    (:func:`~assessor.sim.state.look_at_state`, the one look a grade's identity and tamper flags share too)."""

    def read(self) -> NodeState:
        from assessor.sim.slurm_node.jobs import job_view
        from assessor.sim.state import look_at_state

        assert self.path is not None
        state, _ = look_at_state(self.path)
        if state is None:
            return super().read()  # the error a plain session gives
        return job_view(state, self.env)
