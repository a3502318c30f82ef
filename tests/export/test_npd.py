"""node-problem-detector's plugin protocol: exit 0 OK, 1 NonOK, 2 Unknown; at most max_output_length bytes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.checks.result import Result, TargetResults
from assessor.cli import main
from assessor.export import npd
from tests.support.snapshots import BROKEN_H100, HEALTHY_A100, corpus_snapshot


def gpulab(*args: str) -> tuple[int, str]:
    run = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return run.exit_code, run.stdout


def node(*results: Result, error: str | None = None) -> TargetResults:
    return TargetResults("local", "gpu-01", list(results), error=error)


def test_the_verdict_follows_the_worst_result() -> None:
    passed = Result("gpu.count", "pass", "8 GPUs")
    warned = Result("gpu.temperature", "warn", "GPU 3 at 84 C")
    failed = Result("gpu.xid", "fail", "Xid 79 on GPU 3")
    errored = Result("gpu.ecc_errors", "error", "nvidia-smi output cut short")
    skipped = Result("dcgm.diag", "skip", "not run")
    assert npd.verdict(node(passed, skipped)) == npd.Verdict("ok", "ok: gpu.count; not seen: dcgm.diag")
    assert npd.verdict(node(passed, warned)).state == "ok"
    assert npd.verdict(node(passed, warned)).message.startswith("ok with warnings: gpu.temperature: GPU 3")
    assert npd.verdict(node(passed, errored, failed, failed)) == npd.Verdict(
        "problem", "gpu.xid: Xid 79 on GPU 3 (+1 more)"
    )
    assert npd.verdict(node(passed, errored)).state == "unknown"
    assert npd.verdict(node(skipped)).state == "unknown"  # nothing seen is not healthy
    assert npd.verdict(node()).state == "unknown"
    assert npd.verdict(node(error="ssh: connection refused")) == npd.Verdict(
        "unknown", "gpulab: not assessed: ssh: connection refused"
    )
    assert [npd.Verdict(s, "").exit_code for s in ("ok", "problem", "unknown")] == [0, 1, 2]


def test_a_message_from_the_node_cannot_move_the_cursor_or_forge_a_line() -> None:
    failed = Result("gpu.xid", "fail", "Xid 79\x1b[2J\ngpulab: ok\u202e")
    message = npd.verdict(node(failed)).message
    assert message == "gpu.xid: Xid 79\\e[2J\\ngpulab: ok\\u202e"


@pytest.mark.parametrize("limit", [1, 3, 4, 10, 80])
def test_a_long_message_is_cut_to_the_byte_limit_at_a_character_boundary(limit: int) -> None:
    text = "gpu.xid: " + "é€" * 60
    cut = npd.cut(text, limit)
    data = cut.encode("utf-8")  # would raise if cut inside a character
    assert len(data) <= limit
    assert text.startswith(cut.removesuffix("...").rstrip()) or not cut.removesuffix("...")
    if limit >= 4:
        assert cut.endswith("...")


def test_a_short_message_is_kept_whole_and_trimmed_like_npd() -> None:
    assert npd.cut("  ok: gpu.count \n", 80) == "ok: gpu.count"
    assert npd.cut("x" * 80, 80) == "x" * 80
    assert npd.cut("x" * 81, 80) == "x" * 77 + "..."


def test_a_broken_node_is_nonok_with_the_failing_check_in_80_bytes(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    code, out = gpulab("npd", "gpu.xid,ib.ports_active", "--target", f"snapshot:{snap}")
    assert code == 1
    line = out.rstrip("\n")
    assert "\n" not in line and len(line.encode()) <= 80
    assert line.startswith("gpu.xid: ") and "79" in line


def test_a_healthy_node_is_ok(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", HEALTHY_A100)
    code, out = gpulab("npd", "ib.ports_active,gpu.xid", "-t", f"snapshot:{snap}", "--max-output", "200")
    assert (code, out) == (0, "ok: ib.ports_active; not seen: gpu.xid\n")  # no kernel log in this capture


def test_checks_take_the_profiles_parameters(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", HEALTHY_A100)  # 4 GPUs in the capture
    profile = tmp_path / "four.yaml"
    profile.write_text("name: four\nchecks:\n  - id: gpu.count\n    params: {expected: 4}\n")
    assert gpulab("npd", "gpu.count", "-t", f"snapshot:{snap}", "-p", str(profile))[0] == 0
    profile.write_text("name: eight\nchecks:\n  - id: gpu.count\n    params: {expected: 8}\n")
    code, out = gpulab("npd", "gpu.count", "-t", f"snapshot:{snap}", "-p", str(profile))
    assert code == 1 and out.startswith("gpu.count: ")


def test_nothing_captured_is_unknown(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    code, out = gpulab("npd", "dcgm.diag", "-t", f"snapshot:{snap}")
    assert code == 2 and "dcgm.diag skipped" in out


def test_bad_input_is_unknown_with_the_reason_on_stdout_where_npd_reads_it() -> None:
    code, out = gpulab("npd", "gpu.nope")
    assert code == 2 and out.startswith("gpulab: unknown check id 'gpu.nope'")
    assert len(out.rstrip("\n").encode()) <= 80


def test_a_stalled_tool_gives_unknown_by_the_deadline(tmp_path: Path) -> None:
    """A real process: the stalled thread is left behind with os._exit, which would end pytest in-process."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stall = bin_dir / "nvidia-smi"
    stall.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 20\n")
    stall.chmod(0o755)
    env = {**os.environ, "PATH": str(bin_dir)}
    env.pop("GPULAB_SIM_STATE", None)
    began = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "assessor.cli", "npd", "gpu.count", "--timeout", "60", "--deadline", "1.5"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    took = time.monotonic() - began
    assert run.returncode == 2, run.stderr
    assert run.stdout == "gpulab: no verdict within 1.5s: a tool on the node did not answer\n"
    assert took < 12  # the deadline, plus Python's start-up, not the stalled tool's 20 s


def test_the_checks_of_a_list_are_known_ids_without_repeats() -> None:
    from assessor.errors import InputError

    assert npd.checks_of(" gpu.xid, gpu.count,gpu.xid,") == ("gpu.xid", "gpu.count")
    with pytest.raises(InputError):
        npd.checks_of(" , ")
