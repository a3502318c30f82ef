"""The simulated lspci: the node's GPUs, NVSwitches and HCAs as pciutils lists them, filtered as it filters."""

from __future__ import annotations

import re

import pytest

from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool

LINE = re.compile(r"^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] (3D controller|Bridge|Infiniband controller|Ethernet controller): ")


def lspci(state: NodeState, *args: str) -> ToolResult:
    return run_tool(["lspci", *args], Session(state=state))


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")


def test_lspci_vendor_filter_lists_the_gpus_and_nvswitches_and_no_hca(h100: NodeState) -> None:
    lines = lspci(h100, "-d", "10de:").stdout.splitlines()
    gpus = [line for line in lines if "3D controller" in line]
    assert len(gpus) == 8 and len(lines) == 8 + len(h100.nvswitches)
    assert "18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)" in lines
    assert not any("Mellanox" in line for line in lines)
    assert all(LINE.match(line) for line in lines)


def test_lspci_no_longer_lists_a_gpu_that_fell_off_the_bus(h100: NodeState) -> None:
    # gpulab's remedy: compare `lspci -d 10de:` with `nvidia-smi -L`.
    h100.gpus[5].lost = True
    gpus = [line for line in lspci(h100, "-d", "10de:").stdout.splitlines() if "3D controller" in line]
    assert len(gpus) == 7 and not any(line.startswith("ab:00.0") for line in gpus)


def test_plain_lspci_lists_every_device_in_bus_order(h100: NodeState) -> None:
    lines = lspci(h100).stdout.splitlines()
    assert len(lines) == 8 + len(h100.nvswitches) + len(h100.ib_hcas)
    buses = [int(line[:2], 16) for line in lines]
    assert buses == sorted(buses)
    assert "1a:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]" in lines


def test_lspci_vv_shows_a_degraded_link_as_downgraded(h100: NodeState) -> None:
    h100.gpus[2].pcie_width_current = 8
    out = lspci(h100, "-vv", "-s", "3a:00.0").stdout.splitlines()
    assert out[0].startswith("3a:00.0 3D controller")
    assert "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported" in out
    assert "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)" in out  # pciutils 3.6+ marks
    healthy = lspci(h100, "-vv", "-s", "18:00.0").stdout
    assert "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n" in healthy


def test_lspci_numeric_ids_and_refusals(h100: NodeState) -> None:
    assert lspci(h100, "-nn", "-s", "18:00.0").stdout == (
        "18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
    )
    assert lspci(h100, "-n", "-d", "10de:2330", "-s", "2a:").stdout == "2a:00.0 0302: 10de:2330 (rev a1)\n"
    bad = lspci(h100, "-Z")
    assert bad.exit_code == 2 and "invalid option" in bad.stderr
