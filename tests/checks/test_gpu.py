from dataclasses import replace

import pytest

from assessor.facts import Gpu, KernelEvent, NvLink, Service, Topology
from tests.support.builders import A100, H100, H100_PCIE, L40S, gpu, gpus, node, run

GPU_CHECKS = [
    "gpu.count",
    "gpu.model",
    "gpu.persistence",
    "gpu.ecc_mode",
    "gpu.ecc_errors",
    "gpu.row_remap",
    "gpu.pcie_link",
    "gpu.throttle",
    "gpu.temperature",
    "gpu.nvlink",
]


@pytest.mark.parametrize("check_id", GPU_CHECKS)
def test_healthy_h100_node_passes(check_id):
    r = run(check_id, node(gpus=gpus(8)))
    assert r.status == "pass", r.message


@pytest.mark.parametrize("check_id", GPU_CHECKS)
def test_without_gpu_facts_skips(check_id):
    r = run(check_id, node())
    assert r.status == "skip"
    assert "nvml.json" in r.message


@pytest.mark.parametrize("check_id", GPU_CHECKS)
def test_broken_gpu_facts_error(check_id):
    r = run(check_id, node(problems={"gpus": "nvidia-smi-q.xml: not well-formed (line 12)"}))
    assert r.status == "error"
    assert "line 12" in r.message


# -- count / model


def test_count_short_fails_naming_what_was_found():
    r = run("gpu.count", node(gpus=gpus(7)), expected=8)
    assert r.status == "fail"
    assert (r.observed, r.expected) == (7, 8)
    assert "Xid 79" in str(r.hint)


def test_zero_gpus_fails():
    r = run("gpu.count", node(gpus=[]))
    assert (r.status, r.observed) == ("fail", 0)


def test_model_expected_substring_is_case_insensitive():
    assert run("gpu.model", node(gpus=gpus(8)), expected="h100").status == "pass"


def test_model_other_than_expected_fails():
    r = run("gpu.model", node(gpus=gpus(8, A100)), expected="H100")
    assert r.status == "fail"
    assert "A100-SXM4-40GB" in r.message


def test_mixed_models_fail():
    mixed = [*gpus(7), gpu(7, H100_PCIE)]
    r = run("gpu.model", node(gpus=mixed))
    assert r.status == "fail"
    assert "mixed" in r.message and "GPU 0-6" in r.message and "GPU 7 NVIDIA H100 PCIe" in r.message


def test_model_unknown_names_skip_or_warn():
    assert run("gpu.model", node(gpus=gpus(2, name=None))).status == "skip"
    r = run("gpu.model", node(gpus=[gpu(0), gpu(1, name=None)]))
    assert r.status == "warn"
    assert "GPU 1" in r.message


# -- persistence


def test_persistence_off_fails_naming_gpu_and_bus():
    facts = node(gpus=[gpu(0), gpu(1, persistence_mode=False)])
    r = run("gpu.persistence", facts)
    assert r.status == "fail"
    assert "GPU 1 (00000000:2A:00.0)" in r.message


def test_gpus_reporting_persistence_off_fail_even_with_persistenced_active():
    # After `nvidia-smi -pm 0` the daemon still runs, but the GPUs' own report is what counts.
    facts = node(
        gpus=gpus(2, persistence_mode=False),
        services=[Service("nvidia-persistenced.service", "loaded", "active", "running")],
    )
    r = run("gpu.persistence", facts)
    assert r.status == "fail"
    assert "although nvidia-persistenced is active" in r.message


def test_persistenced_active_passes_when_gpus_do_not_report_the_mode():
    facts = node(
        gpus=gpus(2, persistence_mode=None),
        services=[Service("nvidia-persistenced.service", "loaded", "active", "running")],
    )
    assert run("gpu.persistence", facts).status == "pass"


def test_persistenced_active_covers_silent_gpus_when_the_others_report_on():
    facts = node(
        gpus=[gpu(0, persistence_mode=True), gpu(1, persistence_mode=None)],
        services=[Service("nvidia-persistenced.service", "loaded", "active", "running")],
    )
    assert run("gpu.persistence", facts).status == "pass"


def test_persistence_unknown_on_some_gpus_warns_never_passes():
    r = run("gpu.persistence", node(gpus=[gpu(0), gpu(1, persistence_mode=None)]))
    assert r.status == "warn"
    assert "GPU 1" in r.message


def test_persistence_unknown_everywhere_skips():
    assert run("gpu.persistence", node(gpus=gpus(2, persistence_mode=None))).status == "skip"


# -- ECC


def test_ecc_disabled_fails():
    r = run("gpu.ecc_mode", node(gpus=[gpu(0), gpu(1, ecc_mode_current=False, ecc_mode_pending=False)]))
    assert r.status == "fail"
    assert "GPU 1" in r.message


def test_ecc_pending_change_warns_reset_to_apply():
    r = run("gpu.ecc_mode", node(gpus=[gpu(0, ecc_mode_pending=False)]))
    assert r.status == "warn"
    assert "reset" in r.message and "reset" in str(r.hint)


def test_ecc_mode_unsupported_skips():
    assert run("gpu.ecc_mode", node(gpus=gpus(1, L40S, ecc_mode_current=None))).status == "skip"


def test_volatile_uncorrectable_fails():
    r = run("gpu.ecc_errors", node(gpus=[gpu(0), gpu(3, ecc_volatile_uncorrected=2)]))
    assert r.status == "fail"
    assert "GPU 3 (00000000:5D:00.0)" in r.message
    assert r.observed == {"3": {"volatile_uncorrected": 2}}


def test_corrected_at_limit_warns():
    r = run("gpu.ecc_errors", node(gpus=[gpu(0, ecc_volatile_corrected=20_000_000)]))
    assert r.status == "warn"
    r = run("gpu.ecc_errors", node(gpus=[gpu(0, ecc_volatile_corrected=19_999_999)]))
    assert r.status == "pass"


def test_corrected_limit_is_a_parameter():
    assert run("gpu.ecc_errors", node(gpus=[gpu(0, ecc_volatile_corrected=60)]), max_corrected=50).status == "warn"


def test_aggregate_uncorrectable_warns():
    assert run("gpu.ecc_errors", node(gpus=[gpu(0, ecc_aggregate_uncorrected=1)])).status == "warn"


def test_ecc_counters_unknown_skip():
    facts = node(gpus=gpus(2, ecc_volatile_corrected=None, ecc_volatile_uncorrected=None))
    assert run("gpu.ecc_errors", facts).status == "skip"


# -- row remap


def test_remap_pending_fails_with_reset_hint():
    r = run("gpu.row_remap", node(gpus=[gpu(0), gpu(5, remap_pending=True, remap_uncorrectable=1)]))
    assert r.status == "fail"
    assert "GPU 5" in r.message and "reset" in r.message
    assert "nvidia-smi -i N -r" in str(r.hint)


def test_remap_failure_is_an_rma_candidate():
    r = run("gpu.row_remap", node(gpus=[gpu(0, remap_failure=True)]))
    assert r.status == "fail"
    assert "RMA" in r.message


def test_pre_ampere_without_row_remap_skips():
    v100 = gpus(2, "Tesla V100S-PCIE-32GB", remap_pending=None, remap_failure=None)
    assert run("gpu.row_remap", node(gpus=v100)).status == "skip"


# -- PCIe


def test_narrow_link_fails_even_when_idle():
    r = run("gpu.pcie_link", node(gpus=[gpu(0), gpu(2, pcie_width_current=8)]))
    assert r.status == "fail"
    assert "GPU 2" in r.message and "x8" in r.message


def test_gen_downshift_on_idle_gpu_warns():
    r = run("gpu.pcie_link", node(gpus=[gpu(0, pcie_gen_current=1, throttle_reasons=["gpu_idle"])]))
    assert r.status == "warn"
    assert "idle" in r.message


def test_gen_downshift_under_load_fails():
    r = run("gpu.pcie_link", node(gpus=[gpu(0, pcie_gen_current=3, throttle_reasons=[])]))
    assert r.status == "fail"


def test_gen_downshift_fails_when_idle_not_ok():
    facts = node(gpus=[gpu(0, pcie_gen_current=1, throttle_reasons=["gpu_idle"])])
    assert run("gpu.pcie_link", facts, idle_ok=False).status == "fail"


def test_min_gen_and_width_params_relax_the_rule():
    facts = node(gpus=[gpu(0, pcie_gen_current=4, pcie_width_current=16, throttle_reasons=[])])
    assert run("gpu.pcie_link", facts, min_gen=4).status == "pass"


def test_pcie_unknown_skips():
    assert run("gpu.pcie_link", node(gpus=gpus(2, pcie_gen_current=None))).status == "skip"


# -- throttle / temperature


def test_hw_thermal_slowdown_fails_with_cooling_hint():
    r = run("gpu.throttle", node(gpus=[gpu(0), gpu(4, throttle_reasons=["hw_slowdown", "hw_thermal_slowdown"])]))
    assert r.status == "fail"
    assert "GPU 4 (00000000:9A:00.0)" in r.message
    assert "airflow" in str(r.hint)


def test_sw_thermal_warns_and_power_cap_is_fine():
    assert run("gpu.throttle", node(gpus=[gpu(0, throttle_reasons=["sw_thermal_slowdown"])])).status == "warn"
    assert run("gpu.throttle", node(gpus=[gpu(0, throttle_reasons=["sw_power_cap", "sync_boost"])])).status == "pass"


def test_throttle_unknown_skips():
    assert run("gpu.throttle", node(gpus=gpus(1, throttle_reasons=None))).status == "skip"


def test_temperature_above_slowdown_minus_margin_fails():
    r = run("gpu.temperature", node(gpus=[gpu(0, temperature_c=83), gpu(1, temperature_c=60)]))
    assert r.status == "fail"
    assert "GPU 0" in r.message and "82" in r.message


def test_temperature_fallback_limit_without_slowdown():
    facts = node(gpus=[gpu(0, temperature_c=84, temperature_slowdown_c=None)])
    assert run("gpu.temperature", facts).status == "pass"
    assert run("gpu.temperature", facts, max_c=80).status == "fail"


def test_temperature_unknown_skips():
    assert run("gpu.temperature", node(gpus=gpus(1, temperature_c=None))).status == "skip"


# -- Xid


def xid(code: int, bus: str = "0000:44:00", message: str = "") -> KernelEvent:
    return KernelEvent(kind="xid", code=code, bus_id=bus, message=message or f"NVRM: Xid (PCI:{bus}): {code}")


def test_no_xid_passes():
    assert run("gpu.xid", node(kernel_events=[])).status == "pass"


def test_xid79_fails_and_maps_bus_to_gpu():
    facts = node(gpus=[gpu(0, bus="07"), gpu(1, bus="44")], kernel_events=[xid(79)])
    r = run("gpu.xid", facts)
    assert r.status == "fail"
    assert "Xid 79 on GPU 1 (00000000:44:00.0)" in r.message
    assert "fallen off the bus" in r.message
    assert r.observed[0]["gpu"] == 1


def test_xid_without_gpu_facts_names_the_pci_address():
    r = run("gpu.xid", node(kernel_events=[xid(48, "0000:0f:00")]))
    assert r.status == "fail"
    assert "PCI 0000:0f:00" in r.message


def test_application_xid_warns_and_repeats_are_counted_once():
    events = [xid(13, "0000:0f:00"), xid(13, "0000:0f:00"), xid(13, "0000:0f:00")]
    r = run("gpu.xid", node(kernel_events=events))
    assert r.status == "warn"
    assert "(x3)" in r.message and len(r.observed) == 1


def test_unlisted_xid_warns():
    assert run("gpu.xid", node(kernel_events=[xid(8)])).status == "warn"


def test_ignored_codes_pass():
    assert run("gpu.xid", node(kernel_events=[xid(13), xid(31)]), ignore=[13, 31]).status == "pass"


def test_sxid_warns_naming_the_switch():
    event = KernelEvent(kind="sxid", code=12028, bus_id="0000:85:00.0", message="nvidia-nvswitch2: SXid ...")
    r = run("gpu.xid", node(kernel_events=[event]))
    assert r.status == "warn"
    assert "SXid 12028" in r.message and "0000:85:00.0" in r.message


def test_fallen_off_bus_without_xid_is_critical_and_merges_with_its_xid():
    events = [
        KernelEvent(kind="fallen_off_bus", code=None, bus_id="0000:b3:00.0", message="fallen off the bus"),
        xid(79, "0000:b3:00"),
    ]
    r = run("gpu.xid", node(kernel_events=events, gpus=[gpu(0, bus="B3")]))
    assert r.status == "fail"
    assert "GPU 0" in r.message and "(x2)" in r.message


def test_xid_hint_comes_from_the_catalogue():
    r = run("gpu.xid", node(kernel_events=[xid(64)]))
    assert r.status == "fail"
    assert str(r.hint).startswith("Xid 64:")


def test_pcie_degraded_events_are_not_xids():
    event = KernelEvent(kind="pcie_degraded", bus_id="0000:9c:00.0", message="limited by 32.0 GT/s PCIe x8 link")
    assert run("gpu.xid", node(kernel_events=[event])).status == "pass"


def test_xid_without_kernel_log_skips_and_broken_errors():
    assert run("gpu.xid", node(gpus=gpus(1))).status == "skip"
    assert run("gpu.xid", node(problems={"kernel_events": "dmesg: read kernel buffer failed"})).status == "error"


# -- NVLink


def test_a100_with_a_down_link_fails_naming_it():
    links = [NvLink(link=i, active=i != 4) for i in range(12)]
    facts = node(gpus=[*gpus(7, A100), gpu(7, A100, nvlinks=links)])
    r = run("gpu.nvlink", facts)
    assert r.status == "fail"
    assert "GPU 7 (00000000:BD:00.0): 11/12 NVLinks active (down: 4)" in r.message


def test_nvlink_error_counters_warn():
    links = [NvLink(link=i, active=True, errors={"replay": 3 if i == 2 else 0}) for i in range(18)]
    r = run("gpu.nvlink", node(gpus=[gpu(0, nvlinks=links)]))
    assert r.status == "warn"
    assert "link 2" in r.message and "replay=3" in r.message


def test_nvlink_from_topology_nv12_on_dgx_a100():
    names = [f"GPU{i}" for i in range(8)]
    matrix = {a: {b: ("X" if a == b else "NV12") for b in names} for a in names}
    topo = Topology(devices=names, matrix=matrix)
    assert run("gpu.nvlink", node(gpus=gpus(8, A100, nvlinks=None), topology=topo)).status == "pass"


def test_sxm_gpus_with_sys_topology_fail():
    # corpus/nvidia_smi_topo/03: every GPU pair SYS, no NVLink at all
    names = [f"GPU{i}" for i in range(8)]
    matrix = {a: {b: ("X" if a == b else "SYS") for b in names} for a in names}
    topo = Topology(devices=names, matrix=matrix)
    r = run("gpu.nvlink", node(gpus=gpus(8, H100, nvlinks=None), topology=topo))
    assert r.status == "fail"
    assert "0/18" in r.message


def test_pcie_gpus_without_reference_skip():
    r = run("gpu.nvlink", node(gpus=gpus(4, L40S, nvlinks=[])))
    assert r.status == "skip"
    assert "expected_links" in r.message


def test_explicit_expected_links_judges_pcie_gpus():
    r = run("gpu.nvlink", node(gpus=gpus(2, H100_PCIE, nvlinks=[])), expected_links=4)
    assert r.status == "fail"


def test_nvlink_state_unknown_skips():
    assert run("gpu.nvlink", node(gpus=gpus(2, nvlinks=None))).status == "skip"


def test_nvlink_state_unknown_on_one_gpu_warns():
    r = run("gpu.nvlink", node(gpus=[gpu(0), replace(gpu(1), nvlinks=None)]))
    assert r.status == "warn"
    assert "GPU 1" in r.message


def test_gpu_that_does_not_answer_fails_the_count():
    # the NVML collector keeps a lost GPU's slot (NVML still counts it) but can read nothing of it
    facts = node(gpus=[*gpus(2), Gpu(index=2)], problems={"gpus": "GPU 2: GPU is lost"})
    r = run("gpu.count", facts, expected=3)
    assert r.status == "fail"
    assert r.message == "2 of 3 GPUs answer; GPU 2 does not (GPU 2: GPU is lost)"
    assert r.observed == 2
