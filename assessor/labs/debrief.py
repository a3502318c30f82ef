"""The debrief of a lab: what each check proved, the reference solution beside the candidate's own commands,
and where a real node prints otherwise than the simulator. Pure: the caller hands in the lab (built with the
candidate's variant), the grade's checks, the node's shell history and the notes on real nodes.

Shown after a pass (``gpulab lab debrief LAB``, and in short under a passing ``lab grade``) and for every task
at the end of a practice exam. It gives the reference solution away, so it is never shown before a pass (or
the end of the exam).

Every text here that came from a node or a candidate (a check's message, a command they typed) is raw data:
whoever prints it neutralises it there (:mod:`assessor.neutralise`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assessor.labs.model import Lab
from assessor.labs.shell_history import History

# How a reference command was met by the candidate's commands.
TYPED = "typed"  # the same words
SIMILAR = "similar"  # the same program, most of the same words
NOT_TYPED = "not typed"
SHORT_COMMANDS = 60  # the candidate's commands a text debrief lists (the latest); JSON keeps them all


@dataclass(frozen=True)
class CheckDebrief:
    """One check of the lab, in words."""

    label: str  # mig.mode, or "mig.mode (2 of 2)" where the lab uses it twice
    check: str
    role: str  # task | guard
    status: str
    points: float
    earned: float
    checks_what: str  # what the check verifies (its title, the first sentence of its doc, the lab's params)
    on_your_node: str  # what the grade found (the check's message)
    why_it_matters: str  # the lab's hint for it

    @property
    def proved(self) -> bool:
        return self.status == "pass" or (self.role == "task" and self.earned >= self.points > 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "check": self.check,
            "role": self.role,
            "status": self.status,
            "points": self.points,
            "earned": self.earned,
            "proved": self.proved,
            "checks_what": self.checks_what,
            "on_your_node": self.on_your_node,
            "why_it_matters": self.why_it_matters,
        }


@dataclass(frozen=True)
class Step:
    """A reference command and how the candidate's commands met it."""

    reference: str
    match: str  # typed | similar | not typed
    yours: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"reference": self.reference, "match": self.match, "yours": self.yours}


@dataclass(frozen=True)
class Note:
    """A place where the simulated node is known to differ from a real one (assessor/data/real_node_notes.yaml)."""

    id: str
    simulator: str
    real: str
    source: str
    commands: tuple[Mapping[str, Any], ...] = ()
    checks: tuple[str, ...] = ()
    fixtures: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()  # lab domains it concerns (none: every lab)

    def matches_command(self, line: str) -> bool:
        words = _words(line)
        if not words:
            return False
        for rule in self.commands:
            if words[0] != rule.get("program"):
                continue
            rest = set(words[1:])
            if rule.get("exact") and len(words) > 1:
                continue
            if rule.get("any") and not rest & set(rule["any"]):
                continue
            if not set(rule.get("all") or ()) <= rest:
                continue
            return True
        return False


@dataclass(frozen=True)
class RealNode:
    """A note that applies to this lab, and the step it applies at."""

    at: str  # the command (or check) it applies to
    whose: str  # reference | yours | check
    simulator: str
    real: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "whose": self.whose,
            "simulator": self.simulator,
            "real": self.real,
            "source": self.source,
        }


@dataclass(frozen=True)
class Debrief:
    lab: str
    title: str
    passed: bool
    percent: float
    checks: tuple[CheckDebrief, ...]
    reference_commands: tuple[str, ...]
    reference_files: tuple[str, ...]  # configuration files the reference solution writes on the node
    reference_answer: str | None  # the reference answer (design) or ticket file, in the labs folder
    answer_kind: str | None  # answer | ticket
    history: History
    steps: tuple[Step, ...]
    real_node: tuple[RealNode, ...] = ()
    objectives: tuple[str, ...] = field(default_factory=tuple)
    reference_answer_text: str | None = None  # the reference answer's text, the candidate's variant filled in

    def to_json(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "title": self.title,
            "passed": self.passed,
            "percent": self.percent,
            "objectives": list(self.objectives),
            "checks": [c.to_json() for c in self.checks],
            "reference": {
                "commands": list(self.reference_commands),
                "files": list(self.reference_files),
                "answer": self.reference_answer,
                "answer_kind": self.answer_kind,
                "answer_text": self.reference_answer_text,
            },
            "yours": self.history.to_json(),
            "steps": [s.to_json() for s in self.steps],
            "real_node": [r.to_json() for r in self.real_node],
        }

    @property
    def tally(self) -> dict[str, int]:
        return {m: sum(s.match == m for s in self.steps) for m in (TYPED, SIMILAR, NOT_TYPED)}


# ---- building it --------------------------------------------------------------------------------------------


def build(
    lab: Lab,
    checks: Sequence[Mapping[str, Any]],
    history: History,
    notes: Sequence[Note] = (),
    *,
    passed: bool,
    percent: float,
    objectives: Sequence[str] = (),
    reference_text: str | None = None,
) -> Debrief:
    """The debrief of ``lab`` (built with the variant the candidate had) from a grade's ``checks`` (each as
    :meth:`~assessor.labs.grading.CheckScore.to_json` writes it, in the lab's order), the node's ``history``,
    the ``notes`` on real nodes and the text of the lab's reference answer or ticket (``reference_text``)."""
    reference = tuple(lab.solution_commands)
    steps = compare(reference, history.commands or ()) if history.commands is not None else ()
    # the reference file where the labs folder has it (labs/<domain>/<id>/...): no path of this machine
    answer = f"{lab.path.parent.name}/{lab.path.name}/{lab.solution_answer}" if lab.solution_answer else None
    return Debrief(
        lab=lab.id,
        title=lab.title,
        passed=passed,
        percent=percent,
        checks=tuple(describe_checks(lab, checks)),
        reference_commands=reference,
        reference_files=tuple(sorted(lab.solution_files)),
        reference_answer=answer,
        answer_kind=("answer" if lab.is_design else "ticket") if answer else None,
        history=history,
        steps=steps,
        real_node=tuple(real_node_notes(lab, reference, history.commands or (), notes)),
        objectives=tuple(objectives),
        reference_answer_text=reference_text if answer else None,
    )


def describe_checks(lab: Lab, checks: Sequence[Mapping[str, Any]]) -> list[CheckDebrief]:
    """Each check of the grade in words, beside the lab's own check (same place in the lab)."""
    ids = [c.id for c in lab.checks]
    out = []
    for i, result in enumerate(checks):
        check_id = str(result.get("check", ""))
        own = lab.checks[i] if i < len(lab.checks) and lab.checks[i].id == check_id else None
        times = ids.count(check_id)
        nth = sum(1 for c in lab.checks[: i + 1] if c.id == check_id) if own is not None else 0
        label = f"{check_id} ({nth} of {times})" if times > 1 and nth else check_id
        params = own.params if own is not None else {}
        out.append(
            CheckDebrief(
                label=label,
                check=check_id,
                role=str(result.get("role", own.role if own else "task")),
                status=str(result.get("status", "")),
                points=float(result.get("points", own.points if own else 0) or 0),
                earned=float(result.get("earned", 0) or 0),
                checks_what=check_words(check_id, params),
                on_your_node=str(result.get("message", "")),
                why_it_matters=own.hint if own is not None else str(result.get("hint", "")),
            )
        )
    return out


def check_words(check_id: str, params: Mapping[str, Any]) -> str:
    """What a check verifies, in words: its title, the first sentence of its doc, and the lab's params."""
    spec: Any = None
    if check_id.startswith("design."):
        from assessor.labs.design import GRADERS

        spec = GRADERS.get(check_id)
    else:
        from assessor.checks import REGISTRY

        spec = REGISTRY.get(check_id)
    if spec is None:
        return check_id
    sentence = _first_sentence(spec.doc)
    shown = params_words(params)
    return f"{spec.title}: {sentence}" + (f" (here: {shown})" if shown else "")


def params_words(params: Mapping[str, Any]) -> str:
    """A lab's params for a check, short: ``gpus [0], expected true``; long values cut."""
    parts = []
    for key, value in params.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(", ", ": "))
        if len(text) > 60:
            text = text[:59] + "…"
        parts.append(f"{key} {text}")
    return ", ".join(parts)


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    for end in (". ", ".\n"):
        at = text.find(end)
        if at > 0:
            return text[: at + 1]
    return text


def _words(line: str) -> list[str]:
    """A command line's words: the program without its path, ``sudo`` (and its options) left out."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    while words and words[0] in ("sudo", "command", "exec", "time"):
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[1:]
    if words:
        words[0] = words[0].rsplit("/", 1)[-1]
    return words


def compare(reference: Sequence[str], yours: Sequence[str]) -> tuple[Step, ...]:
    """Each reference command beside the candidate's closest: the same words (typed), the same program and at
    least half the other words (similar), or none (not typed)."""
    theirs = [(line, _words(line)) for line in yours]
    out = []
    for ref in reference:
        words = _words(ref)
        same = next((line for line, w in theirs if w == words and w), None)
        if same is not None:
            out.append(Step(ref, TYPED, same))
            continue
        best: tuple[float, str] | None = None
        wanted = set(words[1:])
        for line, w in theirs:
            if not w or not words or w[0] != words[0]:
                continue
            overlap = len(wanted & set(w[1:])) / len(wanted) if wanted else 1.0
            if overlap >= 0.5 and (best is None or overlap > best[0]):
                best = (overlap, line)
        out.append(Step(ref, SIMILAR, best[1]) if best else Step(ref, NOT_TYPED))
    return tuple(out)


def real_node_notes(lab: Lab, reference: Sequence[str], yours: Sequence[str], notes: Sequence[Note]) -> list[RealNode]:
    """The notes that apply to this lab: a reference command or one of the candidate's matches the note (on the
    note's machines), or the lab is graded by one of its checks. One line per note, at its first step."""
    out = []
    ids = {c.id for c in lab.checks}
    for note in notes:
        if (note.fixtures and lab.fixture not in note.fixtures) or (note.domains and lab.domain not in note.domains):
            continue
        at = next((("reference", line) for line in reference if note.matches_command(line)), None)
        at = at or next((("yours", line) for line in yours if note.matches_command(line)), None)
        if at is None and ids & set(note.checks):
            at = ("check", ", ".join(sorted(ids & set(note.checks))))
        if at is not None:
            out.append(RealNode(at=at[1], whose=at[0], simulator=note.simulator, real=note.real, source=note.source))
    return out


def notes_from(data: Any) -> list[Note]:
    """The notes of a real_node_notes.yaml document (entries that are not notes are left out)."""
    out = []
    for item in (data or {}).get("notes") or []:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("id", "simulator", "real")):
            continue
        out.append(
            Note(
                id=item["id"],
                simulator=" ".join(item["simulator"].split()),
                real=" ".join(item["real"].split()),
                source=str(item.get("source", "")),
                commands=tuple(r for r in item.get("commands") or () if isinstance(r, dict)),
                checks=tuple(str(c) for c in item.get("checks") or ()),
                fixtures=tuple(str(f) for f in item.get("fixtures") or ()),
                domains=tuple(str(d) for d in item.get("domains") or ()),
            )
        )
    return out


def default_notes() -> list[Note]:
    """The notes that ship with gpulab (``assessor/data/real_node_notes.yaml``)."""
    from assessor.data import load_data

    return notes_from(load_data("real_node_notes.yaml"))


# ---- in words ---------------------------------------------------------------------------------------------


def full_lines(d: Debrief) -> list[str]:
    """The whole debrief as lines of text (raw data: the printer neutralises each line)."""
    verdict = "passed" if d.passed else "not passed"
    lines = [f"Debrief of {d.lab} — {d.title} ({verdict}, {d.percent:g} %)"]
    if d.objectives:
        lines.append("Objectives: " + "; ".join(d.objectives))
    lines.append("What each check proved:")
    for c in d.checks:
        worth = "guard, no points" if c.role == "guard" else f"{c.earned:g}/{c.points:g} points"
        lines.append(f"  {c.label} ({worth}): {c.status}")
        lines.append(f"    checks: {c.checks_what}")
        if c.on_your_node:
            lines.append(f"    on your node: {c.on_your_node}")
        if c.why_it_matters:
            lines.append(f"    why it matters: {c.why_it_matters}")
    lines += reference_lines(d)
    lines += yours_lines(d)
    lines += real_node_lines(d)
    return lines


def reference_lines(d: Debrief) -> list[str]:
    lines = []
    if d.reference_commands:
        lines.append("Reference solution" + (" beside your commands:" if d.steps else ":"))
        for s in d.steps or tuple(Step(r, "") for r in d.reference_commands):
            mark = f"[{s.match}]" if s.match else "-"
            lines.append(f"  {mark:<11} {s.reference}" + (f"   (you: {s.yours})" if s.match == SIMILAR else ""))
    for path in d.reference_files:
        lines.append(f"  the reference solution also writes {path} on the node")
    if d.reference_answer:
        lines.append(f"Reference {d.answer_kind} ({d.reference_answer} in the labs folder):")
        lines += [f"  {line}" for line in (d.reference_answer_text or "").splitlines()]
    if not d.reference_commands and not d.reference_files and not d.reference_answer:
        lines.append("Reference solution: none written for this lab")
    return lines


def yours_lines(d: Debrief) -> list[str]:
    h = d.history
    if h.commands is None:
        return [f"Your commands: none to compare ({h.why_none})"]
    shown = h.commands[-SHORT_COMMANDS:]
    lines = [f"Your commands ({len(h.commands)}, from {h.source}):"]
    if len(h.commands) > len(shown):
        lines.append(f"  ... {len(h.commands) - len(shown)} earlier commands (all in the JSON debrief)")
    start = len(h.commands) - len(shown) + 1
    lines += [f"  {i:>4}  {line}" for i, line in enumerate(shown, start)]
    return lines


def real_node_lines(d: Debrief) -> list[str]:
    if not d.real_node:
        return ["Where a real node differs: at none of these steps, as far as gpulab knows (docs/FIDELITY.md)"]
    lines = ["Where a real node differs:"]
    for r in d.real_node:
        where = {"reference": "the reference step", "yours": "your step", "check": "the check"}.get(r.whose, r.whose)
        lines.append(f"  at {where} `{r.at}`:")
        lines.append(f"    the simulator: {r.simulator}")
        lines.append(f"    a real node: {r.real}")
        lines.append(f"    ({r.source})")
    return lines


def short_lines(d: Debrief) -> list[str]:
    """A few lines for under a passing ``lab grade``: how the candidate's commands met the reference, where a
    real node differs, and how to see the whole debrief."""
    n = len(d.reference_commands)
    lines = []
    if not n:
        if d.reference_answer:
            article = "an" if (d.answer_kind or "")[:1] in ("a", "e", "i", "o", "u") else "a"
            ref = f"the reference is {article} {d.answer_kind} file"
        elif d.reference_files:
            ref = f"the reference solution edits {', '.join(d.reference_files)} (no commands to compare)"
        else:
            ref = "the lab has no reference steps"
        lines.append(f"Debrief: {ref}")
    elif d.history.commands is None:
        why = d.history.why_none
        lines.append(
            f"Debrief: the reference solution has {n} command{'s' if n != 1 else ''}; your commands: none to "
            f"compare ({why})"
        )
    else:
        t = d.tally
        lines.append(
            f"Debrief: of the {n} reference command{'s' if n != 1 else ''} you typed {t[TYPED]} as written, "
            f"{t[SIMILAR]} in another form, {t[NOT_TYPED]} not (your commands from {d.history.source})"
        )
    guards = [c.label for c in d.checks if c.role == "guard"]
    if guards:
        lines.append(f"  guards that held: {', '.join(guards)}")
    for r in d.real_node:
        lines.append(f"  a real node differs at `{r.at}`: {r.real}")
    lines.append(f"  the whole debrief: `gpulab lab debrief {d.lab}`")
    return lines
