"""pynvml, unchanged, against a simulated node: a plain script's ``import pynvml`` drives the node's state.

The subprocess tests start the interpreter the way an installed gpulab does: the wheel's
``gpulab_nvml_hook.pth`` is processed by ``site`` (``site.addsitedir`` on a folder holding a copy of it).
``GPULAB_TEST_PYNVML_PATH`` (set by ``bench/pynvml_versions.py``) puts another nvidia-ml-py release first on
the path, so the same tests run against the oldest and newest supported releases.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from assessor.parsers import nvidia_smi_mig
from assessor.sim import pynvml_hook
from assessor.sim.fixtures import fixture_names, load_fixture
from assessor.sim.state import load_state, save_state
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import ROOT

SCRIPT = ROOT / "tests" / "data" / "nvml_user_script.py"
PTH = ROOT / "assessor" / "sim" / "gpulab_nvml_hook.pth"
OTHER_PYNVML = os.environ.get("GPULAB_TEST_PYNVML_PATH")  # a folder holding another release's pynvml.py


def run_python(code: str, tmp_path: Path, state: Path | None, euid: int = 0) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh interpreter whose site folder holds the hook's .pth, as after install."""
    site_dir = tmp_path / "site"
    site_dir.mkdir(exist_ok=True)
    shutil.copy(PTH, site_dir / PTH.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_SIM")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (OTHER_PYNVML, str(ROOT)) if p)
    if state is not None:
        env["GPULAB_SIM_STATE"] = str(state)
        env["GPULAB_SIM_EUID"] = str(euid)
    boot = f"import site; site.addsitedir({str(site_dir)!r})\n"
    return subprocess.run(
        [sys.executable, "-c", boot + code], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def node(tmp_path: Path, fixture: str) -> Path:
    path = tmp_path / f"{fixture}.json"
    save_state(load_fixture(fixture), path)
    return path


def lgi(path: Path) -> dict[int, list[list[int]]]:
    """``nvidia-smi mig -lgi`` through the simulator, parsed: GPU -> [gi id, profile id, start, size]."""
    out = run_tool(["nvidia-smi", "mig", "-lgi"], Session(path=path)).stdout
    if out.startswith("No MIG-supported devices found."):
        return {}
    facts = nvidia_smi_mig.parse_lgi(out)
    table: dict[int, list[list[int]]] = {}
    for gi in facts.mig_instances or []:
        assert gi.profile_id is not None and gi.placement_start is not None and gi.placement_size is not None
        table.setdefault(gi.gpu, []).append([gi.gi_id, gi.profile_id, gi.placement_start, gi.placement_size])
    return {gpu: sorted(rows) for gpu, rows in table.items()}


@pytest.mark.parametrize("fixture", fixture_names())
def test_a_plain_pynvml_script_creates_and_destroys_mig_instances_and_nvidia_smi_agrees(
    fixture: str, tmp_path: Path
) -> None:
    path = node(tmp_path, fixture)
    code = f"import runpy; runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    proc = run_python(code, tmp_path, path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    state = load_state(path)
    assert [g["uuid"] for g in report["gpus"]] == [g.uuid for g in state.gpus]
    seen = lgi(path)
    for gpu, done in zip(state.gpus, report["gpus"], strict=True):
        if not gpu.mig_supported:
            assert done["mig"] == "not supported" and done["max_mig_devices"] == 0
            assert gpu.index not in seen
            continue
        assert done["mig"] == [1, 1] and gpu.mig_mode_current
        assert len(done["created"]) == 3 and done["mig_devices"] == 3
        assert done["destroy_busy"] == "in use"  # a GI with a compute instance cannot go
        assert done["destroyed"] not in [row[0] for row in done["left"]]
        assert seen[gpu.index] == done["left"]  # nvidia-smi sees exactly what pynvml left
        assert len(seen[gpu.index]) == 2


def test_without_the_variable_pynvml_is_untouched(tmp_path: Path) -> None:
    code = (
        "import sys, pynvml\n"
        "print(pynvml.nvmlInit.__module__, pynvml._nvmlGetFunctionPointer.__module__, 'assessor' in sys.modules)\n"
    )
    proc = run_python(code, tmp_path, state=None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["pynvml", "pynvml", "False"]


def test_the_hook_costs_nothing_until_pynvml_is_imported(tmp_path: Path) -> None:
    # The simulated tools are Python processes with GPULAB_SIM_STATE set: the hook is armed but loads neither
    # the mock nor anything slow (importlib.resources ~70 ms, typing ~25 ms) until pynvml is imported.
    names = ("assessor.sim.pynvml_hook", "assessor.sim.mock_nvml", "pynvml", "importlib.resources", "typing")
    code = f"import sys; print(*[name in sys.modules for name in {names!r}])"
    proc = run_python(code, tmp_path, node(tmp_path, "pcie-l40s"))
    assert proc.stdout.split() == ["True", "False", "False", "False", "False"], proc.stderr


def test_a_change_needs_root_as_on_a_real_node(tmp_path: Path) -> None:
    path = node(tmp_path, "hgx-h100")
    code = (
        "import pynvml\npynvml.nvmlInit()\nh = pynvml.nvmlDeviceGetHandleByIndex(0)\n"
        "try:\n    pynvml.nvmlDeviceSetMigMode(h, 1)\nexcept pynvml.NVMLError_NoPermission as e:\n    print(e)\n"
    )
    proc = run_python(code, tmp_path, path, euid=1000)
    assert proc.stdout.strip() == "Insufficient Permissions"
    assert not load_state(path).gpu(0).mig_mode_pending


@pytest.fixture
def patched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = node(tmp_path, "dgx-a100")
    monkeypatch.setenv("GPULAB_SIM_STATE", str(path))
    monkeypatch.setenv("GPULAB_SIM_EUID", "0")
    pynvml_hook.install()
    yield path
    pynvml_hook.uninstall()


def test_the_tools_and_pynvml_see_each_other_s_changes(patched: Path) -> None:
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(3)
        assert pynvml.nvmlDeviceGetMigMode(h) == [0, 0]
        assert run_tool(["nvidia-smi", "-i", "3", "-mig", "1"], Session(path=patched)).exit_code == 0
        assert pynvml.nvmlDeviceGetMigMode(h) == [1, 1]  # the shim's change, without a new nvmlInit
        pynvml.nvmlDeviceSetPersistenceMode(h, 0)
        pynvml.nvmlDeviceSetEccMode(h, 0)
        gi = pynvml.nvmlDeviceCreateGpuInstance(h, 9)
        query = ["nvidia-smi", "-i", "3", "--query-gpu=persistence_mode,ecc.mode.pending", "--format=csv,noheader"]
        q = run_tool(query, Session(path=patched))
        assert q.stdout.strip() == "Disabled, Disabled"
        info = pynvml.nvmlGpuInstanceGetInfo(gi)
        assert lgi(patched)[3] == [[info.id, 9, info.placement.start, 4]]
        # ECC applies at the next reset: the tool resets, pynvml sees the pending mode become current.
        assert pynvml.nvmlDeviceGetEccMode(h) == [1, 0]
        pynvml.nvmlGpuInstanceDestroy(gi)
        assert run_tool(["nvidia-smi", "-i", "3", "-r"], Session(path=patched)).exit_code == 0
        assert pynvml.nvmlDeviceGetEccMode(h) == [0, 0]
    finally:
        pynvml.nvmlShutdown()


def test_uninstall_gives_pynvml_its_own_functions_back(patched: Path) -> None:
    assert pynvml_hook.installed()
    pynvml_hook.uninstall()
    assert pynvml.nvmlInit.__module__ == "pynvml" and not pynvml_hook.installed()
    pynvml_hook.install()


def test_the_wheel_and_the_editable_wheel_carry_the_hook_at_their_root(tmp_path: Path) -> None:
    from hatchling.builders.wheel import WheelBuilder

    builder = WheelBuilder(str(ROOT))
    for version in ("standard", "editable"):
        (wheel,) = builder.build(directory=str(tmp_path / version), versions=[version])
        names = zipfile.ZipFile(wheel).namelist()
        assert "gpulab_nvml_hook.pth" in names, version
        line = zipfile.ZipFile(wheel).read("gpulab_nvml_hook.pth").decode()
        assert line.startswith("import os;") and line.count("\n") == 1  # site runs one line
        if version == "standard":  # the library is built from these on first use
            assert {"assessor/sim/nvml_lib/runtime.c", "assessor/sim/nvml_lib/exports.py"} <= set(names)


def test_a_mock_target_captured_in_a_shell_where_the_hook_is_armed_works_and_pynvml_is_patched(tmp_path: Path):
    # The README's practice flow exports GPULAB_SIM_STATE, then runs gpulab on mock:node.json: gpulab's own mock
    # imports pynvml while the hook waits for that mock, which once made a circular import crash every command.
    state = node(tmp_path, "hgx-h100")
    code = (
        "from assessor.targets import open_target\n"
        f"snap = open_target('mock:{state}').snapshot(timeout=60, active=())\n"
        "import json, pynvml\n"
        "print(len(json.loads(snap.sources['nvml.json'].text)['gpus']), hasattr(pynvml, '_gpulab_originals'))\n"
        "pynvml.nvmlInit()\n"
        "print(pynvml.nvmlDeviceGetCount())\n"
    )
    done = run_python(code, tmp_path, state)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["8", "True", "8"]
