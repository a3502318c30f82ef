"""Fixtures: healthy simulated nodes whose numbers match real systems (the corpus where it has them)."""

from __future__ import annotations

import re

import pytest

from assessor.errors import InputError
from assessor.sim.fixtures import fixture_names, load_fixture
from tests.support.corpus import read_corpus

UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_the_four_shipped_fixtures_are_listed() -> None:
    assert fixture_names() == [
        "a30",
        "dgx-a100",
        "gb200-tray",
        "h100-nvl",
        "hgx-b200",
        "hgx-h100",
        "hgx-h200",
        "pcie-l40s",
    ]


def test_an_unknown_fixture_is_an_input_error_listing_the_known_ones() -> None:
    with pytest.raises(InputError, match="hgx-h100"):
        load_fixture("hgx-h900")


def test_hgx_h100_matches_the_real_8x_h100_sxm_in_the_corpus() -> None:
    smi = read_corpus("nvml/nvidia_smi_default_8xH100_SXM.txt")
    q = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt")
    state = load_fixture("hgx-h100")
    assert [g.bus_id for g in state.gpus] == re.findall(r"\b0{8}:[0-9A-F]{2}:00\.0\b", smi)
    assert {g.name for g in state.gpus} == {"NVIDIA H100 80GB HBM3"}
    gpu0 = state.gpus[0]
    assert f"Total                             : {gpu0.memory_total_mib} MiB" in q
    assert f"Current Power Limit               : {gpu0.power_limit_w:.2f} W" in q
    assert f"VBIOS Version                         : {gpu0.vbios}" in q
    assert f"Driver Version                            : {state.driver.version}" in q
    assert (gpu0.pcie_gen_max, gpu0.pcie_width_max) == (5, 16)
    assert [len(g.nvlinks) for g in state.gpus] == [18] * 8


def test_hgx_h100_has_eight_ndr_compute_ports_like_the_corpus_ibstat() -> None:
    ibstat = read_corpus("ibstat/01_h100_cx7_ndr400_ib_all_active.txt")
    state = load_fixture("hgx-h100")
    assert len(state.ib_hcas) == 8
    for hca in state.ib_hcas:
        assert f"CA type: {hca.ca_type}" in ibstat
        port = hca.ports[0]
        assert (port.state, port.physical_state, port.rate_gbps, port.link_layer) == (
            "Active",
            "LinkUp",
            400,
            "InfiniBand",
        )
        assert port.sm_lid == 1 and port.base_lid > 0


def test_dgx_a100_has_eight_a100_40gb_with_nv12_and_hdr_names_as_on_a_real_dgx() -> None:
    state = load_fixture("dgx-a100")
    assert [g.name for g in state.gpus] == ["NVIDIA A100-SXM4-40GB"] * 8
    assert {g.memory_total_mib for g in state.gpus} == {40960}
    assert {g.power_limit_w for g in state.gpus} == {400.0}
    assert [g.bus_id[9:11] for g in state.gpus] == ["07", "0F", "47", "4E", "87", "90", "B7", "BD"]
    assert [len(g.nvlinks) for g in state.gpus] == [12] * 8
    compute = [h.name for h in state.ib_hcas if h.role == "compute"]
    storage = [h.name for h in state.ib_hcas if h.role == "storage"]
    assert compute == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    assert storage == ["mlx5_4", "mlx5_5"]
    assert {h.ports[0].rate_gbps for h in state.ib_hcas} == {200}
    assert (state.driver.version, state.driver.cuda_version) == ("535.129.03", "12.2")


def test_dgx_a100_cpu_affinity_matches_the_corpus_topology_of_gpu0_to_gpu3() -> None:
    topo = read_corpus("nvidia_smi_topo/01_dgx_a100_40gb_nv12_12nics_pxb.txt")
    state = load_fixture("dgx-a100")
    for gpu in state.gpus[:4]:
        row = next(line for line in topo.splitlines() if line.startswith(f"GPU{gpu.index} "))
        assert gpu.cpu_affinity in row.split()
        assert row.split().count("NV12") == 7


def test_hgx_h200_reports_memory_as_nvidia_smi_does() -> None:
    state = load_fixture("hgx-h200")
    assert {g.name for g in state.gpus} == {"NVIDIA H200"}
    assert {g.memory_total_mib for g in state.gpus} == {143771}
    assert {g.power_limit_w for g in state.gpus} == {700.0}
    assert [len(g.nvlinks) for g in state.gpus] == [18] * 8
    assert {h.ports[0].rate_gbps for h in state.ib_hcas} == {400}


def test_pcie_l40s_has_no_nvlink_no_mig_no_fabric_and_roce_nics() -> None:
    state = load_fixture("pcie-l40s")
    assert {g.name for g in state.gpus} == {"NVIDIA L40S"}
    assert {g.memory_total_mib for g in state.gpus} == {46068}
    for gpu in state.gpus:
        assert gpu.nvlinks == []
        assert gpu.mig_supported is False
        assert gpu.fabric_state is None
        assert (gpu.pcie_gen_max, gpu.pcie_width_max) == (4, 16)
    assert state.nvswitches == []
    for hca in state.ib_hcas:
        port = hca.ports[0]
        assert port.link_layer == "Ethernet"
        assert (port.base_lid, port.sm_lid) == (0, 0)  # no LIDs on RoCE
        assert port.netdev is not None and port.netdev.startswith("enp")
    fm = state.services["nvidia-fabricmanager.service"]
    assert (fm.load_state, fm.active_state) == ("not-found", "inactive")


@pytest.mark.parametrize("name", ["dgx-a100", "hgx-h100", "hgx-h200", "pcie-l40s"])
def test_every_fixture_is_a_healthy_node(name: str) -> None:
    state = load_fixture(name)
    assert state.driver.version == state.driver.kernel_module_version
    assert not any("Xid" in line for line in state.kernel_log)
    assert any(
        "NVRM: loading NVIDIA UNIX" in line and f"  {state.driver.version}  " in line for line in state.kernel_log
    )
    for module in ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_peermem", "mlx5_core", "mlx5_ib", "ib_core"):
        assert state.module_loaded(module), module
    for unit in ("nvidia-persistenced.service", "nvidia-dcgm.service"):
        assert state.services[unit].active_state == "active"
    sxm = name != "pcie-l40s"
    assert (state.services["nvidia-fabricmanager.service"].active_state == "active") is sxm
    for gpu in state.gpus:
        assert gpu.persistence_mode and gpu.ecc_mode_current
        assert gpu.ecc.volatile_uncorrected == 0
        assert gpu.remapped_rows is not None and not gpu.remapped_rows.pending
        assert gpu.retired_pages is None  # N/A: row remapping instead
        assert all(link.active for link in gpu.nvlinks)
        assert not set(gpu.throttle_reasons) - {"gpu_idle"}
        assert gpu.temperature_slowdown_c is not None and gpu.temperature_c < gpu.temperature_slowdown_c
        assert (gpu.fabric_state == "Completed") is sxm
        assert gpu.pcie_gen_current == gpu.pcie_gen_max and gpu.pcie_width_current == gpu.pcie_width_max
    assert all(p.state == "Active" and p.physical_state == "LinkUp" for h in state.ib_hcas for p in h.ports)
    assert state.nccl_env["NCCL_IB_HCA"]


def test_uuids_and_serials_are_deterministic_and_unique() -> None:
    uuids = []
    for name in fixture_names():
        a, b = load_fixture(name), load_fixture(name)
        assert [g.uuid for g in a.gpus] == [g.uuid for g in b.gpus]
        assert [h.node_guid for h in a.ib_hcas] == [h.node_guid for h in b.ib_hcas]
        assert all(UUID.match(g.uuid) for g in a.gpus)
        assert all(len(g.serial) == 13 and g.serial.isdigit() for g in a.gpus)
        uuids += [g.uuid for g in a.gpus]
    assert len(set(uuids)) == len(uuids)


def test_a_fixture_can_be_given_another_host_name() -> None:
    state = load_fixture("hgx-h100", host="node17")
    assert state.host == "node17"
    assert state.uname is not None and state.uname.startswith("Linux node17 ")


def test_load_fixture_returns_independent_copies() -> None:
    a = load_fixture("hgx-h100")
    a.gpus[0].nvlinks[0].active = False
    assert load_fixture("hgx-h100").gpus[0].nvlinks[0].active is True


@pytest.mark.parametrize("name", fixture_names())
def test_each_node_booted_after_its_driver_was_built(name: str) -> None:
    from datetime import datetime

    from assessor.sim import clock

    state = load_fixture(name)
    assert state.driver.build_date is not None
    built = datetime.strptime(state.driver.build_date.replace("  ", " "), "%a %b %d %H:%M:%S UTC %Y")
    assert clock.boot_time(state).replace(tzinfo=None) > built


def test_a_fixture_can_start_with_compute_processes_and_gpus_held() -> None:
    from assessor.sim.fixtures import build_state, fixture_spec

    spec = fixture_spec("dgx-a100")
    spec["processes"] = [{"gpu": 2, "pid": 31337, "name": "python3", "used_memory_mib": 2048, "unit": "job.service"}]
    spec["daemons_hold_gpus"] = True
    state = build_state(spec, host="dgx-a100-02")
    (proc,) = state.gpu(2).processes
    assert (proc.pid, proc.unit) == (31337, "job.service")
    assert state.gpu(2).memory_used_mib == load_fixture("dgx-a100").gpu(2).memory_used_mib + 2048
    assert state.daemons_hold_gpus and not load_fixture("dgx-a100").daemons_hold_gpus
    assert load_fixture("dgx-a100", in_use=True).daemons_hold_gpus
