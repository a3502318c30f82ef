"""Node labs whose remedy is physical grade a ticket for the data centre beside the node.

The candidate works with the node's own tools and hands in a ticket (``lab grade --answer FILE``, a cohort's
``--answers DIR``); nobody runs the simulator's hands (``gpulab sim repair``). A grade without the ticket
shows its check as an error worth 0; a malformed ticket is refused with file, line and key before anything
is captured; a lab that reads no ticket refuses one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.labs import attempts, loader
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from assessor.sim.tools import Session, run_tool
from tests.labs.test_cohort import sim_inventory

IB402_TICKET = """diagnosis:
  findings:
    - {component: mlx5_2, finding: no-link, action: reseat-cable, why: "Down/Polling"}
    - {component: mlx5_6, finding: degraded-rate, actions: [reseat-cable, replace-transceiver], why: "200 on NDR"}
"""


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def node(tmp_path: Path, fixture: str, name: str = "node.json") -> str:
    state = tmp_path / name
    save_state(load_fixture(fixture, host="lab-node"), state)
    return f"mock:{state}"


def tool(target: str, *argv: str) -> str:
    """What a simulated tool prints on the node, as the candidate's shell shows it."""
    return run_tool(list(argv), Session(path=Path(target.removeprefix("mock:")))).stdout


def ticket_for(ib201_port: str) -> str:
    return (
        "diagnosis:\n  findings:\n"
        f"    - {{component: {ib201_port}, finding: no-link, action: reseat-cable, why: 'Polling, no partner'}}\n"
    )


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "attempts.db"
    monkeypatch.setenv("GPULAB_DB", str(path))
    return path


def test_a_candidate_diagnoses_their_own_port_and_the_ticket_earns_the_grade(tmp_path: Path, db: Path) -> None:
    lab = loader.find_lab("ib-201")
    who = next(f"cand{i}" for i in range(50) if loader.pick_variant(lab, f"cand{i}")["ca"] != "mlx5_2")
    port = loader.pick_variant(lab, who)["ca"]
    target = node(tmp_path, "dgx-a100")
    code, out, _ = gpulab("lab", "start", "ib-201", "--target", target, "--candidate", who)
    assert code == 0, out
    assert "ticket.example.yaml" in out and "--answer ticket.yaml" in out  # what to hand in, and how

    # the port is found with the node's tools, as a candidate would
    ibstat = tool(target, "ibstat", port)
    assert "Physical state: Polling" in ibstat

    # graded without the ticket: shown as an error worth nothing, never a pass
    code, out, _ = gpulab("lab", "grade", "ib-201", "--target", target, "--candidate", who, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["percent"] == 0.0
    (ticket_check,) = [c for c in doc["checks"] if c["check"] == "design.diagnosis"]
    assert ticket_check["status"] == "error" and "--answer FILE" in ticket_check["message"]

    # another candidate's port (the first variant) fails; their own passes and is recorded
    ticket = tmp_path / "ticket.yaml"
    ticket.write_text(ticket_for("mlx5_2"), encoding="utf-8")
    args = ("lab", "grade", "ib-201", "--target", target, "--candidate", who, "--answer", str(ticket), "--json")
    code, out, _ = gpulab(*args)
    assert code == 1 and json.loads(out)["percent"] == 0.0
    ticket.write_text(ticket_for(port), encoding="utf-8")
    code, out, _ = gpulab(*args)
    doc = json.loads(out)
    assert code == 0 and doc["percent"] == 100.0 and doc["recorded"] and doc["flags"] == []
    with attempts.opened(db) as conn:
        assert [(a.lab_id, a.passed) for a in attempts.attempts(conn, who)] == [
            ("ib-201", False),
            ("ib-201", False),
            ("ib-201", True),
        ]


def test_a_malformed_ticket_names_file_line_and_key_and_exits_2(tmp_path: Path, db: Path) -> None:
    target = node(tmp_path, "hgx-h100")
    assert gpulab("lab", "start", "ib-402", "--target", target, "--candidate", "ana")[0] == 0
    ticket = tmp_path / "ticket.yaml"
    ticket.write_text(IB402_TICKET.replace("action: reseat-cable", "action: wiggle-it"), encoding="utf-8")
    code, _, err = gpulab("lab", "grade", "ib-402", "--target", target, "--candidate", "ana", "--answer", str(ticket))
    assert code == 2
    assert f"{ticket}:3: unknown action 'wiggle-it'" in err and "diagnosis.findings[0].action" in err
    with attempts.opened(db) as conn:
        assert attempts.attempts(conn, "ana") == []  # nothing graded, nothing recorded


def test_a_lab_that_reads_no_ticket_refuses_one(tmp_path: Path, db: Path) -> None:
    ticket = tmp_path / "ticket.yaml"
    ticket.write_text(IB402_TICKET, encoding="utf-8")
    code, _, err = gpulab("lab", "grade", "drv-101", "--target", "mock:hgx-h100", "--answer", str(ticket))
    assert code == 2 and "drv-101 grades the node only: it reads no answer file" in err


def test_showing_the_reference_ticket_flags_the_candidates_later_grades(tmp_path: Path, db: Path) -> None:
    who = attempts.default_candidate()  # `lab solve` shows the ticket to whoever runs it
    target = node(tmp_path, "hgx-h100")
    assert gpulab("lab", "start", "ib-402", "--target", target)[0] == 0
    shown = tmp_path / "reference.yaml"
    code, out, _ = gpulab("lab", "solve", "ib-402", "--out", str(shown))
    assert code == 0 and f"gpulab lab grade ib-402 --target NODE --answer {shown}" in out
    code, out, _ = gpulab("lab", "grade", "ib-402", "--target", target, "--answer", str(shown), "--json")
    doc = json.loads(out)
    assert doc["percent"] == 100.0  # the reference ticket is right ...
    assert f"reference ticket of ib-402 shown to {who} (`lab solve`) after the start" in doc["flags"]  # ... and says so
    with attempts.opened(db) as conn:
        assert "ib-402" not in attempts.best(attempts.attempts(conn, who))


def test_solve_on_the_node_does_the_node_part_and_leaves_the_physical_fault(tmp_path: Path, db: Path) -> None:
    target = node(tmp_path, "hgx-h100")
    assert gpulab("lab", "start", "ib-301", "--target", target, "--candidate", "ana")[0] == 0
    code, out, _ = gpulab("lab", "solve", "ib-301", "--target", target)
    assert code == 0 and "modprobe nvidia_peermem" in out
    assert "component: mlx5_5" in out  # the reference ticket is shown
    assert "Rate: 200" in tool(target, "ibstat", "mlx5_5")  # no command fixed the optic: the data centre has not been


def test_a_cohort_hands_in_one_ticket_per_candidate(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01", "sim02", "sim03"])
    db = ["--db", str(tmp_path / "attempts.db")]
    assert gpulab("lab", "start", "ib-402", "-i", str(inventory), *db)[0] == 0
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    (tickets / "c1.yaml").write_text(IB402_TICKET, encoding="utf-8")  # right
    half = IB402_TICKET.split("    - {component: mlx5_6")[0]
    (tickets / "c2.yaml").write_text(half, encoding="utf-8")  # one of the two ports
    (tickets / "c3.yaml").write_text("diagnosis:\n  findings: none\n", encoding="utf-8")  # malformed
    code, out, err = gpulab("lab", "grade", "ib-402", "-i", str(inventory), *db, "--answers", str(tickets), "--json")
    assert code == 1, out + err
    grades = {g["candidate"]: g["percent"] for g in json.loads(out)}
    assert grades == {"c1": 100.0, "c2": 50.0}  # c3's host failed alone
    assert "sim03 (c3): failed" in err and "c3.yaml:2" in err


def test_answers_for_one_node_or_a_file_for_a_cohort_are_refused(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01"])
    ticket = tmp_path / "t.yaml"
    ticket.write_text(IB402_TICKET, encoding="utf-8")
    code, _, err = gpulab("lab", "grade", "ib-402", "-i", str(inventory), "--answer", str(ticket))
    assert code == 2 and "--answers DIR" in err
    code, _, err = gpulab("lab", "grade", "ib-402", "-t", "mock:hgx-h100", "--answers", str(tmp_path))
    assert code == 2 and "--answers DIR is for a cohort" in err


LAB_WITH_TICKET = """id: ib-301
title: A ticket lab
domain: infiniband
level: 3
exam_domains:
  - "NCP-AII: Physical Layer Management"
time_limit_min: 30
target: node
runs_on: [simulator]
fixture: dgx-a100
scenario:
  faults:
    - {fault: ib-port-down, options: {ca: mlx5_3}}
solution:
  answer: ticket.yaml
answer:
  example: ticket.example.yaml
grading:
  pass_percent: 70
  checks:
    - id: design.diagnosis
      params:
        expected:
          - {component: mlx5_3, finding: no-link}
      points: 100
      hint: "ibstat"
"""


def _ticket_lab(root: Path, text: str) -> Path:
    folder = root / "infiniband" / "ib-301"
    (folder / "lab.yaml").write_text(text, encoding="utf-8")
    (folder / "ticket.yaml").write_text(IB402_TICKET, encoding="utf-8")
    (folder / "ticket.example.yaml").write_text(IB402_TICKET, encoding="utf-8")
    return folder


def test_a_node_lab_with_a_ticket_check_loads(labs_copy: Path) -> None:
    lab = loader.load_lab(_ticket_lab(labs_copy, LAB_WITH_TICKET))
    assert lab.takes_answer and lab.answer_check_ids == ["design.diagnosis"] and not lab.is_design


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("answer:\n  example: ticket.example.yaml\n", ""),
            ":1: node labs that grade a ticket (a design.* check) name a",
        ),
        (("  example: ticket.example.yaml\n", "  example: nowhere.yaml\n"), ":17: nowhere.yaml: no such file"),
        (
            (
                "  example: ticket.example.yaml\n",
                "  example: ticket.example.yaml\n  checks: [{id: ib.peermem, points: 1, hint: lsmod}]\n",
            ),
            "a node lab lists every check, its ticket's too, in grading.checks",
        ),
        (
            ("    - id: design.diagnosis\n", "    - id: design.rack_power\n"),
            "unknown design grader 'design.rack_power'",
        ),
    ],
)
def test_a_ticket_lab_missing_its_files_or_misusing_answer_names_the_line(
    labs_copy: Path, edit: tuple[str, str], message: str
) -> None:
    folder = _ticket_lab(labs_copy, LAB_WITH_TICKET.replace(*edit))
    with pytest.raises(InputError, match=None) as exc:
        loader.load_lab(folder)
    assert message in str(exc.value)


def test_an_answer_file_on_a_lab_without_a_ticket_check_is_refused(labs_copy: Path) -> None:
    text = LAB_WITH_TICKET.replace(
        """    - id: design.diagnosis
      params:
        expected:
          - {component: mlx5_3, finding: no-link}
      points: 100
      hint: "ibstat"
""",
        """    - id: ib.ports_active
      points: 100
      hint: "ibstat"
""",
    )
    with pytest.raises(InputError) as exc:
        loader.load_lab(_ticket_lab(labs_copy, text))
    assert "an answer file is for design labs, or node labs with a design.* check that reads it" in str(exc.value)
