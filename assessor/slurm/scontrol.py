"""A node's state in Slurm, read and changed through ``scontrol``: behind :class:`Scontrol`, faked in tests.

:class:`ScontrolCli` runs the real command with a time limit: ``scontrol show node NAME`` (its ``State=`` and
its ``Reason=`` line, where Slurm appends ``[user@time]``), ``scontrol update NodeName=NAME State=DRAIN
Reason=...`` and ``... State=RESUME``. Each argument is passed as one word, no shell in between.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from assessor.errors import GpulabError, InputError

DEFAULT_TIMEOUT_S = 5.0
MAX_OUTPUT_BYTES = 1 << 20

# A Slurm node name: a host name (slurm.conf's NodeName), never a range or a list, never a word with a space or '='.
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_REASON = re.compile(r"^\s*Reason=(.*)$", re.M)
_STAMP = re.compile(r"\s*\[[^\[\]\s]*@[^\[\]\s]*\]\s*$")  # " [root@2026-12-02T03:32:55]"


class ScontrolError(GpulabError):
    """scontrol could not be run, timed out, or refused."""


@dataclass(frozen=True)
class NodeInfo:
    """A node as Slurm sees it: ``state`` as scontrol prints it (``IDLE+DRAIN``), its reason (None when it has
    none), without the ``[user@time]`` Slurm adds."""

    name: str
    state: str
    reason: str | None = None

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(self.state.upper().rstrip("*~#!%$@^-").split("+"))

    @property
    def drained(self) -> bool:
        """DRAIN set: draining (jobs still running) or drained."""
        return "DRAIN" in self.flags

    @property
    def out_of_service(self) -> bool:
        """Drained, down or failed: no new job lands on it."""
        return bool({"DRAIN", "DOWN", "FAIL", "FAILING"} & set(self.flags))


class Scontrol(Protocol):
    def show(self, node: str) -> NodeInfo: ...

    def drain(self, node: str, reason: str) -> None: ...

    def resume(self, node: str) -> None: ...


def check_node_name(name: str) -> str:
    if not _NODE_NAME.fullmatch(name):
        raise InputError(f"node name {name!r}: not a Slurm node name (letters, digits, '.', '_', '-')")
    return name


def parse_show_node(name: str, text: str) -> NodeInfo:
    """``scontrol show node NAME`` (one line per group of fields, or ``-o``'s one line) as a :class:`NodeInfo`."""
    state = _STATE.search(text)
    if state is None:
        raise ScontrolError(f"scontrol show node {name}: no State= in its output")
    reason = _REASON.search(text)
    said = _STAMP.sub("", reason.group(1)).strip() if reason else ""
    return NodeInfo(name, state.group(1), said or None)


@dataclass
class ScontrolCli:
    """The real ``scontrol``; ``env`` is the environment it runs with (None: gpulab's own, with SLURM_CONF)."""

    program: str = "scontrol"
    timeout: float = DEFAULT_TIMEOUT_S
    env: Mapping[str, str] | None = None

    def show(self, node: str) -> NodeInfo:
        return parse_show_node(node, self._run(["show", "node", check_node_name(node)]))

    def drain(self, node: str, reason: str) -> None:
        self._run(["update", f"NodeName={check_node_name(node)}", "State=DRAIN", f"Reason={reason}"])

    def resume(self, node: str) -> None:
        self._run(["update", f"NodeName={check_node_name(node)}", "State=RESUME"])

    def _run(self, args: Sequence[str]) -> str:
        argv = [self.program, *args]
        what = " ".join(argv[:3])
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                timeout=self.timeout,
                check=False,
                stdin=subprocess.DEVNULL,
                env=dict(self.env) if self.env is not None else None,
            )
        except FileNotFoundError:
            raise ScontrolError(f"{self.program}: not found (install slurm-client, or give --scontrol PATH)") from None
        except PermissionError as exc:
            raise ScontrolError(f"{self.program}: {exc.strerror}") from None
        except subprocess.TimeoutExpired:
            raise ScontrolError(f"{what}: no answer within {self.timeout:g}s (is slurmctld up?)") from None
        out = proc.stdout[:MAX_OUTPUT_BYTES].decode("utf-8", "replace")
        if proc.returncode != 0:
            err = proc.stderr[:2000].decode("utf-8", "replace").strip() or out.strip()
            raise ScontrolError(f"{what}: exited {proc.returncode}: {err or 'no message'}")
        return out
