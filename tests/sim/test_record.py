"""Recording a real node: snapshot -> simulated node -> simulated tools -> the same facts as the real node."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from assessor.capture.snapshot import write
from assessor.errors import InputError
from assessor.facts import Gpu
from assessor.parsers import ibstat, nvidia_smi_mig, nvidia_smi_xml
from assessor.parsers.assemble import facts_from_snapshot
from assessor.sim import mig
from assessor.sim.fixtures import fixture_names, load_fixture
from assessor.sim.record import closest_fixture, record, record_command
from assessor.sim.state import load_state
from assessor.sim.tools import Session, run_tool
from assessor.targets.mock import MockTarget
from tests.support.corpus import CORPUS

XMLS = sorted((CORPUS / "nvidia_smi_xml").glob("*.xml"))


def snapshot(tmp_path: Path, files: dict[str, Path]) -> Path:
    """A snapshot directory holding corpus files under their snapshot names (nvidia-smi-q.xml...)."""
    directory = tmp_path / "snap"
    directory.mkdir()
    for name, source in files.items():
        shutil.copy(source, directory / name)
    return directory


def state_path(index: int, fact_field: str) -> str:
    """The state path :func:`record` names when it fills a GPU fact the snapshot lacks."""
    if fact_field.startswith("ecc_") and not fact_field.startswith("ecc_mode"):
        return f"gpus[{index}].ecc.{fact_field[4:]}"
    return f"gpus[{index}].{fact_field}"


# Facts the simulator derives from what runs on the node rather than keeps: utilisation follows its jobs
# (a snapshot's processes are not re-created as jobs), so a recorded busy GPU reads idle.
DERIVED = {"utilization_gpu_pct"}


def assert_same_gpus(original: list[Gpu], back: list[Gpu], filled: list[str]) -> None:
    assert len(back) == len(original)
    for a, b in zip(original, back, strict=True):
        for key, want in dataclasses.asdict(a).items():
            if key in DERIVED:
                continue
            got = dataclasses.asdict(b)[key]
            if want is None and got is not None:
                # The state needs a value here (a power draw on a board that prints N/A): the fixture's,
                # and record() says so.
                assert state_path(a.index, key) in filled, f"GPU {a.index} {key}: {got!r} not listed as filled"
                continue
            assert got == want, f"GPU {a.index} {key}: recorded {got!r}, real {want!r}"


@pytest.mark.parametrize("xml", XMLS, ids=lambda p: p.name)
def test_recording_then_simulating_gives_the_real_node_s_nvidia_smi_facts(xml: Path, tmp_path: Path) -> None:
    state, filled = record(snapshot(tmp_path, {"nvidia-smi-q.xml": xml}))
    original = nvidia_smi_xml.parse(xml.read_text(encoding="utf-8", errors="replace"))
    back = nvidia_smi_xml.parse(run_tool(["nvidia-smi", "-q", "-x"], Session(state=state)).stdout)
    assert original.gpus is not None and back.gpus is not None
    assert_same_gpus(original.gpus, back.gpus, filled)
    assert back.driver == original.driver
    assert "ib_hcas" in filled and "services" in filled  # the snapshot had neither: the fixture's


def test_a_mig_node_with_its_instances_and_infiniband_round_trips(tmp_path: Path) -> None:
    xml = CORPUS / "nvidia_smi_xml" / "a100-sxm4-40gb-mig-510-v11.xml"
    lgi = CORPUS / "nvml" / "mig_lgi_A100_40GB.txt"
    ib = CORPUS / "ibstat" / "04_a100_cx6dx_mt4126_200.txt"
    directory = snapshot(tmp_path, {"nvidia-smi-q.xml": xml, "nvidia-smi-mig-lgi.txt": lgi, "ibstat.txt": ib})
    state, filled = record(directory)
    assert state.fixture == "recorded-from-dgx-a100"
    session = Session(state=state)
    want_mig = nvidia_smi_mig.parse_lgi(lgi.read_text(encoding="utf-8")).mig_instances
    got_mig = nvidia_smi_mig.parse_lgi(run_tool(["nvidia-smi", "mig", "-lgi"], session).stdout).mig_instances
    assert want_mig is not None and len(want_mig) == 4
    key = lambda g: (g.gpu, g.gi_id)  # noqa: E731
    assert sorted(got_mig or [], key=key) == sorted(want_mig, key=key)
    want_ib = ibstat.parse(ib.read_text(encoding="utf-8")).ib_ports
    got_ib = ibstat.parse(run_tool(["ibstat"], session).stdout).ib_ports
    assert got_ib == want_ib and want_ib
    assert "ib_hcas" not in filled and "ib_hcas[*].bus_id" in filled


def test_the_closest_fixture_is_the_same_model_else_the_same_family_else_architecture() -> None:
    from assessor.facts import NodeFacts

    assert closest_fixture(NodeFacts(gpus=[Gpu(0, name="NVIDIA H100 NVL", architecture="Hopper")])) == "h100-nvl"
    assert closest_fixture(NodeFacts(gpus=[Gpu(0, name="NVIDIA A100-SXM4-80GB", architecture="Ampere")])) == (
        "dgx-a100"
    )
    assert closest_fixture(NodeFacts(gpus=[Gpu(0, name="NVIDIA L4", architecture="Ada Lovelace")])) == "pcie-l40s"
    assert closest_fixture(NodeFacts(gpus=[Gpu(0, name="Tesla V100", architecture=None)])) == "hgx-h100"


def test_values_the_snapshot_lacks_are_listed_and_real_values_are_not(tmp_path: Path) -> None:
    xml = CORPUS / "nvidia_smi_xml" / "quadro-p400-418-nodtd.xml"  # power N/A, no architecture field
    state, filled = record(snapshot(tmp_path, {"nvidia-smi-q.xml": xml}))
    assert "gpus[0].power_draw_w" in filled and "gpus[0].architecture" in filled
    assert "gpus[0].name" not in filled and state.gpus[0].name == "Quadro P400"
    assert state.gpus[0].ecc_mode_current is None  # N/A stays N/A
    assert "gpus[*].clocks_mhz" in filled


def test_record_command_writes_a_state_the_simulator_loads(tmp_path: Path) -> None:
    xml = CORPUS / "nvidia_smi_xml" / "v100s-pcie-32gb-x8-460-v11.xml"
    directory = snapshot(tmp_path, {"nvidia-smi-q.xml": xml})
    recorded, filled = record_command(f"snapshot:{directory}", tmp_path / "node.json")
    state = load_state(tmp_path / "node.json")
    assert state == recorded and state.fixture == "recorded-from-hgx-h100"
    assert len(state.gpus) == 8 and state.gpus[0].name == "Tesla V100S-PCIE-32GB"
    assert state.gpus[0].retired_pages is not None  # V100 retires pages: the snapshot said so
    assert "driver.build_date" in filled


def test_a_directory_without_gpu_facts_is_an_input_error(tmp_path: Path) -> None:
    directory = snapshot(tmp_path, {"ibstat.txt": CORPUS / "ibstat" / "04_a100_cx6dx_mt4126_200.txt"})
    with pytest.raises(InputError, match="no GPU facts"):
        record(directory)


@pytest.mark.parametrize("fixture", fixture_names())
def test_a_captured_simulated_node_records_back_to_the_same_facts(fixture: str, tmp_path: Path) -> None:
    # The whole capture (every snapshot file gpulab takes), of a node with MIG instances where it has MIG.
    state = load_fixture(fixture)
    if state.gpus[1].mig_supported:
        session = Session(state=state)
        assert run_tool(["nvidia-smi", "-i", "1", "-mig", "1"], session).exit_code == 0
        ids = [p.id for p in mig.profiles_for(state.gpus[1].name)]
        tokens = f"{ids[-2]},{ids[0]}"  # a half-GPU instance and a 1-slice one (A30: 5,14; A100: 5,19)
        assert run_tool(["nvidia-smi", "mig", "-i", "1", "-cgi", tokens, "-C"], session).exit_code == 0
    snap = MockTarget(f"mock:{fixture}", state=state).snapshot(timeout=30)
    write(snap, tmp_path / "snap")
    original = facts_from_snapshot(snap)
    recorded, filled = record(tmp_path / "snap")
    back = facts_from_snapshot(MockTarget("mock:recorded", state=recorded).snapshot(timeout=30))
    for field in dataclasses.fields(original):
        if field.name != "sources":
            assert getattr(back, field.name) == getattr(original, field.name), field.name
    if state.gpus[1].mig_supported:
        assert original.mig_instances is not None and len(original.mig_instances) == 2
    assert "ib_hcas" not in filled and "modules" not in filled and "services" not in filled


def test_a_gpu_list_alone_keeps_the_fixture_s_capabilities_and_says_so(tmp_path: Path) -> None:
    listing = CORPUS / "nvml" / "nvidia_smi_L_mig_A100_40GB_guide.txt"
    state, filled = record(snapshot(tmp_path, {"nvidia-smi-L.txt": listing}))
    gpu = state.gpus[0]
    assert (gpu.name, gpu.uuid) == ("A100-SXM4-40GB", "GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0")
    assert gpu.mig_supported and gpu.remapped_rows is not None  # -L does not say N/A: the A100 fixture's
    assert {"gpus[0].mig_supported", "gpus[0].remapped_rows", "gpus[0].bus_id"} <= set(filled)


def test_record_command_takes_snapshot_sources_only(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="only snapshot:DIR"):
        record_command("ssh:gpu-node-1", tmp_path / "node.json")
    assert not (tmp_path / "node.json").exists()
