from assessor.facts import DriverInfo, KernelModule
from tests.support.builders import gpus, node, run

MODULES = [KernelModule(n) for n in ("nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia", "nvidia_peermem")]


def test_loaded_passes_with_module_and_matching_versions():
    facts = node(driver=DriverInfo(version="535.129.03", kernel_module_version="535.129.03"), modules=MODULES)
    r = run("driver.loaded", facts)
    assert r.status == "pass"
    assert r.observed == "535.129.03"


def test_loaded_passes_on_gpus_alone():
    assert run("driver.loaded", node(gpus=gpus(2))).status == "pass"


def test_nvml_version_mismatch_fails_with_reload_hint():
    facts = node(driver=DriverInfo(nvml_error="Driver/library version mismatch"), modules=MODULES)
    r = run("driver.loaded", facts)
    assert r.status == "fail"
    assert "Driver/library version mismatch" in r.message
    assert "reboot" in str(r.hint) and "reload" in str(r.hint)


def test_kernel_module_and_library_versions_differ_fails():
    facts = node(driver=DriverInfo(version="535.129.03", kernel_module_version="535.104.05"), modules=MODULES)
    r = run("driver.loaded", facts)
    assert r.status == "fail"
    assert "535.104.05" in r.message and "535.129.03" in r.message


def test_versions_equal_numerically_are_not_a_mismatch():
    facts = node(driver=DriverInfo(version="535.129.3", kernel_module_version="535.129.03"))
    assert run("driver.loaded", facts).status == "pass"


def test_lsmod_without_nvidia_fails():
    facts = node(modules=[KernelModule("nvidia_uvm"), KernelModule("mlx5_core")])
    r = run("driver.loaded", facts)
    assert r.status == "fail"
    assert "modprobe nvidia" in str(r.hint)


def test_loaded_without_any_facts_skips():
    assert run("driver.loaded", node()).status == "skip"


def test_loaded_with_broken_source_errors():
    facts = node(problems={"driver": "driver-version.txt: empty file"})
    r = run("driver.loaded", facts)
    assert r.status == "error"
    assert "empty file" in r.message


def test_version_without_params_reports_the_version():
    r = run("driver.version", node(driver=DriverInfo(version="565.57.01")))
    assert (r.status, r.observed) == ("pass", "565.57.01")


def test_version_below_min_fails_numerically():
    # 535.54.03 < 535.129.03 numerically even though "54" > "129" as text
    r = run("driver.version", node(driver=DriverInfo(version="535.54.03")), min="535.129.03")
    assert r.status == "fail"
    assert r.expected == ">= 535.129.03"
    assert r.hint


def test_version_above_min_passes():
    assert run("driver.version", node(driver=DriverInfo(version="550.54.15")), min="535.129.03").status == "pass"


def test_version_exact_mismatch_fails():
    r = run("driver.version", node(driver=DriverInfo(version="550.54.15")), expected="550.54.14")
    assert r.status == "fail"
    assert r.observed == "550.54.15"


def test_version_from_kernel_module_when_nvidia_smi_absent():
    r = run("driver.version", node(driver=DriverInfo(kernel_module_version="570.158.01")), expected="570.158.01")
    assert r.status == "pass"


def test_version_unknown_skips():
    assert run("driver.version", node(driver=DriverInfo())).status == "skip"
    assert run("driver.version", node()).status == "skip"


def test_version_broken_errors():
    assert run("driver.version", node(problems={"driver": "garbage"})).status == "error"


def test_version_non_numeric_param_errors():
    r = run("driver.version", node(driver=DriverInfo(version="550.54.15")), min="latest")
    assert r.status == "error"
    assert "dotted" in str(r.hint)
