"""The two faces of a simulated node agree: what the NVML collector reads through the mock NVML
equals what the foundation's parser reads from the simulated `nvidia-smi -q -x`."""

from __future__ import annotations

import dataclasses

import pytest

from assessor.capture.nvml import collect
from assessor.parsers import nvidia_smi_xml
from assessor.sim import faults
from assessor.sim.fixtures import fixture_names, load_fixture
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool

# nvidia-smi -q -x has no NVLink section: only NVML reports links (gpu.nvlink reads them from nvml.json).
NOT_IN_XML = {"nvlinks"}


def both(state: NodeState) -> tuple[list[dict], list[dict], dict, dict]:
    nvml = collect(MockNvml(state))
    xml = nvidia_smi_xml.parse(run_tool(["nvidia-smi", "-q", "-x"], Session(state=state)).stdout)
    assert nvml.gpus is not None and xml.gpus is not None
    strip = [{k: v for k, v in dataclasses.asdict(g).items() if k not in NOT_IN_XML} for g in nvml.gpus]
    parsed = [{k: v for k, v in dataclasses.asdict(g).items() if k not in NOT_IN_XML} for g in xml.gpus]
    assert nvml.driver is not None and xml.driver is not None
    driver = {"version": nvml.driver.version, "cuda_version": nvml.driver.cuda_version}
    parsed_driver = {"version": xml.driver.version, "cuda_version": xml.driver.cuda_version}
    return strip, parsed, driver, parsed_driver


@pytest.mark.parametrize("fixture", ["dgx-a100", "hgx-h100", "hgx-h200", "hgx-b200", "gb200-tray", "pcie-l40s"])
def test_collector_facts_equal_parsed_xml_facts(fixture: str) -> None:
    assert fixture in fixture_names()
    nvml, xml, driver, xml_driver = both(load_fixture(fixture))
    assert len(nvml) == len(xml) > 0
    for a, b in zip(nvml, xml, strict=True):
        assert a == b, f"GPU {a['index']}: " + ", ".join(f"{k}: nvml {a[k]!r} xml {b[k]!r}" for k in a if a[k] != b[k])
    assert driver == xml_driver


@pytest.mark.parametrize(
    "fault",
    ["row-remap-pending", "ecc-uncorrectable", "pcie-degraded", "thermal-throttle", "persistence-off", "mig-pending"],
)
def test_faults_read_the_same_through_both_faces(fault: str) -> None:
    state = load_fixture("dgx-a100")
    faults.FAULTS[fault].apply(state)
    nvml, xml, _, _ = both(state)
    assert nvml == xml
    assert nvml != both(load_fixture("dgx-a100"))[0]  # the fault changed something both faces see
