"""ib.peermem (GPUDirect RDMA): DMA-BUF, as NVIDIA's GPU Operator docs recommend, or nvidia_peermem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assessor.assess.pipeline import run_profile
from assessor.assess.profiles import load
from assessor.facts import DriverInfo, KernelModule, NcclDebug, NcclRun, NodeFacts, Service
from assessor.parsers.assemble import facts_from_snapshot
from assessor.parsers.nccl_debug import parse_debug_lines
from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from assessor.targets import open_target
from assessor.targets.mock import MockTarget
from tests.support.builders import node, run

OPEN = DriverInfo(version="570.124.06", open_kernel_module=True)
PROPRIETARY = DriverInfo(version="535.129.03", open_kernel_module=False)
UNAME_68 = (
    "Linux b200-01 6.8.0-57-generic #59-Ubuntu SMP PREEMPT_DYNAMIC Sat Mar 15 2025 x86_64 x86_64 x86_64 GNU/Linux"
)
UNAME_515 = (
    "Linux h100-01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64 x86_64 x86_64 GNU/Linux"
)
UNAME_54 = "Linux old-01 5.4.0-186-generic #206-Ubuntu SMP Fri Apr 26 12:31:10 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux"
BASE_MODULES = [KernelModule("nvidia"), KernelModule("mlx5_ib"), KernelModule("ib_uverbs")]
INBOX = [Service("nvidia-persistenced.service", load_state="loaded", active_state="active")]
MOFED = [*INBOX, Service("openibd.service", load_state="loaded", active_state="active", sub_state="exited")]

# NCCL 2.2x INFO lines, in net_ib.cc's wording (the quote before the HCA name is never closed).
DMABUF_LOG = [
    "b200-01:4242:4262 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eno1:10.0.0.7<0>",
    "b200-01:4242:4262 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0",
    "b200-01:4242:4262 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 1 'mlx5_1",
]


def dmabuf_node(**fields: Any) -> NodeFacts:
    base: dict[str, Any] = {"modules": BASE_MODULES, "driver": OPEN, "uname": UNAME_68, "services": INBOX}
    return node(**{**base, **fields})


def nccl(lines: list[str]) -> NcclRun:
    return NcclRun(debug=parse_debug_lines(lines), tests_output=False)


# ---- facts ------------------------------------------------------------------------------------------


def test_nccl_debug_reads_which_gpudirect_path_nccl_registered() -> None:
    debug = parse_debug_lines(DMABUF_LOG)
    assert debug.gdr_paths == ["DMABUF"] and debug.ib_devices == ["mlx5_0:1/IB", "mlx5_1:1/IB"]
    both = parse_debug_lines(
        [
            "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 0 'mlx5_bond_0",
            "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_bond_0",
            "h:1:2 [0] NCCL INFO NCCL_DMABUF_ENABLE set by environment to 0.",
        ]
    )
    assert both.gdr_paths == ["nvidia-peermem", "DMABUF"] and both.dmabuf_enable == "0"
    assert NcclDebug().gdr_paths == [] and NcclDebug().dmabuf_enable is None


def test_the_open_kernel_module_flag_comes_from_proc_driver_nvidia_version() -> None:
    from assessor.parsers.system import parse_driver_version

    open_line = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.172.08  Release Build  (dvs-builder@x)"
    closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023"
    assert parse_driver_version(open_line).driver == DriverInfo(
        version="570.172.08", kernel_module=open_line, kernel_module_version="570.172.08", open_kernel_module=True
    )
    driver = parse_driver_version(closed).driver
    assert driver is not None and driver.open_kernel_module is False


# ---- the check ----------------------------------------------------------------------------------------


def test_a_dma_buf_node_passes_without_nvidia_peermem_and_says_which_path() -> None:
    r = run("ib.peermem", dmabuf_node())
    assert r.status == "pass" and r.observed == "DMA-BUF"
    assert "DMA-BUF" in r.message and "6.8.0-57-generic" in r.message


def test_nccl_saying_dmabuf_is_enough_whatever_else_was_captured() -> None:
    r = run("ib.peermem", node(modules=BASE_MODULES, nccl=nccl(DMABUF_LOG)))
    assert (r.status, r.observed) == ("pass", "DMA-BUF")
    assert "GPU Direct RDMA (DMABUF) enabled" in r.message
    assert run("ib.peermem", node(nccl=nccl(DMABUF_LOG))).status == "pass"  # no lsmod at all


def test_an_nvidia_peermem_node_passes_and_says_which_path() -> None:
    facts = node(modules=[*BASE_MODULES, KernelModule("nvidia_peermem")], driver=PROPRIETARY, uname=UNAME_515)
    r = run("ib.peermem", facts)
    assert (r.status, r.observed) == ("pass", "nvidia_peermem")
    assert "through nvidia_peermem" in r.message and "NVIDIA recommends" not in r.message
    both = run("ib.peermem", dmabuf_node(modules=[*BASE_MODULES, KernelModule("nvidia_peermem")]))
    assert both.status == "pass" and "DMA-BUF is available too" in both.message


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"driver": PROPRIETARY}, "proprietary kernel module"),
        ({"uname": UNAME_54}, "older than 5.12"),
        ({"driver": PROPRIETARY, "uname": UNAME_515}, "proprietary kernel module"),
        ({"driver": None}, "kernel module flavour unknown"),
        ({"services": MOFED}, "MLNX_OFED"),
    ],
)
def test_a_node_with_neither_path_fails_and_says_what_is_missing(fields: dict[str, Any], why: str) -> None:
    r = run("ib.peermem", dmabuf_node(**fields))
    assert r.status == "fail" and r.observed is None
    assert why in r.message and "modprobe nvidia_peermem" in str(r.hint)


def test_an_ofed_node_with_open_modules_passes_once_nccl_confirms_dmabuf() -> None:
    assert run("ib.peermem", dmabuf_node(services=MOFED, nccl=nccl(DMABUF_LOG))).status == "pass"


def test_nccl_dmabuf_enable_0_turns_the_dma_buf_path_off() -> None:
    off = nccl([*DMABUF_LOG[:1], "h:1:2 [0] NCCL INFO NCCL_DMABUF_ENABLE set by environment to 0."])
    r = run("ib.peermem", dmabuf_node(nccl=off))
    assert r.status == "fail" and "NCCL_DMABUF_ENABLE=0" in r.message


def test_without_modules_or_any_dma_buf_evidence_the_check_skips() -> None:
    assert run("ib.peermem", node(driver=PROPRIETARY)).status == "skip"


# ---- end to end on the simulator ---------------------------------------------------------------------


def _peermem(spec: str, profile: str, nccl_log: bool = False) -> tuple[str, Any, str]:
    target = open_target(spec)
    assert isinstance(target, MockTarget)
    active: tuple[str, ...] = ()
    if nccl_log:
        target.env = {"NCCL_DEBUG": "INFO"}
        active = ("nccl",)
    results = run_profile(facts_from_snapshot(target.snapshot(timeout=60, active=active)), load(profile))
    (r,) = [r for r in results if r.check == "ib.peermem"]
    return r.status, r.observed, r.message


def test_the_simulated_b200_passes_through_dma_buf() -> None:
    status, observed, message = _peermem("mock:hgx-b200", "hgx-b200")
    assert (status, observed) == ("pass", "DMA-BUF"), message


def test_the_simulated_b200_passes_through_dma_buf_by_nccls_own_word() -> None:
    status, observed, message = _peermem("mock:hgx-b200", "hgx-b200", nccl_log=True)
    assert (status, observed) == ("pass", "DMA-BUF") and "NCCL logs" in message


def test_the_simulated_h100_passes_through_nvidia_peermem() -> None:
    status, observed, message = _peermem("mock:hgx-h100", "hgx-h100")
    assert (status, observed) == ("pass", "nvidia_peermem"), message


def test_the_simulated_h100_without_peermem_has_no_path_and_fails(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")  # proprietary kernel module: no DMA-BUF
    FAULTS["peermem-unloaded"].apply(state)
    save_state(state, tmp_path / "node.json")
    status, observed, message = _peermem(f"mock:{tmp_path / 'node.json'}", "hgx-h100", nccl_log=True)
    assert (status, observed) == ("fail", None), message
    assert "proprietary kernel module" in message
