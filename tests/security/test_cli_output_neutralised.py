"""Every line the lab commands print passes the one rule (docs/THREAT_MODEL.md, promise 1; issue #20).

A hostile string (tests/security/hostile.py: ESC/CSI, OSC 52, a C1 CSI, a bidi override, zero-width
characters, a tag character, a newline that would forge ``gpulab: error: ...``) is put where a candidate, an
inventory, a lab folder or a node controls a value: the name given with ``--candidate``, a host name and a
candidate in an inventory, the inventory's path, a lab's title and hint, a lab's reference answer, a node's
message when a step fails or cannot reach it, a database path quoted in an error. No raw character of it may
reach stdout or stderr, the visible escapes must, and no line may pass for gpulab's own.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from tests.security.hostile import ESC_CSI, FORGED_LINE, OSC_52, RLO, TAG, ZERO_WIDTH, assert_inert

LABS = Path(__file__).resolve().parents[1] / "labs" / "data"

# Everything hostile that a file name, a host name and a YAML value can all hold (no "/", no NUL).
EVIL = f"x{ESC_CSI}{OSC_52}{RLO}{ZERO_WIDTH}{TAG}{FORGED_LINE}"


def gpulab(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def assert_shown_as_data(out: str, err: str, *, where: str) -> None:
    """No raw hostile character, the visible escapes there, and no forged line of gpulab's own."""
    for stream, text in (("stdout", out), ("stderr", err)):
        assert_inert(text, where=f"{where} ({stream})")
        assert not any(line.startswith("gpulab: error: forged") for line in text.splitlines()), text
    both = out + err
    assert "\\e[2J" in both and "\\e]52;c;" in both and "\\u202e" in both and "\\u200b" in both, both
    # a line of output shows the line feed as an escape; an error message indents its continuation lines
    assert "\\ngpulab:" in both or "\n  gpulab: error: forged line" in both, both  # (a table may wrap it)


def yaml_quoted(text: str) -> str:
    body = "".join(
        f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else ("\\" + c if c in '"\\' else c) for c in text
    )
    return f'"{body}"'


# ---- what the candidate types: --candidate ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["lab", "status"],
        ["lab", "close"],
        ["lab", "hint", "design-501"],
        ["progress"],
    ],
    ids=["status", "close", "hint", "progress"],
)
def test_a_hostile_candidate_name_is_shown_as_data(args: list[str], tmp_path: Path) -> None:
    env = {"GPULAB_LABS": str(LABS), "GPULAB_DB": str(tmp_path / "attempts.db")}
    if args[:2] != ["lab", "status"]:  # status reads no database that is not there: make one
        gpulab("lab", "start", "design-501", "--candidate", EVIL, env=env)
    _code, out, err = gpulab(*args, "--candidate", EVIL, env=env)
    assert_shown_as_data(out, err, where=" ".join(args))


def test_a_started_design_lab_says_its_hostile_candidate_as_data(tmp_path: Path) -> None:
    env = {"GPULAB_LABS": str(LABS), "GPULAB_DB": str(tmp_path / "attempts.db")}
    code, out, err = gpulab("lab", "start", "design-501", "--candidate", EVIL, env=env)
    assert code == 0, err
    assert_shown_as_data(out, err, where="lab start")
    # the suggested command still quotes the name for the shell, escapes shown
    assert "gpulab lab grade design-501 --answer FILE --candidate" in out


# ---- what a lab folder holds: titles, hints, a reference answer --------------------------------------------


@pytest.fixture
def hostile_labs(tmp_path: Path) -> Path:
    root = tmp_path / "labs"
    shutil.copytree(LABS, root)
    lab = root / "design" / "design-501" / "lab.yaml"
    text = lab.read_text(encoding="utf-8")
    text = text.replace("title: Power a 64-node GPU hall", f"title: {yaml_quoted('Power [bold red]' + EVIL)}")
    hint = f"hint: {yaml_quoted('hint ' + EVIL)}"
    text = re.sub(r'hint: ".*"', lambda _: hint, text)
    lab.write_text(text, encoding="utf-8")
    readme = root / "design" / "design-501" / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + f"\n\nread me {EVIL}\n", encoding="utf-8")
    solution = root / "design" / "design-501" / "solution.yaml"
    solution.write_text(solution.read_text(encoding="utf-8") + f"# {EVIL.replace(chr(10), ' ')}\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "args",
    [["lab", "list"], ["lab", "show", "design-501"], ["lab", "hint", "design-501", "--candidate", "ann"]],
    ids=["list", "show", "hint"],
)
def test_a_hostile_lab_folder_is_shown_as_data(hostile_labs: Path, tmp_path: Path, args: list[str]) -> None:
    env = {"GPULAB_LABS": str(hostile_labs), "GPULAB_DB": str(tmp_path / "attempts.db"), "GPULAB_NO_CACHE": "1"}
    if args[1] == "hint":
        gpulab("lab", "start", "design-501", "--candidate", "ann", env=env)
    code, out, err = gpulab(*args, env=env)
    assert code == 0, err
    assert_shown_as_data(out, err, where=" ".join(args))
    if args[1] != "hint":
        assert "[bold red]" in out  # markup in a title is text, never a style


def test_a_hostile_reference_answer_keeps_its_lines_and_shows_the_rest(hostile_labs: Path, tmp_path: Path) -> None:
    env = {"GPULAB_LABS": str(hostile_labs), "GPULAB_DB": str(tmp_path / "attempts.db"), "GPULAB_NO_CACHE": "1"}
    code, out, err = gpulab("lab", "solve", "design-501", env=env)
    assert code == 0, err
    assert_inert(out + err, where="reference answer")
    assert "\\e]52;c;" in out and len(out.splitlines()) > 3  # a YAML body: its line feeds kept


# ---- what an inventory holds: host names, candidates, its own path -----------------------------------------


def hostile_inventory(tmp_path: Path) -> Path:
    folder = tmp_path / f"inv{EVIL}"
    folder.mkdir()
    state = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100", host="sim01"), state)
    path = folder / "inv.yml"
    host = yaml_quoted(f"sim{ESC_CSI}{OSC_52}{RLO}")
    path.write_text(
        f"all:\n  hosts:\n    {host}: {{gpulab_target: 'mock:{state}', gpulab_candidate: {yaml_quoted(EVIL)}}}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("step", ["start", "grade", "reset"])
def test_a_hostile_inventory_is_shown_as_data(tmp_path: Path, step: str) -> None:
    inventory = hostile_inventory(tmp_path)
    db = ["--db", str(tmp_path / "attempts.db")]
    if step != "start":
        gpulab("lab", "start", "health-101", "-i", str(inventory), *db)
    extra = ["--out", str(tmp_path / "book")] if step == "grade" else []
    _code, out, err = gpulab("lab", step, "health-101", "-i", str(inventory), *db, *extra)
    assert "Traceback" not in err, err
    assert_shown_as_data(out, err, where=f"lab {step} over a hostile inventory")


# ---- what a node says: a failing step, an unreachable node --------------------------------------------------


def test_a_nodes_hostile_output_in_a_solve_log_is_shown_as_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assessor.labs import lifecycle

    def solve_and_record(*_: Any, **__: Any) -> list[str]:
        return [f"solve: nvidia-smi said {EVIL}"]  # what a node's tool printed while the solution ran

    monkeypatch.setattr(lifecycle, "solve_and_record", solve_and_record)
    state = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100", host="sim01"), state)
    env = {"GPULAB_DB": str(tmp_path / "attempts.db")}
    code, out, err = gpulab("lab", "solve", "health-101", "-t", f"mock:{state}", env=env)
    assert code == 0, err
    assert_shown_as_data(out, err, where="lab solve log")


def test_a_node_that_cannot_be_reached_is_one_neutralised_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assessor.labs import lifecycle
    from assessor.labs.drivers import Unreachable

    def unreachable(*_: Any, **__: Any) -> list[str]:
        raise Unreachable(f"ssh: {EVIL}: ssh://root:hunter2@node01 said no")

    monkeypatch.setattr(lifecycle, "reset_and_close", unreachable)
    env = {"GPULAB_DB": str(tmp_path / "attempts.db")}
    code, out, err = gpulab("lab", "reset", "health-101", "-t", "ssh://node01", env=env)
    assert code == 3
    assert_shown_as_data(out, err, where="unreachable node")
    assert err.startswith("gpulab: error: ssh: ") and "hunter2" not in err


def test_an_unusable_database_named_by_a_hostile_path_is_shown_as_data(tmp_path: Path) -> None:
    answer = LABS / "design" / "design-501" / "solution.yaml"
    blocker = tmp_path / f"db{EVIL}"
    blocker.write_text("a file where a folder should be")  # the grade is shown; the database cannot be made
    env = {"GPULAB_LABS": str(LABS)}
    db = str(blocker / "attempts.db")
    code, out, err = gpulab("lab", "grade", "design-501", "--answer", str(answer), "--db", db, env=env)
    assert code == 2, out + err
    assert_shown_as_data(out, err, where="grade's database failure")
