"""A user's own test suite (not gpulab's): NVML health checks run against simulated nodes, no GPU."""

import pynvml
import pytest


def unhealthy_gpus():
    """The user's code under test: indices of GPUs with a pending or failed row remap."""
    pynvml.nvmlInit()
    try:
        bad = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            try:
                _, _, pending, failure = pynvml.nvmlDeviceGetRemappedRows(handle)
            except pynvml.NVMLError_NotSupported:
                pending = failure = 0
            if pending or failure:
                bad.append(i)
        return bad
    finally:
        pynvml.nvmlShutdown()


@pytest.mark.parametrize("sim_node", ["hgx-h100", "dgx-a100", "pcie-l40s"], indirect=True)
def test_a_healthy_node_has_no_unhealthy_gpu(sim_node):
    assert unhealthy_gpus() == []


@pytest.mark.sim_node("dgx-a100", faults=["row-remap-pending"])
def test_a_pending_row_remap_is_flagged(sim_node):
    assert len(unhealthy_gpus()) == 1


def test_mig_through_pynvml_shows_in_nvidia_smi(sim_node):
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    pynvml.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
    pynvml.nvmlDeviceCreateGpuInstance(handle, 9)  # 3g.40gb on an H100 80GB
    pynvml.nvmlShutdown()
    assert "MIG 3g.40gb" in sim_node.run("nvidia-smi", "mig", "-lgi").stdout
