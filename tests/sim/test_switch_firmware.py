"""The switches' firmware in the simulated fabric: ``flint -d lid-N q`` in-band, the ``switch-firmware-old`` fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, load_state, save_state
from assessor.sim.switch_firmware import SWITCH_FIRMWARE, SWITCH_PSID
from assessor.sim.tools import Session, ToolResult, run_tool
from assessor.sim.tools.mlxfw import firmware_image

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "ibswinfo" / "01_quantum2_inband.txt"


def tool(state: NodeState, *argv: str) -> ToolResult:
    return run_tool(list(argv), Session(state=state, env={}))


def lids(state: NodeState) -> dict[str, int]:
    """Switch name -> LID, as ibswitches lists them."""
    out = {}
    for line in tool(state, "ibswitches").stdout.splitlines():
        name = line.split('"')[1].split(";")[1].split(":")[0]
        out[name] = int(line.split(" lid ")[1].split()[0])
    return out


def field(text: str, key: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(key + ":"))


def test_the_baseline_is_a_real_quantum2_switchs() -> None:
    text = CORPUS.read_text(encoding="utf-8")
    assert f"PSID               | {SWITCH_PSID}" in text
    assert f"firmware version   | {SWITCH_FIRMWARE}" in text


def test_every_switch_ibswitches_lists_answers_flint_by_its_lid_decimal_or_hex() -> None:
    state = load_fixture("hgx-h100")
    found = lids(state)
    assert len(found) == 10  # two spines, eight leaves
    for lid in found.values():
        for device in (f"lid-{lid}", f"lid-{lid:#x}"):
            result = tool(state, "flint", "-d", device, "q")
            assert result.exit_code == 0, result.stderr
            assert field(result.stdout, "FW Version") == SWITCH_FIRMWARE
            assert field(result.stdout, "PSID") == SWITCH_PSID
    # the switch's own GUID, as ibswitches shows it
    guid = tool(state, "ibswitches").stdout.split()[2].removeprefix("0x")
    assert field(tool(state, "mstflint", "-d", f"lid-{found['ib-spine-01']}", "q").stdout, "Base GUID").startswith(guid)


def test_the_fault_puts_one_leaf_behind_and_repair_restores_it() -> None:
    state = load_fixture("hgx-h100")
    FAULTS["switch-firmware-old"].apply(state, switch="ib-leaf-02")
    found = lids(state)
    versions = {
        name: field(tool(state, "flint", "-d", f"lid-{lid}", "q").stdout, "FW Version") for name, lid in found.items()
    }
    assert {n for n, v in versions.items() if v != SWITCH_FIRMWARE} == {"ib-leaf-02"}
    assert versions["ib-leaf-02"] == "31.2010.1064"
    FAULTS["switch-firmware-old"].revert(state, switch="ib-leaf-02")
    assert field(tool(state, "flint", "-d", f"lid-{found['ib-leaf-02']}", "q").stdout, "FW Version") == SWITCH_FIRMWARE


def test_a_lid_no_switch_has_and_a_fabric_without_subnet_manager_are_refused() -> None:
    state = load_fixture("hgx-h100")
    missing = tool(state, "flint", "-d", "lid-0x99", "q")
    assert missing.exit_code == 1 and "Cannot open Device: lid-0x99" in missing.stderr
    FAULTS["no-subnet-manager"].apply(state)
    assert tool(state, "flint", "-d", "lid-3", "q").exit_code == 1  # no LIDs without a subnet manager


def test_an_adapter_image_burned_at_a_switch_is_refused_on_its_psid(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")
    path = tmp_path / "node.json"
    save_state(state, path)
    (tmp_path / "node.json.d" / "root").mkdir(parents=True)
    (tmp_path / "node.json.d" / "root" / "fw.bin").write_text(firmware_image("MT_0000000838", "28.41.1000"))
    result = run_tool(["flint", "-d", "lid-3", "-i", "/root/fw.bin", "burn"], Session(path=path))
    assert result.exit_code == 1
    assert f"Image PSID (MT_0000000838) does not match the device's PSID ({SWITCH_PSID})" in result.stderr
    assert load_state(path).switch_firmware == {}  # nothing changed


def test_the_fault_names_a_switch_of_the_fabric() -> None:
    with pytest.raises(InputError, match="no switch ib-leaf-42"):
        FAULTS["switch-firmware-old"].apply(load_fixture("hgx-h100"), switch="ib-leaf-42")
    with pytest.raises(InputError, match="no InfiniBand fabric"):
        FAULTS["switch-firmware-old"].apply(load_fixture("pcie-l40s"))
