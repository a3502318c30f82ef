"""The cluster test and verification labs (issue #24): each one's evidence agrees across the node's tools.

The walks (:mod:`tests.labs.walks`) prove each lab passes its reference and refuses a wrong fix. Here, per lab,
what a candidate reads on the node started for it tells one story, for every variant a candidate can draw: the
GPU a long DCGM diagnostic fails is the one nvidia-smi shows throttling; an uncorrectable memory error is the
same GPU, the same process and the same pending remap in the kernel log, nvidia-smi, NVML's CSV and DCGM; a
slow rail is slow in ib_write_bw and in ibstat alike. And the pieces the labs added to the framework: a
scenario may set a node up with a condition (a job holding a GPU), and ``ecc-uncorrectable`` with a ``pid``
writes the driver's whole sequence for a job that hit the error.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs.loader import default_root, load_catalogue, load_lab, with_variant
from assessor.labs.model import Lab
from assessor.parsers import parse
from assessor.pci import bus_key
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.dcgmi_status import assert_tool_status

LABS = {lab.id: lab for lab in load_catalogue(default_root()).labs}
VERIFY = ("health-304", "health-305", "health-404", "health-405", "nccl-303", "nccl-403", "ib-302", "ib-403")


def node_of(lab: Lab) -> NodeState:
    """A fresh node of the lab's fixture with the lab's scenario faults applied, in memory."""
    assert lab.fixture is not None
    state = load_fixture(lab.fixture, host="lab-node", in_use=True)
    for step in lab.faults:
        faults.get(step.fault).apply(state, **step.options)
    return state


def tool(state: NodeState, *argv: str) -> ToolResult:
    result = run_tool(list(argv), Session(state=state))
    assert_tool_status(argv, result)
    return result


def variants(lab: Lab) -> list[Lab]:
    """The lab built with every combination of its variants' values."""
    names = sorted(lab.variants)
    return [
        with_variant(lab, dict(zip(names, values, strict=True)))
        for values in itertools.product(*(lab.variants[n] for n in names))
    ]


def test_the_verification_labs_are_in_the_catalogue_at_levels_3_and_4() -> None:
    assert set(VERIFY) <= set(LABS)
    assert {LABS[i].level for i in VERIFY} == {3, 4}
    assert all("NCP-AII: Cluster Test and Verification" in LABS[i].exam_domains for i in VERIFY)
    assert all(LABS[i].runs_on == ("simulator",) for i in VERIFY)


# ---- health-304: the GPU the long diagnostic fails is the one that throttles -----------------------------


@pytest.mark.parametrize("lab", variants(LABS["health-304"]), ids=lambda lab: f"gpu{lab.variant['gpu']}")
def test_health_304_dcgm_4_fails_the_throttling_gpu_and_only_it(lab: Lab) -> None:
    gpu = lab.variant["gpu"]
    state = node_of(lab)
    diag = tool(state, "dcgmi", "diag", "-r", "3").stdout
    assert "| DCGM Version              | 4.2.3" in diag  # DCGM 4's layout: plugins, a GPUn line per GPU
    power = diag.split("| targeted_power")[1].split("| memory_bandwidth")[0]
    assert power.split("|")[1].strip() == "Fail"
    assert [line.split("GPU")[1].split(":")[0] for line in power.splitlines() if ": Fail" in line] == [str(gpu)]
    assert diag.count(": Fail") == 1  # every other plugin passes every GPU
    reasons = tool(state, "nvidia-smi", "-q", "-d", "PERFORMANCE", "-i", str(gpu)).stdout
    assert "HW Thermal Slowdown           : Active" in reasons
    hot = parse("nvidia-smi-xml", tool(state, "nvidia-smi", "-q", "-x").stdout).gpus or []
    over = [
        g.index
        for g in hot
        if g.temperature_c is not None
        and g.temperature_slowdown_c is not None
        and g.temperature_c > g.temperature_slowdown_c
    ]
    assert over == [gpu]


# ---- health-305: the GPU without NVLinks is the one with the Xid ----------------------------------------


@pytest.mark.parametrize("lab", variants(LABS["health-305"]), ids=lambda lab: f"gpu{lab.variant['gpu']}")
def test_health_305_the_xid_the_links_and_the_matrix_name_one_gpu(lab: Lab) -> None:
    gpu = lab.variant["gpu"]
    state = node_of(lab)
    events = [e for e in parse("dmesg", tool(state, "dmesg").stdout).kernel_events or [] if e.kind == "xid"]
    assert [(e.code, bus_key(e.bus_id)) for e in events] == [(74, bus_key(state.gpu(gpu).bus_id))]
    links = tool(state, "nvidia-smi", "nvlink", "-s", "-i", str(gpu)).stdout
    assert "Unable to retrieve NVLink information as all links are inActive" in links
    topology = parse("nvidia-smi-topo", tool(state, "nvidia-smi", "topo", "-m").stdout).topology
    assert topology is not None
    for a, b in itertools.permutations(range(8), 2):
        cell = topology.matrix[f"GPU{a}"][f"GPU{b}"].strip()
        assert (cell == "NV18") is (gpu not in (a, b)), (a, b, cell)


# ---- health-404: one error, one GPU, one process, everywhere --------------------------------------------


@pytest.mark.parametrize("lab", variants(LABS["health-404"]), ids=lambda lab: f"gpu{lab.variant['gpu']}")
def test_health_404_the_memory_error_tells_one_story_in_every_tool(lab: Lab) -> None:
    gpu = lab.variant["gpu"]
    state = node_of(lab)
    bus = bus_key(state.gpu(gpu).bus_id)
    log = tool(state, "dmesg").stdout
    xids = [e for e in parse("dmesg", log).kernel_events or [] if e.kind == "xid"]
    # the driver's order: the double-bit error, the row marked for remapping, the error contained to the job
    assert [(e.code, bus_key(e.bus_id)) for e in xids] == [(48, bus), (63, bus), (94, bus)]
    assert "48, pid=28417, name=python3," in log and "94, pid=28417, name=python3, Contained:" in log
    apps = tool(state, "nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,process_name", "--format=csv,noheader").stdout
    assert apps.strip() == f"{state.gpu(gpu).bus_id}, 28417, python3"  # the job that hit it still holds the GPU
    remap = tool(state, "nvidia-smi", "-q", "-d", "ECC,ROW_REMAPPER", "-i", str(gpu)).stdout
    assert "Pending                           : Yes" in remap
    assert remap.count("DRAM Uncorrectable            : 1") == 2  # volatile and aggregate
    diag = parse("dcgmi-diag", tool(state, "dcgmi", "diag", "-r", "2").stdout).dcgm_diag
    assert diag is not None
    failed = {t.name for t in diag.tests if t.result.startswith("Fail")}
    assert failed == {"Page Retirement/Row Remap", "GPU Memory"}
    refused = run_tool(["nvidia-smi", "-r", "-i", str(gpu)], Session(state=state))
    assert refused.exit_code != 0 and "In use by another client" in refused.stdout + refused.stderr


def test_ecc_uncorrectable_without_a_pid_still_only_counts() -> None:
    state = load_fixture("hgx-h100")
    faults.get("ecc-uncorrectable").apply(state, gpu=3, count=2)
    assert state.gpu(3).ecc.volatile_uncorrected == 2
    assert state.gpu(3).remapped_rows is not None and not state.gpu(3).remapped_rows.pending
    assert not [line for line in state.kernel_log if "Xid" in line]


def test_ecc_uncorrectable_in_a_job_is_reverted_by_a_reset_of_its_gpu() -> None:
    state = load_fixture("dgx-a100")
    fault = faults.get("ecc-uncorrectable")
    fault.apply(state, gpu=1, count=1, pid=4242)
    rows = state.gpu(1).remapped_rows
    assert rows is not None and rows.pending and rows.uncorrectable == 1
    fault.revert(state, gpu=1, count=1, pid=4242)
    assert not rows.pending and state.gpu(1).ecc.volatile_uncorrected == 0
    assert state.gpu(1).ecc.aggregate_uncorrected == 1  # the lifetime count is the GPU's history


def test_ecc_uncorrectable_pid_must_be_a_number() -> None:
    with pytest.raises(InputError, match="option pid must be a number"):
        faults.get("ecc-uncorrectable").apply(load_fixture("hgx-h100"), gpu=0, pid="python3")


# ---- health-405, ib-302, ib-403: a narrow GPU link and a slow rail show in every tool that reads them ----


@pytest.mark.parametrize(
    "lab", variants(LABS["health-405"]), ids=lambda lab: f"gpu{lab.variant['gpu']}-{lab.variant['ca']}"
)
def test_health_405_the_narrow_link_and_the_slow_port_are_the_variants(lab: Lab) -> None:
    gpu, ca = lab.variant["gpu"], lab.variant["ca"]
    state = node_of(lab)
    widths = tool(state, "nvidia-smi", "--query-gpu=index,pcie.link.width.current", "--format=csv,noheader").stdout
    assert [line.split(", ")[0] for line in widths.splitlines() if line.endswith(", 8")] == [str(gpu)]
    address = state.gpu(gpu).bus_id[-12:].lower()
    assert "Width x8 (downgraded)" in tool(state, "lspci", "-vv", "-s", address).stdout
    rates = {p.ca: p.rate_gbps for p in parse("ibstat", tool(state, "ibstat").stdout).ib_ports or []}
    assert [name for name, rate in rates.items() if rate != 400] == [ca] and rates[ca] == 200
    assert all(not g.persistence_mode for g in state.gpus)


def _write_bw(state: NodeState, ca: str, *cuda: str) -> float:
    run = parse(
        "ib-write-bw",
        tool(state, "ib_write_bw", "-d", ca, "--report_gbits", "-s", "8388608", *cuda, "gpu-node-02").stdout,
    ).ib_write_bw
    assert run is not None
    average = run.average_gbits()
    assert average is not None
    return average


@pytest.mark.parametrize("lab_id", ["ib-302", "ib-403"])
def test_the_slow_rail_is_half_the_others_in_ib_write_bw_for_every_variant(lab_id: str) -> None:
    for lab in variants(LABS[lab_id]):
        slow = lab.variant["ca"]
        state = node_of(lab)
        bandwidth = {f"mlx5_{i}": _write_bw(state, f"mlx5_{i}") for i in range(8)}
        assert min(bandwidth, key=bandwidth.__getitem__) == slow
        assert bandwidth[slow] < 200 < 380 < min(v for k, v in bandwidth.items() if k != slow)


def test_ib_302_gpudirect_on_the_b200_goes_through_dma_buf_not_nvidia_peermem() -> None:
    state = node_of(LABS["ib-302"])
    assert _write_bw(state, "mlx5_0", "--use_cuda", "0", "--use_cuda_dmabuf") > 380
    legacy = run_tool(["ib_write_bw", "-d", "mlx5_0", "--use_cuda", "0", "gpu-node-02"], Session(state=state))
    assert legacy.exit_code != 0 and "Couldn't allocate MR" in legacy.stderr


def test_ib_403_never_loses_the_rail_that_trained_slow() -> None:
    for lab in variants(LABS["ib-403"]):
        conf = lab.files["/etc/nccl.conf"]
        listed = next(line for line in conf.splitlines() if line.startswith("NCCL_IB_HCA=")).split("=", 1)[1].split(",")
        assert len(listed) == 7 and lab.variant["ca"] in listed


# ---- a scenario may start from a condition ---------------------------------------------------------------


def test_a_scenario_may_name_a_condition_but_not_an_unknown_fault(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "health" / "health-404"
    shutil.copytree(LABS["health-404"].path, folder)
    assert [step.fault for step in load_lab(folder).faults] == ["ecc-uncorrectable", "gpu-job"]
    text = (folder / "lab.yaml").read_text(encoding="utf-8")
    (folder / "lab.yaml").write_text(text.replace("fault: gpu-job", "fault: gpu-jobs"), encoding="utf-8")
    with pytest.raises(InputError, match=r"lab\.yaml:\d+: unknown fault 'gpu-jobs'.*scenario\.faults\[1\]\.fault"):
        load_lab(folder)
