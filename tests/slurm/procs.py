"""Whether a process still runs, for the tests that check nothing outlives its deadline."""

from __future__ import annotations

import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent to reap it counts as ended)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    """Whether ``pid`` ends within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False
