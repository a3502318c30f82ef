"""Tickets: one action policy for every ticket lab, and no oracle (docs/TICKETS.md).

Each ticket lab is graded by the one policy: the finding's first action is accepted, an escalation list that
starts there and climbs is accepted, a wrong first action is refused, two faults swapped earn nothing. The
feedback never names a component the ticket did not name, nor says which named one is faulty. A ticket is
graded a limited number of times, counted in the attempts database, and each grade says which it is. The
lab READMEs and docs/TICKETS.md say what the grader does.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from assessor.checks.result import Result
from assessor.errors import InputError
from assessor.labs import attempts, grading, loader
from assessor.labs.design import GRADERS, run_grader
from assessor.labs.design.diagnosis import ACTIONS, FINDINGS, POLICY, first_action, policy_line
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, load_catalogue
from assessor.labs.model import DEFAULT_TICKET_GRADES, Lab

ROOT = Path(__file__).resolve().parents[2]
LABS = {lab.id: lab for lab in load_catalogue(default_root()).labs}
TICKET_LABS = sorted(lab_id for lab_id, lab in LABS.items() if lab.grades_ticket)
NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)


def expected_of(lab: Lab) -> list[dict[str, Any]]:
    [check] = [c for c in lab.checks if c.id == "design.diagnosis"]
    return list(check.params["expected"])


def params_of(lab: Lab, **more: Any) -> dict[str, Any]:
    [check] = [c for c in lab.checks if c.id == "design.diagnosis"]
    return {**check.params, **more}


def rows_for(lab: Lab, actions: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """A ticket row for each faulty component of ``lab``: its finding, and ``actions[finding]`` (default: the
    policy's first action alone)."""
    out = []
    for item in expected_of(lab):
        chosen = (actions or {}).get(item["finding"], [first_action(item["finding"])])
        out.append({"component": item["component"], "finding": item["finding"], "actions": chosen, "why": "seen"})
    return out


def grade(lab: Lab, rows: list[dict[str, Any]], **params: Any) -> Result:
    return run_grader(GRADERS["design.diagnosis"], {"diagnosis": {"findings": rows}}, params_of(lab, **params))


def lab_copy(lab_id: str, tmp_path: Path) -> Path:
    """A writable copy of a shipped lab's folder, at ``<domain>/<id>`` as the loader wants it."""
    import shutil

    lab = LABS[lab_id]
    folder = tmp_path / lab.domain / lab.id
    shutil.copytree(lab.path, folder)
    return folder


def escalation(finding: str) -> list[str]:
    """The finding's whole ladder, one action per rung, in order."""
    return [rung[-1] for rung in POLICY[finding]]


# ---- one policy -------------------------------------------------------------------------------------------


def test_every_finding_has_one_first_action_and_every_action_is_in_the_vocabulary() -> None:
    assert set(POLICY) == set(FINDINGS)
    for finding, ladder in POLICY.items():
        assert len(ladder[0]) == 1, f"{finding}: one action is accepted first"
        actions = [a for rung in ladder for a in rung]
        assert set(actions) <= set(ACTIONS) and len(actions) == len(set(actions)), finding
    # the first actions of the issue: a reseat before a replacement before an RMA
    assert first_action("degraded-width") == "reseat-gpu"
    assert first_action("degraded-rate") == first_action("no-link") == "reseat-cable"
    assert first_action("off-the-bus") == "power-cycle"


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_the_first_action_alone_is_accepted(lab_id: str) -> None:
    result = grade(LABS[lab_id], rows_for(LABS[lab_id]))
    assert result.status == "pass", result.message


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_an_escalation_list_in_order_is_accepted(lab_id: str) -> None:
    lab = LABS[lab_id]
    ladders = {item["finding"]: escalation(item["finding"]) for item in expected_of(lab)}
    assert grade(lab, rows_for(lab, ladders)).status == "pass"


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_a_wrong_first_action_is_refused_and_said_so_from_the_policy_alone(lab_id: str) -> None:
    lab = LABS[lab_id]
    for item in expected_of(lab):
        finding = item["finding"]
        wrong = next(a for a in ACTIONS if a != first_action(finding))
        rows = rows_for(lab, {finding: [wrong]})
        result = grade(lab, rows, min_right=0)
        assert result.status == "fail", (lab_id, wrong)
        assert f"{item['component']}: {wrong} is " in result.message  # the candidate's own row, the policy's words


def test_an_escalation_that_climbs_back_or_leaves_the_ladder_is_refused() -> None:
    lab = LABS["ib-201"]
    for actions in (["reseat-cable", "check-switch-port", "replace-cable"], ["reseat-cable", "rma-gpu"]):
        assert grade(lab, rows_for(lab, {"no-link": actions})).status == "fail", actions
    # two alternatives of one rung, in either order, are an escalation
    both = ["reseat-cable", "replace-transceiver", "replace-cable", "check-switch-port"]
    assert grade(lab, rows_for(lab, {"no-link": both})).status == "pass"


def test_the_issues_inconsistencies_are_gone() -> None:
    # health-403: an RMA is not the first action for a narrow link
    assert grade(LABS["health-403"], rows_for(LABS["health-403"], {"degraded-width": ["rma-gpu"]})).status == "fail"
    # ib-301: a reseat is the first action for a degraded rate
    assert grade(LABS["ib-301"], rows_for(LABS["ib-301"], {"degraded-rate": ["reseat-cable"]})).status == "pass"
    # ib-201: one first action for no link, not four
    for late in ("replace-cable", "replace-transceiver", "check-switch-port"):
        assert grade(LABS["ib-201"], rows_for(LABS["ib-201"], {"no-link": [late]})).status == "fail", late


def test_swapped_faults_earn_nothing_where_the_readme_says_so() -> None:
    lab = LABS["ib-402"]
    assert "the two faults swapped" in lab.readme.read_text(encoding="utf-8")
    one, two = expected_of(lab)
    swapped = [
        {"component": one["component"], "finding": two["finding"], "action": first_action(two["finding"]), "why": "x"},
        {"component": two["component"], "finding": one["finding"], "action": first_action(one["finding"]), "why": "x"},
    ]
    # neither the full check nor its partial rule (one of two right) passes
    assert grade(lab, swapped).status == "fail"
    assert grade(lab, swapped, min_right=1).status == "fail"
    g = grading.grade_answer(lab, {"diagnosis": {"findings": swapped}}, graded_at=NOW, started_at=NOW)
    assert g.percent == 0.0


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_the_lab_names_findings_only_and_the_loader_refuses_actions_of_its_own(lab_id: str, tmp_path: Path) -> None:
    assert all(set(item) == {"component", "finding"} for item in expected_of(LABS[lab_id]))
    folder = lab_copy(lab_id, tmp_path)
    text = (folder / "lab.yaml").read_text(encoding="utf-8")
    bad = re.sub(r"(finding: [a-z-]+)\}", r"\1, actions: [rma-gpu]}", text, count=1)
    assert bad != text
    (folder / "lab.yaml").write_text(bad, encoding="utf-8")
    with pytest.raises(InputError, match=r"a lab names the component and its finding only"):
        loader.load_lab(folder)


# ---- no oracle -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_feedback_never_names_a_component_the_ticket_did_not_name_nor_which_is_faulty(lab_id: str) -> None:
    lab = LABS[lab_id]
    faulty = [item["component"] for item in expected_of(lab)]
    finding = expected_of(lab)[0]["finding"]
    # a guess: a healthy component, with a finding and the policy's first action for it
    healthy = next(name for name in ("mlx5_9", "mlx5_8") if name not in faulty)
    guess = {"component": healthy, "finding": finding, "action": first_action(finding), "why": "a guess"}
    alone = grade(lab, [guess])
    assert alone.status == "fail"
    shown = json.dumps(alone.to_json())
    assert not [name for name in faulty if name in shown]  # nothing the ticket left out
    assert "healthy" not in shown and healthy not in alone.message  # nor that the guess is healthy
    # the right rows and the guess beside them: how many are right, not which
    beside = grade(lab, [*rows_for(lab), guess])
    assert beside.status == "fail"
    assert beside.message == f"{len(faulty)} of your {len(faulty) + 1} rows right ({_faulty(len(faulty))} to diagnose)"
    assert not [name for name in [*faulty, healthy] if name in beside.message]


def _faulty(n: int) -> str:
    return f"{n} faulty component" + ("" if n == 1 else "s")


def test_a_wrong_row_and_a_healthy_row_read_the_same() -> None:
    lab = LABS["ib-402"]
    one, two = expected_of(lab)
    wrong_finding = [{"component": one["component"], "finding": "degraded-width", "action": "reseat-gpu", "why": "x"}]
    healthy = [{"component": "mlx5_0", "finding": one["finding"], "action": "reseat-cable", "why": "x"}]
    a, b = grade(lab, wrong_finding), grade(lab, healthy)
    assert a.message == b.message == "0 of your 1 row right (2 faulty components to diagnose)"
    assert two["component"] not in a.message + b.message


# ---- a limited number of ticket grades -------------------------------------------------------------------


def test_each_ticket_lab_chooses_its_limit_and_the_default_is_three() -> None:
    assert DEFAULT_TICKET_GRADES.limit == 3 and DEFAULT_TICKET_GRADES.penalty_percent == 0
    for lab_id in TICKET_LABS:
        assert LABS[lab_id].answer_grades is not None, lab_id
    assert LABS["health-403"].answer_grades is not None and LABS["health-403"].answer_grades.limit == 2
    assert all(LABS[i].answer_grades is None for i in LABS if LABS[i].is_design)  # design answers: unlimited


@pytest.mark.parametrize(
    ("grades", "message"),
    [
        ("{limit: 0}", "answer.grades.limit"),
        ("{limit: 2, penalty_percent: 120}", "answer.grades.penalty_percent"),
        ("{limit: 3, penalty_percent: 50}", "grade 3 of 3 would earn nothing"),
        ("{penalty_percent: 10}", "answer.grades"),
        ("{limit: 2, tries: 1}", "unknown key(s) tries"),
    ],
)
def test_the_grades_key_is_validated_with_its_line(grades: str, message: str, tmp_path: Path) -> None:
    folder = lab_copy("ib-201", tmp_path)
    text = (folder / "lab.yaml").read_text(encoding="utf-8")
    edited = re.sub(r"  grades: \{[^}]*\}", f"  grades: {grades}", text)
    assert edited != text
    (folder / "lab.yaml").write_text(edited, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        loader.load_lab(folder)
    assert message in str(exc.value) and "lab.yaml:" in str(exc.value)


def _ticket_grade(lab: Lab, rows: list[dict[str, Any]] | None) -> Grade:
    """A fresh grade of the lab's ticket alone (what a node lab's grade holds for its ticket)."""
    answer = {"diagnosis": {"findings": rows}} if rows is not None else None

    def evaluate(check_id: str, params: dict[str, Any]) -> Result:
        if check_id.startswith("design."):
            if answer is None:
                return Result(check_id, "error", grading.NO_TICKET)
            return grading.answer_evaluator(answer)(check_id, params)
        return Result(check_id, "pass", "the node part is done")

    return grading.score(lab, evaluate, graded_at=NOW, started_at=NOW)


def _graded_and_recorded(conn: Any, lab: Lab, start: attempts.Start, rows: list[dict[str, Any]] | None) -> Grade:
    """What `lab grade` does for a ticket lab: count the candidate's ticket grades in the attempts database,
    grade, apply the lab's limit, record."""
    used = attempts.ticket_grades(conn, start.candidate, lab.id)
    g = grading.limit_ticket_grades(_ticket_grade(lab, rows), lab, used)
    return attempts.record_grade(
        conn, g, lab=lab, candidate=start.candidate, target=start.target, identity=start.identity, start=start
    )


def _start(conn: Any, lab: Lab, who: str = "ana") -> attempts.Start:
    start = attempts.record_start(
        conn,
        candidate=who,
        lab_id=lab.id,
        target="mock:node.json",
        lab_hash=lab.digest,
        started_at=NOW,
        identity=attempts.Identity(host="lab-node"),
        baseline=None,
    )
    return start


def test_the_cap_is_counted_in_the_attempts_database_shown_and_enforced(tmp_path: Path) -> None:
    lab = LABS["ib-201"]  # limit 3, no penalty
    wrong = [{"component": "mlx5_3", "finding": "no-link", "action": "reseat-cable", "why": "a guess"}]
    with attempts.opened(tmp_path / "attempts.db") as conn:
        start = _start(conn, lab)
        # a grade without a ticket reads nothing and uses nothing
        nothing = _graded_and_recorded(conn, lab, start, None)
        assert nothing.recorded and "ticket_grades" not in nothing.extras
        assert attempts.ticket_grades(conn, "ana", lab.id) == 0
        seen = []
        for _ in range(3):
            g = _graded_and_recorded(conn, lab, start, wrong)
            (ticket,) = [s for s in g.scores if s.check == "design.diagnosis"]
            seen.append((ticket.status, ticket.note))
        assert seen == [("fail", f"ticket grade {n} of 3") for n in (1, 2, 3)]
        assert attempts.ticket_grades(conn, "ana", lab.id) == 3
        # the fourth ticket is right, and is not graded: the enumeration stops here
        fourth = _graded_and_recorded(conn, lab, start, rows_for(lab))
        (ticket,) = [s for s in fourth.scores if s.check == "design.diagnosis"]
        assert ticket.status == "error" and ticket.earned == 0 and ticket.expected is None
        assert "its 3 grades in this lab are used (grade 4)" in ticket.message
        assert fourth.percent == 0.0 and not fourth.passed
        assert fourth.to_json()["ticket_grades"] == {"this": 4, "limit": 3, "penalty_percent": 0.0}
        assert attempts.ticket_grades(conn, "ana", lab.id) == 3  # an ungraded ticket used nothing
        # a new start of the same lab gives no new grades: the count is the candidate's, over all their starts
        again = _graded_and_recorded(conn, lab, _start(conn, lab), rows_for(lab))
        assert [s.status for s in again.scores if s.check == "design.diagnosis"] == ["error"]
        # another candidate has grades of their own
        other = _graded_and_recorded(conn, lab, _start(conn, lab, "bea"), rows_for(lab))
        assert other.passed and other.to_json()["ticket_grades"]["this"] == 1


def test_the_penalty_takes_points_off_each_later_grade_and_says_so(tmp_path: Path) -> None:
    lab = LABS["health-403"]  # limit 2, 20 % off per earlier grade
    with attempts.opened(tmp_path / "attempts.db") as conn:
        start = _start(conn, lab)
        guess = [{"component": "GPU 9", "finding": "degraded-width", "action": "reseat-gpu", "why": "a guess"}]
        first = _graded_and_recorded(conn, lab, start, guess)
        second = _graded_and_recorded(conn, lab, start, rows_for(lab))
    (ticket,) = [s for s in second.scores if s.check == "design.diagnosis"]
    assert first.percent == 0.0
    assert ticket.status == "pass" and ticket.earned == 80.0 and second.percent == 80.0 and second.passed
    assert ticket.note == "ticket grade 2 of 2: 20 % less per earlier ticket grade, 80% of its points"


def test_lab_grade_counts_caps_and_shows_ticket_grades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from assessor.cli import main
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import save_state

    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "attempts.db"))
    lab = LABS["ib-201"]
    port = loader.pick_variant(lab, "ana")["ca"]
    state = tmp_path / "node.json"
    save_state(load_fixture("dgx-a100", host="lab-node"), state)
    target = f"mock:{state}"

    def gpulab(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return result.exit_code, result.stdout

    assert gpulab("lab", "start", "ib-201", "--target", target, "--candidate", "ana")[0] == 0
    ticket = tmp_path / "ticket.yaml"
    grade_args = ("lab", "grade", "ib-201", "--target", target, "--candidate", "ana", "--answer", str(ticket), "--json")
    notes = []
    for wrong in [p for p in ("mlx5_0", "mlx5_2", "mlx5_6", "mlx5_9") if p != port][:3]:
        ticket.write_text(
            f"diagnosis:\n  findings:\n    - {{component: {wrong}, finding: no-link, action: reseat-cable, why: x}}\n",
            encoding="utf-8",
        )
        doc = json.loads(gpulab(*grade_args)[1])
        notes += [c.get("note") for c in doc["checks"] if c["check"] == "design.diagnosis"]
        assert doc["recorded"] and doc["percent"] == 0.0
    assert notes == ["ticket grade 1 of 3", "ticket grade 2 of 3", "ticket grade 3 of 3"]
    ticket.write_text(
        f"diagnosis:\n  findings:\n    - {{component: {port}, finding: no-link, action: reseat-cable, why: x}}\n",
        encoding="utf-8",
    )
    code, out = gpulab(*grade_args)
    doc = json.loads(out)
    (check,) = [c for c in doc["checks"] if c["check"] == "design.diagnosis"]
    assert code == 1 and check["status"] == "error" and "its 3 grades in this lab are used" in check["message"]
    assert doc["ticket_grades"] == {"this": 4, "limit": 3, "penalty_percent": 0.0}


def test_a_grade_that_cannot_be_counted_does_not_grade_the_ticket() -> None:
    lab = LABS["ib-402"]
    g = grading.limit_ticket_grades(_ticket_grade(lab, rows_for(lab)), lab, None)
    (ticket,) = [s for s in g.scores if s.check == "design.diagnosis"]
    assert ticket.status == "error" and ticket.earned == 0 and "cannot be counted" in ticket.message
    assert g.percent == 0.0


def test_a_design_lab_answer_is_graded_as_often_as_asked() -> None:
    design = next(lab for lab in LABS.values() if lab.is_design)
    g = Grade(design.id, (), 0.0, 100.0, 70.0, NOW, NOW, 60)
    assert grading.limit_ticket_grades(g, design, 99) is g


# ---- the READMEs and the docs say what the grader does ------------------------------------------------------


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_the_readme_states_the_vocabulary_the_policy_and_the_labs_limit(lab_id: str) -> None:
    lab = LABS[lab_id]
    text = " ".join(lab.readme.read_text(encoding="utf-8").split())
    for word in (*FINDINGS, *ACTIONS):
        assert f"`{word}`" in text, (lab_id, word)
    for finding in POLICY:
        assert policy_line(finding) in text, (lab_id, finding)
    limits = lab.answer_grades
    assert limits is not None
    assert text.count(f"at most {limits.limit} times") >= 2, lab_id  # in "Your ticket" and in "Get graded"
    assert ("% less" in text) == bool(limits.penalty_percent), lab_id
    if limits.penalty_percent:
        assert f"{limits.penalty_percent:g} % less" in text
    assert "Grade as often as you like" not in text and "is healthy" not in text


def test_docs_tickets_md_lists_the_policy_the_grader_has() -> None:
    text = (ROOT / "docs" / "TICKETS.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("- `") and "`: `" in line]
    assert lines == [policy_line(finding) for finding in POLICY]
    assert f"limit: {DEFAULT_TICKET_GRADES.limit}" in text


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_the_reference_ticket_and_the_example_follow_the_format(lab_id: str) -> None:
    from assessor.labs.design.base import load_answer
    from assessor.yamlio import load

    lab = LABS[lab_id]
    reference = load(lab.path / "ticket.yaml", text=loader.reference_answer(lab))
    assert run_grader(GRADERS["design.diagnosis"], reference, params_of(lab)).status == "pass"
    assert lab.answer_example is not None
    example = load_answer(lab.path / lab.answer_example)
    assert run_grader(GRADERS["design.diagnosis"], example, params_of(lab)).status == "fail"
