"""The simulated MFT/mstflint tools: mlxlink, flint/mstflint, mlxfwmanager, mlxfwreset.

Layouts are held to the real outputs in the corpus; the firmware on flash and the firmware running are held
apart until a firmware reset or a reboot, as on a real ConnectX.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from assessor.sim.tools.boot import reboot
from assessor.sim.tools.mlxfw import firmware_image
from tests.support.corpus import read_corpus

IMAGE = "/root/firmware/fw-ConnectX7-rel-28_41_1000.bin"
OTHER = "/root/firmware/fw-other-card.bin"


@pytest.fixture
def node(tmp_path: Path) -> Session:
    """An HGX H100 whose mlx5_2 runs older firmware, with two images on its disk (one of another card)."""
    state = load_fixture("hgx-h100")
    faults.get("hca-firmware-old").apply(state, ca="mlx5_2")
    path = tmp_path / "node.json"
    save_state(state, path)
    root = tmp_path / "node.json.d" / "root" / "firmware"
    root.mkdir(parents=True)
    (root / Path(IMAGE).name).write_text(firmware_image("MT_0000000838", "28.41.1000"), encoding="utf-8")
    (root / Path(OTHER).name).write_text(firmware_image("MT_0000000834", "28.41.1000"), encoding="utf-8")
    return Session(path=path)


def run(session: Session, *argv: str) -> ToolResult:
    return run_tool(list(argv), session)


def keys(text: str, sep: str = ":") -> list[str]:
    return [line.split(sep, 1)[0].strip() for line in text.splitlines() if sep in line and not line.startswith(" ")]


# ---- layouts --------------------------------------------------------------------------------------


def test_flint_query_has_the_real_keys_in_the_real_order_and_column() -> None:
    real = read_corpus("flint/01_connectx6_burned_not_yet_running.txt")
    state = load_fixture("hgx-h100")
    state.hca("mlx5_0").firmware_next = "28.43.1014"
    ours = run(Session(state=state), "flint", "-d", "mlx5_0", "q").stdout
    real_keys = [k for k in keys(real) if k != "FW Release Date"]  # left out: the simulator knows no release date
    assert keys(ours) == real_keys
    assert {line.index(line.split(":", 1)[1].strip()) for line in ours.splitlines() if ":" in line} == {23}
    assert "FW Version:            28.43.1014\nFW Version(Running):   28.41.1000\n" in ours


def test_mlxfwmanager_prints_the_real_device_block() -> None:
    real = read_corpus("mlxfwmanager/01_connectx6lx_update_required.txt")
    ours = run(Session(state=load_fixture("hgx-h100")), "mlxfwmanager", "--query").stdout
    assert ours.startswith("Querying Mellanox devices firmware ...\n\nDevice #1:\n----------\n")
    block = ours.split("Device #2:")[0]
    labels = re.compile(r"^  (\w[\w ]*?):", re.MULTILINE)
    assert labels.findall(block) == labels.findall(real)  # Device Type ... Base MAC, Versions, Status
    assert len(re.findall(r"^Device #\d+:$", ours, re.MULTILINE)) == 8
    for label in ("  Device Type:      ", "  PSID:             ", "  Versions:         Current        Available"):
        assert label in real and label in ours


def test_mlxlink_sections_are_laid_out_as_the_real_one() -> None:
    real = read_corpus("mlxlink/01_bluefield3_100g_dac_m_c_prompted.txt").split("\n\nubuntu@")[0]
    ours = run(Session(state=load_fixture("hgx-h100")), "mlxlink", "-d", "mlx5_0", "-m", "-c").stdout

    def section(text: str, title: str) -> list[str]:
        body = text.split(f"\n{title}\n{'-' * len(title)}\n", 1)[1].split("\n\n", 1)[0]
        return body.splitlines()

    for title in ("Operational Info", "Troubleshooting Info", "Tool Information", "Physical Counters and BER Info"):
        ours_rows, real_rows = section(ours, title), section(real, title)
        assert [r[:37] for r in ours_rows] == [r[:37] for r in real_rows], title  # the same keys, padded alike
    real_module = [r[:37] for r in section(real, "Module Info")]
    assert [r[:37] for r in section(ours, "Module Info")] == [
        r for r in real_module if r[:37] in [o[:37] for o in section(ours, "Module Info")]
    ]


# ---- firmware: burn, pending, activate ------------------------------------------------------------------


def ibstat_firmware(session: Session, ca: str) -> str:
    line = next(x for x in run(session, "ibstat", ca).stdout.splitlines() if "Firmware version" in x)
    return line.split(":", 1)[1].strip()


def test_a_burn_waits_for_a_firmware_reset(node: Session) -> None:
    burned = run(node, "flint", "-d", "mlx5_2", "-i", IMAGE, "burn")
    assert burned.exit_code == 0 and "-I- To load new FW run mlxfwreset or reboot machine." in burned.stdout
    assert "Current FW version on flash:  28.39.1002" in burned.stdout
    assert ibstat_firmware(node, "mlx5_2") == "28.39.1002"  # still running the old one
    assert "FW Version(Running):   28.39.1002" in run(node, "flint", "-d", "mlx5_2", "q").stdout
    refused = run(node, "mlxfwreset", "-d", "mlx5_2", "reset")  # no terminal to answer the question
    assert refused.exit_code != 0 and ibstat_firmware(node, "mlx5_2") == "28.39.1002"
    reset = run(node, "mlxfwreset", "-d", "/dev/mst/mt4129_pciconf2", "-y", "reset")
    assert reset.exit_code == 0 and "-I- FW was loaded successfully." in reset.stdout
    assert ibstat_firmware(node, "mlx5_2") == "28.41.1000"
    assert "Running" not in run(node, "flint", "-d", "mlx5_2", "q").stdout


def test_a_reboot_loads_the_image_on_flash(node: Session) -> None:
    assert run(node, "mstflint", "-d", "0000:3c:00.0", "-i", IMAGE, "burn").exit_code == 0
    with node.update() as state:
        reboot(state, node.root())
    assert ibstat_firmware(node, "mlx5_2") == "28.41.1000"


def test_another_cards_image_is_refused_on_its_psid(node: Session) -> None:
    refused = run(node, "flint", "-d", "mlx5_2", "-i", OTHER, "burn")
    assert refused.exit_code == 1 and "PSID" in refused.stderr
    assert "Running" not in run(node, "flint", "-d", "mlx5_2", "q").stdout
    missing = run(node, "flint", "-d", "mlx5_2", "-i", "/root/nowhere.bin", "burn")
    assert missing.exit_code == 1 and "No such file" in missing.stderr


def test_mlxfwmanager_updates_only_the_adapters_behind(node: Session) -> None:
    query = run(node, "mlxfwmanager", "-i", IMAGE, "--query").stdout
    assert query.count("Status:           Update required") == 1 and query.count("Up to date") == 7
    update = run(node, "mlxfwmanager", "-u", "-i", IMAGE, "-y")
    assert "Found 1 device(s) requiring firmware update..." in update.stdout
    assert update.stdout.rstrip().endswith("Restart needed for updates to take effect.")
    state: NodeState = node.read()
    assert [h.name for h in state.ib_hcas if h.firmware_next] == ["mlx5_2"]
    assert "FW (Running)   28.39.1002" in run(node, "mlxfwmanager", "-d", "mlx5_2").stdout


def test_unknown_devices_are_refused_by_every_tool() -> None:
    session = Session(state=load_fixture("hgx-h100"))
    for argv in (["flint", "-d", "mlx5_9", "q"], ["mlxlink", "-d", "mlx5_9"], ["mlxfwreset", "-d", "mlx5_9", "reset"]):
        result = run(session, *argv)
        assert result.exit_code != 0 and "mlx5_9" in result.stderr, argv


# ---- mlxlink counters ----------------------------------------------------------------------------------


def counters(session: Session, ca: str) -> dict[str, str]:
    text = run(session, "mlxlink", "-d", ca, "-c").stdout.split("Physical Counters and BER Info")[1]
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines()) if v}


def test_clearing_mends_old_counts_but_not_a_marginal_cable() -> None:
    state = load_fixture("hgx-h100")
    faults.get("ib-ber-high").apply(state, ca="mlx5_5")
    faults.get("ib-link-flapped").apply(state, ca="mlx5_1")
    session = Session(state=state)
    assert counters(session, "mlx5_1")["Link Down Counter"] == "2"
    for ca in ("mlx5_1", "mlx5_5"):
        assert run(session, "mlxlink", "-d", ca, "--pc").stdout == "\nClearing Counters...\n"
    clean, marginal = counters(session, "mlx5_1"), counters(session, "mlx5_5")
    assert (clean["Effective Physical Errors"], clean["Effective Physical BER"], clean["Link Down Counter"]) == (
        "0",
        "15E-255",
        "0",
    )
    assert int(marginal["Effective Physical Errors"]) > 0 and marginal["Effective Physical BER"] == "3E-11"
    assert "Bad signal integrity" in run(session, "mlxlink", "-d", "mlx5_5").stdout
    assert "-5" not in counters(session, "mlx5_0")["Raw Physical BER"]  # healthy ports stay at 2E-9


def test_mlxlink_options() -> None:
    session = Session(state=load_fixture("hgx-h100"))
    assert "EYE Opening Info" in run(session, "mlxlink", "-d", "mlx5_0", "-e").stdout
    assert "Module Info" in run(session, "mlxlink", "-d", "mlx5_0", "--show_module").stdout
    both = run(session, "mlxlink", "-d", "mlx5_0", "-mc").stdout
    assert "Module Info" in both and "Physical Counters" in both
    assert run(session, "mlxlink", "-d", "mlx5_0", "-p", "2").exit_code == 1  # a single-port card
    assert run(session, "mlxlink", "-d", "mlx5_0", "--frobnicate").exit_code == 1
    assert run(session, "mlxlink", "-c").exit_code == 1  # no device
