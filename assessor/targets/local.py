"""This host (``local``) and snapshot directories (``snapshot:DIR``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assessor.capture.snapshot import Snapshot


@dataclass
class SnapshotTarget:
    spec: str
    path: Path
    name: str | None = None
    max_bytes: int | None = None  # the largest file read (None: assessor.capture.snapshot.MAX_FILE_BYTES)
    cpu_bound = True  # reading and parsing files: a fleet of these runs in processes

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot:
        from assessor.capture import snapshot
        from assessor.parsers.detect import snapshot_file

        return snapshot.read(self.path, max_bytes=self.max_bytes, recognise=snapshot_file)


@dataclass
class LocalTarget:
    spec: str = "local"
    name: str | None = None

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot:
        import socket

        from assessor.capture.run import capture, run_local

        return capture(run_local, host=socket.gethostname(), timeout=timeout, active=active, nvml_json=_local_nvml)


def _local_nvml() -> str:
    import json

    import pynvml

    from assessor.capture.nvml import collect_json

    return json.dumps(collect_json(pynvml), indent=2)
