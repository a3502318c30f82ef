"""The debrief: each check in words, the reference solution beside the candidate's own commands (from the
node's shell history), where a real node differs; `lab debrief` opens only after a pass, and a passing
`lab grade` ends with its short form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import debrief
from assessor.labs.drivers.sim import run_line
from assessor.labs.loader import find_lab
from assessor.labs.shell_history import History, node_history, parse
from assessor.sim.config_root import root_for_state


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_reference_commands_are_matched_as_typed_similar_or_not_typed() -> None:
    steps = debrief.compare(
        ["systemctl stop nvidia-persistenced nvidia-dcgm", "nvidia-smi -i 0 -mig 1", "modprobe nvidia_drm"],
        ["sudo /usr/bin/systemctl stop  nvidia-persistenced nvidia-dcgm", "nvidia-smi -mig 1 -i 0 -q", "ls"],
    )
    assert [(s.match, s.yours) for s in steps] == [
        ("typed", "sudo /usr/bin/systemctl stop  nvidia-persistenced nvidia-dcgm"),
        ("similar", "nvidia-smi -mig 1 -i 0 -q"),
        ("not typed", None),
    ]


def test_bash_history_is_read_without_timestamps_and_blank_lines() -> None:
    assert parse("#1733000000\nnvidia-smi\n\n  \n#1733000100\nnvidia-smi -q\n") == ("nvidia-smi", "nvidia-smi -q")


def test_node_history_reads_root_bash_history_or_says_why_there_is_none(tmp_path: Path) -> None:
    node = tmp_path / "node.json"
    assert gpulab("sim", "init", "--fixture", "dgx-a100", "--state", str(node))[0] == 0
    none = node_history(f"mock:{node}")
    assert none.commands is None and "keeps no shell history" in (none.why_none or "")
    (root_for_state(node) / "root").mkdir(parents=True, exist_ok=True)
    (root_for_state(node) / "root" / ".bash_history").write_text("nvidia-smi\nnvidia-smi -r -i 2\n", encoding="utf-8")
    found = node_history(f"mock:{node}")
    assert found.commands == ("nvidia-smi", "nvidia-smi -r -i 2") and ".bash_history" in found.source
    assert "not a simulated node" in (node_history("ssh://gpu01").why_none or "")
    assert "answer file" in (node_history(None).why_none or "")


def test_each_check_is_described_with_a_part_label_where_the_lab_uses_it_twice() -> None:
    lab = find_lab("mig-201")
    checks = [
        {
            "check": c.id,
            "role": c.role,
            "status": "pass",
            "points": c.points,
            "earned": c.points,
            "message": f"message {i}",
        }
        for i, c in enumerate(lab.checks)
    ]
    d = debrief.build(lab, checks, History(None, why_none="none"), passed=True, percent=100)
    labels = [c.label for c in d.checks]
    assert labels[:2] == ["mig.mode (1 of 2)", "mig.mode (2 of 2)"]
    first = d.checks[0]
    assert first.checks_what.startswith("MIG mode: Verifies") and "gpus [0]" in first.checks_what
    assert first.why_it_matters == lab.checks[0].hint and first.on_your_node == "message 0"
    assert d.reference_commands == lab.solution_commands and d.steps == ()


def test_a_real_node_note_applies_at_the_step_it_concerns_on_its_machines() -> None:
    notes = debrief.default_notes()
    h100 = find_lab("health-402")  # an HGX H100 lab: MIG mode after a reboot differs on Hopper
    assert h100.fixture == "hgx-h100"
    found = debrief.real_node_notes(h100, ["nvidia-smi -r -i 2", "reboot"], (), notes)
    assert any(r.at == "reboot" and r.whose == "reference" and "row 14" in r.source for r in found)
    a100 = find_lab("health-401")  # the same step on a DGX A100 (Ampere): no such departure
    assert a100.fixture == "dgx-a100"
    assert not any("row 14" in r.source for r in debrief.real_node_notes(a100, ["reboot"], (), notes))
    theirs = debrief.real_node_notes(h100, (), ("iblinkinfo", "ip a"), notes)
    assert [r.at for r in theirs] == ["iblinkinfo", "ip a"] and all(r.whose == "yours" for r in theirs)


def test_lab_debrief_opens_after_a_pass_and_a_passing_grade_prints_its_short_form(
    exam_db: Path, tmp_path: Path
) -> None:
    node = tmp_path / "node.json"
    spec = f"mock:{node}"
    assert gpulab("sim", "init", "--fixture", "hgx-h100", "--state", str(node))[0] == 0
    assert gpulab("lab", "start", "health-101", "-t", spec, "--candidate", "kim")[0] == 0
    code, _, err = gpulab("lab", "debrief", "health-101", "--candidate", "kim")
    assert code == 2 and "no passing attempt of health-101" in err  # the debrief gives the solution away
    code, out, _ = gpulab("lab", "grade", "health-101", "-t", spec, "--candidate", "kim")
    assert code == 1 and "Debrief" not in out  # not passed: no debrief
    for line in find_lab("health-101").solution_commands:  # typed on the node (its simulated tools)
        run_line(line, node)
    history = root_for_state(node) / "root" / ".bash_history"
    history.parent.mkdir(parents=True, exist_ok=True)
    typed = ["systemctl status nvidia-dcgm", *find_lab("health-101").solution_commands]
    history.write_text("\n".join(typed) + "\n", encoding="utf-8")
    code, out, _ = gpulab("lab", "grade", "health-101", "-t", spec, "--candidate", "kim")
    assert code == 0 and "Debrief: of the 1 reference command you typed 1 as written" in out
    assert "`gpulab lab debrief health-101`" in out
    code, out, _ = gpulab("lab", "debrief", "health-101", "--candidate", "kim")
    assert code == 0 and "What each check proved:" in out and "[typed]" in out and "systemctl status nvidia-dcgm" in out
    code, out, _ = gpulab("lab", "debrief", "health-101", "--candidate", "kim", "--json")
    doc = json.loads(out)
    assert doc["passed"] is True and [s["match"] for s in doc["steps"]] == ["typed"]
    assert doc["yours"]["commands"][0] == "systemctl status nvidia-dcgm"


@pytest.mark.parametrize("hostile", ["\x1b]52;c;cGF5bG9hZA==\x07", "\u202eevil", "line\nFAKE: PASSED"])
def test_a_hostile_command_in_the_history_is_shown_as_data(exam_db: Path, tmp_path: Path, hostile: str) -> None:
    lab = find_lab("health-101")
    d = debrief.build(lab, [], History((hostile,), source="test"), passed=True, percent=100)
    from assessor.neutralise import visible

    shown = [visible(line) for line in debrief.full_lines(d)]
    assert all("\x1b" not in s and "\u202e" not in s and "\n" not in s for s in shown)


def test_every_note_cites_a_departure_docs_fidelity_still_lists() -> None:
    """A note on a real node is kept only while docs/FIDELITY.md still lists its departure: a row marked plainly
    "fixed" (not "partly fixed") means the simulator now prints what a real node does."""
    import re

    fidelity = (Path(__file__).resolve().parents[2] / "docs" / "FIDELITY.md").read_text(encoding="utf-8")
    status = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| (\d+) \| [^|]+ \| ([^|]+) \|", fidelity, re.M)}
    notes = debrief.default_notes()
    assert notes and all(n.simulator and n.real and n.source.startswith("docs/FIDELITY.md") for n in notes)
    for note in notes:
        row = re.search(r"row (\d+)", note.source)
        if row:
            assert row.group(1) in status and status[row.group(1)] != "fixed", (note.id, status.get(row.group(1)))
        else:
            assert "Missing commands" in note.source and "## Missing commands" in fidelity, note.id


@pytest.mark.parametrize(
    ("lab_id", "says"),
    [
        ("nccl-404", "Debrief: the reference solution edits /etc/nccl.conf (no commands to compare)"),
        ("ib-204", "Debrief: the reference is a ticket file"),
    ],
)
def test_the_short_form_of_a_lab_without_reference_commands_says_what_the_reference_is(lab_id: str, says: str) -> None:
    lab = find_lab(lab_id)
    assert not lab.solution_commands
    d = debrief.build(lab, [], History(None, why_none="none"), passed=True, percent=100)
    assert debrief.short_lines(d)[0] == says
