"""Checks on facts parsed from real outputs (tests/data/corpus): the verdict a GPU engineer would give."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from assessor import parsers
from assessor.facts import NcclDebug, NcclRow, NcclRun, NodeFacts, Service, to_jsonable
from tests.support.builders import H100, gpu, gpus, ib_port, ndr_ports, node, run
from tests.support.corpus import read_corpus


def _parsed(kind: str, rel: str) -> NodeFacts:
    return parsers.parse(kind, read_corpus(rel))


# --- gpu.row_remap from nvidia-smi -q text ----------------------------------------------------


def test_row_remap_pending_yes_fails_even_when_reset_required_says_no():
    text = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt")
    assert "Reset Required                    : No" in text
    pending = text.replace(
        "        Pending                           : No\n", "        Pending                           : Yes\n", 1
    )
    assert run("gpu.row_remap", _parsed("nvidia-smi-q", "nvml/nvidia_smi_q_H100_SXM_gpu0.txt")).status == "pass"
    r = run("gpu.row_remap", parsers.parse("nvidia-smi-q", pending))
    assert r.status == "fail"
    assert "GPU 0 (00000000:18:00.0): row remap pending" in r.message


def test_hw_slowdown_from_q_text_is_judged_by_gpu_throttle():
    text = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt").replace(
        "        HW Slowdown                       : Not Active",
        "        HW Slowdown                       : Active",
        1,
    )
    r = run("gpu.throttle", parsers.parse("nvidia-smi-q", text))
    assert r.status == "fail"
    assert "slowdown" in r.message.lower()


# --- gpu.persistence: the GPU's own report wins ------------------------------------------------


def test_persistence_disabled_in_q_text_fails_although_the_daemon_is_active():
    facts = _parsed("nvidia-smi-q", "nvidia_smi_q/03_510.68.02_rtx2070_persistence_disabled_excerpt.txt")
    facts.services = [Service("nvidia-persistenced.service", "loaded", "active", "running")]
    r = run("gpu.persistence", facts)
    assert r.status == "fail"
    assert "persistence mode off on GPU 0 (00000000:01:00.0) although nvidia-persistenced is active" in r.message


# --- gpu.nvlink from nvidia-smi nvlink -s -------------------------------------------------------


def test_nvlink_s_alone_fails_the_inactive_links_of_a_v100_sxm():
    facts = _parsed("nvidia-smi-nvlink", "nvidia_smi_nvlink/01_v100_sxm2_two_links_inactive_excerpt.txt")
    r = run("gpu.nvlink", facts)
    # No link-count reference for V100, but on an SXM board every link nvlink -s lists is a trace to the
    # baseboard: two of six inactive is a lost link, as an engineer fails it.
    assert r.status == "fail"
    assert "GPU 3: 4 NVLinks active, links 3, 5 inactive" in r.message
    r = run("gpu.nvlink", facts, expected_links=6)
    assert r.status == "fail"
    assert "GPU 3: 4/6 NVLinks active (down: 3, 5)" in r.message


def test_nvlink_s_feeds_the_gpus_of_another_source_by_index():
    links = _parsed("nvidia-smi-nvlink", "nvidia_smi_nvlink/01_v100_sxm2_two_links_inactive_excerpt.txt")
    h100s = gpus(4, nvlinks=None)  # the GPU list came from nvidia-smi -q: no link states in it
    facts = node(gpus=h100s, nvlink_status=links.nvlink_status)
    r = run("gpu.nvlink", facts, expected_links=6)
    assert r.status == "fail"
    assert "GPU 3 (00000000:5D:00.0): 4/6 NVLinks active (down: 3, 5)" in r.message
    assert "unknown for GPU 0" in r.message  # the others were not in the excerpt


# --- services.active: the fabric manager's own reason ------------------------------------------


def test_fabric_manager_version_mismatch_fails_services_active_and_names_the_reason():
    facts = _parsed("systemctl-status", "systemctl_status/01_fm_driver_interface_version_mismatch_550.txt")
    facts.services = [*(facts.services or []), Service("nvidia-persistenced.service", "loaded", "active", "running")]
    r = run("services.active", facts)  # GPUs unknown: the mismatch alone is enough
    assert r.status == "fail"
    assert "nvidia-fabricmanager is failed" in r.message
    assert "driver interface version 550.127.05 don't match with driver version 550.120" in r.message


def test_fabric_manager_nothing_to_do_on_a_pcie_box_is_not_required():
    facts = _parsed("systemctl-status", "systemctl_status/03_fm_start_failed_pre_nvl5_nothing_to_do.txt")
    facts.services = [*(facts.services or []), Service("nvidia-persistenced.service", "loaded", "active", "running")]
    assert run("services.active", facts).status == "pass"


# --- ib.ports_active: ports not counted are named ----------------------------------------------


def test_disabled_and_other_layer_ports_are_named_though_not_counted():
    ports = [
        *ndr_ports(2),
        ib_port("mlx5_2", state="Down", phys="Disabled"),
        ib_port("mlx5_3", state="Down", phys="Polling", layer="Ethernet"),
    ]
    r = run("ib.ports_active", node(ib_ports=ports), link_layer="InfiniBand")
    assert r.status == "pass"
    assert "mlx5_2 port 1 Down (Disabled)" in r.message
    assert "mlx5_3 port 1 Down (Polling)" in r.message


def test_ibv_devinfo_ports_down_init_armed_are_judged_not_read_as_no_ports():
    text = (
        "hca_id:\tmlx5_0\n\tfw_ver:\t\t\t20.31.1014\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
        "\t\t\tlink_layer:\t\tInfiniBand\n"
        "hca_id:\tmlx5_1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_INIT (2)\n\t\t\tlink_layer:\t\tInfiniBand\n"
        "hca_id:\tmlx5_2\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ARMED (3)\n\t\t\tlink_layer:\t\tInfiniBand\n"
    )
    from assessor.parsers.ibv_devinfo import ports_of

    facts = node(ib_ports=ports_of(parsers.parse("ibv-devinfo", text).ib_devices or []))
    r = run("ib.ports_active", facts)
    assert r.status == "fail"
    for name, state in (("mlx5_0", "Down"), ("mlx5_1", "Initializing"), ("mlx5_2", "Armed")):
        assert f"{name} port 1 is {state}" in r.message


# --- nccl: excerpts and logs -------------------------------------------------------------------

ROWS_ONLY = """\
   134217728      33554432     float     sum      -1   1008.6  133.07  232.88      0   1004.2  133.66  233.90      0
  4294967296    1073741824     float     sum      -1    32478  132.24  231.42      0    32461  132.31  231.55      0
"""


def test_nccl_rows_without_their_header_are_judged_at_the_largest_size_saying_what_is_unknown():
    facts = parsers.parse("nccl-tests", ROWS_ONLY)
    r = run("nccl.busbw", facts, min_gbps=200)
    assert r.status == "pass"
    assert "231.55 GB/s at 4G" in r.message or "231.55" in r.message
    assert "ranks and GPUs unknown" in r.message
    assert run("nccl.busbw", facts, min_gbps=300).status == "fail"


def test_nccl_debug_log_alone_skips_busbw_and_judges_warnings_and_transport():
    facts = _parsed("nccl-debug", "nccl_warn/03_ib_completion_error4_vendor81_h100_old_format.txt")
    assert run("nccl.busbw", facts).status == "skip"
    r = run("nccl.errors", facts)
    assert r.status == "fail"
    assert "Got completion" in r.message


def test_nccl_debug_log_without_warnings_passes_errors_saying_results_were_not_checked():
    facts = _parsed("nccl-debug", "nccl_debug/04_h20_2node_channels_p2p_cumem_net_ib_gdrdma.txt")
    r = run("nccl.errors", facts)
    assert r.status == "pass"
    assert "results not checked" in r.message
    r = run("nccl.transport", facts)
    assert r.status == "pass" and "GDRDMA" in r.message  # two nodes over NET/IB/GDRDMA


# --- NaN and infinity never pass; results never hold a bare NaN --------------------------------


def test_nan_temperature_is_unknown_never_a_pass():
    facts = node(gpus=[replace(gpu(0), temperature_c=math.nan)])  # type: ignore[arg-type]
    assert run("gpu.temperature", facts).status != "pass"
    facts = node(gpus=[replace(gpu(0), temperature_c=math.inf), gpu(1)])  # type: ignore[arg-type]
    assert run("gpu.temperature", facts).status == "warn"


def test_nan_busbw_is_no_reading_never_a_pass():
    row = NcclRow(size_bytes=1 << 30, oop_busbw=math.nan, ip_busbw=math.nan, oop_wrong=0, ip_wrong=0)
    facts = node(nccl=NcclRun(rows=[row], debug=NcclDebug()), gpus=gpus(8))
    assert run("nccl.busbw", facts, min_gbps=1).status != "pass"


def test_results_json_never_contains_a_bare_nan():
    data = to_jsonable(node(gpus=[replace(gpu(0, H100), power_draw_w=math.nan, power_limit_w=math.inf)]))
    text = json.dumps(data, allow_nan=False)  # raises on NaN/Infinity
    assert '"power_draw_w": null' in text


def test_ib_rate_pass_names_the_ports_it_could_not_measure():
    facts = parsers.parse("ibstat", read_corpus("ibstat/02_h100_cx7_roce400_one_down_polling.txt"))
    r = run("ib.rate", facts, link_layer="Ethernet", min_gbps=100)
    assert r.status == "pass"
    assert "not measured: mlx5_11 port 1 Down" in r.message


def test_ib_rate_nan_is_unknown_never_fast_enough():
    ports = [*ndr_ports(1), ib_port("mlx5_1", rate=math.nan)]
    assert run("ib.rate", node(ib_ports=ports), min_gbps=400).status == "warn"
