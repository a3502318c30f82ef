from assessor.facts import DcgmDiag, DcgmTest
from tests.support.builders import node, run


def diag(*results: tuple[str, str, str]) -> DcgmDiag:
    return DcgmDiag(version="3.3.1", tests=[DcgmTest(cat, name, res) for cat, name, res in results])


# corpus/dcgmi_diag/01: DCGM 3.3.1 -r 2, Deployment and Integration sections
PASSING = [
    ("Deployment", "Denylist", "Pass"),
    ("Deployment", "NVML Library", "Pass"),
    ("Deployment", "CUDA Main Library", "Pass"),
    ("Deployment", "Permissions and OS Blocks", "Pass"),
    ("Deployment", "Persistence Mode", "Pass"),
    ("Integration", "PCIe", "Pass"),
]


def test_every_test_pass_passes():
    r = run("dcgm.diag", node(dcgm_diag=diag(*PASSING)))
    assert r.status == "pass"
    assert r.observed == {"pass": 6}


def test_failed_test_fails_naming_it_and_its_detail():
    tests = diag(*PASSING, ("Hardware", "GPU Memory", "Fail"))
    tests.tests[-1].details = ["GPU 3: Memory error detected"]
    r = run("dcgm.diag", node(dcgm_diag=tests))
    assert r.status == "fail"
    assert "Hardware/GPU Memory (GPU 3: Memory error detected)" in r.message


def test_skip_is_not_a_pass():
    # corpus/dcgmi_diag/03 (NVIDIA/DCGM#55): level-3 tests skipped on a fresh install
    r = run("dcgm.diag", node(dcgm_diag=diag(*PASSING, ("Stress", "Targeted Stress", "Skip"))))
    assert r.status == "warn"
    assert "Skip is not a pass" in r.message and "Stress/Targeted Stress" in r.message


def test_allow_skip_makes_skips_fine():
    facts = node(dcgm_diag=diag(*PASSING, ("Stress", "Targeted Stress", "Skip")))
    assert run("dcgm.diag", facts, allow_skip=True).status == "pass"


def test_warn_result_warns():
    assert run("dcgm.diag", node(dcgm_diag=diag(*PASSING, ("Integration", "PCIe", "Warn")))).status == "warn"


def test_deployment_only_run_tested_no_hardware():
    # corpus/dcgmi_diag/03 is cut after the Deployment section although it ran -r 3
    deployment = [t for t in PASSING if t[0] == "Deployment"]
    r = run("dcgm.diag", node(dcgm_diag=diag(*deployment)))
    assert r.status == "warn"
    assert "no GPU hardware was tested" in r.message


def test_no_tests_errors():
    assert run("dcgm.diag", node(dcgm_diag=DcgmDiag())).status == "error"


def test_diag_missing_skips_and_broken_errors():
    assert run("dcgm.diag", node()).status == "skip"
    assert run("dcgm.diag", node(problems={"dcgm_diag": "Error: unable to connect to host engine"})).status == "error"


def test_failed_test_names_the_failing_gpu_not_the_passing_ones():
    # dcgmi diag prints the passing GPUs first in a failed row's cell (as the simulator's
    # ecc-uncorrectable output does): "Pass - GPUs: 1..7", then "Fail - GPU: 0", then the warning
    tests = diag(*PASSING, ("Hardware", "GPU Memory", "Fail"))
    tests.tests[-1].details = [
        "Pass - GPUs: 1, 2, 3, 4, 5, 6, 7",
        "Fail - GPU: 0",
        "Warning: GPU 0 had 2 uncorrectable ECC errors (DBE) since the last reset.",
    ]
    r = run("dcgm.diag", node(dcgm_diag=tests))
    assert r.status == "fail"
    assert "Pass - GPUs" not in r.message
    assert "Hardware/GPU Memory (Fail - GPU: 0; Warning: GPU 0 had 2 uncorrectable ECC errors" in r.message
