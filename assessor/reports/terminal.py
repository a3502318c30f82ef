"""Terminal output of assessment results (rich). Other formats derive from the results JSON.

Everything that came from a node (host, message, hint) is put on screen as a rich ``Text`` with control
characters shown as escapes: never read as markup (``[bold]``), never as an emoji code (a bus id such as
``00000000:AB:00.0`` holds ``:AB:``), never as a terminal escape sequence.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assessor.assess.profiles import Profile
from assessor.checks.result import STATUSES, TargetResults
from assessor.neutralise import visible

NOTES_SHOWN = 20  # notes printed per host; the rest are counted (every one is in the JSON results)

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim", "error": "bold magenta"}


def console(file: Any = None) -> Any:
    """A console that applies no emoji codes and no highlighting (the file defaults to stdout as it is now)."""
    import sys

    from rich.console import Console

    return Console(file=file or sys.stdout, highlight=False, emoji=False)


def data(value: Any, style: str = "") -> Any:
    """Node or candidate data as a rich Text: shown as is, control characters as escapes."""
    from rich.text import Text

    return Text(visible("" if value is None else value), style=style)


def summarised(notes: list[str], limit: int = NOTES_SHOWN) -> list[str]:
    """The first ``limit`` notes, then ``… and N more`` for the rest: a snapshot of 100,000 pasted files
    prints a dozen lines, not 100,000."""
    if len(notes) <= limit:
        return list(notes)
    return [*notes[:limit], f"… and {len(notes) - limit:,} more (all of them in the JSON results)"]


def table(targets: list[TargetResults], profile: Profile) -> None:
    from rich.table import Table
    from rich.text import Text

    out = console()
    for target in targets:
        title = Text.assemble(
            data(target.target), data(f" ({target.host})" if target.host else ""), f" — profile {visible(profile.name)}"
        )
        if target.error is not None:
            out.print(Text.assemble(("ERROR ", "bold magenta"), title, ": ", data(target.error)))
        for note in summarised(target.notes):
            out.print(Text.assemble(("NOTE ", "bold yellow"), title, ": ", data(note)))
        grid = Table(title=title, title_justify="left", expand=False, show_lines=False)
        grid.add_column("status", no_wrap=True)
        grid.add_column("check", no_wrap=True)
        grid.add_column("message")
        for r in target.results:
            grid.add_row(Text(r.status.upper(), style=STYLE[r.status]), data(r.check), data(r.message))
        out.print(grid)
        for r in target.results:
            if r.status in ("fail", "error", "warn") and r.hint:
                out.print(Text.assemble("  ", data(r.check, STYLE[r.status]), ": ", data(r.hint)))
        counts = Counter(r.status for r in target.results)
        out.print("  " + ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES) + "\n", markup=False)
