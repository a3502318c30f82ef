"""A simulated node entered as a candidate enters it: ``gpulab sim shell STATE -- bash -c LINE``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

GPULAB = [sys.executable, "-m", "assessor.cli"]


@dataclass
class NodeShell:
    state: Path

    def run(
        self, line: str, *, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """One command line typed at the node's shell (a login shell of the node runs it)."""
        return subprocess.run(
            [*GPULAB, "sim", "shell", str(self.state), "--", "bash", "-c", line],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
        )

    def out(self, line: str) -> str:
        done = self.run(line)
        assert done.returncode == 0, f"`{line}` exited {done.returncode}: {done.stderr}"
        return done.stdout

    def stop(self) -> None:
        from assessor.sim.machine.enter import stop

        stop(self.state)


@contextmanager
def node_shell(directory: Path, fixture: str = "hgx-h100", host: str = "gpu-node-07") -> Iterator[NodeShell]:
    """A fresh node (``gpulab sim init``) whose running copy is shut down when the block ends."""
    from assessor.sim.node_init import init_node

    state = directory / "node.json"
    init_node(fixture, state, host=host)
    shell = NodeShell(state)
    try:
        yield shell
    finally:
        shell.stop()
