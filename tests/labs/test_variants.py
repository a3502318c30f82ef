"""Per-candidate variants: a seed from candidate and lab id picks e.g. which HCA's port a lab takes down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.labs import loader
from assessor.sim.state import load_state

VARIANT_YAML = """variants:
  ca: [mlx5_0, mlx5_3, mlx5_6, mlx5_9]
scenario:
  faults:
    - {fault: ib-port-down, options: {ca: "{ca}"}}
    - {fault: peermem-unloaded}
solution:
  commands:
    - modprobe nvidia_peermem
  answer: ticket.yaml
answer:
  example: ticket.example.yaml
grading:
  pass_percent: 70
  checks:
    - id: ib.peermem
      points: 40
      hint: "lsmod"
    - id: design.diagnosis
      params:
        expected:
          - {component: "{ca}", finding: no-link}
      points: 60
      hint: "ibstat: Down/Polling"
"""
TICKET = "diagnosis:\n  findings:\n    - {component: '{ca}', finding: no-link, action: reseat-cable, why: Polling}\n"


def variant_lab(root: Path) -> Path:
    """ib-301 with the downed port's HCA picked per candidate, and a ticket for it."""
    path = root / "infiniband" / "ib-301" / "lab.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("scenario:")] + VARIANT_YAML, encoding="utf-8")
    path.with_name("ticket.yaml").write_text(TICKET, encoding="utf-8")
    example = TICKET.replace("'{ca}'", "mlx5_N")
    path.with_name("ticket.example.yaml").write_text(example, encoding="utf-8")
    readme = path.with_name("README.md")
    readme.write_text(readme.read_text(encoding="utf-8") + "\nThe port to look at is on {ca}.\n", encoding="utf-8")
    return path


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def down_hcas(state: Path) -> list[str]:
    return [h.name for h in load_state(state).ib_hcas if any(p.state != "Active" for p in h.ports)]


def test_the_variant_is_the_same_for_a_candidate_and_differs_between_candidates(labs_copy: Path):
    lab = loader.load_lab(variant_lab(labs_copy).parent)
    assert lab.variant == {"ca": "mlx5_0"}  # no candidate named: the first value
    assert loader.pick_variant(lab, "ana") == loader.pick_variant(lab, "ana")
    picked = {loader.pick_variant(lab, f"candidate{i}")["ca"] for i in range(40)}
    assert picked == {"mlx5_0", "mlx5_3", "mlx5_6", "mlx5_9"}
    built = loader.with_variant(lab, {"ca": "mlx5_6"})
    assert built.faults[0].options == {"ca": "mlx5_6"}
    assert built.checks[1].params["expected"][0]["component"] == "mlx5_6"
    assert "component: 'mlx5_6'" in loader.reference_answer(built)


def test_a_placeholder_that_is_not_a_variant_is_refused(labs_copy: Path):
    path = variant_lab(labs_copy)
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            '"{ca}"}}\n    - {fault: peermem', '"{cable}"}}\n    - {fault: peermem', 1
        )
    )
    with pytest.raises(InputError, match=r"\{cable\} is not a variant of this lab \(variants: ca\)"):
        loader.load_lab(path.parent)


def test_start_grade_and_solve_use_the_candidates_variant(
    monkeypatch: pytest.MonkeyPatch, labs_copy: Path, tmp_path: Path
):
    monkeypatch.setenv("GPULAB_LABS", str(labs_copy))
    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "a.db"))
    lab = loader.load_lab(variant_lab(labs_copy).parent)
    names = [f"c{i}" for i in range(40)]
    who = next(n for n in names if loader.pick_variant(lab, n)["ca"] != "mlx5_0")  # not the default
    ca = loader.pick_variant(lab, who)["ca"]
    state = tmp_path / "node.json"
    code, out, _ = gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", who)
    assert code == 0 and f"your variant of ib-301: ca = {ca}" in out
    assert down_hcas(state) == [ca]
    assert f"The port to look at is on {ca}." in gpulab("lab", "show", "ib-301", "--candidate", who)[1]
    ticket = tmp_path / "ticket.yaml"
    # the instructor's solve: the node part, and the reference ticket for the candidate's port, not mlx5_0's
    code, out, _ = gpulab("lab", "solve", "ib-301", "--target", f"mock:{state}", "--out", str(ticket))
    assert code == 0 and f"component: '{ca}'" in ticket.read_text(encoding="utf-8")
    assert down_hcas(state) == [ca]  # a physical fault stays until the data centre acts
    args = ("lab", "grade", "ib-301", "--target", f"mock:{state}", "--candidate", who, "--json")
    code, out, _ = gpulab(*args, "--answer", str(ticket))
    assert json.loads(out)["percent"] == 100.0
    # the ticket for another candidate's port fails this candidate's
    ticket.write_text(TICKET.replace("'{ca}'", "mlx5_0"), encoding="utf-8")
    code, out, _ = gpulab(*args, "--answer", str(ticket))
    assert json.loads(out)["percent"] == 40.0


def test_mig_101_puts_the_candidates_gpu_in_mig_mode_and_does_not_say_which(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "a.db"))
    lab = loader.find_lab("mig-101")
    assert lab.variant == {"gpu": 3}  # the walks' lab, built for nobody
    gpu = loader.pick_variant(lab, "alice")["gpu"]
    assert gpu != 3
    state = tmp_path / "node.json"
    code, out, _ = gpulab("sim", "init", "--fixture", "hgx-h100", "--state", str(state))
    assert code == 0, out
    code, out, _ = gpulab("lab", "start", "mig-101", "--target", f"mock:{state}", "--candidate", "alice")
    assert code == 0, out
    in_mig = [g.index for g in load_state(state).gpus if g.mig_mode_current or g.mig_mode_pending]
    assert in_mig == [gpu]
    # finding the GPU is the task: neither the start nor the instructions name it
    assert "your variant" not in out and f"gpu = {gpu}" not in out
    readme = gpulab("lab", "show", "mig-101", "--candidate", "alice", "--json")[1]
    assert not any(f"GPU {i}" in json.loads(readme)["readme"] for i in lab.variants["gpu"])
    code, out, _ = gpulab("lab", "grade", "mig-101", "--target", f"mock:{state}", "--candidate", "alice", "--json")
    assert json.loads(out)["percent"] == 0.0
    from assessor.sim.tools import Session, run_tool

    assert run_tool(["nvidia-smi", "-i", str(gpu), "-mig", "0"], Session(path=state)).exit_code == 0  # alice's fix
    code, out, _ = gpulab("lab", "grade", "mig-101", "--target", f"mock:{state}", "--candidate", "alice", "--json")
    assert json.loads(out)["percent"] == 100.0
