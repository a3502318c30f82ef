"""What a practice exam is: ``labs/exams.yaml`` (duration, format, tasks, pass mark, sources) joined with the
exam's domains and weights from ``labs/blueprints.yaml``.

The weights live in blueprints.yaml only; exams.yaml names no domain. A malformed file is one InputError
naming the file, the line and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.yamlio import Located

EXAMS = "exams.yaml"


@dataclass(frozen=True)
class ExamSpec:
    """One exam as a practice sitting takes it."""

    name: str  # NCP-AII
    title: str  # from blueprints.yaml
    minutes: int  # the real exam's duration
    format: str  # the real exam's format, in words
    tasks: int  # hands-on tasks a sitting draws
    pass_percent: float
    pass_note: str
    sources: tuple[str, ...]
    weights: dict[str, Fraction]  # exam domain -> blueprint weight (percent)
    as_of: str  # when exams.yaml was read from the exam pages
    blueprint_as_of: str

    def domain_key(self, domain: str) -> str:
        """``NCP-AII: Cluster Test and Verification``: how a lab's ``exam_domains`` names the domain."""
        return f"{self.name}: {domain}"


@dataclass(frozen=True)
class Exams:
    version: int
    as_of: str
    exams: dict[str, ExamSpec]

    def get(self, name: str) -> ExamSpec:
        """The exam ``name`` (matched without regard to case); InputError naming the known ones."""
        for known, spec in self.exams.items():
            if known.casefold() == name.strip().casefold():
                return spec
        import difflib

        close = difflib.get_close_matches(name.upper(), list(self.exams), n=2, cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise InputError(f"unknown exam {name!r}: the exams are {', '.join(self.exams)}{hint}")


def _need(located: Located, path: tuple[str, ...], kind: type | tuple[type, ...], what: str) -> Any:
    node: Any = located.data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            raise located.error(path[:-1], f"missing key {part!r}")
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, kind):
        raise located.error(path, f"{what}, got {node!r}")
    return node


def load_exams(root: Path | None = None) -> Exams:
    """exams.yaml (and blueprints.yaml beside it) from ``root`` (default: $GPULAB_LABS, else the shipped
    ones): every exam of exams.yaml must be one of the blueprints."""
    from assessor import yamlio
    from assessor.labs.levels import BLUEPRINTS, data_file, load_blueprints

    blueprints_path = data_file(BLUEPRINTS, root)
    blueprints = load_blueprints(blueprints_path)
    titles = _titles(blueprints_path)
    located = yamlio.load(data_file(EXAMS, root))
    version = _need(located, ("version",), int, "expected a whole number")
    as_of = str(_need(located, ("as_of",), (str, int), "expected a date such as 2026-12-01"))
    out: dict[str, ExamSpec] = {}
    for name in _need(located, ("exams",), dict, "expected a mapping of exam -> settings"):
        where = ("exams", name)
        if name not in blueprints.exams:
            raise located.error(where, f"unknown exam {name!r} (blueprints.yaml has {', '.join(blueprints.exams)})")
        minutes = _need(located, (*where, "minutes"), int, "expected whole minutes")
        tasks = _need(located, (*where, "tasks"), int, "expected a whole number of tasks")
        mark = _need(located, (*where, "pass_percent"), (int, float), "expected a percentage")
        if minutes < 1:
            raise located.error((*where, "minutes"), f"an exam lasts at least 1 minute, not {minutes}")
        if tasks < 1:
            raise located.error((*where, "tasks"), f"an exam has at least 1 task, not {tasks}")
        if not 0 < mark <= 100:
            raise located.error((*where, "pass_percent"), f"a pass mark is above 0 and at most 100, not {mark}")
        sources = _need(located, (*where, "sources"), list, "expected a list of sources")
        if not sources or not all(isinstance(s, str) and s.strip() for s in sources):
            raise located.error((*where, "sources"), "each exam names at least one source, as text")
        out[name] = ExamSpec(
            name=name,
            title=titles.get(name, name),
            minutes=minutes,
            format=str(_need(located, (*where, "format"), str, "expected the format in words")),
            tasks=tasks,
            pass_percent=float(mark),
            pass_note=str(_need(located, (*where, "pass_note"), str, "expected where the pass mark comes from")),
            sources=tuple(sources),
            weights=dict(blueprints.exams[name]),
            as_of=as_of,
            blueprint_as_of=blueprints.as_of,
        )
    if not out:
        raise located.error(("exams",), "no exam defined")
    return Exams(version, as_of, out)


def _titles(path: Path) -> dict[str, str]:
    """Each exam's title in blueprints.yaml (already validated by :func:`load_blueprints`)."""
    from assessor import yamlio

    exams = yamlio.load(path).data.get("exams") or {}
    return {str(k): str(v.get("title") or k) for k, v in exams.items() if isinstance(v, dict)}
