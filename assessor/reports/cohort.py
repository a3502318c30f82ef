"""The cohort report document (gpulab.cohort/1): gradebook, level distribution, checks most often failed,
team readiness against the curriculum's team compositions (``reports/teams.yaml``).

A lab's best score and pass are those `gpulab progress` gives: :func:`assessor.labs.attempts.best` over the
candidate's attempts, so a flagged attempt and a grade that was not recorded are shown (with why), never counted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from assessor.reports.candidate import by_lab, lab_flags, passed_labs
from assessor.reports.documents import NO_START, SCHEMA_IDS, AttemptRecord, UngradedRecord, validate


def lab_cell(records: Sequence[AttemptRecord], ungraded: Sequence[UngradedRecord] = ()) -> dict[str, Any]:
    """One candidate's cell of one lab: the best attempt that counts (the rule of `gpulab progress`), the
    recorded attempts (flagged ones included, as progress counts them), and, when nothing counts, why: the
    latest of a flagged attempt, a grade not recorded, or a grade run that could not reach or capture the host."""
    from assessor.labs.attempts import best

    top = next(iter(best(records).values()), None)
    recorded = [r for r in records if r.recorded]
    cell: dict[str, Any] = {
        "best": top.percent if top else None,
        "attempts": len(recorded),
        "passed": bool(top and top.passed),
        "late": bool(top and top.late),
        "flags": lab_flags(records),
        "flagged": sum(1 for r in recorded if r.flags),
        "not_recorded": sum(1 for r in records if not r.recorded),
        "status": ("passed" if top.passed else "not passed") if top else "",
        "why": None,
    }
    if top is not None:
        return cell
    # nothing counts: say why, from the latest thing that happened
    events: list[tuple[str, str, str]] = [
        (r.graded_at, "not recorded", r.not_recorded_because or NO_START) for r in records if not r.recorded
    ]
    events += [(r.graded_at, "flagged", "; ".join(r.flags)) for r in recorded if r.flags]
    events += [(u.at, u.status, u.message) for u in ungraded]
    _, cell["status"], cell["why"] = max(events, key=lambda e: e[0])
    return cell


def failed_checks(records: Sequence[AttemptRecord], limit: int = 20) -> list[dict[str, Any]]:
    """Checks that cost points most often, over every attempt. A lab that grades the same check id twice
    (with different parameters) has each occurrence counted apart, by its position in the lab."""
    seen: dict[tuple[str, int, str], list[int]] = {}  # (lab, position, check) -> [failed, attempts]
    who: dict[tuple[str, int, str], set[str]] = {}
    for r in records:
        for position, c in enumerate(r.checks, 1):
            key = (r.lab_id, position, str(c.get("check", "?")))
            tally = seen.setdefault(key, [0, 0])
            tally[1] += 1
            credit = c.get("credit")
            lost = credit < 1 if isinstance(credit, (int, float)) else c.get("status") != "pass"
            if lost:
                tally[0] += 1
                who.setdefault(key, set()).add(r.candidate)
    rows: list[dict[str, Any]] = [
        {
            "lab": lab,
            "check": check,
            "position": position,
            "failed": failed,
            "attempts": total,
            "candidates": len(who.get((lab, position, check), ())),
        }
        for (lab, position, check), (failed, total) in seen.items()
        if failed
    ]
    rows.sort(key=lambda e: (-e["failed"], -e["candidates"], e["lab"], e["position"]))
    return rows[:limit]


def _qualifies(person: dict[str, Any], role: dict[str, Any]) -> bool:
    need = int(role["level"])
    for what in role["judged_on"]:
        have = person["overall"] if what == "overall" else person["levels"].get(what, 0)
        if have < need:
            return False
    return True


def team_readiness(people: list[dict[str, Any]], teams: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each team composition, who fills which role (each person one seat) and the gaps.

    Seats go by a maximum matching (augmenting paths), so a strong candidate is not spent on a seat
    someone else could fill while a harder one stays empty.
    """
    out: list[dict[str, Any]] = []
    for team in teams:
        seats: list[int] = []  # role index per seat
        for i, role in enumerate(team["roles"]):
            seats += [i] * int(role["count"])
        can = [[p for p, person in enumerate(people) if _qualifies(person, team["roles"][r])] for r in seats]
        holder: dict[int, int] = {}  # person -> seat

        def place(seat: int, visited: set[int], can: list[list[int]] = can, holder: dict[int, int] = holder) -> bool:
            for p in can[seat]:
                if p in visited:
                    continue
                visited.add(p)
                if p not in holder or place(holder[p], visited):
                    holder[p] = seat
                    return True
            return False

        # hardest seats (fewest candidates) first keeps the matching search short
        for seat in sorted(range(len(seats)), key=lambda s: len(can[s])):
            place(seat, set())
        filled: dict[int, list[str]] = {}
        for p, seat in holder.items():
            filled.setdefault(seats[seat], []).append(people[p]["candidate"])
        roles = []
        for i, role in enumerate(team["roles"]):
            names = sorted(filled.get(i, []))
            entry = {
                "role": str(role["role"]),
                "count": int(role["count"]),
                "level": int(role["level"]),
                "up_to": int(role.get("up_to", role["level"])),
                "judged_on": [str(x) for x in role["judged_on"]],
                "filled_by": names,
                "gap": int(role["count"]) - len(names),
            }
            if role.get("note"):
                entry["note"] = str(role["note"])
            roles.append(entry)
        out.append(
            {
                "id": str(team["id"]),
                "name": str(team["name"]),
                "gpus": str(team["gpus"]),
                "ready": all(r["gap"] == 0 for r in roles),
                "roles": roles,
            }
        )
    return out


def build(
    cohort: str,
    records: Sequence[AttemptRecord],
    catalogue: Any,
    rules: Any,
    *,
    candidates: Sequence[str] | None = None,
    ungraded: Sequence[UngradedRecord] = (),
    identities: Mapping[str, Mapping[str, str]] | None = None,
    now: dt.datetime | None = None,
    database_flags: Sequence[str] = (),
) -> dict[str, Any]:
    """The cohort report document, validated. ``candidates`` adds people with no attempt yet; ``ungraded``
    are the candidates a grade run could not grade (each gets a row that says so); ``identities`` are who
    each candidate is in the school's systems (from the candidates file), for an LMS import.
    ``database_flags``: what the attempts database read tells of itself as a whole (rows missing at its end,
    :func:`assessor.reports.documents.database_findings`)."""
    from assessor.labs import levels as level_rule
    from assessor.labs.model import DOMAINS
    from assessor.reports.content import load_data

    labs = {x.id: x for x in catalogue.labs}
    people_records: dict[str, list[AttemptRecord]] = {name: [] for name in candidates or ()}
    for r in records:
        people_records.setdefault(r.candidate, []).append(r)
    missed: dict[str, list[UngradedRecord]] = {}
    for u in ungraded:
        if candidates and u.candidate not in candidates:
            continue
        missed.setdefault(u.candidate, []).append(u)
        people_records.setdefault(u.candidate, [])
    people: list[dict[str, Any]] = []
    distribution = {d: [0] * 6 for d in DOMAINS}
    overall = [0] * 6
    attempted_labs: set[str] = set()
    for name in sorted(people_records):
        mine = people_records[name]
        levels = level_rule.compute(rules, catalogue.labs, passed_labs(mine, set(labs)))
        grouped = by_lab(mine)
        not_graded: dict[str, list[UngradedRecord]] = {}
        for u in missed.get(name, []):
            not_graded.setdefault(u.lab_id, []).append(u)
        cells: dict[str, dict[str, Any]] = {}
        for lab_id in sorted(set(grouped) | set(not_graded)):
            attempted_labs.add(lab_id)
            cells[lab_id] = lab_cell(grouped.get(lab_id, []), not_graded.get(lab_id, []))
        for d in DOMAINS:
            distribution[d][levels.domains[d].level] += 1
        overall[levels.overall] += 1
        person: dict[str, Any] = {
            "candidate": name,
            "overall": levels.overall,
            "levels": {d: levels.domains[d].level for d in DOMAINS},
            "labs": cells,
            "flags": sorted({f"{lab}: {f}" for lab, c in cells.items() for f in c["flags"]}),
        }
        who = {k: str(v) for k, v in (identities or {}).get(name, {}).items() if v}
        if who:
            person["identity"] = who
        people.append(person)
    order = {d: i for i, d in enumerate(DOMAINS)}
    columns: list[dict[str, Any]] = []
    for lab_id in attempted_labs:
        lab = labs.get(lab_id)
        sample = next((r for rs in people_records.values() for r in rs if r.lab_id == lab_id), None)
        columns.append(
            {
                "lab": lab_id,
                "title": lab.title if lab else "(not in this catalogue)",
                "domain": lab.domain if lab else ((sample.domain if sample else None) or "unknown"),
                "level": lab.level if lab else ((sample.level if sample else None) or 0),
            }
        )
    columns.sort(key=lambda e: (order.get(e["domain"], 99), e["level"], e["lab"]))
    teams = load_data("teams.yaml")
    doc = {
        "schema": SCHEMA_IDS["cohort"],
        "cohort": cohort,
        "generated_at": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "domains": list(DOMAINS),
        "labs": columns,
        "candidates": people,
        "level_distribution": [{"domain": d, "counts": distribution[d]} for d in DOMAINS]
        + [{"domain": "overall", "counts": overall}],
        "failed_checks": failed_checks(records),
        "teams": team_readiness(people, teams.get("teams") or []),
        "team_source": str(teams.get("source", "")),
        "database_flags": list(database_flags),
    }
    return validate(doc, "cohort")
