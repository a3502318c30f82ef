"""What gpulab grades from pasted outputs, through a snapshot directory, as an engineer reads them.

Each sample is a real output (tests/data/corpus/SOURCES.md) placed in a snapshot under the name its
reporter gave it (recognised by content) and under its contract name, then assessed. The last test
holds every kind ``gpulab parse auto`` recognises to reaching a check this way.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from assessor import checks, parsers
from assessor.assess.pipeline import Job, assess_one
from assessor.assess.profiles import CheckRef, Profile
from assessor.capture import snapshot
from assessor.capture.sources import FILES
from assessor.checks.result import Result
from assessor.facts import NodeFacts
from assessor.parsers.assemble import facts_from_snapshot
from assessor.parsers.detect import snapshot_file
from assessor.targets.local import SnapshotTarget
from tests.support.corpus import CORPUS, read_corpus


def assessed(directory: Path, *refs: tuple[str, dict[str, Any]]) -> tuple[dict[str, Result], list[str]]:
    profile = Profile("pasted", "", tuple(CheckRef(check, params) for check, params in refs))
    done = assess_one(Job("t", SnapshotTarget(f"snapshot:{directory}", directory)), profile, timeout=5)
    assert done.error is None, done.error
    return {r.check: r for r in done.results}, done.notes


def pasted(tmp_path: Path, *files: tuple[str, str | None]) -> Path:
    """A snapshot of corpus files, each under ``name`` (None: the corpus file's own name)."""
    directory = tmp_path / "snap"
    directory.mkdir(parents=True, exist_ok=True)
    for rel, name in files:
        shutil.copyfile(CORPUS / rel, directory / (name or Path(rel).name))
    return directory


CONTRACT = {row.kind: row.file for row in FILES} | {"nccl-debug": "nccl-tests.txt"}

# (corpus file, its kind, check, params, verdict, words the message must hold)
VERDICTS = [
    (
        "systemctl_status/04_fm_restart_failed_journal_xeu_h20_excerpt.txt",
        "systemctl-status",
        "services.active",
        {"names": ["nvidia-fabricmanager"]},
        "fail",
        "nvidia-fabricmanager is failed (exit-code)",
    ),
    (
        "systemctl_status/05_persistenced_failed_iso_timestamps_journal_excerpt.txt",
        "systemctl-status",
        "gpu.persistence",
        {},
        "fail",
        "nvidia-persistenced is failed",
    ),
    (
        "systemctl_status/01_fm_driver_interface_version_mismatch_550.txt",
        "systemctl-status",
        "services.active",
        {"names": ["nvidia-fabricmanager"]},
        "fail",
        "driver interface version 550.127.05 don't match",
    ),
    (
        "systemctl_status/01_fm_driver_interface_version_mismatch_550.txt",
        "systemctl-status",
        "fabric.state",
        {},
        "fail",
        "nvidia-fabricmanager is failed: fabric manager NVIDIA GPU driver interface version 550.127.05",
    ),
    (
        "nccl_debug/07_aws_two_nodes_ofi_not_efa_ib_absent_socket_excerpt.txt",
        "nccl-debug",
        "nccl.transport",
        {},
        "fail",
        "NCCL fell back to sockets: NET/IB : No device found (2 nodes)",
    ),
    (
        "nccl_debug/09_forced_socket_two_nodes_ifname_en_excerpt.txt",
        "nccl-debug",
        "nccl.transport",
        {},
        "fail",
        "sockets between nodes (2 nodes)",
    ),
    (
        "nccl_debug/08_two_nodes_net_socket_channels_excerpt.txt",
        "nccl-debug",
        "nccl.errors",
        {},
        "pass",
        "no nccl-tests table: results not checked",
    ),
    (
        "nccl_warn/04_net_ib_completion_status12_hca_mlx5_10_log_only.txt",
        "nccl-debug",
        "nccl.errors",
        {},
        "fail",
        "Got completion from peer 192.168.3.5<53908> with status=12",
    ),
    (
        "nccl_warn/05_socket_transport_connect_failed_run_died_excerpt.txt",
        "nccl-debug",
        "nccl.errors",
        {},
        "fail",
        "[Service thread] Error encountered progressing operation=Connect",
    ),
    (
        "nccl_debug/10_rank_tagged_two_nodes_bootstrap_no_plugin_excerpt.txt",
        "nccl-debug",
        "nccl.transport",
        {},
        "skip",
        "names no network",
    ),
    (
        "nvidia_smi_topo/07_b200_gpu2_without_nvlink_headerless_excerpt.txt",
        "nvidia-smi-topo",
        "gpu.nvlink",
        {"expected_links": 18},
        "fail",
        "GPU 2: 0/18 NVLinks active",
    ),
    (
        "nvidia_smi_topo/06_b200_glued_nic11nic12_excerpt.txt",
        "nvidia-smi-topo",
        "gpu.nvlink",
        {"expected_links": 18},
        "pass",
        "all NVLinks active on 8 GPUs",
    ),
    (
        "nvidia_smi_topo/05_b200_glued_nic11_cpu_affinity_excerpt.txt",
        "nvidia-smi-topo",
        "gpu.nvlink",
        {"expected_links": 18},
        "pass",
        "all NVLinks active on 8 GPUs",  # GPU4-7's rows were cut: their columns in the others' rows say it
    ),
    (
        "nvidia_smi_topo/08_gb200_r570_four_gpus_nv18_numa_lists_excerpt.txt",
        "nvidia-smi-topo",
        "gpu.nvlink",
        {"expected_links": 18},
        "pass",
        "all NVLinks active on 4 GPUs",  # NV18 to each of 3 peers is one switched set, not 54 links
    ),
    (
        "nvidia_smi_topo/09_dgx_a100_18nics_uneven_spacing_excerpt.txt",
        "nvidia-smi-topo",
        "gpu.nvlink",
        {"expected_links": 12},
        "pass",
        "all NVLinks active on 8 GPUs",
    ),
    (
        "nvml/mig_lgi_A100_PCIE_40GB_esxi_prompt.txt",
        "nvidia-smi-mig-lgi",
        "mig.layout",
        {"layout": ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]},
        "pass",
        "MIG layout matches on GPU 0",
    ),
    (
        "nvml/mig_lgip_A100_PCIE_40GB_esxi_prompt.txt",
        "nvidia-smi-mig-lgip",
        "mig.mode",
        {"gpus": [0]},
        "pass",
        "MIG enabled on GPU 0 per nvidia-smi mig -lgip",
    ),
    (
        "lsmod/01_headerless_nvidia_peermem_ib_core_excerpt.txt",
        "lsmod",
        "driver.loaded",
        {},
        "pass",
        "nvidia module in lsmod",
    ),
    (
        "lsmod/02_headerless_sort_grep_mlx5_no_nvidia.txt",
        "lsmod",
        "driver.loaded",
        {},
        "skip",
        "not in the lsmod excerpt, which proves nothing",
    ),
    (
        "ibstat/06_mlx4_fdr_set_x_trace_and_ibwarn_before_output.txt",
        "ibstat",
        "ib.ports_active",
        {},
        "pass",
        "not counted: mlx4_0 port 1 Down (Disabled)",
    ),
    (
        "ibv_devinfo/04_cx5_mt4119_fw16.23_v_excerpt_without_port_section.txt",
        "ibv-devinfo",
        "ib.ports_active",
        {},
        "skip",
        "mlx5_1 without a port section",
    ),
    (
        "nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt",
        "nvidia-smi-q",
        "gpu.count",
        {"expected": 10},
        "pass",
        "10 GPUs (the driver's count: the output lists 1",
    ),
    (
        "nvidia_smi_q/05_580.105.06_rtx_pro_6000_d_memory_performance_cut.txt",
        "nvidia-smi-q",
        "gpu.count",
        {"expected": 4},
        "pass",
        "4 GPUs",
    ),
    (
        "nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt",
        "nvidia-smi-q",
        "gpu.pcie_link",
        {},
        "warn",
        "idle GPU, P8, 0 % utilisation, 29.7 W of 300 W",
    ),
]


@pytest.mark.parametrize("under", ["reporter's name", "contract name"])
@pytest.mark.parametrize(
    ("rel", "kind", "check", "params", "status", "words"), VERDICTS, ids=[f"{v[2]}:{Path(v[0]).name}" for v in VERDICTS]
)
def test_pasted_output_is_graded_as_an_engineer_reads_it(
    tmp_path: Path, under: str, rel: str, kind: str, check: str, params: dict[str, Any], status: str, words: str
) -> None:
    name = CONTRACT[kind] if under == "contract name" else None
    results, notes = assessed(pasted(tmp_path, (rel, name)), (check, params))
    r = results[check]
    assert (r.status, words in r.message) == (status, True), r.message
    assert not [n for n in notes if "not used" in n]


def test_a_died_run_with_its_header_quotes_the_warn_it_died_of(tmp_path: Path) -> None:
    log = read_corpus("nccl_warn/05_socket_transport_connect_failed_run_died_excerpt.txt")
    header = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"
    (tmp_path / "nccl-tests.txt").write_text(header + log, encoding="utf-8")
    results, _ = assessed(tmp_path, ("nccl.errors", {}))
    r = results["nccl.errors"]
    assert r.status == "fail"
    assert r.message.startswith("the run stopped on an NCCL error: NCCL WARN: [Service thread] Error encountered")
    assert r.evidence and r.evidence[0].startswith("NCCL WARN [Service thread]")


# ---- two sources of services: the better one wins, the notes say so -----------------------------

SHOW_ACTIVE = """Id=nvidia-fabricmanager.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
Result=success
ExecMainStatus=0

Id=nvidia-persistenced.service
LoadState=loaded
ActiveState=active
SubState=running
"""


def test_show_and_a_status_paste_that_disagree_use_show_and_say_so(tmp_path: Path) -> None:
    directory = pasted(tmp_path, ("systemctl_status/01_fm_driver_interface_version_mismatch_550.txt", None))
    (directory / "services.txt").write_text(SHOW_ACTIVE, encoding="utf-8")
    results, notes = assessed(directory, ("services.active", {"names": ["nvidia-fabricmanager"]}))
    assert results["services.active"].status == "pass"
    (note,) = [n for n in notes if "nvidia-fabricmanager.service" in n]
    assert "services.txt says active (running), systemctl-status.txt says failed; services.txt is used" in note


def test_a_status_paste_gives_the_failed_unit_of_show_its_reason(tmp_path: Path) -> None:
    directory = pasted(tmp_path, ("systemctl_status/01_fm_driver_interface_version_mismatch_550.txt", "fm.log"))
    show = SHOW_ACTIVE.replace(
        "ActiveState=active\nSubState=running\nUnitFileState", "ActiveState=failed\nSubState=failed\nUnitFileState", 1
    )
    (directory / "services.txt").write_text(show, encoding="utf-8")
    results, notes = assessed(directory, ("services.active", {"names": ["nvidia-fabricmanager"]}))
    r = results["services.active"]
    assert r.status == "fail"
    assert "nvidia-fabricmanager is failed" in r.message
    assert "driver interface version 550.127.05 don't match with driver version 550.120" in r.message
    assert not notes  # they agree: nothing to say


def test_lgipp_placements_join_the_lgip_profiles(tmp_path: Path) -> None:
    directory = pasted(
        tmp_path, ("nvml/mig_lgip_A30_24GB.txt", "profiles.txt"), ("nvml/mig_lgipp_A30.txt", "placements.txt")
    )
    snap = snapshot.read(directory, recognise=snapshot_file)
    assert set(snap.sources) == {"nvidia-smi-mig-lgip.txt", "nvidia-smi-mig-lgipp.txt"}
    profiles = {p.name: p for p in facts_from_snapshot(snap).mig_profiles or []}
    assert profiles["1g.6gb"].placements == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert profiles["4g.24gb"].placements == [(0, 4)]


# ---- count and idle semantics on the other side of the line ---------------------------------------


def test_a_busy_gpu_at_gen1_still_fails(tmp_path: Path) -> None:
    text = read_corpus("nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt")
    busy = re.sub(r"(Performance State +): P8", r"\1: P0", text)
    busy = re.sub(r"(\n        Gpu +): 0 %", r"\1: 97 %", busy)
    assert busy.count(": P0\n") == 1 and busy.count(": 97 %\n") == 1
    facts = parsers.parse("nvidia-smi-q", busy)
    r = checks.run_check(checks.REGISTRY["gpu.pcie_link"], facts, {})
    assert r.status == "fail"
    assert "under load, P0, 97 % utilisation" in r.message


def test_the_attached_count_fails_a_node_short_of_gpus(tmp_path: Path) -> None:
    results, notes = assessed(
        pasted(tmp_path, ("nvidia_smi_q/05_580.105.06_rtx_pro_6000_d_memory_performance_cut.txt", None)),
        ("gpu.count", {"expected": 8}),
    )
    assert results["gpu.count"].status == "fail"
    assert "found 4 GPUs" in results["gpu.count"].message
    assert any("'Attached GPUs : 4' but 1 GPU block" in n for n in notes)


def test_nvlink_from_topology_alone_judges_gpus_against_each_other(tmp_path: Path) -> None:
    bad, _ = assessed(
        pasted(tmp_path, ("nvidia_smi_topo/07_b200_gpu2_without_nvlink_headerless_excerpt.txt", None)),
        ("gpu.nvlink", {}),
    )
    assert bad["gpu.nvlink"].status == "fail"
    assert "GPU 2: 0 NVLinks to its peers in nvidia-smi topo -m, the other GPUs 18" in bad["gpu.nvlink"].message
    good, _ = assessed(
        pasted(tmp_path / "b", ("nvidia_smi_topo/06_b200_glued_nic11nic12_excerpt.txt", None)), ("gpu.nvlink", {})
    )
    assert good["gpu.nvlink"].status == "pass"


def test_nvlink_without_any_nv_link_in_topology_skips(tmp_path: Path) -> None:
    r, _ = assessed(
        pasted(tmp_path, ("nvidia_smi_topo/03_h100_pcie_no_nvlink_all_sys_one_pix_nic_per_gpu.txt", None)),
        ("gpu.nvlink", {}),
    )
    assert r["gpu.nvlink"].status == "skip"


def test_inactive_bridge_links_of_a_pcie_card_only_warn() -> None:
    facts = parsers.parse(
        "nvidia-smi-nvlink", read_corpus("nvidia_smi_nvlink/02_h100_pcie_nvlink_s_bridge_links_inactive.txt")
    )
    r = checks.run_check(checks.REGISTRY["gpu.nvlink"], facts, {})
    assert r.status == "warn" and "inactive" in r.message


# ---- every recognised kind reaches a check through a snapshot ------------------------------------

# One real output of each kind; the few kinds without a pasted sample in the corpus get the literal
# output of their file (the NVML collector's JSON, a systemctl show, /proc/driver/nvidia/version, ...).
SAMPLES: dict[str, str] = {
    "nvidia-smi-xml": "nvidia_smi_xml/a10g-515-v11.xml",
    "nvidia-smi-q": "nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt",
    "nvidia-smi": "nvidia_smi/08_610.43.02_b200_kmd_umd_version_header.txt",
    "nvidia-smi-nvlink": "nvidia_smi_nvlink/01_v100_sxm2_two_links_inactive_excerpt.txt",
    "nvidia-smi-list": "nvml/nvidia_smi_L_mig_A100_40GB_guide.txt",
    "nvidia-smi-topo": "nvidia_smi_topo/06_b200_glued_nic11nic12_excerpt.txt",
    "nvidia-smi-mig-lgi": "nvml/mig_lgi_A100_PCIE_40GB_esxi_prompt.txt",
    "nvidia-smi-mig-lgip": "nvml/mig_lgip_A100_PCIE_40GB_esxi_prompt.txt",
    "nvidia-smi-mig-lgipp": "nvml/mig_lgipp_A30.txt",
    "ibstat": "ibstat/06_mlx4_fdr_set_x_trace_and_ibwarn_before_output.txt",
    "ibv-devinfo": "ibv_devinfo/02_ib_cx7_mt4126_fw28.37_port_active_infiniband.txt",
    "dpkg-list": "dpkg/01_dpkg_l_nvidia_440_prompted_cut.txt",
    "dkms-status": "dkms/01_dkms_status_slash_format.txt",
    "ibnetdiscover": "ibnetdiscover/01_rdma_core_man_sdr_two_switches.txt",
    "iblinkinfo": "iblinkinfo/01_roce_v100_mqm8700_degraded_speed_25g_lanes.txt",
    "ib-write-bw": "perftest/01_ib_write_bw_edr_ib_gbits_small_sizes.txt",
    "lsmod": "lsmod/01_headerless_nvidia_peermem_ib_core_excerpt.txt",
    "dmesg": "dmesg_xid/02_xid13_xid109_h100_dmesg_ctime.txt",
    "systemctl-status": "systemctl_status/04_fm_restart_failed_journal_xeu_h20_excerpt.txt",
    "nccl-tests": "nccl_tests/02_all_reduce_1node_8xA100_sxm4_80gb_g8.txt",
    "nccl-debug": "nccl_debug/09_forced_socket_two_nodes_ifname_en_excerpt.txt",
    "dcgmi-diag": "dcgmi_diag/05_dcgm3.3.9_r3_hardware_diagnostic_eud_skip.txt",
    "hpl": "hpl/02_hpl_nvidia_a100_1gpu_passed.txt",
    "nvbandwidth": "nvbandwidth/01_v0.8_a100_h2d_sm_full.txt",
    "mlxlink": "mlxlink/01_bluefield3_100g_dac_m_c_prompted.txt",
    "mlxfwmanager": "mlxfwmanager/01_connectx6lx_update_required.txt",
    "ipmitool-lan": "ipmitool/01_hp_ilo_lan_print_dhcp.txt",
    "ipmitool-users": "ipmitool/05_supermicro_channel_getaccess_factory_admin.txt",
    "docker-info": "docker_info/01_docker29_nvidia_runtime_cdi_discovered.txt",
    "cdi-spec": "cdi_spec/01_moby_minimal_vendor_spec.txt",
    "scontrol-node": "scontrol_node/01_awslabs_idle_drain_gres_long_form.txt",
    "proc-cmdline": "proc_cmdline/02_fdio_csit_tx2_intel_iommu_on.txt",
    "grub-default": "grub_default/02_proxmox_intel_iommu_pt_acs_override.txt",
}
LITERALS: dict[str, str] = {
    "nvml": '{"driver": {"version": "570.133.20"}, "gpus": [{"index": 0, "name": "NVIDIA B200"}]}\n',
    "systemctl-show": SHOW_ACTIVE,
    "driver-version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
    "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n",
    "os-release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n',
    "uname": "Linux gpu01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64 x86_64 GNU/Linux\n",
}


def _verdicts(facts: NodeFacts, fields: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """(status, message) of every check that reads one of ``fields``."""
    specs = [s for s in checks.REGISTRY.values() if set(s.facts) & set(fields)]
    return {s.id: (r.status, r.message) for s in specs if (r := checks.run_check(s, facts, {}))}


def test_every_kind_has_a_sample_here() -> None:
    assert set(SAMPLES) | set(LITERALS) == set(parsers.KINDS)


@pytest.mark.parametrize("kind", sorted(parsers.KINDS))
def test_every_recognised_kind_reaches_a_check_through_a_snapshot(tmp_path: Path, kind: str) -> None:
    text = read_corpus(SAMPLES[kind]) if kind in SAMPLES else LITERALS[kind]
    assert parsers.parse_auto(text)[0] == kind
    for name in ("pasted output.txt", CONTRACT[kind]):
        directory = tmp_path / name.replace(" ", "_")
        directory.mkdir()
        (directory / name).write_text(text, encoding="utf-8")
        snap = snapshot.read(directory, recognise=snapshot_file)
        assert not snap.unused, snap.unused
        facts = facts_from_snapshot(snap)
        # The fields the file gave (ibv_devinfo's ports stand in for ibstat's: ib_ports comes from it too).
        fields = tuple(f for f, source in facts.sources.items() if source == CONTRACT[kind])
        assert fields, f"{kind} as {name} gave no facts"
        read, unread = _verdicts(facts, fields), _verdicts(NodeFacts(), fields)
        # Some check that reads what the kind fills says something else than it does with nothing captured.
        changed = {check for check in read if read[check] != unread[check]}
        assert changed, f"{kind} as {name}: no check reads it ({read})"
