"""The candidate report document (gpulab.candidate/1): levels explained, labs attempted (each check's values in
words), next steps, the study plan, and readiness for an exam when one is asked."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from assessor.reports.documents import SCHEMA_IDS, AttemptRecord, validate


def best_of(records: Sequence[AttemptRecord]) -> AttemptRecord | None:
    """The best attempt of one lab that counts, by the rule `gpulab progress` applies
    (:func:`assessor.labs.attempts.best`: recorded, no flag; a pass beats a fail, then the higher score, then
    the earlier one); None when every attempt is flagged or was not recorded."""
    from assessor.labs.attempts import best

    return next(iter(best(records).values()), None)


def latest_of(records: Sequence[AttemptRecord]) -> AttemptRecord:
    return max(records, key=lambda r: r.graded_at)


def by_lab(records: Sequence[AttemptRecord]) -> dict[str, list[AttemptRecord]]:
    out: dict[str, list[AttemptRecord]] = {}
    for r in records:
        out.setdefault(r.lab_id, []).append(r)
    return out


def lab_flags(records: Sequence[AttemptRecord]) -> list[str]:
    """What an instructor should look at for one lab: the graders' flags, and attempts from several machines."""
    flags: dict[str, None] = {}
    for r in records:
        for f in r.flags:
            flags[f] = None
    machines = {r.machine: r.host or r.machine for r in records if r.machine}
    if len(machines) > 1:
        flags[f"attempts from {len(machines)} machines: {', '.join(sorted(machines.values()))}"] = None
    return list(flags)


def _attempt_json(r: AttemptRecord, lab: Any = None) -> dict[str, Any]:
    """One attempt as the report shows it: each check labelled in its lab (``label``: mig.mode (GPU 0)) and what
    it observed and expected in words, as `lab grade` prints them (:mod:`assessor.labs.wording`), never raw
    JSON. ``lab``: the catalogue's lab (None: not in this catalogue)."""
    from assessor.labs.wording import in_words, labels_for_scores

    keep = ("check", "status", "message", "points", "earned", "credit", "hint", "note", "check_hint")
    named = labels_for_scores(lab.checks if lab is not None else (), [str(c.get("check", "")) for c in r.checks])
    checks = []
    for c, label in zip(r.checks, named, strict=True):
        out = {k: c[k] for k in keep if k in c}
        out["label"] = label
        for key in ("observed", "expected"):
            if c.get(key) is not None:
                out[key] = in_words(c[key], str(c.get("check", "")))
        checks.append(out)
    return {
        "graded_at": r.graded_at,
        "started_at": r.started_at,
        "elapsed_min": r.elapsed_min,
        "percent": r.percent,
        "passed": r.passed,
        "late": r.late,
        "host": r.host,
        "checks": checks,
    }


def passed_labs(records: Sequence[AttemptRecord], known: set[str]) -> set[str]:
    """The labs passed for the level rule: those whose best attempt that counts passed (as `gpulab progress`)."""
    from assessor.labs.attempts import best

    return {lab for lab, r in best(records).items() if lab in known and r.passed}


def not_counted(records: Sequence[AttemptRecord]) -> list[str]:
    """Why some grades of one lab do not count: each reason a grade was not recorded as an attempt."""
    return list(dict.fromkeys(f"not recorded: {r.not_recorded_because}" for r in records if not r.recorded))


def certifications(rules: Any, levels: Any) -> list[dict[str, Any]]:
    """How much of each exam's blueprint the candidate's levels cover (certifications.yaml says which level)."""
    from assessor import yamlio
    from assessor.labs.levels import BLUEPRINTS, data_file
    from assessor.reports.content import load_data

    spec = load_data("certifications.yaml")
    share = Fraction(str(spec.get("share", "2/3")))
    titles = {
        e: (d or {}).get("title", e) for e, d in (yamlio.load(data_file(BLUEPRINTS)).data.get("exams") or {}).items()
    }
    present = set(levels.weights)
    out: list[dict[str, Any]] = []
    for entry in spec.get("exams") or []:
        exam, need = str(entry["exam"]), int(entry["level"])
        weights = rules.blueprints.exams.get(exam)
        if weights is None:
            continue
        total, covered, missing = Fraction(0), Fraction(0), []
        for name, weight in weights.items():
            key = f"{exam}: {name}"
            trainers = [d for d in present if key in rules.trains.get(d, ())]
            if not trainers:
                continue  # no lab trains it: neither helps nor hurts
            total += weight
            if any(levels.domains[d].level >= need for d in trainers):
                covered += weight
            else:
                missing.append(f"{name} ({', '.join(sorted(trainers))} to level {need})")
        coverage = covered / total if total else Fraction(0)
        out.append(
            {
                "exam": exam,
                "title": str(titles.get(exam, exam)),
                "level": need,
                "coverage_pct": round(float(coverage) * 100, 1),
                "needed_pct": round(float(share) * 100, 1),
                "fits": total > 0 and coverage >= share,
                "missing": missing,
            }
        )
    return out


def build(
    candidate: str,
    records: Sequence[AttemptRecord],
    catalogue: Any,
    rules: Any,
    *,
    now: dt.datetime | None = None,
    database_flags: Sequence[str] = (),
    exam: str | None = None,
    sessions: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The candidate report document, validated. ``database_flags``: what the attempts database read tells of
    itself as a whole (rows missing at its end, :func:`assessor.reports.documents.database_findings`).
    ``exam``: how ready the candidate is for it (the readiness `gpulab progress --exam` shows, from the same
    passes; ``sessions``: their exam-session results, oldest first, exam domain -> percent), and the study plan
    aims at it; InputError for an exam the blueprints do not know."""
    from assessor.labs import levels as level_rule
    from assessor.labs import readiness, study_plan
    from assessor.labs.model import DOMAINS, LEVEL_NAMES

    mine = [r for r in records if r.candidate == candidate]
    labs = {x.id: x for x in catalogue.labs}
    passed = passed_labs(mine, set(labs))
    levels = level_rule.compute(rules, catalogue.labs, passed)
    domains: list[dict[str, Any]] = []
    for d in DOMAINS:
        v = levels.domains[d]
        domains.append(
            {
                "domain": d,
                "level": v.level,
                "name": v.name,
                "explanation": v.explanation,
                "weight_pct": round(float(levels.weights.get(d, 0)) * 100, 1),
                "labs": sum(t.total for t in v.tallies),
            }
        )
    order = {d: i for i, d in enumerate(DOMAINS)}
    attempted: list[dict[str, Any]] = []
    for lab_id, rs in by_lab(mine).items():
        lab = labs.get(lab_id)
        domain = lab.domain if lab else (rs[0].domain or "unknown")
        level = lab.level if lab else (rs[0].level or 0)
        hints = [r.hints_used for r in rs if r.hints_used is not None]
        counted = best_of(rs)
        shown = counted or latest_of(rs)  # nothing counts: the latest is shown, and not passed
        attempted.append(
            {
                "lab": lab_id,
                "title": lab.title if lab else "(not in this catalogue)",
                "domain": domain,
                "level": level,
                "attempts": sum(1 for r in rs if r.recorded),
                "passed": bool(counted and counted.passed),
                "best": _attempt_json(shown, lab),
                "latest": _attempt_json(latest_of(rs), lab),
                "time_limit_min": lab.time_limit_min if lab else None,
                "hints_used": max(hints) if hints else None,
                "flags": lab_flags(rs) + not_counted(rs),
            }
        )
    attempted.sort(key=lambda e: (order.get(e["domain"], 99), e["level"], e["lab"]))
    steps = []
    for d in DOMAINS:
        v = levels.domains[d]
        blocker = next((t for t in v.tallies if not t.met), None)
        if blocker is None:
            continue
        steps.append(
            {
                "domain": d,
                "level": v.level,
                "target_level": blocker.level,
                "target_name": LEVEL_NAMES[blocker.level],
                "needed": blocker.needed - len(blocker.passed),
                "labs": [{"lab": i, "title": labs[i].title if i in labs else i} for i in blocker.open],
            }
        )
    if exam is not None:
        exam = readiness.find_exam(rules.blueprints, exam)
    plan = study_plan.plan(rules, catalogue.labs, passed, exam=exam, sessions=sessions)
    certs = certifications(rules, levels)
    fitting = [c for c in certs if c["fits"]]
    doc = {
        "schema": SCHEMA_IDS["candidate"],
        "candidate": candidate,
        "generated_at": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "domains": domains,
        "overall": {"level": levels.overall, "name": levels.overall_name, "explanation": levels.explanation},
        "rule": levels.rule,
        "labs": attempted,
        "next_steps": steps,
        "certifications": certs,
        "recommended_certification": max(fitting, key=lambda c: c["level"])["exam"] if fitting else None,
        "flags": sorted({f"{e['lab']}: {f}" for e in attempted for f in e["flags"]}),
        "database_flags": list(database_flags),
        "study_plan": plan.to_json(),
    }
    if exam is not None:
        titles = readiness.exam_titles(level_rule.data_file(level_rule.BLUEPRINTS, catalogue.root))
        ready = readiness.readiness(
            exam, rules.blueprints, catalogue.labs, passed, sessions=sessions, title=titles.get(exam)
        )
        doc["readiness"] = ready.to_json()
    return validate(doc, "candidate")
