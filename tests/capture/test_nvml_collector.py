"""The NVML collector, run against the mock NVML over each fixture, and against the real pynvml here."""

from __future__ import annotations

import ast
import ctypes.util
import json
from pathlib import Path

import pynvml
import pytest

from assessor.capture import nvml as collector
from assessor.capture.nvml import NO_DRIVER_MESSAGE, collect, collect_json
from assessor.errors import GpulabError, ParseError
from assessor.facts import NodeFacts
from assessor.parsers import parse
from assessor.sim.fixtures import load_fixture
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.state import ComputeInstanceState, GpuInstanceState, NodeState


def facts_of(name_or_state: str | NodeState) -> NodeFacts:
    state = load_fixture(name_or_state) if isinstance(name_or_state, str) else name_or_state
    return collect(MockNvml(state))


def test_collector_on_dgx_a100() -> None:
    facts = facts_of("dgx-a100")
    assert facts.driver is not None and (facts.driver.version, facts.driver.cuda_version) == ("535.129.03", "12.2")
    assert facts.gpus is not None and len(facts.gpus) == 8
    assert {g.name for g in facts.gpus} == {"NVIDIA A100-SXM4-40GB"}
    assert [g.bus_id for g in facts.gpus][:2] == ["00000000:07:00.0", "00000000:0F:00.0"]
    assert [len(g.nvlinks or []) for g in facts.gpus] == [12] * 8
    gpu = facts.gpus[0]
    assert (gpu.memory_total_mib, gpu.power_limit_w, gpu.architecture) == (40960, 400.0, "Ampere")
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (False, False)
    assert facts.mig_instances == []  # MIG-capable, no instances
    assert (gpu.pcie_gen_current, gpu.pcie_width_current) == (4, 16)
    assert facts.problems == {}


def test_collector_on_hgx_h100() -> None:
    facts = facts_of("hgx-h100")
    assert facts.driver is not None and facts.driver.cuda_version == "12.7"
    assert facts.gpus is not None
    assert [g.bus_id for g in facts.gpus] == [
        f"00000000:{b}:00.0" for b in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
    ]
    assert {g.name for g in facts.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert [len(g.nvlinks or []) for g in facts.gpus] == [18] * 8
    assert all(
        link.active and link.errors == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}
        for g in facts.gpus
        for link in g.nvlinks or []
    )
    gpu = facts.gpus[0]
    assert (gpu.memory_total_mib, gpu.power_limit_w, gpu.power_draw_w) == (81559, 700.0, 100.89)
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")
    assert (gpu.temperature_slowdown_c, gpu.temperature_shutdown_c) == (89, 92)
    assert gpu.vbios == "96.00.74.00.01"
    assert gpu.throttle_reasons == ["gpu_idle"]


def test_collector_on_hgx_h200() -> None:
    facts = facts_of("hgx-h200")
    assert facts.gpus is not None and len(facts.gpus) == 8
    assert {g.name for g in facts.gpus} == {"NVIDIA H200"}
    assert {g.memory_total_mib for g in facts.gpus} == {143771}
    assert [len(g.nvlinks or []) for g in facts.gpus] == [18] * 8
    assert facts.gpus[0].bus_id == "00000000:0A:00.0"
    assert facts.driver is not None and facts.driver.cuda_version == "12.8"


def test_collector_on_pcie_l40s_leaves_unsupported_fields_none() -> None:
    facts = facts_of("pcie-l40s")
    assert facts.gpus is not None and len(facts.gpus) == 4
    assert {g.name for g in facts.gpus} == {"NVIDIA L40S"}
    for gpu in facts.gpus:
        assert gpu.nvlinks is None
        assert gpu.mig_mode_current is None and gpu.mig_mode_pending is None
        assert gpu.fabric_state is None
        assert gpu.retired_pages_pending is None
        assert gpu.memory_total_mib == 46068
    assert facts.mig_instances is None  # no GPU speaks MIG
    assert facts.problems == {}  # NotSupported is not a problem


def test_remapped_rows_tuple_becomes_the_remap_fields() -> None:
    state = load_fixture("hgx-h100")
    rows = state.gpus[6].remapped_rows
    assert rows is not None
    rows.correctable, rows.uncorrectable, rows.pending, rows.failure = 5, 1, True, False
    gpu = facts_of(state).gpus[6]  # type: ignore[index]
    assert (gpu.remap_correctable, gpu.remap_uncorrectable, gpu.remap_pending, gpu.remap_failure) == (5, 1, True, False)
    assert gpu.retired_pages_pending is None  # HBM: N/A, not False


def test_faults_in_the_state_show_in_the_facts() -> None:
    state = load_fixture("dgx-a100")
    g = state.gpus[3]
    g.throttle_reasons = ["hw_slowdown", "hw_thermal_slowdown"]
    g.ecc.volatile_uncorrected = 2
    g.pcie_gen_current, g.pcie_width_current = 3, 8
    g.nvlinks[11].active = False
    g.nvlinks[11].errors["crc_flit"] = 9
    g.fabric_state, g.fabric_status = "In Progress", None
    g.persistence_mode = False
    gpu = facts_of(state).gpus[3]  # type: ignore[index]
    assert gpu.throttle_reasons == ["hw_slowdown", "hw_thermal_slowdown"]
    assert gpu.ecc_volatile_uncorrected == 2
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current) == (3, 4, 8)
    assert gpu.nvlinks is not None and not gpu.nvlinks[11].active and gpu.nvlinks[11].errors["crc_flit"] == 9
    assert gpu.fabric_state == "In Progress"
    assert gpu.persistence_mode is False


def test_mig_instances_carry_profile_and_placement_including_a_gi_without_compute_instances() -> None:
    state = load_fixture("hgx-h100")
    gpu = state.gpus[1]
    gpu.mig_mode_current = gpu.mig_mode_pending = True
    gpu.mig_instances = [
        GpuInstanceState(1, 9, "3g.40gb", 4, 4, [ComputeInstanceState(0, 2, "3g.40gb", 0, 3)]),
        GpuInstanceState(
            5,
            14,
            "2g.20gb",
            0,
            2,
            [
                ComputeInstanceState(0, 0, "1c.2g.20gb", 0, 1),
                ComputeInstanceState(1, 0, "1c.2g.20gb", 1, 1),
            ],
        ),
        GpuInstanceState(13, 19, "1g.10gb", 2, 1, []),
    ]
    facts = facts_of(state)
    assert facts.gpus is not None and facts.gpus[1].mig_mode_current is True
    assert facts.mig_instances is not None
    got = [(i.gpu, i.gi_id, i.profile_id, i.name, i.placement_start, i.placement_size) for i in facts.mig_instances]
    assert got == [(1, 1, 9, "3g.40gb", 4, 4), (1, 5, 14, "2g.20gb", 0, 2), (1, 13, 19, "1g.10gb", 2, 1)]
    two_g = facts.mig_instances[1].compute_instances
    assert two_g is not None and [(c.ci_id, c.name, c.placement_start) for c in two_g] == [
        (0, "1c.2g.20gb", 0),
        (1, "1c.2g.20gb", 1),
    ]
    assert facts.mig_instances[2].compute_instances == []


def test_a_lost_gpu_is_recorded_as_a_problem_and_the_others_are_still_collected() -> None:
    state = load_fixture("hgx-h100")
    state.gpus[3].lost = True
    facts = facts_of(state)
    assert facts.gpus is not None and len(facts.gpus) == 8
    assert facts.gpus[3].name is None and facts.gpus[4].name == "NVIDIA H100 80GB HBM3"
    assert facts.problems["gpus"] == "GPU 3: GPU is lost"


def test_a_driver_library_mismatch_is_a_gpulab_error_with_nvml_s_message() -> None:
    state = load_fixture("hgx-h100")
    state.driver.kernel_module_version = "550.90.07"
    with pytest.raises(GpulabError, match="RM has detected an NVML/RM version mismatch"):
        facts_of(state)


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="this host has an NVIDIA driver")
def test_real_pynvml_without_a_driver_gives_the_clear_message() -> None:
    with pytest.raises(GpulabError) as err:
        collect(pynvml)
    assert str(err.value) == NO_DRIVER_MESSAGE
    assert "mock:hgx-h100" in str(err.value)


def _nvml_names_used(source: str) -> set[str]:
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "nvml"
        and node.attr.startswith(("nvml", "NVML", "c_nvml"))
    }


def test_every_pynvml_name_the_collector_uses_exists_in_the_installed_nvidia_ml_py() -> None:
    names = _nvml_names_used(Path(collector.__file__).read_text(encoding="utf-8"))
    assert "nvmlDeviceGetRemappedRows" in names and "nvmlDeviceGetGpuInstances" in names  # the scan sees calls
    missing = sorted(n for n in names if not hasattr(pynvml, n))
    assert missing == []


def test_collect_json_round_trips_through_the_nvml_parser() -> None:
    state = load_fixture("dgx-a100")
    state.gpus[0].mig_mode_current = True
    state.gpus[0].mig_instances = [
        GpuInstanceState(1, 0, "7g.40gb", 0, 8, [ComputeInstanceState(0, 4, "7g.40gb", 0, 7)])
    ]
    text = json.dumps(collect_json(MockNvml(state)), indent=2)
    parsed = parse("nvml", text)
    direct = collect(MockNvml(state))
    assert parsed.driver == direct.driver
    assert parsed.gpus == direct.gpus
    assert parsed.mig_instances == direct.mig_instances
    assert parsed.mig_instances is not None and parsed.mig_instances[0].name == "7g.40gb"


def test_the_nvml_parser_names_the_line_of_broken_json() -> None:
    with pytest.raises(ParseError) as err:
        parse("nvml", '{\n  "driver": {},\n  "gpus": [\n')
    assert err.value.line is not None and err.value.line >= 3


def test_the_nvml_parser_refuses_json_that_is_not_an_object() -> None:
    with pytest.raises(ParseError, match="JSON object"):
        parse("nvml", "[1, 2]")


@pytest.mark.parametrize(
    ("fixture", "profile"),
    [
        ("dgx-a100", "dgx-a100"),
        ("hgx-h100", "hgx-h100"),
        ("hgx-h200", "hgx-h200"),
        ("hgx-b200", "hgx-b200"),
        ("pcie-l40s", "any-gpu-node"),
    ],
)
def test_a_healthy_fixture_passes_the_nvml_checks_of_its_readiness_profile(fixture: str, profile: str) -> None:
    from assessor.assess.pipeline import run_profile
    from assessor.assess.profiles import load

    results = run_profile(facts_of(fixture), load(profile))
    bad = [(r.check, r.status, r.message) for r in results if r.status in ("fail", "warn", "error")]
    assert bad == []
    passed = {r.check for r in results if r.status == "pass"}
    # what NVML alone can prove; the rest (IB, NCCL, services...) needs the simulated tools and skips here
    assert {"driver.loaded", "gpu.count", "gpu.ecc_mode", "gpu.row_remap", "gpu.throttle", "gpu.temperature"} <= passed
    if fixture != "pcie-l40s":
        assert {"gpu.model", "gpu.nvlink", "gpu.pcie_link", "fabric.state"} <= passed
