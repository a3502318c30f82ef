"""mlxlink once per adapter: the capture that the mlxlink active test (and a lab's cable.* check) asks for."""

from __future__ import annotations

from collections.abc import Sequence

from assessor.capture import per_adapter
from assessor.capture.run import Command, Outcome, capture, source_from
from assessor.capture.snapshot import Source
from assessor.labs.loader import find_lab
from assessor.parsers.assemble import facts_from_snapshot
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.targets.mock import MockTarget


def test_every_adapter_ibstat_lists_is_read_after_its_command() -> None:
    state = load_fixture("hgx-h100")
    faults.get("ib-ber-high").apply(state, ca="mlx5_6")
    snap = MockTarget("mock:hgx-h100", state=state).snapshot(timeout=10, active=("mlxlink",))
    text = snap.sources["mlxlink.txt"].text or ""
    assert [line for line in text.splitlines() if line.startswith("$ ")] == [
        f"$ mlxlink -d mlx5_{i} -m -c" for i in range(8)
    ]
    facts = facts_from_snapshot(snap)
    assert [link.device for link in facts.link_phy or []] == [f"mlx5_{i}" for i in range(8)]
    assert [link.device for link in facts.link_phy or [] if link.status_opcode] == ["mlx5_6"]
    assert facts.sources["link_phy"] == "mlxlink.txt"


def test_only_on_request() -> None:
    snap = MockTarget("mock:hgx-h100", state=load_fixture("hgx-h100")).snapshot(timeout=10)
    assert "mlxlink.txt" not in snap.sources


def test_no_adapter_or_no_mlxlink_is_a_gap() -> None:
    assert per_adapter.capture_mlxlink(lambda argv: Source("mlxlink.txt"), None).status == "missing"

    def no_mft(argv: Sequence[str], timeout: float) -> Outcome:
        if argv[0] == "mlxlink":
            return Outcome(None, "", "mlxlink: command not found", 0.0, missing=True)
        return Outcome(0, "", "", 0.0)

    ibstat = Source("ibstat.txt", text="CA 'mlx5_0'\n\tCA type: MT4129\n")
    src = per_adapter.capture_mlxlink(lambda argv: source_from(Command("mlxlink.txt", (argv,)), no_mft, 1.0), ibstat)
    assert (src.status, src.text) == ("missing", None)
    assert capture(no_mft, active=("mlxlink",)).sources["mlxlink.txt"].status == "missing"


def test_the_labs_that_need_it_ask_for_it() -> None:
    assert "mlxlink" in find_lab("ib-303").active_tests  # cable.ber
    assert "mlxlink" in find_lab("ib-404").active_tests  # firmware.baseline of the transceivers
    assert "mlxlink" not in find_lab("ib-403").active_tests
