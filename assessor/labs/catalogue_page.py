"""The lab catalogue as a Markdown page: ``labs/README.md`` is this page, generated from every lab's lab.yaml.

``scripts/gen_labs_readme.py`` writes it; ``tests/labs/test_labs_readme.py`` fails when the file in the repository
is not what the live catalogue gives (a lab added, retitled, re-levelled, its checks or exam domains changed).
A pure function of the loaded labs and the labs folder they are in.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assessor.labs.model import Lab

GENERATOR = "scripts/gen_labs_readme.py"


def _cell(text: str) -> str:
    """A table cell: one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def markdown(labs: Sequence[Lab], root: Path) -> str:
    """The catalogue page for ``labs`` (under the labs folder ``root``), by domain and level."""
    from assessor.labs.model import DOMAINS, LEVEL_NAMES
    from assessor.labs.wording import labels

    ordered = sorted(labs, key=lambda x: (DOMAINS.index(x.domain) if x.domain in DOMAINS else 99, x.level, x.id))
    present = [d for d in DOMAINS if any(x.domain == d for x in ordered)]
    top = max((x.level for x in ordered), default=0)
    low = min((x.level for x in ordered), default=0)
    out = [
        "# The lab catalogue",
        "",
        f"<!-- Generated from each lab's lab.yaml by {GENERATOR}: do not edit by hand (a test fails when this",
        "     page and the labs disagree). -->",
        "",
        f"{len(ordered)} hands-on labs in {len(present)} domains ({', '.join(present)}), at levels {low}"
        f" ({LEVEL_NAMES.get(low, low)}) to {top} ({LEVEL_NAMES.get(top, top)}). Each lab is a folder"
        " `labs/<domain>/<id>/`: `lab.yaml` (the scenario, the checks that grade it, the exam domains it trains)"
        " and `README.md` (the instructions); a design lab or a lab whose remedy is physical also holds an example"
        " answer file. `gpulab lab list` shows the labs with your state in each, `gpulab lab show ID` one lab,"
        " `gpulab progress` your levels and study plan. How levels are given and the exam blueprints behind them:"
        " [docs/LEVELS.md](../docs/LEVELS.md).",
        "",
        "Columns: the lab (its instructions linked), its level, its title, its time limit, where it runs (the"
        " simulator, a real node), the exam domains it trains (lab.yaml `exam_domains`) and the checks that grade"
        " it (a check used twice is labelled by what tells its uses apart).",
    ]
    for domain in present:
        mine = [x for x in ordered if x.domain == domain]
        out += [
            "",
            f"## {domain}",
            "",
            "| lab | level | title | time limit | runs on | trains | graded by |",
            "|---|---|---|---:|---|---|---|",
        ]
        for x in mine:
            try:
                where = x.path.relative_to(root).as_posix()
            except ValueError:
                where = f"{x.domain}/{x.id}"
            link = f"[{_cell(x.id)}]({where}/README.md)"
            out.append(
                "| "
                + " | ".join(
                    [
                        link,
                        _cell(f"{x.level} {x.level_name}"),
                        _cell(x.title),
                        _cell(f"{x.time_limit_min} min"),
                        _cell(", ".join(x.runs_on)),
                        _cell("; ".join(x.exam_domains)),
                        ", ".join(_code(label) for label in labels(x.checks)),
                    ]
                )
                + " |"
            )
    return "\n".join(out) + "\n"
