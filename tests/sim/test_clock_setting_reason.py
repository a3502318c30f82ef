"""The "Applications Clocks Setting" clock-event reason follows the clocks a user set with nvidia-smi (health-202):
on while a lock or lowered applications clocks hold a GPU below its default, off once they are undone."""

from __future__ import annotations

import pytest

from assessor.checks import REGISTRY, run_check
from assessor.parsers import nvidia_smi_xml
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool
from assessor.sim.tools.boot import reboot

REASON = "applications_clocks_setting"
FAIL_ON = [REASON, "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"]


def smi(state: NodeState, line: str) -> str:
    out = run_tool(["nvidia-smi", *line.split()], Session(state=state))
    assert out.exit_code == 0, out.stderr or out.stdout
    return out.stdout


def held(state: NodeState) -> list[int]:
    return [g.index for g in state.gpus if REASON in g.throttle_reasons]


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")


def test_a_lock_below_the_maximum_holds_the_gpu_and_releasing_it_clears_the_reason(h100: NodeState) -> None:
    assert held(h100) == []
    smi(h100, "-i 3,6 -lgc 1200,1200")
    assert held(h100) == [3, 6]
    assert "gpu_idle" in h100.gpus[3].throttle_reasons  # the reason joins the others, replacing none
    assert "Applications Clocks Setting       : Active" in smi(h100, "-q -d PERFORMANCE -i 3")
    smi(h100, "-i 3 -rgc")
    assert held(h100) == [6]
    smi(h100, "-rgc")
    assert held(h100) == []


def test_a_lock_whose_top_is_the_maximum_holds_nothing_back(h100: NodeState) -> None:
    smi(h100, "-i 0 -lgc 1200,1980")
    assert held(h100) == []
    smi(h100, "-i 0 -lgc 1755,1755")  # higher than before, still below 1980
    assert held(h100) == [0]


def test_applications_clocks_below_the_default_hold_the_gpu_until_reset(h100: NodeState) -> None:
    smi(h100, "-i 1 -ac 2619,1410")
    assert held(h100) == [1]
    smi(h100, "-i 1 -ac 2619,1980")  # the default pair, set by hand
    assert held(h100) == []
    smi(h100, "-i 1 -ac 2619,1410")
    smi(h100, "-rac")
    assert held(h100) == []


def test_an_a100_at_its_default_applications_clock_is_not_held() -> None:
    # the A100 40GB's default applications clock (1095 MHz) is below its maximum (1410): only lower is held
    a100 = load_fixture("dgx-a100")
    smi(a100, "-i 0 -ac 1215,1095")
    assert held(a100) == []
    smi(a100, "-i 0 -ac 1215,1410")
    assert held(a100) == []
    smi(a100, "-i 0 -ac 1215,1005")
    assert held(a100) == [0]


def test_a_reboot_clears_the_lock_and_the_applications_clocks(h100: NodeState) -> None:
    smi(h100, "-i 3,6 -lgc 1200,1200")
    smi(h100, "-i 1 -ac 2619,1410")
    reboot(h100)
    assert held(h100) == []
    assert all(g.locked_gpu_clocks_mhz is None and not g.applications_clocks_mhz for g in h100.gpus)


def test_gpu_throttle_fails_the_held_gpus_by_name_and_passes_once_released(h100: NodeState) -> None:
    def verdict() -> tuple[str, str]:
        facts = nvidia_smi_xml.parse(smi(h100, "-q -x"))
        r = run_check(REGISTRY["gpu.throttle"], facts, {"fail_on": FAIL_ON, "warn_on": []})
        return r.status, r.message

    assert verdict()[0] == "pass"
    smi(h100, "-i 5 -lgc 990,990")
    status, message = verdict()
    assert status == "fail" and message.startswith("GPU 5 (") and "applications_clocks_setting" in message
    smi(h100, "-rgc")
    assert verdict()[0] == "pass"
    # the check's own defaults treat a user's clock setting as normal: the lab asks for it by fail_on
    smi(h100, "-i 5 -lgc 990,990")
    assert run_check(REGISTRY["gpu.throttle"], nvidia_smi_xml.parse(smi(h100, "-q -x")), {}).status == "pass"
