"""Facts for check tests, built directly (not through the parsers) from real values.

GPU names, bus ids and HCA names come from the corpus: the 8x H100 SXM `nvidia-smi` of
corpus/nvml/nvidia_smi_default_8xH100_SXM.txt (driver 565.57.01), the DGX A100 of
corpus/nvidia_smi_topo/01_dgx_a100_40gb_nv12_12nics_pxb.txt, the ibstat outputs of
corpus/ibstat/.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assessor.checks import REGISTRY, run_check
from assessor.checks.result import Result
from assessor.facts import Gpu, IbPort, NodeFacts, NvLink

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
H200 = "NVIDIA H200"
L40S = "NVIDIA L40S"
H100_PCIE = "NVIDIA H100 PCIe"

H100_BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]  # corpus 8x H100 SXM
A100_BUS = ["07", "0F", "47", "4E", "87", "90", "B7", "BD"]  # DGX A100


def gpu(index: int, name: str | None = H100, bus: str | None = None, links: int | None = None, **fields: Any) -> Gpu:
    """A healthy GPU of model ``name``: ECC on and clean, persistence on, full PCIe link, cool."""
    a100 = "A100" in (name or "")
    gen = 4 if a100 else 5
    bus = bus or (A100_BUS if a100 else H100_BUS)[index % 8]
    n_links = links if links is not None else (12 if a100 else 18)
    base = Gpu(
        index=index,
        name=name,
        bus_id=f"00000000:{bus}:00.0",
        persistence_mode=True,
        ecc_mode_current=True,
        ecc_mode_pending=True,
        ecc_volatile_corrected=0,
        ecc_volatile_uncorrected=0,
        ecc_aggregate_corrected=0,
        ecc_aggregate_uncorrected=0,
        remap_correctable=0,
        remap_uncorrectable=0,
        remap_pending=False,
        remap_failure=False,
        pcie_gen_current=gen,
        pcie_gen_max=gen,
        pcie_width_current=16,
        pcie_width_max=16,
        temperature_c=30,
        temperature_slowdown_c=87,
        throttle_reasons=["gpu_idle"],
        mig_mode_current=False,
        mig_mode_pending=False,
        fabric_state="Completed",
        fabric_status="Success",
        nvlinks=[NvLink(link=i, active=True, speed_gbps=26.562) for i in range(n_links)],
    )
    return replace(base, **fields)


def gpus(n: int = 8, name: str | None = H100, **fields: Any) -> list[Gpu]:
    return [gpu(i, name, **fields) for i in range(n)]


def node(**fields: Any) -> NodeFacts:
    return NodeFacts(host="node01", **fields)


def ib_port(
    ca: str,
    state: str | None = "Active",
    phys: str = "LinkUp",
    rate: float = 400,
    layer: str | None = "InfiniBand",
    port: int = 1,
) -> IbPort:
    return IbPort(
        ca=ca,
        port=port,
        state=state,
        physical_state=phys,
        rate_gbps=rate,
        link_layer=layer,
        ca_type="MT4129",
        firmware="28.39.1002",
    )


def ndr_ports(n: int = 8) -> list[IbPort]:
    """The 8 NDR compute ports of corpus/ibstat/01_h100_cx7_ndr400_ib_all_active.txt."""
    return [ib_port(f"mlx5_{i}") for i in range(n)]


def run(check_id: str, facts: NodeFacts, **params: Any) -> Result:
    return run_check(REGISTRY[check_id], facts, params)
