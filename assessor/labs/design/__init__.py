"""Design graders: level-5 labs whose answer is a YAML file of numbers, graded by calculation.

A design grader mirrors a catalogue check (:mod:`assessor.checks.base`): a stable id, a title, a doc,
typed :class:`~assessor.checks.base.Param` parameters, and a pure function ``(answer, params) -> Result``.
It never touches a node. Each grader reads one top-level *section* of the candidate's answer file
(``fat_tree:``, ``power:``, ``staffing:``), so one file can answer a lab that uses several graders.

Flow for a lab's ``answer.checks``::

    located = load_answer("answer.yaml")            # InputError: file, line, key
    for check in lab_checks:
        result = run_grader(GRADERS[check.id], located, check.params)

A malformed answer (a missing section or key, a string where a count belongs, an unknown key that is probably
a typo) raises :class:`~assessor.errors.InputError` naming file, line and key: it is the candidate's input,
not a wrong answer. A well-formed answer with wrong numbers is a ``fail`` result saying which numbers are
wrong and, by default, only the rule behind them (params ``reveal: true`` also shows the right numbers).
"""

from __future__ import annotations

# Importing the graders registers them.
from assessor.labs.design import acceptance, diagnosis, fat_tree, power, staffing  # noqa: F401
from assessor.labs.design.base import (
    GRADERS,
    GraderSpec,
    as_located,
    compare,
    get,
    grader,
    load_answer,
    run_grader,
    validate_answer,
)

__all__ = [
    "GRADERS",
    "GraderSpec",
    "as_located",
    "compare",
    "get",
    "grader",
    "load_answer",
    "run_grader",
    "validate_answer",
]
