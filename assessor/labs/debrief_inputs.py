"""What a debrief is built from, gathered: the candidate's passing attempt (``lab debrief``) or the grade just
shown (``lab grade``), the lab with their variant, the node's shell history, the notes on real nodes, and the
exam objectives the lab names (titled from ``labs/objectives.yaml``). :mod:`assessor.labs.debrief` builds it, pure.
"""

from __future__ import annotations

from typing import Any

from assessor.errors import InputError
from assessor.labs import debrief
from assessor.labs.model import Lab
from assessor.labs.shell_history import HistorySource, node_history


def after_grade(lab: Lab, grade: Any, *, candidate: str, history: HistorySource = node_history) -> debrief.Debrief:
    """The debrief of a grade just shown (a :class:`~assessor.labs.grading.Grade`), of ``candidate``'s variant."""
    from assessor.labs.loader import pick_variant, with_variant

    mine = with_variant(lab, pick_variant(lab, candidate))
    target = grade.extras.get("target") if not lab.is_design else None
    return debrief.build(
        mine,
        [s.to_json() for s in grade.scores],
        history(target),
        debrief.default_notes(),
        passed=grade.passed,
        percent=grade.percent,
        objectives=objectives_of(mine),
        reference_text=reference_text(mine),
    )


def for_lab(
    lab_id: str, *, candidate: str, db: str | None = None, history: HistorySource = node_history
) -> debrief.Debrief:
    """``lab debrief LAB``: the debrief of ``candidate``'s latest passing attempt of the lab. InputError when
    they have none: the debrief shows the reference solution, so it opens only after a pass."""
    from assessor.labs import attempts
    from assessor.labs.loader import find_lab, pick_variant, with_variant

    lab = find_lab(lab_id)
    with attempts.guarded(db) as conn:
        mine = [a for a in attempts.attempts(conn, candidate=candidate, lab_id=lab.id) if a.passed]
    if not mine:
        raise InputError(
            f"{candidate} has no passing attempt of {lab.id}: the debrief shows the reference solution, so it opens "
            f"after a pass (`gpulab lab grade {lab.id}` records one; `gpulab progress` lists your attempts)"
        )
    best = max(mine, key=lambda a: (a.counts, a.graded_at, a.id))
    lab = with_variant(lab, pick_variant(lab, candidate))
    return debrief.build(
        lab,
        best.checks,
        history(None if lab.is_design else best.target),
        debrief.default_notes(),
        passed=True,
        percent=best.percent,
        objectives=objectives_of(lab),
        reference_text=reference_text(lab),
    )


def reference_text(lab: Lab) -> str | None:
    """The text of the lab's reference answer or ticket (its variant filled in), None when it has none or it
    cannot be read."""
    if not lab.solution_answer:
        return None
    from assessor.labs.loader import reference_answer

    try:
        return reference_answer(lab)
    except InputError:
        return None


def objectives_of(lab: Lab) -> tuple[str, ...]:
    """The exam objectives the lab names (lab.yaml ``objectives``), each with its title from
    ``labs/objectives.yaml`` where that file knows it: ``NCP-AII-2.2 (part): Configure MIG``. Nothing when the
    lab names none; an objectives file that cannot be read leaves the bare ids."""
    named = tuple(getattr(lab, "objectives", ()) or ())
    if not named:
        return ()
    known: Any = None
    try:
        from assessor.labs import objectives

        known = objectives.cached()
    except (ImportError, InputError, OSError):
        known = None
    out = []
    for ref in named:
        ref_id = str(getattr(ref, "id", ref))
        found = known.get(ref_id) if known is not None else None
        title = f": {found.title}" if found is not None else ""
        out.append(f"{ref}{title}")
    return tuple(out)
