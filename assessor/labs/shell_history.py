"""The commands a candidate typed on a node, for the debrief: read from the node, never guessed.

A simulated node in a state file keeps its own ``/root`` in its files folder (``STATE.d``,
:mod:`assessor.sim.config_root`): a login shell inside it (``gpulab sim shell``) writes bash's history to
``/root/.bash_history`` when it ends. A state that records the commands itself (a ``history`` field, should
the simulator keep one) is read first. Any other node (a real one over SSH, ``mock:NAME`` held in memory) has
no history gpulab reads: the debrief says so instead of showing nothing.

Reading never fails a grade or a debrief: whatever goes wrong is the reason there is no history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

MAX_COMMANDS = 500  # the last this many lines are kept: a debrief compares, it does not archive
HISTORY_FILES = ("/root/.bash_history",)
_TIMESTAMP = re.compile(r"#\d{9,}")  # bash's HISTTIMEFORMAT lines


@dataclass(frozen=True)
class History:
    """The candidate's commands on a node, oldest first, and where they came from; ``commands`` None with
    ``why_none`` when there is none to read."""

    commands: tuple[str, ...] | None
    source: str = ""
    why_none: str | None = None

    def to_json(self) -> dict[str, Any]:
        commands = None if self.commands is None else list(self.commands)
        return {"commands": commands, "source": self.source, "why_none": self.why_none}


class HistorySource(Protocol):
    """Where a debrief gets a node's history (a fake in tests)."""

    def __call__(self, target: str | None) -> History: ...


def parse(text: str) -> tuple[str, ...]:
    """bash history text as commands: blank and timestamp lines left out, the last :data:`MAX_COMMANDS` kept."""
    lines = [line.rstrip() for line in text.splitlines()]
    kept = [line for line in lines if line.strip() and not _TIMESTAMP.fullmatch(line.strip())]
    return tuple(kept[-MAX_COMMANDS:])


def node_history(target: str | None) -> History:
    """The history of the node ``target`` (a target as written or as a start keys it: ``mock:/abs/node.json``)."""
    if not target:
        return History(None, why_none="no node: the task was graded from an answer file")
    path = _state_path(target)
    if path is None:
        return History(
            None,
            why_none=f"{target} is not a simulated node in a state file: gpulab reads no shell history from it",
        )
    try:
        from assessor.sim.state import load_state

        recorded = getattr(load_state(path), "history", None)
    except Exception as exc:  # the node is gone or unreadable: no history, never a failed grade
        return History(None, why_none=f"{path}: the node cannot be read ({type(exc).__name__}: {exc})")
    commands = _from_state(recorded)
    if commands is not None:
        return History(commands, source=f"{path.name}: the commands the simulated node recorded")
    from assessor.sim.config_root import read_config, root_for_state

    root = root_for_state(path)
    for name in HISTORY_FILES:
        try:
            text = read_config(root, name)
        except Exception:  # an unreadable file is no history
            text = None
        if text is not None:
            return History(parse(text), source=f"{name} on the node (written when a `gpulab sim shell` session ends)")
    return History(
        None,
        why_none=(
            f"the node keeps no shell history yet ({HISTORY_FILES[0]} is written when a `gpulab sim shell` "
            "login ends; commands run one at a time with `gpulab sim shell STATE -- COMMAND` are not kept)"
        ),
    )


def _state_path(target: str) -> Path | None:
    if not target.startswith("mock:"):
        return None
    rest = target.removeprefix("mock:")
    if not rest.endswith(".json"):
        return None
    path = Path(rest)
    return path if path.is_file() else None


def _from_state(recorded: Any) -> tuple[str, ...] | None:
    """A state's own record of commands: a list of lines, or of ``{"command": line, ...}``; None otherwise."""
    if not isinstance(recorded, (list, tuple)) or not recorded:
        return None
    out = []
    for item in recorded:
        line = item.get("command") if isinstance(item, dict) else item
        if isinstance(line, str) and line.strip():
            out.append(line.rstrip())
    return tuple(out[-MAX_COMMANDS:]) if out else None
