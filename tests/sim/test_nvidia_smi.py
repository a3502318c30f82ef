"""The simulated nvidia-smi: its outputs parse with our own parsers into the facts the state holds, and it
refuses what the real one refuses, with the real messages (corpus/nvml/mig_*.txt, the MIG User Guide)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assessor.errors import ParseError
from assessor.parsers import nvidia_smi_list, nvidia_smi_mig, nvidia_smi_topo, nvidia_smi_xml
from assessor.sim import mig
from assessor.sim.fixtures import fixture_names, load_fixture
from assessor.sim.state import GpuProcess, NodeState, load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus

FIXTURES = fixture_names()


def smi(session: Session, *args: str) -> ToolResult:
    return run_tool(["nvidia-smi", *args], session)


def fresh(name: str, euid: int = 0) -> Session:
    return Session(state=load_fixture(name), euid=euid)


def state_of(session: Session) -> NodeState:
    return session.read()


def test_fixtures_are_present() -> None:
    assert {"dgx-a100", "hgx-h100", "pcie-l40s"} <= set(FIXTURES)


# ---------------------------------------------------------------- -q -x


@pytest.mark.parametrize("name", FIXTURES)
def test_xml_parses_into_the_facts_the_state_holds(name: str) -> None:
    session = fresh(name)
    out = smi(session, "-q", "-x")
    assert out.exit_code == 0
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">' in out.stdout
    facts = nvidia_smi_xml.parse(out.stdout)
    state = state_of(session)
    assert facts.driver is not None
    assert facts.driver.version == state.driver.version
    assert facts.driver.cuda_version == state.driver.cuda_version
    assert facts.gpus is not None and len(facts.gpus) == len(state.gpus)
    for fact, gpu in zip(facts.gpus, state.gpus, strict=True):
        assert (fact.name, fact.uuid, fact.serial, fact.bus_id) == (gpu.name, gpu.uuid, gpu.serial, gpu.bus_id)
        assert fact.architecture == gpu.architecture
        assert fact.memory_total_mib == gpu.memory_total_mib
        assert fact.persistence_mode == gpu.persistence_mode
        assert (fact.ecc_mode_current, fact.ecc_mode_pending) == (gpu.ecc_mode_current, gpu.ecc_mode_pending)
        assert fact.ecc_volatile_uncorrected == gpu.ecc.volatile_uncorrected
        assert fact.ecc_aggregate_corrected == gpu.ecc.aggregate_corrected
        rows = gpu.remapped_rows
        assert rows is not None
        assert (fact.remap_correctable, fact.remap_uncorrectable) == (rows.correctable, rows.uncorrectable)
        assert (fact.remap_pending, fact.remap_failure) == (rows.pending, rows.failure)
        assert (fact.pcie_gen_current, fact.pcie_gen_max) == (gpu.pcie_gen_current, gpu.pcie_gen_max)
        assert (fact.pcie_width_current, fact.pcie_width_max) == (gpu.pcie_width_current, gpu.pcie_width_max)
        assert fact.temperature_c == gpu.temperature_c
        assert fact.temperature_slowdown_c == gpu.temperature_slowdown_c
        assert fact.temperature_shutdown_c == gpu.temperature_shutdown_c
        assert fact.power_draw_w == pytest.approx(gpu.power_draw_w)
        assert fact.power_limit_w == pytest.approx(gpu.power_limit_w)
        assert fact.throttle_reasons == gpu.throttle_reasons
        want_mig = gpu.mig_mode_current if gpu.mig_supported else None
        assert fact.mig_mode_current == want_mig
        assert fact.fabric_state == gpu.fabric_state
        assert fact.fabric_status == gpu.fabric_status
        assert fact.compute_mode == gpu.compute_mode


def test_xml_carries_a_faulted_gpu_as_it_is() -> None:
    session = fresh("hgx-h100")
    gpu = state_of(session).gpu(3)
    gpu.ecc.volatile_uncorrected = 2
    gpu.ecc.aggregate_corrected = 17
    assert gpu.remapped_rows is not None
    gpu.remapped_rows.uncorrectable = 1
    gpu.remapped_rows.pending = True
    gpu.pcie_gen_current, gpu.pcie_width_current = 3, 8
    gpu.throttle_reasons = ["hw_slowdown", "hw_thermal_slowdown", "display_clock_setting"]
    gpu.fabric_state, gpu.fabric_status = "In Progress", "NVML_ERROR_NOT_READY"
    gpu.persistence_mode = False
    gpu.ecc_mode_pending = False
    fact = nvidia_smi_xml.parse(smi(session, "-q", "-x").stdout).gpus[3]  # type: ignore[index]
    assert (fact.ecc_volatile_uncorrected, fact.ecc_aggregate_corrected) == (2, 17)
    assert (fact.remap_uncorrectable, fact.remap_pending) == (1, True)
    assert (fact.pcie_gen_current, fact.pcie_width_current) == (3, 8)
    assert fact.throttle_reasons == ["hw_slowdown", "hw_thermal_slowdown", "display_clock_setting"]
    assert (fact.fabric_state, fact.fabric_status) == ("In Progress", "NVML_ERROR_NOT_READY")
    assert fact.persistence_mode is False
    assert (fact.ecc_mode_current, fact.ecc_mode_pending) == (True, False)


def test_xml_hides_row_remapping_in_mig_mode_as_the_driver_does(corpus: object) -> None:
    # Both MIG-mode captures in the corpus print <remapped_rows>N/A</remapped_rows>.
    assert "<remapped_rows>N/A</remapped_rows>" in read_corpus("nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml")
    session = fresh("dgx-a100")
    state_of(session).gpu(0).mig_mode_current = True
    state_of(session).gpu(0).mig_mode_pending = True
    gpus = nvidia_smi_xml.parse(smi(session, "-q", "-x").stdout).gpus
    assert gpus is not None
    assert (gpus[0].mig_mode_current, gpus[0].remap_pending) == (True, None)
    assert (gpus[1].mig_mode_current, gpus[1].remap_pending) == (False, False)


def test_xml_of_one_gpu_by_index_bus_id_and_uuid() -> None:
    session = fresh("hgx-h100")
    gpu = state_of(session).gpu(5)
    for ident in ("5", gpu.bus_id, "AB:00.0", gpu.uuid):
        gpus = nvidia_smi_xml.parse(smi(session, "-i", ident, "-q", "-x").stdout).gpus
        assert gpus is not None
        assert [g.uuid for g in gpus] == [gpu.uuid], ident
    pair = nvidia_smi_xml.parse(smi(session, "-q", "-x", "--id=1,6").stdout).gpus
    assert pair is not None
    assert [g.bus_id for g in pair] == ["00000000:2A:00.0", "00000000:BA:00.0"]


def test_an_unknown_gpu_id_finds_no_devices() -> None:
    out = smi(fresh("hgx-h100"), "-i", "9", "-q")
    assert (out.exit_code, out.stdout) == (6, "No devices were found\n")


# ---------------------------------------------------------------- -L, -q, --query-gpu


@pytest.mark.parametrize("name", FIXTURES)
def test_list_parses_into_every_gpu(name: str) -> None:
    session = fresh(name)
    facts = nvidia_smi_list.parse(smi(session, "-L").stdout)
    assert facts.gpus is not None
    assert [(g.index, g.name, g.uuid) for g in facts.gpus] == [
        (g.index, g.name, g.uuid) for g in state_of(session).gpus
    ]


def test_query_text_reports_persistence_and_mig_like_the_corpus_layout() -> None:
    out = smi(fresh("hgx-h100"), "-i", "0", "-q").stdout
    sample = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt").splitlines()
    for line in (
        "    Product Name                          : NVIDIA H100 80GB HBM3",
        "    Persistence Mode                      : Enabled",
        "        Current                           : Disabled",
        "                Max                       : 16x",
        "        Bus Id                            : 00000000:18:00.0",
    ):
        assert line in sample
        assert line in out.splitlines()
    assert "GPU 00000000:18:00.0" in out.splitlines()


def test_query_gpu_csv_with_units_header_and_nounits() -> None:
    session = fresh("hgx-h100")
    out = smi(
        session, "-i", "0", "--query-gpu=index,pci.bus_id,memory.total,power.draw,mig.mode.current", "--format=csv"
    )
    assert out.stdout.splitlines() == [
        "index, pci.bus_id, memory.total [MiB], power.draw [W], mig.mode.current",
        "0, 00000000:18:00.0, 81559 MiB, 100.89 W, Disabled",
    ]
    bare = smi(
        session,
        "--query-gpu=index,memory.total,clocks_throttle_reasons.active,pcie.link.width.current",
        "--format=csv,noheader,nounits",
    )
    assert bare.stdout.splitlines()[7] == "7, 81559, 0x0000000000000001, 16"


def test_query_gpu_matches_the_corpus_forms() -> None:
    # corpus nvml/query_gpu_csv_mig_mode.txt: "pci.bus_id, mig.mode.current" then "<bus>, Enabled".
    session = fresh("dgx-a100")
    smi(session, "-i", "0", "-mig", "1")
    out = smi(session, "-i", "0", "--query-gpu=pci.bus_id,mig.mode.current", "--format=csv")
    sample = read_corpus("nvml/query_gpu_csv_mig_mode.txt").splitlines()
    assert out.stdout.splitlines()[0] == sample[1]
    assert out.stdout.splitlines()[1] == "00000000:07:00.0, Enabled"
    l40s = smi(
        fresh("pcie-l40s"),
        "-i",
        "0",
        "--query-gpu=name,pci.device_id,mig.mode.current,ecc.mode.current",
        "--format=csv,noheader",
    )
    assert l40s.stdout == "NVIDIA L40S, 0x26B910DE, [N/A], Enabled\n"


def test_query_gpu_refuses_an_unknown_field() -> None:
    out = smi(fresh("hgx-h100"), "--query-gpu=index,bogus.field", "--format=csv")
    assert out.exit_code == 2
    assert out.stdout.startswith('Field "bogus.field" is not a valid field to query.')


@pytest.mark.parametrize(
    "args", [["--bogus"], ["-x"], ["-L", "-q"], ["--query-gpu=index"], ["-pm"], ["-pm", "2"], ["topo", "-x"]]
)
def test_bad_command_lines_get_the_usage_error(args: list[str]) -> None:
    out = smi(fresh("hgx-h100"), *args)
    assert out.exit_code == 2
    assert out.stdout == "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"


# ---------------------------------------------------------------- the default table


def test_default_table_has_the_corpus_shape_on_hgx_h100(corpus: object) -> None:
    table = smi(fresh("hgx-h100")).stdout.splitlines()
    sample = read_corpus("nvml/nvidia_smi_default_8xH100_SXM.txt").splitlines()
    # The first line is the time of the run; the rest is the corpus capture, character for character.
    assert table[1:] == sample
    assert all(len(line) == 91 for line in table[1:] if line.startswith(("+", "|")))


def test_default_table_shows_mig_devices_and_processes() -> None:
    session = fresh("dgx-a100")
    smi(session, "-i", "0", "-mig", "1")
    smi(session, "mig", "-i", "0", "-cgi", "9", "-C")
    state_of(session).gpu(1).processes = [GpuProcess(pid=4242, name="python3", used_memory_mib=1024)]
    lines = smi(session).stdout.splitlines()
    # R535 layout (the fixture's driver): corpus nvml/nvidia_smi_default_A100_40GB_mig_535.txt, a 3g.20gb on
    # an A100-SXM4-40GB: 19968MiB of memory and 32767MiB of BAR1 in the MIG devices box.
    real = read_corpus("nvml/nvidia_smi_default_A100_40GB_mig_535.txt").splitlines()
    row = lines.index("|   0  NVIDIA A100-SXM4-40GB          On  | 00000000:07:00.0 Off |                   On |")
    assert lines[row + 1].endswith("|     N/A      Default |")
    assert (
        lines[row + 2]
        == real[10]
        == "|                                         |                      |              Enabled |"
    )
    box = lines.index("| MIG devices:".ljust(88) + "|")
    assert lines[box - 1 : box + 6] == real[13:20]  # rule, title, cells, the three header lines, ===
    # an idle 3g.20gb holds 37 MiB, as the capture's (assessor.sim.gpu_memory)
    assert (
        lines[box + 6]
        == real[20]
        == "|  0    2   0   0  |              37MiB / 19968MiB  | 42      0 |  3   0    2    0    0 |"
    )
    assert (
        lines[box + 7]
        == real[21]
        == "|                  |               0MiB / 32767MiB  |           |                       |"
    )
    assert "|    1   N/A  N/A      4242      C   python3" in "\n".join(lines)
    assert all(len(line) == 89 for line in lines[1:] if line.startswith(("+", "|")))


# ---------------------------------------------------------------- topo -m


@pytest.mark.parametrize("name", FIXTURES)
def test_topo_parses_into_the_state_topology(name: str) -> None:
    session = fresh(name)
    state = state_of(session)
    topo = nvidia_smi_topo.parse(smi(session, "topo", "-m").stdout).topology
    assert topo is not None
    gpus = [f"GPU{g.index}" for g in state.gpus]
    nics = [f"NIC{i}" for i in range(len(state.ib_hcas))]
    assert topo.devices == gpus + nics
    assert sorted(topo.nic_names.values()) == sorted(h.name for h in state.ib_hcas)
    for g in state.gpus:
        assert topo.matrix[f"GPU{g.index}"][f"GPU{g.index}"] == "X"
        assert topo.cpu_affinity[f"GPU{g.index}"] == g.cpu_affinity
        assert topo.numa_affinity[f"GPU{g.index}"] == str(g.numa_node)
    for nic, hca_name in topo.nic_names.items():
        hca = state.hca(hca_name)
        for g in state.gpus:
            cell = topo.matrix[f"GPU{g.index}"][nic]
            assert cell == topo.matrix[nic][f"GPU{g.index}"]
            if hca.pcie_switch == g.pcie_switch:
                assert cell == "PXB"
            elif hca.numa_node == g.numa_node:
                assert cell == "NODE"
            else:
                assert cell == "SYS"


def test_topo_counts_nvlinks_through_nvswitch_like_the_real_systems() -> None:
    h100 = nvidia_smi_topo.parse(smi(fresh("hgx-h100"), "topo", "-m").stdout).topology
    a100 = nvidia_smi_topo.parse(smi(fresh("dgx-a100"), "topo", "-m").stdout).topology
    l40s = nvidia_smi_topo.parse(smi(fresh("pcie-l40s"), "topo", "-m").stdout).topology
    assert h100 is not None and a100 is not None and l40s is not None
    assert {h100.matrix["GPU0"][f"GPU{i}"] for i in range(1, 8)} == {"NV18"}
    # corpus nvidia_smi_topo/01: DGX A100 is NV12 everywhere, GPU0 PXB to NIC0 and NIC1.
    assert {a100.matrix["GPU2"][f"GPU{i}"] for i in (0, 1, 3, 7)} == {"NV12"}
    assert (a100.matrix["GPU0"]["NIC0"], a100.matrix["GPU0"]["NIC1"], a100.matrix["GPU0"]["NIC2"]) == (
        "PXB",
        "PXB",
        "SYS",
    )
    assert not any(cell.startswith("NV") for row in l40s.matrix.values() for cell in row.values())


def test_topo_shows_fewer_nvlinks_when_one_is_down() -> None:
    session = fresh("hgx-h100")
    state_of(session).gpu(2).nvlinks[5].active = False
    topo = nvidia_smi_topo.parse(smi(session, "topo", "-m").stdout).topology
    assert topo is not None
    assert topo.matrix["GPU2"]["GPU6"] == "NV17"
    assert topo.matrix["GPU1"]["GPU6"] == "NV18"


def test_topo_prints_the_legend_and_nic_legend() -> None:
    out = smi(fresh("dgx-a100"), "topo", "-m").stdout
    legend = read_corpus("nvml/topo_m_legend_and_2gpu_nvlink.txt").splitlines()
    start = legend.index("Legend:")
    assert "\n".join(legend[start : start + 9]) in out
    assert "NIC Legend:\n\n  NIC0: mlx5_0\n" in out
    assert out.splitlines()[0].startswith("\tGPU0\tGPU1")


# ---------------------------------------------------------------- persistence mode


def test_persistence_toggle_round_trips_through_xml() -> None:
    session = fresh("hgx-h100")
    off = smi(session, "-i", "0", "-pm", "0")
    assert (off.exit_code, off.stdout) == (0, "Disabled persistence mode for GPU 00000000:18:00.0.\nAll done.\n")
    gpus = nvidia_smi_xml.parse(smi(session, "-q", "-x").stdout).gpus
    assert gpus is not None
    assert [g.persistence_mode for g in gpus] == [False] + [True] * 7
    again = smi(session, "-i", "0", "-pm", "0")
    assert again.stdout == "Persistence mode is already Disabled for GPU 00000000:18:00.0.\nAll done.\n"
    on = smi(session, "-i", "0", "--persistence-mode=1")
    assert on.stdout == "Enabled persistence mode for GPU 00000000:18:00.0.\nAll done.\n"
    assert nvidia_smi_xml.parse(smi(session, "-q", "-x").stdout).gpus[0].persistence_mode is True  # type: ignore[index]


def test_persistence_change_needs_root() -> None:
    session = fresh("hgx-h100", euid=1000)
    out = smi(session, "-pm", "0")
    assert out.exit_code == 4
    assert "Insufficient Permissions" in out.stdout
    assert all(g.persistence_mode for g in state_of(session).gpus)


def test_persistence_change_is_written_to_the_state_file(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    out = run_tool(["nvidia-smi", "-i", "3", "-pm", "0"], Session(path=path))
    assert out.exit_code == 0
    assert load_state(path).gpu(3).persistence_mode is False
    assert load_state(path).gpu(2).persistence_mode is True


# ---------------------------------------------------------------- MIG mode and the MIG walk (A100, the guide)


def test_mig_enable_needs_root() -> None:
    session = fresh("dgx-a100", euid=1000)
    out = smi(session, "-i", "0", "-mig", "1")
    assert out.exit_code == 4
    assert out.stdout == (
        "Unable to enable MIG Mode for GPU 00000000:07:00.0: Insufficient Permissions\n"
        "Terminating early due to previous errors.\n"
    )
    assert state_of(session).gpu(0).mig_mode_pending is False


def test_mig_walk_on_a100_follows_the_guide() -> None:
    session = fresh("dgx-a100")
    enabled = smi(session, "-i", "0", "-mig", "1")
    # corpus nvml/mig_enable_messages.txt (DGX case, clients stopped)
    assert (enabled.exit_code, enabled.stdout) == (0, "Enabled MIG Mode for GPU 00000000:07:00.0\nAll done.\n")
    assert state_of(session).gpu(0).mig_mode_current is True
    assert state_of(session).gpu(1).mig_mode_current is False

    # corpus nvml/mig_cgi_create_messages_A100_40GB.txt: the ordering failure, instances made before it stay
    failed = smi(session, "mig", "-cgi", "19,19,14,9")
    sample = read_corpus("nvml/mig_cgi_create_messages_A100_40GB.txt").splitlines()
    start = sample.index("$ sudo nvidia-smi mig -cgi 19,19,14,9")
    assert failed.stdout.splitlines() == sample[start + 1 : start + 6]
    assert failed.exit_code != 0
    assert failed.exit_code == mig.MigResult([], [], mig.INSUFFICIENT_RESOURCES).exit_code
    assert len(state_of(session).gpu(0).mig_instances) == 3

    smi(session, "mig", "-dgi")
    assert state_of(session).gpu(0).mig_instances == []
    created = smi(session, "mig", "-cgi", "9,19,14,19", "-C")
    assert created.exit_code == 0
    assert created.stdout.splitlines()[0] == (
        "Successfully created GPU instance ID  2 on GPU  0 using profile MIG 3g.20gb (ID  9)"
    )
    lgi = smi(session, "mig", "-lgi")
    instances = nvidia_smi_mig.parse_lgi(lgi.stdout).mig_instances
    assert instances is not None
    placements = {(i.profile_id, i.gi_id): (i.placement_start, i.placement_size) for i in instances}
    # the guide: 3g.20gb at 4:4, 1g.5gb at 0:1 and 1:1, 2g.10gb at 2:2
    assert placements == {(9, 2): (4, 4), (19, 7): (0, 1), (14, 4): (2, 2), (19, 8): (1, 1)}
    state_gis = {(gi.profile_id, gi.gi_id): (gi.start, gi.size) for gi in state_of(session).gpu(0).mig_instances}
    assert state_gis == placements

    refused = smi(session, "mig", "-dgi", "-gi", "2")
    assert refused.exit_code != 0
    assert "Unable to destroy GPU instance ID  2 from GPU  0: In use by another client" in refused.stdout
    assert smi(session, "mig", "-dci", "-gi", "2").exit_code == 0
    gone = smi(session, "mig", "-dgi", "-gi", "2")
    assert gone.stdout == "Successfully destroyed GPU instance ID  2 from GPU  0\n"
    assert {gi.gi_id for gi in state_of(session).gpu(0).mig_instances} == {4, 7, 8}

    no_disable = smi(session, "-i", "0", "-mig", "0")
    assert no_disable.stdout.startswith("Unable to disable MIG Mode for GPU 00000000:07:00.0: In use by another client")
    assert state_of(session).gpu(0).mig_mode_current is True

    reset = smi(session, "-i", "0", "-r")
    assert reset.stdout == "GPU 00000000:07:00.0 was successfully reset.\nAll done.\n"
    assert state_of(session).gpu(0).mig_instances == []
    assert state_of(session).gpu(0).mig_mode_current is True  # the mode survives, the instances do not
    empty = smi(session, "mig", "-lgi")
    assert empty.stdout == "No GPU instances found: Not Found\n"
    assert nvidia_smi_mig.parse_lgi(empty.stdout).mig_instances == []


def test_mig_listings_parse_and_match_the_profiles() -> None:
    session = fresh("dgx-a100")
    smi(session, "-i", "0", "-mig", "1")
    smi(session, "mig", "-cgi", "9,9")
    profiles = nvidia_smi_mig.parse_lgip(smi(session, "mig", "-lgip").stdout).mig_profiles
    assert profiles is not None
    by_id = {p.profile_id: p for p in profiles}
    assert (by_id[9].name, by_id[9].instances_free, by_id[9].instances_total) == ("3g.20gb", 0, 2)
    assert (by_id[19].instances_free, by_id[19].instances_total) == (0, 7)
    assert by_id[0].memory_gib == pytest.approx(39.5)
    placements = nvidia_smi_mig.parse_lgipp(smi(session, "mig", "-lgipp").stdout).mig_profiles
    assert placements is not None
    guide = nvidia_smi_mig.parse_lgipp("\n".join(read_corpus("nvml/mig_lgipp_A100_guide.txt").splitlines()[1:]))
    assert guide.mig_profiles is not None
    assert [(p.profile_id, p.placements) for p in placements] == [
        (p.profile_id, p.placements) for p in guide.mig_profiles
    ]
    cis = smi(session, "mig", "-lci")
    assert cis.stdout == "No compute instances found: Not Found\n"
    assert smi(session, "mig", "-cci", "-gi", "1").exit_code == 0
    assert "MIG 3g.20gb" in smi(session, "mig", "-lci", "-gi", "1").stdout


def test_mig_commands_need_mig_mode() -> None:
    a100 = smi(fresh("dgx-a100"), "mig", "-lgi")
    assert (a100.exit_code, a100.stdout) == (6, "No MIG-enabled devices found.\n")
    assert nvidia_smi_mig.parse_lgi(a100.stdout).mig_instances == []
    assert smi(fresh("dgx-a100"), "mig", "-cgi", "9").stdout == "No MIG-enabled devices found.\n"
    assert smi(fresh("pcie-l40s"), "mig", "-lgip").stdout == "No MIG-supported devices found.\n"


def test_mig_instance_changes_need_root() -> None:
    session = fresh("dgx-a100")
    smi(session, "-mig", "1")
    session.euid = 1000
    out = smi(session, "mig", "-i", "0", "-cgi", "19")
    assert out.exit_code == 4
    assert out.stdout.splitlines()[-1] == "Failed to create GPU instances: Insufficient Permissions"
    assert state_of(session).gpu(0).mig_instances == []


def test_mig_mode_refused_on_l40s() -> None:
    session = fresh("pcie-l40s")
    named = smi(session, "-i", "0", "-mig", "1")
    assert named.exit_code == 3
    assert named.stdout.splitlines()[0] == "Unable to enable MIG Mode for GPU 00000000:21:00.0: Not Supported"
    every = smi(session, "-mig", "1")
    assert every.stdout.splitlines()[:2] == [
        "Unable to enable MIG Mode for GPU 00000000:21:00.0: Not Supported",
        "Treating as warning and moving on.",
    ]
    assert every.stdout.endswith("All done.\n")
    assert not any(g.mig_mode_pending or g.mig_mode_current for g in state_of(session).gpus)


def test_mig_mode_stays_pending_while_a_client_holds_an_a100() -> None:
    session = fresh("dgx-a100")
    state_of(session).gpu(0).mig_reset_blocked_by = ["nvidia-dcgm.service (nv-hostengine)"]
    out = smi(session, "-i", "0", "-mig", "1")
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert lines[0] == "Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:In use by another client"
    assert lines[1].startswith("00000000:07:00.0 is currently being used by one or more other processes")
    assert lines[-1] == "All done."
    gpu = state_of(session).gpu(0)
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (False, True)
    facts = nvidia_smi_xml.parse(smi(session, "-i", "0", "-q", "-x").stdout).gpus
    assert facts is not None
    assert (facts[0].mig_mode_current, facts[0].mig_mode_pending) == (False, True)
    busy = smi(session, "-i", "0", "-r")
    assert busy.exit_code != 0
    assert busy.stdout.splitlines()[:2] == [
        "The following GPUs could not be reset:",
        "  GPU 00000000:07:00.0: In use by another client",
    ]
    gpu.mig_reset_blocked_by = []
    assert smi(session, "-i", "0", "-r").exit_code == 0
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (True, True)


def test_mig_mode_in_a_passthrough_vm_waits_for_a_reboot() -> None:
    session = fresh("dgx-a100")
    state_of(session).gpu(0).passthrough = True
    out = smi(session, "-i", "0", "-mig", "1")
    sample = read_corpus("nvml/mig_enable_messages.txt").replace("00000000:00:03.0", "00000000:07:00.0")
    assert out.stdout in sample
    assert out.stdout.startswith("Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:Not Supported")
    reset = smi(session, "-i", "0", "--gpu-reset")
    assert (reset.exit_code, reset.stdout) == (3, "Resetting GPU 00000000:07:00.0 is not supported.\n")
    assert reset.stdout in sample
    assert state_of(session).gpu(0).mig_mode_current is False


def test_hopper_enables_mig_without_a_reset_even_with_a_client() -> None:
    session = fresh("hgx-h100")
    gpu = state_of(session).gpu(0)
    gpu.mig_reset_blocked_by = ["nvidia-dcgm.service (nv-hostengine)"]
    gpu.persistence_mode = False
    out = smi(session, "-i", "0", "-mig", "1")
    lines = out.stdout.splitlines()
    assert lines[0] == "Enabled MIG Mode for GPU 00000000:18:00.0"
    assert lines[2].startswith("Warning: persistence mode is disabled on device 00000000:18:00.0.")
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (True, True)


# ---------------------------------------------------------------- reset


def test_reset_applies_pending_modes_and_clears_remap_pending() -> None:
    session = fresh("hgx-h100")
    gpu = state_of(session).gpu(4)
    assert gpu.remapped_rows is not None
    gpu.remapped_rows.pending = True
    gpu.ecc.volatile_uncorrected = 3
    gpu.ecc.aggregate_uncorrected = 3
    gpu.ecc_mode_pending = False
    before = nvidia_smi_xml.parse(smi(session, "-i", "4", "-q", "-x").stdout).gpus[0]  # type: ignore[index]
    assert before.remap_pending is True
    out = smi(session, "-i", "4", "-r")
    assert out.stdout == "GPU 00000000:9A:00.0 was successfully reset.\nAll done.\n"
    after = nvidia_smi_xml.parse(smi(session, "-i", "4", "-q", "-x").stdout).gpus[0]  # type: ignore[index]
    assert after.remap_pending is False
    assert after.ecc_mode_current is False
    assert gpu.ecc.volatile_uncorrected == 0 and gpu.ecc.aggregate_uncorrected == 3


def test_reset_refused_while_processes_run() -> None:
    session = fresh("hgx-h100")
    for i in (1, 2):
        state_of(session).gpu(i).processes = [GpuProcess(pid=100 + i, name="python3")]
    out = smi(session, "-i", "1,2", "-r")
    assert out.exit_code == 255
    assert out.stdout.splitlines()[-1].startswith("2 devices are currently being used by one or more other processes")
    assert smi(session, "-i", "0", "-r").exit_code == 0  # the idle GPU still resets


def test_reset_needs_root() -> None:
    out = smi(fresh("hgx-h100", euid=1000), "-r")
    assert out.exit_code == 4


# ---------------------------------------------------------------- a broken driver


@pytest.mark.parametrize("args", [[], ["-L"], ["-q", "-x"], ["topo", "-m"], ["mig", "-lgi"], ["-pm", "1"]])
def test_driver_not_loaded(args: list[str]) -> None:
    session = fresh("hgx-h100")
    state_of(session).driver.loaded = False
    out = smi(session, *args)
    assert out.exit_code == 9
    assert out.stdout.startswith(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    with pytest.raises(ParseError, match="couldn't communicate"):
        nvidia_smi_xml.parse(out.stdout)


def test_driver_library_version_mismatch() -> None:
    session = fresh("dgx-a100")
    state_of(session).driver.version = "535.154.05"  # user space upgraded, old kernel module still loaded
    out = smi(session, "-q", "-x")
    assert out.exit_code == 18
    assert out.stdout == "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.154\n"
    with pytest.raises(ParseError, match="Driver/library version mismatch"):
        nvidia_smi_list.parse(smi(session, "-L").stdout)


def test_a_lost_gpu_is_reported_and_left_out() -> None:
    session = fresh("hgx-h100")
    state_of(session).gpu(2).lost = True
    out = smi(session, "-q", "-x")
    assert out.exit_code == 15
    assert out.stderr == (
        "Unable to determine the device handle for GPU2: 0000:3A:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU\n"
    )
    gpus = nvidia_smi_xml.parse(out.stdout).gpus
    assert gpus is not None
    assert "00000000:3A:00.0" not in [g.bus_id for g in gpus]
    assert len(gpus) == 7


def _keys(lines: list[str]) -> list[str]:
    """The indented key of every ``Key : value`` or heading line (values differ between machines)."""
    return [line.split(" : ", 1)[0].rstrip() for line in lines if line.strip()]


def test_query_text_keys_follow_the_real_565_h100_sample_in_order() -> None:
    # Every key the simulator prints for GPU 0 is a key of the real 565 sample, in the same order and
    # nesting: the sample has more sections (BAR1, utilization, ...) but nothing the simulator invents.
    out = smi(fresh("hgx-h100"), "-i", "0", "-q").stdout.splitlines()
    real = iter(_keys(read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt").splitlines()))
    missing = [key for key in _keys(out) if not any(key == r for r in real)]
    assert missing == []


def test_query_text_shows_the_565_sram_split_and_t_limit_temperatures_on_h100() -> None:
    out = smi(fresh("hgx-h100"), "-i", "0", "-q").stdout.splitlines()
    sample = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt").splitlines()
    for line in (
        "            SRAM Uncorrectable Parity     : 0",
        "            SRAM Uncorrectable SEC-DED    : 0",
        "            SRAM Threshold Exceeded       : No",
        "        Aggregate Uncorrectable SRAM Sources",
        "            Max                           : 2560 bank(s)",
        "        GPU T.Limit Temp                  : 57 C",
        "        GPU Slowdown T.Limit Temp         : -2 C",
        "        Memory Max Operating T.Limit Temp : 0 C",
    ):
        assert line in sample
        assert line in out
    assert not any("GPU Shutdown Temp" in line or "SRAM Uncorrectable  " in line for line in out)


def test_query_keeps_the_535_forms_on_a100() -> None:
    # 535 prints one SRAM uncorrectable count and absolute thresholds (corpus nvidia_smi_xml/a100-...-535-v12.xml)
    session = fresh("dgx-a100")
    text = smi(session, "-i", "0", "-q").stdout
    assert "            SRAM Uncorrectable            : 0" in text.splitlines()
    # Ampere keeps the absolute thresholds; the T.Limit line is there as N/A (A100 555 capture, audit row 5).
    assert "        GPU Slowdown Temp" in text and "        GPU T.Limit Temp                  : N/A" in text
    xml = smi(session, "-i", "0", "-q", "-x").stdout
    real = read_corpus("nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml")
    for tag in ("<sram_uncorrectable>", "<gpu_temp_tlimit>N/A</gpu_temp_tlimit>"):
        assert tag in real and tag in xml
    assert "sram_uncorrectable_parity" not in xml


def test_xml_of_565_has_the_split_sram_counts_and_still_parses() -> None:
    session = fresh("hgx-h100")
    xml = smi(session, "-i", "0", "-q", "-x").stdout
    real = read_corpus("nvidia_smi_xml/rtx-3080-595-v13.xml")
    for tag in (
        "<sram_uncorrectable_parity>",
        "<sram_uncorrectable_secded>",
        "<sram_threshold_exceeded>",
        "<aggregate_uncorrectable_sram_sources>",
        "<sram_other>",
    ):
        assert tag in real and tag in xml
    assert "<gpu_temp_tlimit>57 C</gpu_temp_tlimit>" in xml
    gpus = nvidia_smi_xml.parse(xml).gpus
    assert gpus is not None
    gpu = gpus[0]
    assert (gpu.ecc_volatile_uncorrected, gpu.ecc_aggregate_uncorrected) == (0, 0)
    state = load_fixture("hgx-h100")
    state.gpus[0].ecc.volatile_uncorrected = state.gpus[0].ecc.aggregate_uncorrected = 3
    faulted_gpus = nvidia_smi_xml.parse(smi(Session(state=state), "-i", "0", "-q", "-x").stdout).gpus
    assert faulted_gpus is not None
    faulted = faulted_gpus[0]
    assert (faulted.ecc_volatile_uncorrected, faulted.ecc_aggregate_uncorrected) == (3, 3)


# ---------------------------------------------------------------- nvlink


def _line_shape(line: str) -> str:
    """A line with its numbers and UUIDs replaced: what must match between a capture and the simulator."""
    import re

    line = re.sub(r"\(UUID: [^)]*\)", "(UUID: U)", line)
    line = re.sub(r"NVIDIA [^(]*\(", "NAME (", line)
    return re.sub(r"\d+(?:\.\d+)?", "9", line)


def test_nvlink_status_prints_one_line_per_link_as_a_captured_a100_does() -> None:
    out = smi(fresh("dgx-a100"), "nvlink", "-s", "-i", "0")
    captured = read_corpus("nvidia_smi_nvlink/01_a100_sxm4_80gb_nvlink_s_12_links_25GBs.txt").splitlines()[:13]
    assert out.exit_code == 0
    assert out.stdout.splitlines()[1] == captured[1] == "\t Link 0: 25 GB/s"
    assert [_line_shape(x) for x in out.stdout.splitlines()] == [_line_shape(x) for x in captured]


def test_nvlink_status_shows_a_down_link_as_inactive_and_h100_speed_with_decimals() -> None:
    session = fresh("hgx-h100")
    state_of(session).gpus[3].nvlinks[4].active = False
    out = smi(session, "nvlink", "--status", "-i", "3")
    lines = out.stdout.splitlines()
    assert lines[0].startswith("GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert lines[1] == "\t Link 0: 26.562 GB/s"
    assert lines[5] == "\t Link 4: <inactive>"  # corpus nvidia_smi_nvlink/02 spells a down link so
    assert len(lines) == 1 + 18


def test_nvlink_errors_show_replay_recovery_and_crc_per_link_and_reset_clears_them() -> None:
    session = fresh("hgx-h100")
    link = state_of(session).gpus[0].nvlinks[1]
    link.errors.update(replay=5, crc_flit=2, crc_data=1)
    lines = smi(session, "nvlink", "-e", "-i", "0").stdout.splitlines()
    captured = read_corpus("nvidia_smi_nvlink_errors/01_h100_nvlink_e_replay_recovery_crc.txt").splitlines()
    assert [_line_shape(x) for x in lines[:8]] == [_line_shape(x) for x in captured[:8]]
    assert lines[5:8] == ["\t Link 1: Replay Errors: 5", "\t Link 1: Recovery Errors: 0", "\t Link 1: CRC Errors: 3"]
    assert smi(session, "nvlink", "-re").exit_code == 0
    assert "\t Link 1: Replay Errors: 0" in smi(session, "nvlink", "-e", "-i", "0").stdout


def test_nvlink_reset_of_error_counters_needs_root() -> None:
    out = smi(fresh("hgx-h100", euid=1000), "nvlink", "-re")
    assert out.exit_code == 4 and "Insufficient Permissions" in out.stdout


def test_nvlink_deprecated_counter_reset_says_so_and_unknown_options_are_refused() -> None:
    assert smi(fresh("hgx-h100"), "nvlink", "-r", "0").stdout == "Resetting counters is deprecated!\n"
    assert "Invalid combination" in smi(fresh("hgx-h100"), "nvlink", "--bogus").stdout
    assert "[-re | --reseterrorcounters]" in smi(fresh("hgx-h100"), "nvlink", "-h").stdout


def test_nvlink_on_a_gpu_without_nvlink_prints_nothing() -> None:
    out = smi(fresh("pcie-l40s"), "nvlink", "-s", "-i", "0")
    assert (out.exit_code, out.stdout, out.stderr) == (0, "", "")


def test_nvidia_smi_prints_its_help_for_h_whatever_else_is_on_the_line() -> None:
    out = smi(fresh("dgx-a100"), "-r", "-h")
    assert out.exit_code == 0 and out.stdout.startswith("NVIDIA System Management Interface -- v535.129.03")


# ---------------------------------------------------------------- -q -d SECTION


def _gpu_block_titles(out: str) -> list[str]:
    """The one-indent keys and titles under each GPU line of -q text."""
    return [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("    ") and line[4] != " "]


def test_query_display_prints_only_the_sections_asked_for_in_nvidia_smi_order() -> None:
    out = smi(fresh("dgx-a100"), "-q", "-d", "ROW_REMAPPER,ECC", "-i", "0")
    assert out.exit_code == 0
    assert "Attached GPUs                             : 8" in out.stdout
    assert "GPU 00000000:07:00.0" in out.stdout
    assert _gpu_block_titles(out.stdout) == ["ECC Mode", "ECC Errors", "Remapped Rows"]
    assert "Product Name" not in out.stdout and "Temperature" not in out.stdout


@pytest.mark.parametrize(
    ("section", "titles"),
    [
        ("MEMORY", ["FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage"]),
        ("PERFORMANCE", ["Performance State", "Clocks Event Reasons", "Sparse Operation Mode"]),
        ("PAGE_RETIREMENT", ["Retired Pages"]),
        ("TEMPERATURE", ["Temperature"]),
        ("POWER", ["GPU Power Readings", "Power Samples", "GPU Memory Power Readings", "Module Power Readings"]),
        (
            "CLOCK",
            [
                "Clocks",
                "Applications Clocks",
                "Default Applications Clocks",
                "Deferred Clocks",
                "Max Clocks",
                "Max Customer Boost Clocks",
                "SM Clock Samples",
                "Memory Clock Samples",
                "Clock Policy",
            ],
        ),
        ("UTILIZATION", ["Utilization"]),
        ("PIDS", ["Processes"]),
        ("COMPUTE", ["Compute Mode"]),
    ],
)
def test_query_display_section_names_select_the_sections_real_nvidia_smi_titles_so(
    section: str, titles: list[str]
) -> None:
    out = smi(fresh("hgx-h100"), "-q", "-d", section.lower() if section == "MEMORY" else section, "-i", "0")
    assert _gpu_block_titles(out.stdout) == titles
    real = _gpu_block_titles(read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt"))
    # The titles are the 565 capture's, the sample blocks only -d prints those of the 580 -d captures.
    for rel in (
        "nvidia_smi_q/10_580.65.06_rtx3090ti_d_power_gpu0_of_4.txt",
        "nvidia_smi_q/11_580.65.06_rtx3090ti_d_clock_gpu0_of_4.txt",
    ):
        real += _gpu_block_titles(read_corpus(rel))
    assert all(title in real for title in titles)


def test_query_display_refuses_an_unknown_section_or_d_without_q() -> None:
    assert "Invalid combination" in smi(fresh("hgx-h100"), "-q", "-d", "ECC,NOPE").stdout
    assert smi(fresh("hgx-h100"), "-d", "ECC").exit_code == 2


def test_query_shows_ecc_mode_pending_apart_from_current() -> None:
    session = fresh("hgx-h100")
    state_of(session).gpus[2].ecc_mode_pending = False
    lines = smi(session, "-q", "-d", "ECC", "-i", "2").stdout.splitlines()
    at = lines.index("    ECC Mode")
    assert lines[at + 1 : at + 3] == [
        "        Current                           : Enabled",
        "        Pending                           : Disabled",
    ]


def test_query_bar1_inforom_board_and_module_id_match_the_565_h100_capture() -> None:
    out = smi(fresh("hgx-h100"), "-q", "-i", "0").stdout
    real = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt")
    for line in (
        "    Board ID                              : 0x1800",
        "        Image Version                     : G520.0200.00.05",
        "        ECC Object                        : 7.16",
        "        Total                             : 131072 MiB",
        "        Gpu                               : 0 %",
        "        OFA                               : 0 %",
    ):
        assert line in real.splitlines()
        assert line in out.splitlines(), line
    # The baseboard slot numbering is not the GPU index (the capture's GPU 0 is module 2): only its form.
    assert re.search(r"^    Platform Info\n(?:        .*\n)*        Module Id +: \d+$", out, flags=re.M)


def test_query_on_535_uses_the_535_names_and_a100_bar1() -> None:
    session = fresh("dgx-a100")
    out = smi(session, "-q", "-i", "0").stdout.splitlines()
    assert "    Clocks Event Reasons" in out  # the R535 name (its XML says clocks_event_reasons)
    state_of(session).driver.version = state_of(session).driver.kernel_module_version = "525.85.12"
    assert "    Clocks Throttle Reasons" in smi(session, "-q", "-i", "0").stdout.splitlines()
    assert any(line.startswith("    Module ID") for line in out)
    at = out.index("    BAR1 Memory Usage")
    assert out[at + 1] == "        Total                             : 65536 MiB"


# ---------------------------------------------------------------- --query-remapped-rows, --query-compute-apps


def test_query_remapped_rows_prints_one_row_per_gpu_with_pending_as_0_or_1() -> None:
    session = fresh("hgx-h100")
    rows = state_of(session).gpus[1].remapped_rows
    assert rows is not None
    rows.pending, rows.uncorrectable = True, 2
    out = smi(
        session, "--query-remapped-rows=gpu_bus_id,remapped_rows.uncorrectable,remapped_rows.pending", "--format=csv"
    )
    lines = out.stdout.splitlines()
    assert lines[0] == "gpu_bus_id, remapped_rows.uncorrectable, remapped_rows.pending"
    assert lines[1] == "00000000:18:00.0, 0, 0"
    assert lines[2] == "00000000:2A:00.0, 2, 1"
    assert len(lines) == 1 + 8


def test_query_remapped_rows_refuses_a_gpu_field_it_does_not_have() -> None:
    out = smi(fresh("hgx-h100"), "--query-remapped-rows=memory.total", "--format=csv")
    assert out.exit_code == 2 and 'Field "memory.total" is not a valid field to query.' in out.stdout


def test_query_compute_apps_lists_the_processes_on_the_gpus_or_only_a_header() -> None:
    session = fresh("hgx-h100")
    assert smi(session, "--query-compute-apps=pid,used_memory", "--format=csv").stdout == "pid, used_memory [MiB]\n"
    state_of(session).gpus[3].processes.append(GpuProcess(pid=777, name="python3", used_memory_mib=2048))
    state_of(session).gpus[4].processes.append(GpuProcess(pid=778, name="Xorg", type="G", used_memory_mib=4))
    out = smi(session, "--query-compute-apps=pid,process_name,used_gpu_memory,gpu_bus_id", "--format=csv,noheader")
    assert out.stdout == "777, python3, 2048 MiB, 00000000:5D:00.0\n"
    only_gpu0 = smi(session, "-i", "0", "--query-compute-apps=pid", "--format=csv,noheader")
    assert only_gpu0.stdout == ""


@pytest.mark.parametrize(("name", "cap"), [("dgx-a100", "8.0"), ("hgx-h100", "9.0"), ("pcie-l40s", "8.9")])
def test_query_gpu_compute_cap_is_the_cuda_compute_capability(name: str, cap: str) -> None:
    out = smi(fresh(name), "-i", "0", "--query-gpu=compute_cap", "--format=csv,noheader")
    assert out.stdout == f"{cap}\n"


def test_query_gpu_fabric_state_and_status_follow_the_fabric() -> None:
    session = fresh("hgx-h100")
    state_of(session).gpus[0].fabric_state, state_of(session).gpus[0].fabric_status = "In Progress", None
    out = smi(session, "-i", "0,1", "--query-gpu=fabric.state,fabric.status", "--format=csv,noheader")
    assert out.stdout == "In Progress, [N/A]\nCompleted, Success\n"
    pcie = smi(fresh("pcie-l40s"), "-i", "0", "--query-gpu=fabric.state", "--format=csv,noheader")
    assert pcie.stdout == "[N/A]\n"


def test_mig_help_lists_the_mig_options() -> None:
    out = smi(fresh("dgx-a100"), "mig", "-h")
    assert out.exit_code == 0
    for option in ("[-lgip | --list-gpu-instance-profiles]", "[-cgi | --create-gpu-instance]", "[-dci |"):
        assert option in out.stdout


# ---------------------------------------------------------------- the default table per driver branch


def _layout_lines(text: str) -> list[str]:
    """The fixed lines of a default table (rules, headers, titles), without the timestamp and GPU rows."""
    return [
        line
        for line in text.splitlines()[1:]
        if line.startswith(("+", "|=", "|--"))
        or "Name" in line
        or "Memory-Usage" in line
        or "MIG M." in line
        or "Processes:" in line
        or " ID   ID " in line
        or "GPU   GI   CI" in line
    ]


def test_default_table_on_570_has_the_wide_pid_column_of_a_570_capture() -> None:
    out = smi(fresh("hgx-h200"), "-i", "0").stdout
    real = read_corpus("nvml/nvidia_smi_default_T4_570.txt")
    ours = [line for line in _layout_lines(out) if "NVIDIA-SMI" not in line]
    theirs = [line for line in _layout_lines(real) if "NVIDIA-SMI" not in line]
    assert ours == theirs
    assert {len(line) for line in out.splitlines()[1:]} == {len(line) for line in real.splitlines()[1:]} == {89, 91}


def test_default_table_on_580_draws_the_rule_under_the_version_with_plus_signs() -> None:
    session = fresh("hgx-h200")
    state = state_of(session)
    state.driver.version = state.driver.kernel_module_version = "580.159.03"
    state.gpus[0].processes = [GpuProcess(pid=2443, name="/usr/lib/xorg/Xorg", type="G", used_memory_mib=126)]
    lines = smi(session, "-i", "0").stdout.splitlines()
    real = read_corpus("nvml/nvidia_smi_default_GB10_580_processes.txt").splitlines()
    assert (
        lines[3]
        == real[3]
        == "+-----------------------------------------+------------------------+----------------------+"
    )
    assert real[-3] in lines  # "|    0   N/A  N/A            2443      G   /usr/lib/xorg/Xorg   126MiB |"


def test_default_table_on_535_is_89_columns_with_a_22_wide_middle_cell() -> None:
    out = smi(fresh("dgx-a100")).stdout
    real = read_corpus("nvml/nvidia_smi_default_A100_40GB_mig_535.txt")
    ours = [line for line in _layout_lines(out) if "NVIDIA-SMI" not in line]
    theirs = [line for line in _layout_lines(real) if "NVIDIA-SMI" not in line]
    assert ours[:7] == theirs[:7]  # rules, the three header lines of the GPU box, the cell rule under GPU 0
    assert ours[-6:] == theirs[-6:]  # the process box, "No running processes found" aside
    assert {len(line) for line in out.splitlines()[1:]} == {89}


@pytest.mark.parametrize(
    "rel",
    [
        "nvidia_smi_xml/a10g-515-v11.xml",
        "nvidia_smi_xml/a100-sxm4-40gb-mig-510-v11.xml",
        "nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml",
        "nvidia_smi_xml/rtx-3080-595-v13.xml",
    ],
)
def test_query_board_id_is_derived_from_the_bus_id_as_in_real_logs(rel: str) -> None:
    xml = read_corpus(rel)
    bus_id = re.search(r"<pci_bus_id>([^<]+)</pci_bus_id>", xml)
    board = re.search(r"<board_id>([^<]+)</board_id>", xml)
    assert bus_id and board
    session = fresh("pcie-l40s")
    state_of(session).gpus[0].bus_id = bus_id.group(1)
    full = smi(session, "-q", "-i", "0").stdout.splitlines()
    assert f"    Board ID                              : {board.group(1).lower()}" in full
