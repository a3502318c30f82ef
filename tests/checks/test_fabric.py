from assessor.facts import Service
from tests.support.builders import A100, L40S, gpu, gpus, node, run

FM_ACTIVE = Service("nvidia-fabricmanager.service", "loaded", "active", "running", "enabled", "success", 0)
PD_ACTIVE = Service("nvidia-persistenced.service", "loaded", "active", "running", "enabled", "success", 0)
# corpus/fabricmanager/03: on a box without NVSwitch the unit fails with NV_WARN_NOTHING_TO_DO
FM_FAILED = Service("nvidia-fabricmanager.service", "loaded", "failed", "failed", "enabled", "exit-code", 1)
FM_MISSING = Service("nvidia-fabricmanager.service", "not-found", "inactive", "dead")


def test_hgx_with_fabric_completed_and_fm_active_passes():
    r = run("fabric.state", node(gpus=gpus(8), services=[FM_ACTIVE, PD_ACTIVE]))
    assert r.status == "pass"
    assert "nvidia-fabricmanager active" in r.message


def test_gpu_fabric_in_progress_fails_naming_the_gpu():
    facts = node(gpus=[*gpus(7), gpu(7, fabric_state="In Progress", fabric_status="N/A")], services=[FM_ACTIVE])
    r = run("fabric.state", facts)
    assert r.status == "fail"
    assert "GPU 7 (00000000:DB:00.0) fabric In Progress" in r.message
    assert "fabricmanager" in str(r.hint)


def test_fabric_manager_failed_on_hgx_fails():
    r = run("fabric.state", node(gpus=gpus(8), services=[FM_FAILED]))
    assert r.status == "fail"
    assert "nvidia-fabricmanager is failed" in r.message


def test_fabric_manager_not_installed_fails():
    r = run("fabric.state", node(gpus=gpus(8), services=[FM_MISSING]))
    assert r.status == "fail"
    assert "not installed" in r.message


def test_pcie_box_skips_even_with_failed_fabric_manager():
    facts = node(gpus=gpus(4, L40S, fabric_state="Not Supported", fabric_status=None), services=[FM_FAILED])
    r = run("fabric.state", facts)
    assert r.status == "skip"
    assert "NV_WARN_NOTHING_TO_DO" in r.message


def test_old_driver_without_fabric_state_is_judged_on_the_service():
    # A100 on driver 510 (corpus nvidia_smi_xml) prints no fabric section
    facts = node(gpus=gpus(8, A100, fabric_state=None, fabric_status=None), services=[FM_ACTIVE])
    assert run("fabric.state", facts).status == "pass"


def test_fabric_state_unknown_without_services_skips():
    facts = node(gpus=gpus(8, A100, fabric_state=None, fabric_status=None))
    assert run("fabric.state", facts).status == "skip"


def test_fabric_state_unknown_on_one_gpu_warns():
    facts = node(gpus=[*gpus(7), gpu(7, fabric_state=None)])
    r = run("fabric.state", facts)
    assert r.status == "warn"
    assert "GPU 7" in r.message


def test_fabric_without_gpus_skips_and_broken_errors():
    assert run("fabric.state", node()).status == "skip"
    assert run("fabric.state", node(problems={"gpus": "nvml.json: bad JSON"})).status == "error"


def test_services_auto_on_hgx_needs_both():
    r = run("services.active", node(gpus=gpus(8), services=[PD_ACTIVE, FM_ACTIVE]))
    assert r.status == "pass"
    assert set(r.expected) == {"nvidia-persistenced", "nvidia-fabricmanager"}


def test_services_auto_on_pcie_box_does_not_need_fabric_manager():
    facts = node(gpus=gpus(4, L40S, fabric_state="Not Supported"), services=[PD_ACTIVE, FM_FAILED])
    r = run("services.active", facts)
    assert r.status == "pass"
    assert set(r.expected) == {"nvidia-persistenced"}


def test_services_auto_needs_an_installed_dcgm_to_run():
    dcgm_stopped = Service("nvidia-dcgm.service", "loaded", "inactive", "dead", "enabled", "success", 0)
    r = run("services.active", node(gpus=gpus(8), services=[PD_ACTIVE, FM_ACTIVE, dcgm_stopped]))
    assert r.status == "fail"
    assert "nvidia-dcgm" in r.message
    not_installed = Service("nvidia-dcgm.service", "not-found", "inactive", "dead")
    r = run("services.active", node(gpus=gpus(8), services=[PD_ACTIVE, FM_ACTIVE, not_installed]))
    assert r.status == "pass" and "nvidia-dcgm" not in r.expected


def test_services_failed_unit_fails():
    r = run("services.active", node(gpus=gpus(8), services=[PD_ACTIVE, FM_FAILED]))
    assert r.status == "fail"
    assert "nvidia-fabricmanager is failed (exit-code)" in r.message
    assert "systemctl enable --now" in str(r.hint)


def test_services_named_unit_not_installed_fails():
    dcgm = Service("nvidia-dcgm.service", "not-found", "inactive", "dead")
    r = run("services.active", node(services=[PD_ACTIVE, dcgm]), names=["nvidia-dcgm.service"])
    assert r.status == "fail"
    assert "not installed" in r.message


def test_services_not_captured_warns_or_skips():
    r = run("services.active", node(services=[PD_ACTIVE]), names=["nvidia-persistenced", "nvidia-dcgm"])
    assert r.status == "warn"
    assert "nvidia-dcgm" in r.message
    assert run("services.active", node(services=[]), names=["nvidia-dcgm"]).status == "skip"


def test_services_missing_skips_and_broken_errors():
    assert run("services.active", node(gpus=gpus(1))).status == "skip"
    assert run("services.active", node(problems={"services": "systemctl: exit 1"})).status == "error"
