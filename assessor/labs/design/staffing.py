"""A staffing plan for a GPU cluster, graded against the team profiles and salary bands of reports/teams.yaml.

The profiles and bands are the teams of ``reports/teams.yaml`` (cluster size -> roles at levels -> yearly
cost), the ones the cohort report measures a cohort against, and the salary bands by level kept there.
The size bands meet at their ends (10-100, 100-1,000, 1,000+); here each lower end is inclusive: under
100 GPUs small, 100-999 medium, 1,000 and more large.

A role is covered when enough people hold it at or above its lowest required level (a level-4 engineer in
a level 2-3 role covers it, at a level-4 salary). Every salary must lie in its level's band, the stated
yearly cost must be the sum of the rows, and that sum must fall in the profile's cost band.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.labs.design.answer import Schema, check_section
from assessor.labs.design.base import as_located, check_parts, grader, parts_param, problems_message
from assessor.yamlio import Located

SECTION = "staffing"


@dataclass(frozen=True)
class RoleNeed:
    role: str
    count: int
    min_level: int
    max_level: int

    def describe(self) -> str:
        levels = f"L{self.min_level}" if self.min_level == self.max_level else f"L{self.min_level}-{self.max_level}"
        return f"{self.count} x {self.role} ({levels})"


@dataclass(frozen=True)
class TeamProfile:
    size: str
    min_gpus: int
    max_gpus: int | None  # None: no upper bound
    roles: tuple[RoleNeed, ...]
    cost_k: tuple[int, int]  # yearly cost band, thousands of USD


def _load_teams() -> tuple[dict[str, TeamProfile], dict[int, tuple[int, int]]]:
    """The team profiles and salary bands, from reports/teams.yaml: the same teams the cohort report uses."""
    import yaml

    from assessor import content

    with open(content.folder("reports") / "teams.yaml", encoding="utf-8") as f:
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    profiles = {
        team["id"]: TeamProfile(
            team["id"],
            int(team["min_gpus"]),
            None if team["max_gpus"] is None else int(team["max_gpus"]),
            tuple(
                RoleNeed(r["role"].replace(" ", "_"), int(r["count"]), int(r["level"]), int(r["up_to"]))
                for r in team["roles"]
            ),
            (int(team["cost_k"][0]), int(team["cost_k"][1])),
        )
        for team in data["teams"]
    }
    bands = {int(level): (int(lo), int(hi)) for level, (lo, hi) in data["salary_bands_k"].items()}
    return profiles, bands


PROFILES, SALARY_BANDS_K = _load_teams()

ROLES: tuple[str, ...] = tuple(dict.fromkeys(need.role for p in PROFILES.values() for need in p.roles))

PARTS = ("size", "roles", "salaries", "cost")

SCHEMA: Schema = {
    "size": "str",
    "team": [{"role": "str", "count": "count", "level": "count", "salary_k": "number"}],
    "yearly_cost_k": "number",
}

ANSWER_FORMAT = (
    """\
staffing:
  size: <small | medium | large>
  team:                      # one row per role and level; a role may have several rows
    - {role: <role id>, count: <people>, level: <1-5>, salary_k: <yearly salary each, k USD>}
  yearly_cost_k: <sum of count x salary_k, k USD>
role ids: """
    + ", ".join(ROLES)
    + "\n"
)


def normalise_role(name: str) -> str:
    """``Operations Engineers`` -> ``operations_engineer``."""
    key = "_".join(name.strip().lower().replace("-", " ").split())
    return key[:-1] if key.endswith("s") and key[:-1] in ROLES else key


def size_for(gpus: int) -> TeamProfile:
    """The team profile for a cluster of ``gpus`` GPUs."""
    if gpus < 0:
        raise ValueError(f"a cluster cannot have {gpus} GPUs")
    for profile in PROFILES.values():
        if gpus >= profile.min_gpus and (profile.max_gpus is None or gpus <= profile.max_gpus):
            return profile
    raise ValueError(f"no team profile for {gpus} GPUs")  # unreachable: the bands cover every count


def validate(located: Located) -> None:
    """Keys and types, then the values only this section knows: size names, role ids, levels 1-5."""
    section = check_section(located, SECTION, SCHEMA)
    if section["size"].strip().lower() not in PROFILES:
        raise located.error((SECTION, "size"), f"size must be one of {', '.join(PROFILES)}, got {section['size']!r}")
    for i, row in enumerate(section["team"]):
        if normalise_role(row["role"]) not in ROLES:
            raise located.error(
                (SECTION, "team", i, "role"), f"unknown role {row['role']!r} (roles: {', '.join(ROLES)})"
            )
        if not 1 <= row["level"] <= 5:
            raise located.error((SECTION, "team", i, "level"), f"level must be 1-5, got {row['level']}")
        if row["count"] < 1:
            raise located.error((SECTION, "team", i, "count"), "count must be at least 1 (leave the row out)")


@grader(
    "design.staffing",
    title="Staffing plan",
    section=SECTION,
    params=(Param("gpus", "int", None, "GPUs in the cluster the team runs (required)"), parts_param(PARTS)),
    doc=(
        'Grades a staffing plan against the team profiles of reports/teams.yaml (docs/LEVELS.md, "Team '
        "profiles\"): the size band for the cluster's GPU "
        "count, every role of that profile covered by enough people at or above its level, every salary in "
        "its level's band, the yearly cost equal to the sum of the rows and within the profile's cost band. A "
        "part graded on its own (parts) passes with words about that part only."
    ),
    answer_format=ANSWER_FORMAT,
    validate=validate,
)
def grade_staffing(answer: dict[str, Any], params: dict[str, Any]) -> Result:
    """Grade the staffing section for a cluster of ``params['gpus']`` GPUs."""
    if params.get("gpus") is None:
        raise ValueError("design.staffing needs the gpus parameter")
    profile = size_for(int(params["gpus"]))
    validate(as_located(answer))
    parts = check_parts("design.staffing", params.get("parts"), PARTS) or list(PARTS)
    section = answer[SECTION]
    rows = [
        (normalise_role(r["role"]), int(r["count"]), int(r["level"]), float(r["salary_k"])) for r in section["team"]
    ]
    fails: list[str] = []
    hints: list[str] = []
    size = str(section["size"]).strip().lower()
    if "size" in parts and size != profile.size:
        fails.append(f"size {size} is wrong for {params['gpus']} GPUs")
        hints.append("small: under 100 GPUs, medium: 100-999, large: 1,000 and more")
    covered: dict[str, int] = {}
    for need in profile.roles:
        covered[need.role] = sum(c for role, c, level, _ in rows if role == need.role and level >= need.min_level)
    short = [n for n in profile.roles if covered[n.role] < n.count]
    if "roles" in parts and short:
        fails += [f"{n.role}: {covered[n.role]} at L{n.min_level}+, need {n.count}" for n in short]
        hints.append(f"a {profile.size} cluster needs " + "; ".join(n.describe() for n in profile.roles))
    if "salaries" in parts:
        off_band = [
            f"{role} at L{level} paid {salary:g}k, outside the L{level} band "
            f"{SALARY_BANDS_K[level][0]}-{SALARY_BANDS_K[level][1]}k"
            for role, _c, level, salary in rows
            if not SALARY_BANDS_K[level][0] <= salary <= SALARY_BANDS_K[level][1]
        ]
        fails += off_band
        if off_band:
            hints.append(
                "salary bands (k USD): " + ", ".join(f"L{lv} {a}-{b}" for lv, (a, b) in SALARY_BANDS_K.items())
            )
    total = sum(count * salary for _, count, _, salary in rows)
    stated = float(section["yearly_cost_k"])
    low, high = profile.cost_k
    if "cost" in parts:
        if abs(stated - total) > 0.5:
            fails.append(f"yearly_cost_k {stated:g} is not the sum of the team's rows (count x salary_k)")
        if not low <= total <= high:
            fails.append(f"the team's rows add up to a yearly cost outside the {profile.size} band {low}-{high}k")
            hints.append("trade levels and salaries within the bands until the total fits")
    people = sum(count for _, count, _, _ in rows)
    observed, expected = _shown(parts, size, covered, rows, stated, profile)
    if fails:
        return Result(
            "design.staffing",
            "fail",
            problems_message(fails),
            observed=observed,
            expected=expected,
            hint="; ".join(hints) or None,
        )
    if set(parts) == set(PARTS):
        message = f"{profile.size} team of {people} covers every role; {total:g}k a year within {low}-{high}k"
    else:
        # a part's pass says only what it graded: never a figure another part grades (the cost, when only the
        # salaries are graded, is not "within" anything it was not checked against)
        said = {
            "size": f"size {size} is right for {params['gpus']} GPUs",
            "roles": f"every role the cluster needs is covered ({people} people)",
            "salaries": "every salary lies in its level's band",
            "cost": f"the yearly cost {total:g}k is the sum of the rows and within {low}-{high}k",
        }
        message = "; ".join(said[p] for p in PARTS if p in parts)
    return Result("design.staffing", "pass", message, observed=observed, expected=expected)


def _shown(
    parts: list[str],
    size: str,
    covered: dict[str, int],
    rows: list[tuple[str, int, int, float]],
    stated: float,
    profile: TeamProfile,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the graded parts observed in the answer and expected of it (only those parts: a part's result gives
    no other part away)."""
    observed: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    if "size" in parts:
        observed["size"] = size
        expected["size"] = profile.size
    if "roles" in parts:
        observed["roles covered"] = covered
        expected["roles"] = [n.describe() for n in profile.roles]
    if "salaries" in parts:
        observed["salaries"] = [f"{role} L{level} {salary:g}k" for role, _c, level, salary in rows]
        expected["salary bands"] = [f"L{lv} {a}-{b}k" for lv, (a, b) in SALARY_BANDS_K.items()]
    if "cost" in parts:
        observed["yearly cost"] = f"{stated:g}k"
        expected["yearly cost"] = f"the sum of the rows, within {profile.cost_k[0]}-{profile.cost_k[1]}k"
    return observed, expected
