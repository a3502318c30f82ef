"""Terminal output of assessment results (rich). Other formats derive from the results JSON."""

from __future__ import annotations

from collections import Counter

from assessor.assess.profiles import Profile
from assessor.checks.result import STATUSES, TargetResults

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim", "error": "bold magenta"}


def table(targets: list[TargetResults], profile: Profile) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    for target in targets:
        title = f"{target.target}" + (f" ({target.host})" if target.host else "") + f" — profile {profile.name}"
        if target.error is not None:
            console.print(f"[bold magenta]ERROR[/] {escape(title)}: {escape(target.error)}")
            continue
        grid = Table(title=escape(title), title_justify="left", expand=False, show_lines=False)
        grid.add_column("status", no_wrap=True)
        grid.add_column("check", no_wrap=True)
        grid.add_column("message")
        for r in target.results:
            grid.add_row(f"[{STYLE[r.status]}]{r.status.upper()}[/]", r.check, escape(r.message))
        console.print(grid)
        hints = [r for r in target.results if r.status in ("fail", "error", "warn") and r.hint]
        for r in hints:
            console.print(f"  [{STYLE[r.status]}]{r.check}[/]: {escape(r.hint or '')}")
        counts = Counter(r.status for r in target.results)
        console.print("  " + ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES) + "\n")
