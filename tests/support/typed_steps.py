"""A walk's steps typed in one login, as a candidate types them at a prompt, with each step's exit status.

Each step runs as its own command line in a subshell (a failed step does not end the login, as the candidate
goes on); a marker line before and after it carries its exit status back through the session's output.
Files a walk writes are typed as heredocs.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

HEREDOC_END = "GPULAB_WALK_EOF"
STEP_MARK = "@@gpulab-walk-step"


def typed(step: str | dict[str, str]) -> str:
    """The command line a candidate types for a step: a command as it is; a dict of node files as heredocs."""
    if isinstance(step, str):
        return step
    lines = []
    for node_path, text in step.items():
        assert HEREDOC_END not in text.splitlines(), f"{node_path}: its text holds the heredoc's end line"
        quoted = shlex.quote(node_path)
        lines.append(f"mkdir -p {shlex.quote(posixpath.dirname(node_path) or '/')}")
        lines.append(f"cat > {quoted} <<'{HEREDOC_END}'\n{text.removesuffix(chr(10))}\n{HEREDOC_END}")
        if not text.endswith("\n"):  # a heredoc always ends in a newline: take it off again
            lines.append(f"truncate -s -1 {quoted}")
    return " &&\n".join(lines)


def script(lines: list[str]) -> str:
    """The session's input: every line in turn, each framed by markers that carry its exit status."""
    return "".join(f"echo {STEP_MARK}; ( {line}\n); echo {STEP_MARK} $?\n" for line in lines)


@dataclass(frozen=True)
class Step:
    line: str
    code: int  # -1: the session ended before the step reported
    output: str


def steps_of(lines: list[str], stdout: str) -> list[Step]:
    """Each typed line with its exit status and output, read back from the session's output."""
    parts = stdout.split(f"{STEP_MARK}\n")[1:]
    found = []
    for line, part in zip(lines, parts, strict=False):
        out, _, tail = part.rpartition(f"{STEP_MARK} ")
        words = tail.split()
        found.append(Step(line, int(words[0]) if words and words[0].isdigit() else -1, out))
    return found + [Step(line, -1, "") for line in lines[len(found) :]]
