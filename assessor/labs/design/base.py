"""The design-grader framework: specs, the registry, answer loading and the comparison helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.errors import InputError
from assessor.yamlio import Located, load

GraderFunc = Callable[[dict[str, Any], dict[str, Any]], Result]
Validator = Callable[[Located], None]
# A lab's params as a grader checks them beyond their types: (param name, problem) for each problem found.
ParamCheck = Callable[[dict[str, Any]], list[tuple[str, str]]]


@dataclass(frozen=True)
class GraderSpec:
    """A design grader: the same shape as a catalogue CheckSpec, reading an answer file instead of facts."""

    id: str
    title: str
    section: str  # the top-level key of the answer file this grader reads
    params: tuple[Param, ...]
    doc: str  # what it computes, and the sources of its formulas
    answer_format: str  # the keys of its section, for `gpulab` help and the lab README
    func: GraderFunc = field(compare=False)
    validate: Validator = field(compare=False)
    check_params: ParamCheck | None = field(default=None, compare=False)  # the lab's params, beyond types

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


GRADERS: dict[str, GraderSpec] = {}

# Shown with every grader: whether a failing result also prints the right numbers.
REVEAL = Param("reveal", "bool", False, "show the computed numbers on a wrong answer (instructors), not only the rules")


def grader(
    id: str,
    *,
    title: str,
    section: str,
    doc: str,
    answer_format: str,
    validate: Validator,
    params: tuple[Param, ...] = (),
    check_params: ParamCheck | None = None,
) -> Callable[[GraderFunc], GraderFunc]:
    """Register a design grader under a stable id (``design.*``); ``check_params`` checks a lab's params
    beyond their types when the lab is loaded."""

    def register(func: GraderFunc) -> GraderFunc:
        if id in GRADERS:
            raise ValueError(f"design grader {id} registered twice")
        GRADERS[id] = GraderSpec(
            id, title, section, (*params, REVEAL), doc, answer_format, func, validate, check_params
        )
        return func

    return register


def get(grader_id: str) -> GraderSpec:
    """The spec for an id; InputError listing the known ones."""
    spec = GRADERS.get(grader_id)
    if spec is None:
        raise InputError(f"unknown design grader {grader_id!r} (known: {', '.join(sorted(GRADERS))})")
    return spec


def load_answer(path: Path | str, *, text: str | None = None) -> Located:
    """Read an answer file (YAML with line numbers); InputError when it is not a mapping of sections."""
    located = load(path, text=text)
    if not isinstance(located.data, dict):
        kind = "empty" if located.data is None else type(located.data).__name__
        raise located.error((), f"an answer file is a mapping of sections (fat_tree:, power:, staffing:), not {kind}")
    return located


def as_located(answer: Located | dict[str, Any], name: str = "<answer>") -> Located:
    """An answer given as plain data gets a Located without line numbers (errors then name only the key)."""
    return answer if isinstance(answer, Located) else Located(answer, name)


def validate_answer(answer: Located | dict[str, Any], grader_ids: list[str]) -> None:
    """Check the sections the named graders read; InputError (file, line, key) at the first problem."""
    located = as_located(answer)
    if not isinstance(located.data, dict):
        raise located.error((), "an answer file is a mapping of sections (fat_tree:, power:, staffing:)")
    for grader_id in grader_ids:
        get(grader_id).validate(located)


def run_grader(spec: GraderSpec, answer: Located | dict[str, Any], params: dict[str, Any]) -> Result:
    """Validate the grader's section, then grade it with the params (defaults filled in).

    Raises InputError for a malformed answer. A grader bug or impossible params (an odd radix, more GPUs
    than three tiers hold) become an ``error`` result naming the problem, never a pass.
    """
    located = as_located(answer)
    if not isinstance(located.data, dict):
        raise located.error((), "an answer file is a mapping of sections (fat_tree:, power:, staffing:)")
    spec.validate(located)
    merged = {p.name: p.default for p in spec.params}
    merged.update(params)
    try:
        return spec.func(located.data, merged)
    except ValueError as exc:  # params no design can meet: the lab is wrong, not the candidate
        return Result(spec.id, "error", f"cannot grade: {exc}", hint="fix the grader's params in the lab")
    except Exception as exc:
        return Result(spec.id, "error", f"internal error in design grader {spec.id}: {type(exc).__name__}: {exc}")


def parts_param(names: tuple[str, ...]) -> Param:
    """The ``parts`` parameter of a grader whose answer has these top-level keys."""
    return Param("parts", "list", None, f"answer keys to grade (None: all): {', '.join(names)}")


def check_parts(spec_id: str, parts: Any, names: tuple[str, ...]) -> list[str] | None:
    """The ``parts`` param as a list; ValueError (a lab bug) for a name the answer does not have."""
    if not parts:
        return None
    chosen = [str(p) for p in parts]
    unknown = [p for p in chosen if p not in names]
    if unknown:
        raise ValueError(f"{spec_id}: unknown parts {', '.join(unknown)} (parts: {', '.join(names)})")
    return chosen


def compare(
    spec_id: str,
    *,
    got: dict[str, Any],
    want: dict[str, Any],
    rules: dict[str, str],
    reveal: bool,
    ok: str,
    hint: str,
    extra_fails: list[str] | None = None,
    tolerance_pct: dict[str, float] | None = None,
    parts: list[str] | None = None,
    follows: dict[str, tuple[Any, str]] | None = None,
) -> Result:
    """Compare the candidate's numbers (``got``) with the computed ones (``want``), key by key.

    Counts must match exactly; keys in ``tolerance_pct`` may differ by that many percent of the computed
    value. Without ``reveal`` a wrong answer names the wrong keys and their rules, not the right numbers.
    ``parts`` limits the comparison to keys under those top-level names (a lab can then give points per part).

    ``follows`` is the carried-error rule: a key whose rule takes another of the candidate's answers (cooling
    from the IT load) -> (the value the rule gives from the candidate's own answer, the key of that answer).
    Such a key is right when it matches the computed value or follows correctly from the candidate's own answer,
    when that answer is graded in the same check: a wrong answer is counted wrong once, where it is made, not
    again in what the same check computes from it. Across checks (parts graded on their own) each part is
    graded against the lab's own numbers, so a consistent design for another cluster earns nothing.
    """
    tolerance_pct = tolerance_pct or {}
    if parts:
        want = {k: v for k, v in want.items() if k.split(".")[0] in parts}
        got = {k: v for k, v in got.items() if k.split(".")[0] in parts}
    follows = {k: v for k, v in (follows or {}).items() if k in want and v[1] in want}

    def matches(key: str, have: Any, value: Any) -> bool:
        pct = tolerance_pct.get(key)
        if pct is None:
            return bool(have == value)
        number = isinstance(have, (int, float)) and isinstance(value, (int, float))
        return number and abs(float(have) - float(value)) <= abs(float(value)) * pct / 100

    wrong: list[str] = []
    carried: list[str] = []  # right only by following the candidate's own (wrong) answer
    for key, value in want.items():
        have = got.get(key)
        if matches(key, have, value):
            continue
        if key in follows and have is not None and matches(key, have, follows[key][0]):
            carried.append(key)
            continue
        wrong.append(key)
    extras = list(extra_fails or [])
    # each wrong field with why (its rule), never the right value unless the lab reveals it
    fails = [_wrong(key, got.get(key), rules.get(key), want[key] if reveal else None) for key in wrong] + extras
    expected: dict[str, Any] = {
        key: (want[key] if reveal else rules.get(key, "computed")) for key in want if key not in carried
    }
    expected.update(
        {key: f"{rules.get(key, 'computed')} (from your {_source(follows[key][1], got)})" for key in carried}
    )
    total = len(want)
    aside = _carried_words(carried, follows, got)
    if not fails:
        # a part's pass says only what it graded: the grader's summary would give other parts' numbers away
        message = ok if not parts else f"{total} of {total} {_answers(total)} right ({', '.join(sorted(want))})"
        if carried:
            message = f"{total} of {total} {_answers(total)} right ({', '.join(sorted(want))}); {aside}"
        # what was expected, now that it is right: the computed numbers of the parts graded (no other part's)
        shown = {key: (expected[key] if key in carried else want[key]) for key in want}
        return Result(spec_id, "pass", message, observed=got, expected=shown)
    shown_rules = "; ".join(f"{key}: {rules[key]}" for key in wrong if key in rules)
    if wrong:
        message = f"{len(wrong)} of {total} {_answers(total)} wrong: "
    else:
        message = f"{total} of {total} {_answers(total)} right, but: "
    message += "; ".join(fails[:6])
    if len(fails) > 6:
        message += f" (and {len(fails) - 6} more)"
    if carried:
        message += f"; {aside}"
    return Result(
        spec_id,
        "fail",
        message,
        observed=got,
        expected=expected,
        hint=(shown_rules + ". " if shown_rules else "") + hint,
    )


def _source(key: str, got: dict[str, Any]) -> str:
    value = got.get(key)
    return f"{key} ({value:g})" if isinstance(value, (int, float)) and not isinstance(value, bool) else key


def _carried_words(carried: list[str], follows: dict[str, tuple[Any, str]], got: dict[str, Any]) -> str:
    """``cooling_kw follows correctly from your total_it_kw (104): not counted wrong again``."""
    if not carried:
        return ""
    sources = list(dict.fromkeys(_source(follows[k][1], got) for k in carried))
    names = " and ".join([", ".join(carried[:-1]), carried[-1]] if len(carried) > 1 else carried)
    verb = "follows" if len(carried) == 1 else "follow"
    return f"{names} {verb} correctly from your {' and '.join(sources)}: not counted wrong again"


def _answers(n: int) -> str:
    return "answer" if n == 1 else "answers"


def _wrong(key: str, have: Any, rule: str | None, right: Any) -> str:
    """One wrong field: its name, what the candidate gave, and why it is wrong (the rule it breaks)."""
    text = f"{key} is missing" if have is None else f"{key} = {have!r} is wrong"
    if right is not None:
        text += f" (computed: {right!r})"
    elif rule:
        text += f" (rule: {rule})"
    return text


def problems_message(fails: list[str], shown: int = 6) -> str:
    """A failing answer's message: how many problems, the first ``shown`` of them, and how many more."""
    more = f" (and {len(fails) - shown} more)" if len(fails) > shown else ""
    return f"{len(fails)} problem{'s' if len(fails) > 1 else ''}: " + "; ".join(fails[:shown]) + more
