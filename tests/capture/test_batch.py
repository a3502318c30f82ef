"""The batched capture script, run by a real local sh (no SSH needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from assessor.capture import batch
from assessor.capture.run import Command


def run_script(commands: list[Command], timeout: float = 5, cut: int | None = None, shell: str = "sh") -> batch.Records:
    out = subprocess.run(
        [shell, "-s"], input=batch.script(commands, timeout), capture_output=True, text=True, check=False
    ).stdout
    if cut is not None:
        out = out[:cut]
    return batch.parse_records(out, commands, timeout)


def test_records_carry_stdout_stderr_exit_code_and_duration() -> None:
    cmd = Command("x.txt", (("sh", "-c", "echo out; echo err >&2; exit 3"),))
    records = run_script([cmd])
    assert records.complete
    outcome = records(cmd.argvs[0], 5)
    assert (outcome.exit_code, outcome.stdout, outcome.stderr.strip()) == (3, "out\n", "err")
    assert 0 <= outcome.duration_s < 5


def test_missing_tool_is_missing_and_next_alternative_runs() -> None:
    cmd = Command("d.txt", (("no-such-tool-gpulab",), ("echo", "fallback")))
    records = run_script([cmd])
    assert records(cmd.argvs[0], 5).missing
    assert records(cmd.argvs[1], 5).stdout == "fallback\n"


def test_alternative_not_run_when_first_answers() -> None:
    cmd = Command("d.txt", (("echo", "first"), ("echo", "second")))
    records = run_script([cmd])
    assert records(cmd.argvs[0], 5).stdout == "first\n"
    assert ("echo", "second") not in records.outcomes


def test_arguments_with_shell_metacharacters_are_quoted() -> None:
    nasty = "$(touch /tmp/gpulab-pwned); `id` 'q' \"d\" ; | &"
    cmd = Command("e.txt", (("printf", "%s", nasty),))
    records = run_script([cmd])
    assert records(cmd.argvs[0], 5).stdout == nasty


def test_hanging_command_is_cut_at_the_per_command_limit() -> None:
    cmd = Command("h.txt", (("sleep", "30"),))
    records = run_script([cmd, Command("u.txt", (("echo", "after"),))], timeout=1)
    assert records(cmd.argvs[0], 1).timed_out
    assert records(("echo", "after"), 1).stdout == "after\n"


def test_output_cut_mid_way_is_incomplete() -> None:
    cmds = [Command("a.txt", (("echo", "a"),)), Command("b.txt", (("echo", "b"),))]
    full = subprocess.run(["sh", "-s"], input=batch.script(cmds, 5), capture_output=True, text=True).stdout
    assert batch.parse_records(full, cmds, 5).complete
    cut = full.index(batch.MARKER + " TAR") + 100  # the connection drops inside the archive
    records = run_script(cmds, cut=cut)
    assert not records.complete


def test_without_tar_every_record_comes_on_its_own(tmp_path: Path) -> None:
    """Minimal nodes may lack tar: the script sends a record per command instead."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "base64", "mktemp", "timeout", "rm", "tr", "date", "mkdir", "echo", "printf"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    cmds = [Command("a.txt", (("echo", "a"),)), Command("m.txt", (("no-such-tool-gpulab",),))]
    out = subprocess.run(
        [str(bin_dir / "sh"), "-s"],
        input=batch.script(cmds, 5),
        capture_output=True,
        text=True,
        env={"PATH": str(bin_dir)},
    ).stdout
    assert batch.MARKER + " TAR" not in out
    records = batch.parse_records(out, cmds, 5)
    assert records.complete
    assert records(("echo", "a"), 5).stdout == "a\n"
    assert records(("no-such-tool-gpulab",), 5).missing


def test_bash_and_sh_give_the_same_records() -> None:
    cmd = Command("x.txt", (("sh", "-c", "echo out; echo err >&2; exit 3"),))
    for shell in ("sh", "bash"):
        outcome = run_script([cmd], shell=shell)(cmd.argvs[0], 5)
        assert (outcome.exit_code, outcome.stdout, outcome.stderr.strip()) == (3, "out\n", "err"), shell
        assert 0 <= outcome.duration_s < 5, shell


def test_stderr_is_cut_to_the_limit() -> None:
    cmd = Command("x.txt", (("sh", "-c", "head -c 10000 /dev/zero | tr '\\0' e >&2"),))
    outcome = run_script([cmd])(cmd.argvs[0], 5)
    assert len(outcome.stderr) == batch.STDERR_LIMIT
