"""A capture of a simulated node in a state file reads the file once, and again only after it changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from assessor.targets.mock import MockTarget


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The state files read from now on, by whichever reader (every one reads through ``_read_document``)."""
    import assessor.sim.state as state

    seen: list[str] = []
    real = state._read_document

    def counted(path: Path) -> object:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(state, "_read_document", counted)
    return seen


def node(tmp_path: Path) -> Path:
    path = tmp_path / "node.json"
    save_state(load_fixture("dgx-a100", host="n1", in_use=True), path)
    return path


def test_a_capture_reads_the_state_file_once_for_all_its_tools(tmp_path: Path, reads: list[str]) -> None:
    target = MockTarget.open(f"mock:{node(tmp_path)}")
    snap = target.snapshot(timeout=30)
    assert len(snap.sources) > 10  # many tools ran
    # the tools, the identity and the NVML collector share one read of the file
    assert reads == [str(tmp_path / "node.json")]


def test_a_change_to_the_file_is_seen_by_the_next_tool(tmp_path: Path, reads: list[str]) -> None:
    from assessor.sim.tools import run_tool

    path = node(tmp_path)
    session = MockTarget.open(f"mock:{path}").session()
    assert "Persistence-M" in run_tool(["nvidia-smi"], session).stdout
    assert run_tool(["nvidia-smi", "-pm", "0"], session).exit_code == 0  # a write through the session
    assert (
        run_tool(["nvidia-smi", "--query-gpu=persistence_mode", "--format=csv,noheader"], session).stdout.split()
        == ["Disabled"] * 8
    )
    other = load_fixture("dgx-a100", host="renamed", in_use=True)
    save_state(other, path)  # a write by anything else
    assert session.read().host == "renamed"
    assert session.read().host == "renamed"
    # the first read, -pm's read-modify-write under the lock, the read after that update, the read after the
    # outside write; the two reads of "renamed" share one
    assert len(reads) == 4
