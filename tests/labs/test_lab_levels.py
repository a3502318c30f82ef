"""The level rule, pinned by hand-worked cases (levels.yaml: pass_ratio 2/3, min_passed 1, weight_share 2/3)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs import levels


@dataclass(frozen=True)
class L:
    id: str
    domain: str
    level: int


# infiniband: 1 lab at level 2, 3 at level 3, 2 at level 4 -> needs 1, ceil(2/3*3)=2, ceil(2/3*2)=2
IB = [
    L("ib-201", "infiniband", 2),
    L("ib-301", "infiniband", 3),
    L("ib-302", "infiniband", 3),
    L("ib-303", "infiniband", 3),
    L("ib-401", "infiniband", 4),
    L("ib-402", "infiniband", 4),
]


@pytest.fixture(scope="module")
def rules() -> levels.Rules:
    return levels.load_rules()  # the shipped labs/levels.yaml and blueprints.yaml


def test_needed_uses_an_exact_two_thirds(rules):
    # 0.667 * 3 would round up to 3; the fraction 2/3 gives exactly 2
    assert [levels.needed(rules, n) for n in (1, 2, 3, 4, 6)] == [1, 2, 2, 3, 4]


def test_level_three_with_two_of_three_and_what_reaches_level_four(rules):
    d = levels.domain_level(rules, "infiniband", IB, {"ib-201", "ib-301", "ib-302"})
    assert d.level == 3 and d.name == "Professional"
    assert d.explanation == (
        "Level 3 (Professional) in infiniband: passed 1 of 1 level-2 labs and 2 of 3 level-3 labs; "
        "to reach level 4 (Expert), pass ib-401 and ib-402 (2 of 2 level-4 labs needed)"
    )


def test_one_of_three_level_three_labs_stays_at_level_two(rules):
    d = levels.domain_level(rules, "infiniband", IB, {"ib-201", "ib-303"})
    assert d.level == 2
    assert "to reach level 3 (Professional), pass ib-301 or ib-302 (2 of 3 level-3 labs needed)" in d.explanation


def test_higher_passes_do_not_skip_an_unpassed_lower_level(rules):
    d = levels.domain_level(rules, "infiniband", IB, {"ib-301", "ib-302", "ib-401", "ib-402"})
    assert d.level == 0 and d.name == "not yet Foundation"
    assert "to reach level 2 (Operational), pass ib-201" in d.explanation
    assert "already passed 2 level-3, 2 level-4 lab(s), which count once level 2 is reached" in d.explanation


def test_everything_passed_is_the_top_level_with_labs(rules):
    d = levels.domain_level(rules, "infiniband", IB, {lab.id for lab in IB})
    assert d.level == 4
    assert d.explanation.endswith("that is the highest level with labs in this domain")


def test_unattempted_labs_are_simply_not_passed(rules):
    d = levels.domain_level(rules, "infiniband", IB, set())
    assert d.level == 0 and "no level passed yet" in d.explanation


def test_domain_without_labs_is_level_zero(rules):
    assert levels.domain_level(rules, "mig", IB, {"ib-201"}).level == 0


def _two_domain_rules(rules: levels.Rules, share: str, trains: dict[str, tuple[str, ...]]) -> levels.Rules:
    bp = levels.Blueprints(1, "test", {"X": {"A": Fraction(60), "B": Fraction(40)}})
    return replace(rules, blueprints=bp, overall_exams=("X",), weight_share=Fraction(share), trains=trains)


MIX = [L("drv-101", "drivers", 1), L("drv-301", "drivers", 3), L("mig-101", "mig", 1), L("mig-301", "mig", 3)]


def test_overall_needs_two_thirds_of_the_weight_at_a_level(rules):
    r = _two_domain_rules(rules, "2/3", {"drivers": ("X: A",), "mig": ("X: B",)})
    assert levels.domain_weights(r, ["drivers", "mig"]) == {"drivers": Fraction(3, 5), "mig": Fraction(2, 5)}
    # drivers (60 %) at level 3, mig (40 %) at level 1: only 60 % is at level 3, 100 % at level 1
    out = levels.compute(r, MIX, {"drv-101", "drv-301", "mig-101"})
    assert out.domains["drivers"].level == 3 and out.domains["mig"].level == 1
    assert out.overall == 1
    # mig has no level-2 labs: its next level is 3
    assert "to reach level 2 (Operational), bring mig (40 %) to level 3" in out.explanation
    # with a 1/2 share the 60 % at level 3 is enough
    assert (
        levels.compute(_two_domain_rules(rules, "1/2", r.trains), MIX, {"drv-101", "drv-301", "mig-101"}).overall == 3
    )


def test_an_exam_domain_trained_by_two_lab_domains_is_shared(rules):
    r = _two_domain_rules(rules, "2/3", {"drivers": ("X: A",), "mig": ("X: A", "X: B")})
    # A (60) split 30/30, B (40) to mig alone: drivers 30 %, mig 70 %
    assert levels.domain_weights(r, ["drivers", "mig"]) == {"drivers": Fraction(3, 10), "mig": Fraction(7, 10)}
    assert levels.compute(r, MIX, {"mig-101", "mig-301", "drv-101"}).overall == 3


def test_shipped_weights_cover_every_domain_and_sum_to_one(rules):
    weights = levels.domain_weights(rules)
    assert set(weights) == {"drivers", "mig", "nccl", "infiniband", "health", "slurm", "containers", "design"}
    assert sum(weights.values()) == 1
    assert all(w > 0 for w in weights.values())


def test_blueprints_are_versioned_and_each_exam_sums_to_100():
    bp = levels.load_blueprints()
    assert bp.version >= 1 and bp.as_of
    assert bp.exams["NCP-AII"]["Cluster Test and Verification"] == 33
    assert all(sum(d.values()) == 100 for d in bp.exams.values())


def test_a_blueprint_that_does_not_add_up_names_file_line_and_key(tmp_path: Path):
    bad = tmp_path / "blueprints.yaml"
    bad.write_text("version: 1\nas_of: x\nexams:\n  E:\n    domains:\n      A: 60\n      B: 30\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"blueprints.yaml:5: weights of E add up to 90, not 100 \(key exams.E.domains\)"
    ):
        levels.load_blueprints(bad)


def test_rule_words_state_the_parameters(rules):
    words = levels.rule_words(rules)
    assert "ceil(2/3 x labs at that level)" in words and "67 %" in words


TOPS = [
    L("drv-101", "drivers", 1),
    L("drv-301", "drivers", 3),  # drivers' labs stop at level 3
    L("mig-101", "mig", 1),
    L("mig-501", "mig", 5),
]


def test_a_domain_whose_labs_stop_below_a_level_counts_toward_it_once_mastered(rules):
    r = _two_domain_rules(rules, "2/3", {"drivers": ("X: A",), "mig": ("X: B",)})  # drivers 60 %, mig 40 %
    everything = {lab.id for lab in TOPS}
    out = levels.compute(r, TOPS, everything)
    assert out.overall == 5  # mig shows level 5; drivers is at the top of its labs
    assert out.explanation.startswith(
        "Overall level 5 (Architect): domains at level 5 or above, or at the top of their labs "
        "(drivers 60 %, mig 40 %) carry 100 % of the blueprint weight"
    )
    # drivers not mastered: its 60 % does not count above its own level
    assert levels.compute(r, TOPS, everything - {"drv-301"}).overall == 1
    # drivers mastered (60 %) is not two thirds: mig must count too, and its next labs are at level 5
    out = levels.compute(r, TOPS, {"drv-101", "drv-301", "mig-101"})
    assert out.overall == 1
    assert out.explanation.endswith("; to reach level 2 (Operational), bring mig (40 %) to level 5")
    # with a 1/2 share drivers alone carries level 3, the level it shows itself, but not 4 or 5
    assert levels.compute(_two_domain_rules(rules, "1/2", r.trains), TOPS, {"drv-101", "drv-301"}).overall == 3


def test_passing_every_shipped_lab_is_overall_architect_and_design_is_what_level_5_needs(rules):
    from assessor.labs.loader import default_root, load_catalogue

    catalogue = load_catalogue(default_root()).labs
    every = {lab.id for lab in catalogue}
    assert levels.compute(rules, catalogue, every).overall == 5
    without_design_5 = every - {lab.id for lab in catalogue if lab.level == 5}
    out = levels.compute(rules, catalogue, without_design_5)
    assert out.overall == 4
    assert out.explanation.endswith("; to reach level 5 (Architect), bring design (8 %) to level 5")
