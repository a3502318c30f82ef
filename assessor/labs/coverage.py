"""How much of an exam's official objectives the labs train (``gpulab lab coverage EXAM``).

The rule (docs/COVERAGE.md): an objective is *touched* when at least one lab names it in its lab.yaml
``objectives``, and *fully covered* when at least one lab names it whole (without ``(part)``): that lab
trains the task as the exam describes it. Each objective weighs its blueprint domain's weight split equally
between the domain's objectives (labs/objectives.yaml may give per-objective weights instead); the shares
are of the exam's whole weight, 100 %.

Everything here but :func:`gather` is a pure function of the objectives, the blueprints and the labs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from assessor.labs.model import LabObjective
from assessor.labs.objectives import ExamObjectives, Objective

RULE = (
    "an objective is touched when at least one lab names it in lab.yaml `objectives`, and fully covered when at "
    "least one lab names it whole (without `(part)`); each objective weighs its blueprint domain's weight split "
    "equally between the domain's objectives"
)
FULL, PART, NONE = "full", "part", "none"


class LabLike(Protocol):
    """What coverage needs of a lab."""

    @property
    def id(self) -> str: ...
    @property
    def objectives(self) -> tuple[LabObjective, ...]: ...


@dataclass(frozen=True)
class ObjectiveCoverage:
    """One objective and the labs that name it."""

    objective: Objective
    labs: tuple[str, ...]  # every lab naming it, sorted
    full_by: tuple[str, ...]  # the labs naming it whole

    @property
    def status(self) -> str:
        return FULL if self.full_by else PART if self.labs else NONE

    @property
    def problem(self) -> str | None:
        """An objective with neither a lab nor a written reason is a gap nobody has explained."""
        if self.labs or self.objective.reason:
            return None
        o = self.objective
        return f"{o.id} ({o.title}) has no lab and no reason: name it in a lab or give it a reason in objectives.yaml"

    @property
    def stale_reason(self) -> bool:
        """A reason for having no lab, although a lab names it now."""
        return bool(self.labs and self.objective.reason)


@dataclass(frozen=True)
class DomainCoverage:
    domain: str
    weight: Fraction  # percent of the exam
    objectives: int
    touched: Fraction  # percent of the exam
    full: Fraction


@dataclass(frozen=True)
class ExamCoverage:
    """An exam's objectives with their labs, and the shares of the exam's weight they reach."""

    exam: ExamObjectives
    title: str
    blueprint_version: int
    blueprint_as_of: str
    rows: tuple[ObjectiveCoverage, ...]
    unmarked_labs: tuple[str, ...] = ()  # labs with no `objectives` key at all
    errors: tuple[str, ...] = field(default=())  # labs that could not be loaded (not counted)

    @property
    def touched(self) -> Fraction:
        """Percent of the exam's weight whose objectives some lab names."""
        return sum((r.objective.weight for r in self.rows if r.labs), Fraction(0))

    @property
    def full(self) -> Fraction:
        """Percent of the exam's weight whose objectives some lab names whole."""
        return sum((r.objective.weight for r in self.rows if r.full_by), Fraction(0))

    @property
    def problems(self) -> list[str]:
        return [p for p in (r.problem for r in self.rows) if p]

    def domains(self) -> list[DomainCoverage]:
        out = []
        for domain in self.exam.domains():
            mine = [r for r in self.rows if r.objective.domain == domain]
            out.append(
                DomainCoverage(
                    domain,
                    sum((r.objective.weight for r in mine), Fraction(0)),
                    len(mine),
                    sum((r.objective.weight for r in mine if r.labs), Fraction(0)),
                    sum((r.objective.weight for r in mine if r.full_by), Fraction(0)),
                )
            )
        return out


def measure(
    exam: ExamObjectives,
    labs: Iterable[LabLike],
    *,
    title: str = "",
    blueprint_version: int = 0,
    blueprint_as_of: str = "",
    unmarked: Iterable[str] = (),
    errors: Iterable[str] = (),
) -> ExamCoverage:
    """Each of ``exam``'s objectives with the labs that name it (a pure function of its inputs)."""
    named: dict[str, list[tuple[str, bool]]] = {}
    for lab in labs:
        for ref in lab.objectives:
            named.setdefault(ref.id, []).append((lab.id, ref.whole))
    rows = tuple(
        ObjectiveCoverage(
            o,
            tuple(sorted({lab for lab, _ in named.get(o.id, [])})),
            tuple(sorted({lab for lab, whole in named.get(o.id, []) if whole})),
        )
        for o in exam.objectives
    )
    return ExamCoverage(
        exam, title or exam.exam, blueprint_version, blueprint_as_of, rows, tuple(sorted(unmarked)), tuple(errors)
    )


def gather(exam: str, root: Path | None = None) -> ExamCoverage:
    """Coverage of ``exam`` by the labs under ``root`` (default: ``$GPULAB_LABS``, else the shipped labs), with
    the objectives and blueprints of that labs tree. A lab that cannot be loaded is left out and named in
    ``errors``; a malformed objectives or blueprints file is an InputError."""
    from assessor import yamlio
    from assessor.labs import objectives
    from assessor.labs.levels import BLUEPRINTS, data_file, load_blueprints
    from assessor.labs.loader import labs_root, load_catalogue

    root = root or labs_root()
    blueprints = load_blueprints(data_file(BLUEPRINTS, root))
    listed = objectives.load(objectives.default_path(root), blueprints).exam(exam)
    catalogue = load_catalogue(root)
    titles = yamlio.load(data_file(BLUEPRINTS, root)).data.get("exams") or {}
    title = str((titles.get(listed.exam) or {}).get("title") or listed.exam)
    unmarked = [lab.id for lab in catalogue.labs if "objectives" not in lab.source]
    return measure(
        listed,
        catalogue.labs,
        title=title,
        blueprint_version=blueprints.version,
        blueprint_as_of=blueprints.as_of,
        unmarked=unmarked,
        errors=[str(e) for e in catalogue.errors],
    )


def _pct(x: Fraction, digits: int = 1) -> float:
    return round(float(x), digits)


def document(cov: ExamCoverage) -> dict[str, Any]:
    """The ``--json`` document (docs/COVERAGE.md): keys and their order are stable; percents of the exam's
    weight rounded to 0.1 (an objective's weight to 0.01)."""
    e = cov.exam
    return {
        "exam": e.exam,
        "title": cov.title,
        "objectives_source": {"url": e.source, "document": e.document, "as_of": e.as_of, "numbering": e.numbering},
        "blueprint": {"version": cov.blueprint_version, "as_of": cov.blueprint_as_of},
        "rule": RULE,
        "touched_pct": _pct(cov.touched),
        "full_pct": _pct(cov.full),
        "counts": {
            "objectives": len(cov.rows),
            "touched": sum(1 for r in cov.rows if r.labs),
            "full": sum(1 for r in cov.rows if r.full_by),
            "no_lab": sum(1 for r in cov.rows if not r.labs),
        },
        "domains": [
            {
                "domain": d.domain,
                "weight_pct": _pct(d.weight),
                "objectives": d.objectives,
                "touched_pct": _pct(d.touched),
                "full_pct": _pct(d.full),
            }
            for d in cov.domains()
        ],
        "objectives": [
            {
                "id": r.objective.id,
                "number": r.objective.number,
                "domain": r.objective.domain,
                "title": r.objective.title,
                "weight_pct": _pct(r.objective.weight, 2),
                "coverage": r.status,
                "labs": list(r.labs),
                "full_by": list(r.full_by),
                "reason": r.objective.reason,
            }
            for r in cov.rows
        ],
        "problems": cov.problems,
        "labs_without_objectives": list(cov.unmarked_labs),
        "lab_errors": list(cov.errors),
    }


def lines(cov: ExamCoverage) -> list[str]:
    """The terminal report, one line per item; raw data (titles, reasons, lab ids): the CLI neutralises each."""
    e = cov.exam
    doc = document(cov)
    counts = doc["counts"]
    out = [
        f"{e.exam}: {cov.title}",
        f"objectives: {e.document}, as of {e.as_of} ({e.numbering} numbering): {e.source}",
        f"weights: blueprints v{cov.blueprint_version} as of {cov.blueprint_as_of}, each domain's weight split "
        "equally between its objectives",
        f"touched by labs: {doc['touched_pct']:g} % of the exam's weight ({counts['touched']} of "
        f"{counts['objectives']} objectives); fully covered: {doc['full_pct']:g} % ({counts['full']})",
    ]
    for d in cov.domains():
        out += [
            "",
            f"{d.domain}: {_pct(d.weight):g} % of the exam, {d.objectives} objectives; touched "
            f"{_pct(d.touched):g} %, fully covered {_pct(d.full):g} %",
        ]
        for r in (r for r in cov.rows if r.objective.domain == d.domain):
            o = r.objective
            out.append(f"  {o.number:<5} {r.status:<4} {_pct(o.weight, 2):>5.2f} %  {o.title}")
            if r.labs:
                out.append("        labs: " + ", ".join(_lab_word(lab, r) for lab in r.labs))
            if o.reason and not r.labs:
                out.append(f"        no lab: {o.reason}")
            elif not r.labs:
                out.append("        no lab and no reason given: a gap nobody has explained")
            elif r.stale_reason:
                out.append(f"        (objectives.yaml still gives a reason for having no lab: {o.reason})")
    if cov.unmarked_labs:
        out += ["", "labs that name no objectives yet: " + ", ".join(cov.unmarked_labs)]
    return out


def _lab_word(lab: str, row: ObjectiveCoverage) -> str:
    return lab if lab in row.full_by else f"{lab} (part)"
