"""Every input has a size and depth bound checked before it is parsed or walked, under a memory cap.

The real CLI runs in its own process under ``prlimit --as`` (util-linux): an input read whole, or parsed
before its bound is checked, ends in a MemoryError traceback there instead of the one-line error (exit 2)
naming the file and the bound. Big files are sparse (``truncate``) where the content does not matter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reports.builders import grade_doc, write_json

ROOT = Path(__file__).resolve().parents[2]
CAP = 768 << 20  # the CLI itself needs a few hundred MiB of address space; a 1 GB file read whole does not fit
PRLIMIT = shutil.which("prlimit")


def capped(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """gpulab in its own process, its address space capped at :data:`CAP`."""
    if PRLIMIT is None:
        pytest.fail("prlimit (util-linux) is not installed")
    code = "import sys; from assessor.cli import main; sys.exit(main())"
    return subprocess.run(
        [PRLIMIT, f"--as={CAP}", "--", sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout,
        check=False,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    err = proc.stderr.strip()
    assert "\n" not in err and err.startswith("gpulab: error: "), err[-2000:]
    assert "Traceback" not in err and "MemoryError" not in err and "RecursionError" not in err
    for needle in needles:
        assert needle in err, err
    return err


def test_a_50_mb_answer_is_refused_by_its_size_before_it_is_parsed(tmp_path: Path) -> None:
    answer = tmp_path / "answer.yaml"
    with answer.open("wb") as f:  # real YAML: 13 million list items would take gigabytes to parse
        f.write(b"fat_tree:\n  nodes:\n")
        f.write(b"  - 1\n" * ((50 << 20) // 6))
    proc = capped(
        "lab",
        "grade",
        "design-501",
        "--answer",
        str(answer),
        "--candidate",
        "bob",
        env={"GPULAB_DB": str(tmp_path / "db")},
    )
    one_line_error(proc, str(answer), "4 MiB limit")


def test_a_huge_lab_yaml_is_refused_by_its_size(tmp_path: Path) -> None:
    lab = tmp_path / "lab.yaml"
    with lab.open("wb") as f:
        f.truncate(1 << 30)
    from assessor import yamlio
    from assessor.errors import InputError

    with pytest.raises(InputError, match=r"1 GiB \(1,073,741,824 bytes\), over the 4 MiB limit of a YAML file"):
        yamlio.load(lab)


def test_the_bounded_readers_never_hold_a_1_gb_file(tmp_path: Path) -> None:
    """What a lab folder's README and its digest are read with (assessor.content), under the cap."""
    readme = tmp_path / "README.md"
    with readme.open("wb") as f:
        f.truncate(1 << 30)
    script = (
        "import hashlib, sys\n"
        "from assessor import content\n"
        "from assessor.errors import InputError\n"
        "for call in (lambda: content.read_text(sys.argv[1], limit=content.MAX_README_BYTES, what='a README'),\n"
        "             lambda: content.digest_file(hashlib.sha256(), sys.argv[1], limit=content.MAX_README_BYTES)):\n"
        "    try:\n"
        "        call()\n"
        "    except InputError as exc:\n"
        "        print(exc)\n"
    )
    proc = subprocess.run(
        [str(PRLIMIT), f"--as={CAP}", "--", sys.executable, "-c", script, str(readme)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(str(readme) in line and "over the 1 MiB limit" in line for line in lines)


def _gradebook(root: Path) -> Path:
    folder = root / "drv-101" / "ann"
    folder.mkdir(parents=True)
    write_json(folder / "001-grade.json", grade_doc("ann", "drv-101"))
    return folder


def test_a_1_gb_file_in_a_gradebook_folder_is_refused_by_its_size(tmp_path: Path) -> None:
    folder = _gradebook(tmp_path / "book")
    with (folder / "002-huge.json").open("wb") as f:
        f.truncate(1 << 30)
    proc = capped("report", "cohort", str(tmp_path / "book"), "-f", "json")
    one_line_error(proc, "002-huge.json", "1 GiB", "256 MiB limit of a report input")


def test_a_gradebook_folder_1200_levels_deep_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    _gradebook(tmp_path / "book")
    top = deep = str(tmp_path / "book" / "d")
    os.mkdir(top)
    for _ in range(1199):  # one level at a time: Path.mkdir(parents=True) would itself recurse too deep
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    try:
        proc = capped("report", "cohort", str(tmp_path / "book"), "-f", "json")
        one_line_error(proc, "nested more than 16 levels", str(tmp_path / "book"))
    finally:  # bottom up: shutil.rmtree (pytest's clean-up of old temporary folders) would recurse too deep
        while deep != os.path.dirname(top):
            os.rmdir(deep)
            deep = os.path.dirname(deep)


def test_a_gradebook_of_normal_depth_still_reads(tmp_path: Path) -> None:
    _gradebook(tmp_path / "book")
    proc = capped("report", "cohort", str(tmp_path / "book"), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"ann"' in proc.stdout


def test_a_100000_file_snapshot_summarises_its_notes(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    corpus = ROOT / "tests" / "data" / "corpus" / "nvidia_smi_xml" / "a10g-515-v11.xml"
    shutil.copy(corpus, snap / "nvidia-smi-q.xml")
    for i in range(100_000):
        os.close(os.open(snap / f"junk{i:06d}.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    proc = capped("assess", "-t", f"snapshot:{snap}", "-c", "gpu.count", env={"COLUMNS": "200"}, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    notes = [line for line in proc.stdout.splitlines() if line.startswith("NOTE ")]
    assert 0 < len(notes) <= 21, len(notes)
    assert any("… and 99,990 more files" in line for line in notes), notes
    assert len(proc.stdout.splitlines()) < 60


# ---- what the lab commands, a cohort's candidates file and a profile read (issue #20, item 5) ------------------

LABS = ROOT / "tests" / "labs" / "data"


def _sparse(path: Path, size: int = 1 << 30) -> Path:
    with path.open("wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize("args", [["lab", "list"], ["lab", "show", "design-501"]], ids=["list", "show"])
@pytest.mark.parametrize("cache", ["validated", "no cache"])
def test_a_1_gb_lab_readme_is_refused_by_its_size(tmp_path: Path, args: list[str], cache: str) -> None:
    labs = tmp_path / "labs"
    shutil.copytree(LABS, labs)
    readme = _sparse(labs / "design" / "design-501" / "README.md")
    env = {"GPULAB_LABS": str(labs), "GPULAB_DB": str(tmp_path / "db"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    if cache == "no cache":
        env["GPULAB_NO_CACHE"] = "1"
    proc = capped(*args, env=env)
    one_line_error(proc, str(readme), "1 GiB (1,073,741,824 bytes)", "over the 1 MiB limit of a lab's README")
    if args[1] == "list":  # the other labs still list
        assert "ib-301" in proc.stdout and "nccl-301" in proc.stdout


def test_a_1_gb_file_beside_a_lab_is_refused_by_its_size(tmp_path: Path) -> None:
    """The validation cache hashes every file of a lab folder: a block at a time, within a bound."""
    labs = tmp_path / "labs"
    shutil.copytree(LABS, labs)
    extra = _sparse(labs / "design" / "design-501" / "notes.txt")
    env = {"GPULAB_LABS": str(labs), "GPULAB_DB": str(tmp_path / "db"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = capped("lab", "show", "design-501", env=env)
    one_line_error(proc, str(extra), "over the 1 MiB limit of a lab file")


@pytest.mark.parametrize("suffix", [".csv", ".yaml", ".txt"])
def test_a_1_gb_candidates_file_is_refused_by_its_size(tmp_path: Path, suffix: str) -> None:
    _gradebook(tmp_path / "book")
    names = _sparse(tmp_path / f"cohort{suffix}")
    proc = capped("report", "cohort", str(tmp_path / "book"), "--candidates", str(names), "-f", "json")
    one_line_error(proc, str(names), "over the 4 MiB limit of a candidates file")


def test_a_1_gb_candidates_file_of_a_cohort_lab_step_is_refused_by_its_size(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text("all:\n  hosts:\n    sim01: {gpulab_target: 'mock:/nonexistent.json'}\n", encoding="utf-8")
    names = _sparse(tmp_path / "cohort.csv")
    env = {"GPULAB_LABS": str(LABS), "GPULAB_DB": str(tmp_path / "db")}
    proc = capped("lab", "reset", "ib-301", "-i", str(inventory), "--candidates", str(names), env=env)
    one_line_error(proc, str(names), "over the 4 MiB limit of a candidates file")


def test_a_1_gb_profile_is_refused_by_its_size(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    profile = _sparse(tmp_path / "profile.yaml")
    proc = capped("assess", "-t", f"snapshot:{snap}", "--profile", str(profile))
    one_line_error(proc, str(profile), "over the 4 MiB limit of a profile")
