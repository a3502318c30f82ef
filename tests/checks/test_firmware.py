"""firmware.baseline and cable.ber: pass, fail, missing and broken facts, from real and simulated outputs."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from assessor.checks import get, run_check
from assessor.checks.result import Result
from assessor.facts import AdapterFirmware, IbPort, LinkPhy, NodeFacts
from assessor.parsers import mlxlink
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.builders import gpu, ib_port, node
from tests.support.corpus import read_corpus

BASELINE = {"vbios": "96.00.74.00.01", "hca": "28.41.1000", "transceiver": "47.171.0001"}


def baseline(facts: NodeFacts, **params: str) -> Result:
    return run_check(get("firmware.baseline"), facts, params or BASELINE)


def ber(facts: NodeFacts, **params: object) -> Result:
    return run_check(get("cable.ber"), facts, params)


def port(ca: str, firmware: str | None) -> IbPort:
    return dataclasses.replace(ib_port(ca), firmware=firmware)


def link(device: str, **fields: object) -> LinkPhy:
    healthy: dict[str, object] = {
        "effective_ber": 1.5e-254,
        "effective_errors": 0,
        "raw_ber": 2e-9,
        "link_down": 0,
        "link_recovery": 0,
        "status_opcode": 0,
        "module_firmware": "47.171.0001",
    }
    return LinkPhy(device=device, port=1, **{**healthy, **fields})  # type: ignore[arg-type]


def fleet(**changes: Any) -> NodeFacts:
    facts = node(
        gpus=[gpu(i, vbios="96.00.74.00.01") for i in range(8)],
        ib_ports=[port(f"mlx5_{i}", "28.41.1000") for i in range(8)],
        link_phy=[link(f"mlx5_{i}", module_serial=f"MT2300FT{i:05d}") for i in range(8)],
    )
    return dataclasses.replace(facts, **changes)


# ---- firmware.baseline ---------------------------------------------------------------------------------


def test_a_node_at_the_baseline_passes() -> None:
    r = baseline(fleet())
    assert r.status == "pass" and "24 components" in r.message


def test_every_deviating_component_is_named() -> None:
    gpus = [gpu(i, vbios="96.00.61.00.01" if i == 3 else "96.00.74.00.01") for i in range(8)]
    ports = [port(f"mlx5_{i}", "28.39.1002" if i == 2 else "28.41.1000") for i in range(8)]
    links = [link(f"mlx5_{i}", module_serial=f"MT2300FT{i:05d}") for i in range(8)]
    links[5] = link("mlx5_5", module_firmware="46.120.0002", module_serial="MT2300FT00005")
    r = baseline(fleet(gpus=gpus, ib_ports=ports, link_phy=links))
    assert r.status == "fail" and r.hint
    for named in ("GPU 3", "96.00.61.00.01", "mlx5_2 HCA firmware 28.39.1002", "mlx5_5 port 1", "MT2300FT00005"):
        assert named in r.message, named
    assert "GPU 2" not in r.message and "mlx5_1 " not in r.message


def test_an_image_burned_but_not_loaded_is_named_as_such() -> None:
    ports = [dataclasses.replace(port(f"mlx5_{i}", "28.41.1000"), node_guid=f"0xa088c2030000000{i}") for i in range(2)]
    ports[1] = dataclasses.replace(ports[1], firmware="28.39.1002")
    waiting = AdapterFirmware(device="/dev/mst/mt4129_pciconf1", base_guid="a088c20300000001", firmware="28.41.1000")
    facts = fleet(ib_ports=ports, adapter_firmware=[dataclasses.replace(waiting, running="28.39.1002")])
    r = baseline(facts, hca="28.41.1000")
    assert r.status == "fail" and "mlx5_1 HCA firmware 28.39.1002 (28.41.1000 on flash, not loaded" in r.message
    assert "on flash" not in baseline(fleet(ib_ports=ports, adapter_firmware=[waiting]), hca="28.41.1000").message


def test_only_what_the_baseline_names_is_compared() -> None:
    facts = fleet(link_phy=None)
    assert baseline(facts, hca="28.41.1000").status == "pass"  # no transceiver version given: no mlxlink needed
    assert baseline(facts, hca="28.43.1014").status == "fail"


@pytest.mark.parametrize(
    "facts",
    [
        fleet(link_phy=None),  # the transceivers were not captured
        fleet(ib_ports=[port("mlx5_0", None)]),  # ibstat without a firmware line
        fleet(link_phy=[link("mlx5_0", module_firmware=None)]),  # mlxlink -m says N/A
        fleet(gpus=[gpu(0, vbios=None)]),
    ],
)
def test_an_unknown_version_is_never_a_pass(facts: NodeFacts) -> None:
    r = baseline(facts)
    assert r.status == "error" and r.hint, r.message


def test_without_a_baseline_the_odd_one_out_is_named() -> None:
    assert run_check(get("firmware.baseline"), fleet(), {}).status == "pass"
    gpus = [gpu(i, vbios="96.00.61.00.01" if i == 6 else "96.00.74.00.01") for i in range(8)]
    r = run_check(get("firmware.baseline"), fleet(gpus=gpus, link_phy=None), {})
    assert r.status == "fail" and "GPU 6" in r.message and "node's components" in str(r.expected)
    # mlxfwmanager alone (no ibstat): its adapters, by the version they run
    from assessor.parsers import mlxfwmanager

    alone = mlxfwmanager.parse(read_corpus("mlxfwmanager/01_connectx6lx_update_required.txt"))
    assert run_check(get("firmware.baseline"), alone, {"hca": "26.43.1014"}).status == "fail"
    assert run_check(get("firmware.baseline"), alone, {}).status == "pass"  # one adapter is its own majority
    # no version most components share, or nothing to compare: no verdict
    split = [port("mlx5_0", "28.39.1002"), port("mlx5_1", "28.41.1000")]
    assert run_check(get("firmware.baseline"), node(ib_ports=split), {}).status == "skip"
    assert run_check(get("firmware.baseline"), node(), {}).status == "skip"


def test_the_baseline_of_a_simulated_node_after_the_faults() -> None:
    state = load_fixture("hgx-h100")
    faults.get("hca-firmware-old").apply(state, ca="mlx5_6")
    session = Session(state=state)
    from assessor.parsers import parse

    facts = node(
        ib_ports=parse("ibstat", run_tool(["ibstat"], session).stdout).ib_ports,
        gpus=parse("nvidia-smi-q", run_tool(["nvidia-smi", "-q"], session).stdout).gpus,
    )
    r = baseline(facts, hca="28.41.1000", vbios="96.00.74.00.01")
    assert r.status == "fail" and "mlx5_6 HCA firmware 28.39.1002" in r.message and "GPU" not in r.message


# ---- cable.ber -------------------------------------------------------------------------------------------


def test_the_real_healthy_links_pass() -> None:
    facts = mlxlink.parse(read_corpus("mlxlink/01_bluefield3_100g_dac_m_c_prompted.txt"))
    r = ber(facts)
    assert r.status == "pass" and "2 ports clean" in r.message


def test_a_marginal_link_fails_naming_its_port_and_module() -> None:
    bad = link(
        "mlx5_5",
        effective_ber=3e-11,
        effective_errors=72,
        raw_ber=4e-5,
        link_recovery=37,
        status_opcode=15,
        recommendation="Bad signal integrity",
        module_vendor="NVIDIA",
        module_part_number="MMA4Z00-NS400",
        module_serial="MT2786FT18820",
    )
    r = ber(fleet(link_phy=[link("mlx5_4"), bad]))
    assert r.status == "fail" and r.hint and "not the HCA" in r.hint
    for named in ("mlx5_5 port 1", "MMA4Z00-NS400", "MT2786FT18820", "3E-11", "72 uncorrected", "Bad signal integrity"):
        assert named in r.message, named
    assert "mlx5_4" not in r.message


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"effective_ber": 5e-12}, "effective BER 5E-12"),  # over ibdiagnet's 1E-12
        ({"effective_errors": 1}, "1 uncorrected errors"),
        ({"link_down": 2}, "2 link down"),
        ({"link_recovery": 1}, "1 link error recoveries"),
        ({"status_opcode": 17}, "opcode 17"),
    ],
)
def test_each_sign_of_a_bad_signal_fails(fields: dict[str, object], words: str) -> None:
    r = ber(fleet(link_phy=[link("mlx5_0", **fields)]))
    assert r.status == "fail" and words in r.message, r.message


def test_thresholds_are_parameters() -> None:
    noisy = fleet(link_phy=[link("mlx5_0", raw_ber=4e-5, link_recovery=1)])
    assert ber(noisy, max_link_recovery=1).status == "pass"  # raw BER is not judged unless asked
    r = ber(noisy, max_link_recovery=1, max_raw_ber=1e-6)
    assert r.status == "fail" and "raw BER 4E-5" in r.message
    assert ber(fleet(link_phy=[link("mlx5_0", effective_ber=5e-12)]), max_effective_ber=1e-11).status == "pass"


def test_ports_chooses_what_is_judged() -> None:
    facts = fleet(link_phy=[link("mlx5_1"), link("mlx5_5", effective_errors=9)])
    assert ber(facts, ports=["mlx5_1"]).status == "pass"
    assert ber(facts, ports=["mlx5_5"]).status == "fail"
    assert ber(facts, ports=["mlx5_9"]).status == "skip"


def test_missing_and_partial_counters() -> None:
    assert ber(node()).status == "skip"  # no mlxlink in the snapshot
    no_counters = LinkPhy(device="mlx5_0", port=1, state="Active")  # mlxlink without -c
    assert ber(fleet(link_phy=[no_counters])).status == "skip"
    r = ber(fleet(link_phy=[no_counters, link("mlx5_1")]))
    assert r.status == "warn" and "mlx5_0" in r.message
    cut = mlxlink.parse(read_corpus("mlxlink/03_bluefield3_cut_in_operational_info.txt"))
    assert ber(cut).status == "skip"


def test_a_fresh_read_of_the_simulated_marginal_port_fails_after_a_clear() -> None:
    state = load_fixture("hgx-h100")
    faults.get("ib-ber-high").apply(state, ca="mlx5_5")
    session = Session(state=state)
    run_tool(["mlxlink", "-d", "mlx5_5", "--pc"], session)
    text = "".join(
        f"$ mlxlink -d {ca} -m -c\n" + run_tool(["mlxlink", "-d", ca, "-m", "-c"], session).stdout
        for ca in ("mlx5_4", "mlx5_5")
    )
    r = ber(mlxlink.parse(text))
    assert r.status == "fail" and r.message.startswith("mlx5_5 port 1 (module NVIDIA MMA4Z00-NS400 SN ")
