"""Errors a user can act on. Each names the file, and the line and key where there is one."""

from __future__ import annotations


class GpulabError(Exception):
    """Bad input: exit code 2 with a one-line message."""


class ParseError(GpulabError):
    """A tool output that cannot be understood."""

    def __init__(self, message: str, *, line: int | None = None, source: str | None = None) -> None:
        self.reason = message
        self.line = line
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        return f"{where}: {self.reason}" if where else self.reason

    def with_source(self, source: str) -> ParseError:
        return ParseError(self.reason, line=self.line, source=source)


class InputError(GpulabError):
    """A malformed profile, lab, inventory, target or option."""
