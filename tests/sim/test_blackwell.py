"""The Blackwell fixtures (hgx-b200, gb200-tray) against real captures and NVIDIA's MIG User Guide."""

from __future__ import annotations

import re

from assessor.sim import mig
from assessor.sim.fixtures import fixture_names, load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import read_corpus

B200 = "NVIDIA B200"

# NVIDIA MIG User Guide, "Supported MIG Profiles", table "GPU Instance Profiles on B200": name -> instances.
GUIDE_B200 = {
    "1g.23gb": 7,
    "1g.23gb+me": 1,
    "1g.45gb": 4,
    "2g.45gb": 3,
    "3g.90gb": 2,
    "4g.90gb": 1,
    "7g.180gb": 1,
}


def test_both_blackwell_fixtures_ship() -> None:
    assert {"hgx-b200", "gb200-tray"} <= set(fixture_names())


def test_hgx_b200_has_eight_b200_as_nvidia_smi_prints_them() -> None:
    # corpus nvidia_smi/08 (sglang#27487): "NVIDIA B200", "0MiB / 183359MiB", "139W / 1000W".
    table = read_corpus("nvidia_smi/08_610.43.02_b200_kmd_umd_version_header.txt")
    state = load_fixture("hgx-b200")
    assert [g.name for g in state.gpus] == [B200] * 8
    gpu = state.gpus[0]
    assert f"{gpu.memory_total_mib}MiB" in table and f"{gpu.power_limit_w:.0f}W" in table
    assert {(len(g.nvlinks), g.nvlinks[0].version, g.nvlinks[0].speed_gbps) for g in state.gpus} == {(18, 5, 53.125)}
    assert gpu.pci_device_id == 0x290110DE and gpu.architecture == "Blackwell"
    assert state.driver.version.startswith("570.") and state.driver.open_kernel_module
    assert len(state.nvswitches) == 2 and "nvidia-fabricmanager.service" in state.services


def test_hgx_b200_is_a_dma_buf_node_without_nvidia_peermem() -> None:
    state = load_fixture("hgx-b200")
    assert not state.module_loaded("nvidia_peermem")
    assert " 6.8." in f" {state.uname.split()[2]}"
    assert not any("module license 'NVIDIA'" in line for line in state.kernel_log)  # open: Dual MIT/GPL


def test_gb200_tray_has_four_gpus_in_an_nvlink_domain_and_runs_imex() -> None:
    # corpus nvidia_smi_nvlink/02: "NVIDIA GB200", 18 links at 53.125 GB/s; topo/08: four GPUs at NV18.
    nvlink = read_corpus("nvidia_smi_nvlink/02_gb200_18_links_excerpt.txt")
    state = load_fixture("gb200-tray")
    assert [g.name for g in state.gpus] == ["NVIDIA GB200"] * 4
    assert all(f"GPU {i}: {g.name}" in nvlink for i, g in enumerate(state.gpus[:2]))
    assert {len(g.nvlinks) for g in state.gpus} == {18}
    assert f"{state.gpus[0].nvlinks[0].speed_gbps:.3f} GB/s" in nvlink
    assert {g.power_limit_w for g in state.gpus} == {1200.0}
    assert state.nvswitches == []  # the NVLink switch trays are outside the node
    assert "nvidia-imex.service" in state.services and "nvidia-fabricmanager.service" not in state.services
    assert {(g.fabric_state, g.fabric_status, g.fabric_clique_id) for g in state.gpus} == {("Completed", "Success", 2)}
    assert len({g.fabric_cluster_uuid for g in state.gpus}) == 1 and state.gpus[0].fabric_cluster_uuid
    assert "aarch64" in state.uname


def test_b200_mig_profiles_are_the_guides() -> None:
    profiles = mig.profiles_for(B200)
    assert {p.name: p.max_instances for p in profiles} == GUIDE_B200
    assert [p.id for p in profiles] == [19, 20, 15, 14, 9, 5, 0]


def test_b200_lgip_rows_are_the_rows_of_the_real_capture() -> None:
    # corpus nvml/lgip_B200_excerpt_cut_after_2g.txt (NVIDIA/gpu-operator#1242): every row of the excerpt
    # is a row of the simulator's table, with the same header and box.
    real = [line for line in read_corpus("nvml/lgip_B200_excerpt_cut_after_2g.txt").splitlines()[1:] if line]
    ours = mig.render_lgip([mig.MigGpu(0, B200, [])]).splitlines()
    assert ours[: len(real)] == real


def test_b200_mig_numbering_is_the_one_a_real_b200_shows() -> None:
    # NVIDIA/gpu-operator#2155: three 2g.45gb and a 1g.23gb on a B200 are GIs 3, 4, 5 and 13.
    result = mig.create_gpu_instances(B200, [], ["14", "14", "14", "19"])
    assert result.ok
    assert sorted(p.gi_id for p in result.placed) == [3, 4, 5, 13]


def test_nvidia_smi_on_the_simulated_b200_lists_the_guides_mig_profiles() -> None:
    session = Session(state=load_fixture("hgx-b200"))
    assert run_tool(["nvidia-smi", "-i", "0", "-mig", "1"], session).exit_code == 0
    out = run_tool(["nvidia-smi", "mig", "-lgip", "-i", "0"], session).stdout
    listed = {name: int(total) for name, total in re.findall(r"MIG (\S+)\s+\d+\s+\d+/(\d+)", out)}
    assert listed == GUIDE_B200


def test_nvidia_smi_q_shows_the_gb200_nvlink_domain() -> None:
    state = load_fixture("gb200-tray")
    out = run_tool(["nvidia-smi", "-i", "0", "-q"], Session(state=state)).stdout
    assert re.search(r"^ {8}State +: Completed$", out, re.M)
    assert re.search(r"^ {8}CliqueId +: 2$", out, re.M)
    assert re.search(rf"^ {{8}}ClusterUUID +: {state.gpus[0].fabric_cluster_uuid}$", out, re.M)


def test_b200_copy_engines_are_the_guides_where_no_capture_says_otherwise() -> None:
    # MIG User Guide, B200 table, copy engines: 2, 2, 2, 3, 6, 8, 16. The -lgip capture shows 4 for 2g.45gb
    # (corpus nvml/lgip_B200_excerpt_cut_after_2g.txt): the capture is kept for that row.
    ce = {p.name: p.ce for p in mig.profiles_for(B200)}
    assert ce == {
        "1g.23gb": 2,
        "1g.23gb+me": 2,
        "1g.45gb": 2,
        "2g.45gb": 4,
        "3g.90gb": 6,
        "4g.90gb": 8,
        "7g.180gb": 16,
    }
