"""The pytest plugin: a user's suite runs its pynvml code on simulated nodes; gpulab's own tests use it too."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pynvml
import pytest
from pynvml import nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetTotalEccErrors, nvmlInit

from assessor.sim import pynvml_hook
from tests.support.corpus import ROOT

if TYPE_CHECKING:  # imported by pytest as a plugin below; importing it here first would skip its assert rewriting
    from assessor.sim.pytest_plugin import SimNode

# Installed gpulab registers the plugin under this same name (the pytest11 entry point), so this line is a no-op
# there and loads it in a checkout that was not reinstalled since the entry point was added.
pytest_plugins = ["assessor.sim.pytest_plugin"]

USER_SUITE = ROOT / "tests" / "data" / "plugin_user_suite"


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"assessor.sim.pytest_plugin": "assessor.sim.pytest_plugin"}


def test_a_user_suite_runs_its_nvml_code_on_simulated_nodes(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_SIM")}
    env["PYTHONPATH"] = str(ROOT)
    # -p loads the plugin as the entry point does once gpulab is installed.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "assessor.sim.pytest_plugin",
            "--rootdir",
            str(tmp_path),
            str(USER_SUITE / "user_health_checks.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "5 passed" in proc.stdout


@pytest.mark.sim_node("dgx-a100", faults=["ecc-uncorrectable"])
def test_the_marker_builds_the_named_fixture_with_its_faults(sim_node: SimNode) -> None:
    assert os.environ["GPULAB_SIM_STATE"] == str(sim_node.path)
    pynvml.nvmlInit()
    try:
        counts = [
            pynvml.nvmlDeviceGetTotalEccErrors(
                pynvml.nvmlDeviceGetHandleByIndex(i),
                pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                pynvml.NVML_VOLATILE_ECC,
            )
            for i in range(pynvml.nvmlDeviceGetCount())
        ]
    finally:
        pynvml.nvmlShutdown()
    # pynvml's own functions, answered by gpulab's library in place of the driver's
    assert pynvml.nvmlDeviceGetName.__module__ == "pynvml" and pynvml_hook.installed()
    assert sum(1 for c in counts if c) == 1 and len(counts) == 8


@pytest.mark.sim_node("hgx-h100", faults=[{"fault": "ecc-uncorrectable", "gpu": 3, "count": 5}])
def test_the_marker_takes_faults_with_options_and_names_bound_at_import_answer(sim_node: SimNode) -> None:
    # bound at this module's import, before the fixture pointed NVML at the node
    nvmlInit()
    try:
        counts = [
            nvmlDeviceGetTotalEccErrors(
                nvmlDeviceGetHandleByIndex(i), pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
            )
            for i in range(nvmlDeviceGetCount())
        ]
    finally:
        pynvml.nvmlShutdown()
    assert counts == [0, 0, 0, 5, 0, 0, 0, 0]


def test_a_fault_with_an_unknown_option_is_a_usage_error(make_sim_node) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pytest.UsageError, match="ecc-uncorrectable"):
        make_sim_node("hgx-h100", faults=[{"fault": "ecc-uncorrectable", "colour": "red"}])


@pytest.mark.parametrize("sim_node", ["pcie-l40s", "hgx-h200"], indirect=True)
def test_an_indirect_parameter_chooses_the_node_and_the_shims_are_on_path(sim_node: SimNode) -> None:
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True).stdout
    name = "L40S" if sim_node.source == "pcie-l40s" else "H200"
    assert out.count(name) == len(sim_node.state().gpus) > 0


def test_a_state_file_is_copied_so_the_test_cannot_change_the_original(make_sim_node, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = make_sim_node("hgx-h100")
    assert first.run("nvidia-smi", "-i", "0", "-mig", "1").exit_code == 0
    second = make_sim_node(first.path)
    assert second.path != first.path and second.state().gpu(0).mig_mode_current
    second.run("nvidia-smi", "-i", "0", "-mig", "0")
    assert first.state().gpu(0).mig_mode_current and not second.state().gpu(0).mig_mode_current


def test_a_non_root_node_refuses_changes_through_pynvml(make_sim_node) -> None:  # type: ignore[no-untyped-def]
    make_sim_node("hgx-h100", root=False)
    pynvml.nvmlInit()
    try:
        with pytest.raises(pynvml.NVMLError_NoPermission):
            pynvml.nvmlDeviceSetPersistenceMode(pynvml.nvmlDeviceGetHandleByIndex(0), 0)
    finally:
        pynvml.nvmlShutdown()


def test_after_the_test_pynvml_is_itself_again() -> None:
    assert not pynvml_hook.installed() or os.environ.get("GPULAB_SIM_STATE")
