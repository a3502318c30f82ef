from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from assessor.capture import run as capture
from assessor.capture import snapshot
from assessor.capture.run import Command, Outcome, source_from


def fake_runner(answers: dict[str, Outcome]):
    def run(argv: Sequence[str], timeout: float) -> Outcome:
        return answers.get(argv[0], Outcome(None, "", f"{argv[0]}: command not found", 0.0, missing=True))

    return run


def test_missing_tool_is_recorded_as_missing_not_failed() -> None:
    src = source_from(Command("ibstat.txt", (("ibstat",),)), fake_runner({}), 5)
    assert src.status == "missing"
    assert src.text is None
    assert "not installed" in (src.message or "")


def test_alternative_command_is_tried_when_the_first_is_refused() -> None:
    answers = {
        "dmesg": Outcome(1, "", "dmesg: read kernel buffer failed: Operation not permitted", 0.01),
        "journalctl": Outcome(0, "kernel: hello\n", "", 0.02),
    }
    dmesg = next(c for c in capture.COMMANDS if c.file == "dmesg.txt")
    src = source_from(dmesg, fake_runner(answers), 5)
    assert src.file == "dmesg.txt"
    assert src.status == "ok"
    assert src.command is not None and src.command.startswith("journalctl -k")
    assert src.text == "kernel: hello\n"


def test_nonzero_exit_with_output_keeps_the_partial_output() -> None:
    answers = {"ibstat": Outcome(255, "CA 'mlx5_0'\n", "ibpanic: [1] main: stat of IB device failed", 0.1)}
    src = source_from(Command("ibstat.txt", (("ibstat",),)), fake_runner(answers), 5)
    assert src.status == "failed" and src.exit_code == 255
    assert src.text == "CA 'mlx5_0'\n"
    assert "ibpanic" in (src.stderr or "")


def test_timeout_is_recorded_with_the_limit() -> None:
    answers = {"ibstat": Outcome(None, "", "timed out after 5 s", 5.0, timed_out=True)}
    src = source_from(Command("ibstat.txt", (("ibstat",),)), fake_runner(answers), 5)
    assert src.status == "timeout"
    assert "timed out after 5 s" in (src.message or "")


def test_local_capture_on_a_machine_without_gpu_is_a_valid_snapshot(tmp_path: Path) -> None:
    """This machine has no GPU and no HCA: capture still writes a snapshot saying so."""
    snap = capture.capture(capture.run_local, host="ci", timeout=10)
    out = snapshot.write(snap, tmp_path / "snap")
    meta = json.loads((out / "meta.json").read_text())
    assert set(meta["files"]) >= {c.file for c in capture.COMMANDS}
    assert meta["files"]["uname.txt"]["status"] == "ok"
    assert (out / "uname.txt").read_text().startswith("Linux")
    # no NVIDIA tools here: recorded as missing, and the snapshot reads back
    assert meta["files"]["nvidia-smi-q.xml"]["status"] == "missing"
    back = snapshot.read(out)
    assert back.sources["nvidia-smi-q.xml"].status == "missing"
