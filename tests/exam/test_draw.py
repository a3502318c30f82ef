"""The draw follows the blueprint: over many seeds each exam domain's share of the tasks is its weight in
labs/blueprints.yaml (among the domains the catalogue's labs train), a domain with fewer labs than its weight
asks gets all of them, and a domain no lab trains gets none. Checked against the data files themselves."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
import yaml

from assessor.labs.exam_draw import draw, shares
from assessor.labs.exam_spec import load_exams
from assessor.labs.loader import default_root, load_catalogue

SEEDS = 500
TOLERANCE = 0.03  # of a domain's share of the tasks; 500 sittings put 3 standard errors near 0.015

EXAMS = load_exams(default_root())
LABS = [x for x in load_catalogue(default_root()).labs if "simulator" in x.runs_on]
BLUEPRINTS = yaml.safe_load((default_root() / "blueprints.yaml").read_text(encoding="utf-8"))["exams"]


def trained(exam: str) -> dict[str, int]:
    """Each exam domain of blueprints.yaml -> how many labs name it in their exam_domains."""
    out = {}
    for domain in BLUEPRINTS[exam]["domains"]:
        key = f"{exam}: {domain}".casefold()
        out[domain] = sum(1 for x in LABS if key in {d.casefold() for d in x.exam_domains})
    return out


def capped(exam: str, n: int) -> set[str]:
    """The domains whose weight asks for more tasks than they have labs (shares of the rest re-spread)."""
    weights = {d: w for d, w in BLUEPRINTS[exam]["domains"].items() if trained(exam)[d]}
    out: set[str] = set()
    left = n
    while True:
        open_ = {d: w for d, w in weights.items() if d not in out}
        total = sum(open_.values())
        full = {d for d, w in open_.items() if left * w / total > trained(exam)[d]}
        if not full:
            return out
        out |= full
        left -= sum(trained(exam)[d] for d in full)


@pytest.mark.parametrize("exam", list(BLUEPRINTS))
def test_drawn_tasks_follow_the_blueprint_weights_over_many_seeds(exam: str) -> None:
    spec = EXAMS.get(exam)
    counts: Counter[str] = Counter()
    tasks = 0
    for seed in range(SEEDS):
        plan = draw(exam, spec.weights, LABS, spec.tasks, seed)
        assert len(plan.tasks) == spec.tasks
        assert len({t.lab for t in plan.tasks}) == len(plan.tasks)  # a lab is set once per sitting
        for t in plan.tasks:  # each task trains the domain it counts for
            lab = next(x for x in LABS if x.id == t.lab)
            assert f"{exam}: {t.domain}".casefold() in {d.casefold() for d in lab.exam_domains}
        counts.update(t.domain for t in plan.tasks)
        tasks += len(plan.tasks)
    have = trained(exam)
    full = capped(exam, spec.tasks)
    weights = BLUEPRINTS[exam]["domains"]
    free = {d: w for d, w in weights.items() if have[d] and d not in full}
    for domain in weights:
        if not have[domain]:
            assert counts[domain] == 0, f"{exam}: {domain} has no lab but was drawn"
        elif domain in full:  # all its labs, every sitting
            assert counts[domain] / SEEDS == pytest.approx(have[domain], abs=0.05), domain
    spread = sum(counts[d] for d in free)
    for domain, weight in free.items():
        share = counts[domain] / spread
        expected = weight / sum(free.values())
        assert abs(share - expected) < TOLERANCE, (
            f"{exam}: {domain} drew {share:.3f} of the tasks, weight {expected:.3f}"
        )


def test_the_same_seed_draws_the_same_tasks_and_another_seed_mostly_not() -> None:
    spec = EXAMS.get("NCP-AII")
    first = draw("NCP-AII", spec.weights, LABS, spec.tasks, 11)
    assert draw("NCP-AII", spec.weights, LABS, spec.tasks, 11).tasks == first.tasks
    others = {draw("NCP-AII", spec.weights, LABS, spec.tasks, s).tasks for s in range(12, 32)}
    assert len(others) > 10


def test_domains_no_lab_trains_are_named_and_never_drawn() -> None:
    spec = EXAMS.get("NCA-AIIO")
    plan = draw("NCA-AIIO", spec.weights, LABS, spec.tasks, 3)
    untrained = [d for d, n in trained("NCA-AIIO").items() if not n]
    assert list(plan.not_examined) == untrained
    assert not {t.domain for t in plan.tasks} & set(untrained)


def test_shares_spread_what_a_full_domain_cannot_hold_by_weight() -> None:
    weights = {"a": Fraction(50), "b": Fraction(30), "c": Fraction(20)}
    # 10 tasks: a is owed 5 but has 2 labs; the other 8 go to b and c as 30:20
    assert shares(weights, {"a": 2, "b": 9, "c": 9}, 10) == pytest.approx({"a": 2, "b": 4.8, "c": 3.2})
    # no domain full: plain proportions
    assert shares(weights, {"a": 9, "b": 9, "c": 9}, 10) == pytest.approx({"a": 5, "b": 3, "c": 2})
    # more tasks than labs: every lab
    assert shares(weights, {"a": 1, "b": 1, "c": 1}, 10) == pytest.approx({"a": 1, "b": 1, "c": 1})


def test_asking_for_more_tasks_than_labs_sets_every_lab_once() -> None:
    spec = EXAMS.get("NCA-AIIO")
    plan = draw("NCA-AIIO", spec.weights, LABS, 100, 5)
    eligible = {lab for ids in plan.eligible.values() for lab in ids}
    assert sorted(t.lab for t in plan.tasks) == sorted(eligible) and plan.asked == 100
