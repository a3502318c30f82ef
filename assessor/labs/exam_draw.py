"""Which labs a practice exam sets: tasks drawn in proportion to the exam's domain weights. Pure.

The rule (docs/EXAM.md):

1. An exam domain is *examined* when at least one lab that can run on the sitting's nodes trains it (its
   ``exam_domains`` names ``EXAM: Domain``). Domains no such lab trains are not examined, and said so.
2. Each examined domain is owed ``n x weight / (sum of examined weights)`` tasks, but never more than it has
   labs: what a domain cannot hold goes to the others in proportion to their weights, until every share fits.
3. Each domain gets the whole part of its share, and one task more with the chance of its fraction
   (systematic sampling over the domains in a random order), so over many sittings each domain's share of the
   tasks is its share of step 2, and every sitting has exactly ``n`` tasks.
4. Labs are picked at random among those that train the domain and are not yet set (the scarcest domain
   first); a lab is set once per sitting. A task counts for the one domain it was drawn for.

The same exam, labs, count and seed always give the same tasks.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol


class Drawable(Protocol):
    """What the draw needs of a lab."""

    @property
    def id(self) -> str: ...
    @property
    def exam_domains(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Drawn:
    """One task: the lab set, and the exam domain it was drawn for (its score counts there)."""

    lab: str
    domain: str


@dataclass(frozen=True)
class Plan:
    """A sitting's tasks and how they came about."""

    tasks: tuple[Drawn, ...]
    shares: dict[str, float]  # examined domain -> tasks it is owed (rule step 2)
    not_examined: tuple[str, ...] = ()  # exam domains no lab trains
    capped: tuple[str, ...] = ()  # examined domains with fewer labs than their weight asks for
    asked: int = 0  # tasks asked for; more than the labs there are: as many as there are
    eligible: dict[str, tuple[str, ...]] = field(default_factory=dict)  # examined domain -> labs training it


def eligible(exam: str, domains: Sequence[str], labs: Sequence[Drawable]) -> dict[str, tuple[str, ...]]:
    """Each exam domain -> the ids of the labs that train it (``exam_domains`` matched without regard to case)."""
    out: dict[str, tuple[str, ...]] = {}
    for domain in domains:
        key = f"{exam}: {domain}".casefold()
        out[domain] = tuple(sorted(lab.id for lab in labs if key in {d.casefold() for d in lab.exam_domains}))
    return out


def shares(weights: Mapping[str, Fraction], capacity: Mapping[str, int], n: int) -> dict[str, float]:
    """Tasks each domain is owed (rule step 2): ``n`` shared by weight, none above its capacity (the labs it
    has), what a full domain cannot take shared by the others by weight. Domains of capacity 0 get nothing."""
    total = min(n, sum(max(c, 0) for c in capacity.values()))
    open_ = {d for d, w in weights.items() if w > 0 and capacity.get(d, 0) > 0}
    out: dict[str, float] = dict.fromkeys(weights, 0.0)
    left = Fraction(total)
    while open_ and left > 0:
        weight = sum(weights[d] for d in open_)
        ask = {d: left * weights[d] / weight for d in open_}
        full = {d for d in open_ if ask[d] >= capacity[d]}
        if not full:
            for d in open_:
                out[d] = float(ask[d])
            break
        for d in full:
            out[d] = float(capacity[d])
            left -= capacity[d]
        open_ -= full
    return out


def _counts(owed: Mapping[str, float], rng: random.Random) -> dict[str, int]:
    """Whole tasks per domain (rule step 3): the whole part of each share, plus one with the chance of its
    fraction, by systematic sampling over the domains in a random order."""
    counts = {d: math.floor(s + 1e-9) for d, s in owed.items()}
    fractions = {d: max(0.0, s - counts[d]) for d, s in owed.items()}
    order = sorted(fractions)
    rng.shuffle(order)
    u = rng.random()
    edge = 0.0
    for d in order:
        low, edge = edge, edge + fractions[d]
        # how many of the points u, u+1, u+2, ... fall in [low, edge): 0 or 1, as a fraction is below 1
        counts[d] += max(0, math.ceil(edge - u - 1e-9) - math.ceil(low - u - 1e-9))
    return counts


def draw(exam: str, weights: Mapping[str, Fraction], labs: Sequence[Drawable], n: int, seed: int) -> Plan:
    """The tasks of one sitting of ``exam`` (its domain -> weight) from ``labs``: ``n`` of them (fewer when fewer
    labs train the exam), drawn by the rule above with the random numbers of ``seed``."""
    rng = random.Random(f"gpulab-exam\0{exam}\0{seed}")
    trains = eligible(exam, list(weights), labs)
    examined = {d: w for d, w in weights.items() if trains[d]}
    capacity = {d: len(trains[d]) for d in examined}
    distinct = len({lab for ids in trains.values() for lab in ids})
    owed = shares(examined, capacity, min(n, distinct))
    counts = _counts(owed, rng)
    taken: set[str] = set()
    tasks: list[Drawn] = []
    short = 0
    # the scarcest domain first, so a lab that trains two domains is not used up by the roomier one
    for d in sorted(examined, key=lambda d: (capacity[d] - counts[d], d)):
        free = [lab for lab in trains[d] if lab not in taken]
        picked = rng.sample(free, min(counts[d], len(free)))
        short += counts[d] - len(picked)
        taken.update(picked)
        tasks += [Drawn(lab, d) for lab in picked]
    while short > 0:  # a domain ran out of labs the others had taken: its task goes where labs are left
        room = [d for d in examined if any(lab not in taken for lab in trains[d])]
        if not room:
            break
        d = max(room, key=lambda d: (owed[d] - sum(t.domain == d for t in tasks), d))
        lab = rng.choice([lab for lab in trains[d] if lab not in taken])
        taken.add(lab)
        tasks.append(Drawn(lab, d))
        short -= 1
    rng.shuffle(tasks)
    total = sum(examined.values())
    capped = tuple(d for d in examined if capacity[d] < min(n, distinct) * examined[d] / total - 1e-9)
    return Plan(
        tasks=tuple(tasks),
        shares=owed,
        not_examined=tuple(d for d in weights if d not in examined),
        capped=capped,
        asked=n,
        eligible={d: trains[d] for d in examined},
    )
