"""The registry holds exactly the check catalogue of docs/CONTRACTS.md, each check fully documented."""

import re
from typing import Any

import pytest

from assessor.checks import REGISTRY, run_check
from assessor.checks import references as ref
from assessor.facts import (
    BmcLan,
    BmcUser,
    CdiDevice,
    CdiSpec,
    ContainerEngine,
    DcgmDiag,
    DcgmTest,
    DebPackage,
    DriverInfo,
    HplResult,
    HplRun,
    IbLink,
    KernelEvent,
    KernelModule,
    LinkPhy,
    NcclDebug,
    NcclDevice,
    NcclRow,
    NcclRun,
    NodeFacts,
    NvbandwidthRow,
    NvbandwidthRun,
    NvbandwidthTest,
    NvLink,
    PerftestRow,
    PerftestRun,
    Service,
    SlurmNode,
    Topology,
)
from tests.support.builders import H100_PCIE, gpu, ib_port
from tests.support.corpus import CORPUS

DESIGN = CORPUS.parents[2] / "docs" / "CONTRACTS.md"
PARAM_TYPES = {"int", "float", "str", "bool", "list", "dict"}


def catalogue_ids() -> list[str]:
    if not DESIGN.is_file():
        pytest.fail(f"CONTRACTS.md not found at {DESIGN}")
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("## The check catalogue", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [i for row in rows for i in re.findall(r"`([a-z]+\.[a-z_]+)`", row)]


def test_catalogue_has_the_42_checks_the_contracts_list():
    ids = catalogue_ids()
    assert len(ids) == 42
    assert "gpu.xid" in ids and "dcgm.diag" in ids


@pytest.mark.parametrize("check_id", catalogue_ids())
def test_every_catalogue_id_is_registered_and_documented(check_id):
    spec = REGISTRY[check_id]
    assert spec.title and spec.doc and spec.remedy
    assert spec.facts, "a check must say which facts it reads"
    for param in spec.params:
        assert set(param.type.split("|")) <= set(PARAM_TYPES)
        assert param.doc


def test_registry_has_no_ids_outside_the_catalogue():
    assert set(REGISTRY) == set(catalogue_ids())


def test_reference_families():
    assert ref.model_family("NVIDIA H100 80GB HBM3") == "H100"
    assert ref.model_family("NVIDIA A100-SXM4-40GB") == "A100"
    assert ref.model_family("NVIDIA GH200 480GB") is None
    assert ref.model_family("NVIDIA H800") is None
    assert ref.is_sxm("NVIDIA H100 80GB HBM3") and ref.is_sxm("NVIDIA H200")
    assert not ref.is_sxm("NVIDIA H100 NVL") and not ref.is_sxm("NVIDIA A100 80GB PCIe")


def sick_node() -> NodeFacts:
    """A node with something wrong in every area, to make each check say what to do."""
    bad_links = [NvLink(link=i, active=i > 2, errors={"replay": 1}) for i in range(18)]
    sick = [
        gpu(
            0,
            persistence_mode=False,
            ecc_mode_current=False,
            ecc_volatile_uncorrected=4,
            remap_pending=True,
            pcie_width_current=8,
            throttle_reasons=["hw_slowdown"],
            temperature_c=95,
            mig_mode_pending=True,
            fabric_state="In Progress",
            nvlinks=bad_links,
        ),
        gpu(1, name=H100_PCIE),
    ]
    return NodeFacts(
        driver=DriverInfo(version="535.129.03", kernel_module_version="535.104.05"),
        gpus=sick,
        mig_instances=[],
        topology=Topology(devices=["GPU0", "NIC0"], matrix={"GPU0": {"GPU0": "X", "NIC0": "SYS"}}),
        ib_ports=[
            ib_port("mlx5_0", state="Down", phys="Polling", rate=100, layer="Ethernet"),
            ib_port("mlx5_1", rate=200),
        ],
        ib_links=[IbLink("n1 mlx5_0", 1, peer="MF0;ib-leaf-02:MQM9700/U1", peer_port=1)],  # in rail 2's leaf
        modules=[KernelModule("nvidia")],
        kernel_cmdline="BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic root=/dev/md0 ro quiet intel_iommu=on",
        bmc_lan=BmcLan(ip_source="dhcp", ip="192.168.1.57", netmask="255.255.255.0", gateway="192.168.1.1"),
        bmc_users=[BmcUser(2, "ADMIN", "ADMINISTRATOR", enabled=True)],
        services=[Service("nvidia-persistenced.service", "loaded", "failed", "failed")],
        kernel_events=[KernelEvent(kind="xid", code=79, bus_id="0000:18:00", message="GPU has fallen off the bus")],
        slurm_nodes=[SlurmNode("n1", "IDLE+DRAIN", reason="healthcheck: 1 of 2 GPUs visible", gres="gpu:1")],
        nccl=NcclRun(
            devices=[NcclDevice(0, host="a"), NcclDevice(1, host="b")],
            rows=[NcclRow(8, oop_busbw=1.0, oop_wrong=1)],
            debug=NcclDebug(network="Socket", ib_no_device=True, warnings=["NCCL WARN oops"]),
        ),
        ib_write_bw=PerftestRun(rows=[PerftestRow(8388608, bw_average=10.0)]),
        link_phy=[LinkPhy(device="mlx5_1", port=1, effective_ber=3e-11, effective_errors=72, status_opcode=15)],
        dcgm_diag=DcgmDiag(tests=[DcgmTest("Hardware", "GPU Memory", "Fail")]),
        hpl=HplRun(results=[HplResult("WC0", 100000, 1024, 1, 2, 99.0, 20000.0, 10000.0, 2.5e3, "FAILED")]),
        nvbandwidth=NvbandwidthRun(
            tests=[NvbandwidthTest("host_to_device_memcpy_ce", columns=[0, 1], rows=[NvbandwidthRow(0, [26.3, 52.6])])]
        ),
        container_engine=ContainerEngine(server_version="28.3.3", runtimes=["io.containerd.runc.v2", "runc"]),
        cdi_spec=CdiSpec(kind="nvidia.com/gpu", devices=[CdiDevice("nvidia.com/gpu=0", ["/dev/nvidia0"])]),
        packages=[DebPackage("nvidia-dkms-535-server", "ii"), DebPackage("nvidia-kernel-source-525-server", "ii")],
        os_release={"ID": "ubuntu", "VERSION_ID": "20.04", "PRETTY_NAME": "Ubuntu 20.04.6 LTS"},
        uname="Linux n1 5.4.0-150-generic #167-Ubuntu SMP Mon May 15 17:35:05 UTC 2023 x86_64 x86_64 x86_64 GNU/Linux",
    )


PARAMS: dict[str, dict[str, Any]] = {
    "gpu.count": {"expected": 8},
    "gpu.model": {"expected": "A100"},
    "driver.version": {"min": "550.0"},
    "mig.layout": {"layout": ["7g.80gb"]},
    "ib.rate": {"min_gbps": 400},
    "ib.write_bw": {"min_gbps": 380},
    "nccl.busbw": {"min_gbps": 400},
    "ib.ports_active": {"min_ports": 8},
    "ib.cabling": {"plan": [{"hca": "mlx5_0", "switch": "ib-leaf-01", "port": 1}]},
    "node.os": {"distros": ["ubuntu 22.04", "ubuntu 24.04"], "min_kernel": "5.15"},
    "hpl.gflops": {"min_tflops": 40},
    "nvbandwidth.host_device": {"min_gbps": 48},
    "firmware.baseline": {"hca": "28.41.1000"},
}


@pytest.mark.parametrize("check_id", sorted(REGISTRY))
def test_every_non_pass_result_has_a_hint(check_id):
    r = run_check(REGISTRY[check_id], sick_node(), PARAMS.get(check_id, {}))
    assert r.status in ("fail", "warn", "error"), (r.status, r.message)
    assert r.hint, r.message
    assert "internal error" not in r.message
