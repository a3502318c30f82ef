from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.facts import DcgmDiag
from assessor.parsers import parse
from assessor.parsers.dcgmi_diag import normalise_result
from tests.support.corpus import read_corpus

DCGM_33 = "dcgmi_diag/01_dcgm3.3.1_r2_metadata_deployment_denylist.txt"
DCGM_30 = "dcgmi_diag/03_dcgm3.0.4_r3_no_metadata_integration_section.txt"

# DCGM 4.x layout (lower-case test names, per-GPU "GPUn: Pass" rows, wrapped Warning rows),
# copied by hand from https://github.com/NVIDIA/DCGM/issues/253 ("diag warning after upgrade
# to 4.2.3", issue description; the pod banner line is kept, two of the four warnings kept).
DCGM_423 = """\
Executing in Pod nvidia-dcgm-rz9cr on Host 10.0.7.139
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 4.2.3                                          |
| Driver Version Detected   | 570.148.08                                     |
| GPU Device IDs Detected   | 26b9, 26b9, 26b9, 26b9                         |
|-----  Deployment  --------+------------------------------------------------|
| software                  | Pass                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Pass                                     |
|                           | GPU2: Pass                                     |
|                           | GPU3: Pass                                     |
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | Pass                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Pass                                     |
|                           | GPU2: Pass                                     |
|                           | GPU3: Pass                                     |
+-----  Integration  -------+------------------------------------------------+
| pcie                      | Fail                                           |
| Warning                   | There was an internal error during the test:   |
|                           | 'A child process (152) exited with non-zero s  |
|                           | tatus 1' Check DCGM and system logs for error  |
|                           | s. Reset GPU. Restart DCGM. Rerun diagnostics  |
|                           | .                                              |
| Warning                   | There was an internal error during the test:   |
|                           | 'Output of child process (152) couldn't be pa  |
|                           | rsed: '* Line 1, Column 1   Syntax error: val  |
|                           | ue, object or array expected. '' Check DCGM a  |
|                           | nd system logs for errors. Reset GPU. Restart  |
|                           |  DCGM. Rerun diagnostics.                      |
|                           | GPU0: Pass                                     |
|                           | GPU1: Pass                                     |
|                           | GPU2: Pass                                     |
|                           | GPU3: Pass                                     |
+---------------------------+------------------------------------------------+
"""

# DCGM 3.x failure rows, from stas00/ml-engineering compute/accelerator/nvidia/debug.md
# ("Running diagnostics"), under a section rule taken from the sample above; the source
# itself ends cut mid-row ("| ts." with no closing bar).
DCGM_3X_FAIL = """\
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPUs: 1, 2, 3, 4, 5, 6, 7               |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 Thermal violations totaling 13.3 second  |
|                           | s started at 9.7 seconds into the test for GP  |
|                           | U 0 Verify that the cooling on this machine i  |
|                           | s functional, including external, thermal mat  |
|                           | erial interface, fans, and any other componen  |
|                           | ts.
"""

# Same source: a deployment check reporting an error with no test row before it.
DCGM_3X_ERROR = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Error                     | GPU 3 has uncorrectable memory errors and row  |
|                           |  remappings are pending                        |
"""


def _diag(text: str) -> DcgmDiag:
    facts = parse("dcgmi-diag", text)
    assert facts.dcgm_diag is not None
    return facts.dcgm_diag


def test_dcgm_33_metadata_and_deployment_with_truncated_last_row(corpus):
    diag = _diag(read_corpus(DCGM_33))
    assert diag.version == "3.3.1"
    assert diag.metadata["Driver Version Detected"] == "535.129.03"
    assert diag.metadata["GPU Device IDs Detected"] == "1eb8"
    assert [t.name for t in diag.tests][:2] == ["Denylist", "NVML Library"]
    assert len(diag.tests) == 8
    assert {t.category for t in diag.tests} == {"Deployment"}
    assert all(t.result == "Pass" and t.details == [] for t in diag.tests)
    # The index cut the last row after its result: still a usable row.
    assert diag.tests[-1].name == "Graphics Processes"


def test_dcgm_30_has_no_metadata_and_drops_a_row_cut_before_its_result(corpus):
    diag = _diag(read_corpus(DCGM_30))
    assert diag.version is None
    assert diag.metadata == {}
    assert len(diag.tests) == 9
    assert diag.tests[-1].name == "Inforom"
    assert "PCIe" not in [t.name for t in diag.tests]  # "| PCIe" with no result cell


def test_parser_sets_only_the_dcgm_diag_field(corpus):
    facts = parse("dcgmi-diag", read_corpus(DCGM_30))
    assert facts.nccl is None and facts.gpus is None and facts.services is None


def test_dcgm_4_layout_per_gpu_rows_and_categories():
    diag = _diag(DCGM_423)
    assert diag.version == "4.2.3"
    assert diag.metadata["GPU Device IDs Detected"] == "26b9, 26b9, 26b9, 26b9"
    assert [(t.category, t.name, t.result) for t in diag.tests] == [
        ("Deployment", "software", "Pass"),
        ("Hardware", "memory", "Pass"),
        ("Integration", "pcie", "Fail"),
    ]
    assert diag.tests[0].details == ["GPU0: Pass", "GPU1: Pass", "GPU2: Pass", "GPU3: Pass"]


def test_dcgm_4_wrapped_warnings_are_joined_back_mid_word():
    pcie = _diag(DCGM_423).tests[2]
    assert pcie.details[0] == (
        "Warning: There was an internal error during the test: 'A child process (152) exited with"
        " non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
    )
    # A piece that ends in a space ("Restart ") keeps it; one that starts with one (" DCGM") too.
    assert pcie.details[1].endswith(
        "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
    )
    assert "couldn't be parsed: '* Line 1, Column 1   Syntax error: value, object or array expected." in pcie.details[1]
    # Passing GPUs do not turn a failed test into a pass.
    assert pcie.details[2:] == ["GPU0: Pass", "GPU1: Pass", "GPU2: Pass", "GPU3: Pass"]
    assert pcie.result == "Fail"


def test_dcgm_3x_one_failing_gpu_fails_the_test():
    (memory,) = _diag(DCGM_3X_FAIL).tests
    assert (memory.category, memory.name, memory.result) == ("Hardware", "GPU Memory", "Fail")
    assert memory.details[:2] == ["Pass - GPUs: 1, 2, 3, 4, 5, 6, 7", "Fail - GPU: 0"]
    assert memory.details[2] == (
        "Warning: GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0"
        " Verify that the cooling on this machine is functional, including external, thermal material interface,"
        " fans, and any other components."
    )


def test_error_without_a_test_row_is_kept_as_a_failure():
    (error,) = _diag(DCGM_3X_ERROR).tests
    assert (error.category, error.name, error.result) == ("Deployment", "Error", "Fail")
    assert error.details == ["Error: GPU 3 has uncorrectable memory errors and row remappings are pending"]


def test_info_row_attaches_to_its_test_and_is_not_a_result_of_its_own():
    text = """\
+-----  Integration  -------+------------------------------------------------+
| Info                      | This line belongs to no test                   |
| PCIe                      | Pass - All                                     |
| Info                      | GPU 0 GPU to Host bandwidth:  13.08 GB/s       |
"""
    (pcie,) = _diag(text).tests
    assert (pcie.name, pcie.result) == ("PCIe", "Pass")
    assert pcie.details == ["Info: GPU 0 GPU to Host bandwidth:  13.08 GB/s"]


def test_command_echo_and_indentation_are_tolerated():
    text = "$ dcgmi diag -r 1\n" + "\n".join("    " + line for line in DCGM_423.splitlines())
    diag = _diag(text)
    assert diag.version == "4.2.3"
    assert len(diag.tests) == 3


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("Pass", "Pass"),
        ("PASS", "Pass"),
        ("Pass - All", "Pass"),
        ("Fail - GPU: 0", "Fail"),
        ("Skip", "Skip"),
        ("Warn", "Warn"),
        ("Pass - GPUs: 1, 2, 3", "Pass"),
        ("1eb8", None),
    ],
)
def test_result_cells_are_normalised(cell, expected):
    assert normalise_result(cell) == expected


def test_uppercase_and_skip_results_in_a_table():
    text = """\
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | SKIP                                           |
|                           | GPU0: Skip                                     |
| diagnostic                | Warn                                           |
|                           | GPU0: Warn                                     |
+---------------------------+------------------------------------------------+
"""
    diag = _diag(text)
    assert [(t.name, t.result) for t in diag.tests] == [("memory", "Skip"), ("diagnostic", "Warn")]


def test_unknown_result_in_the_middle_is_an_error_with_its_line():
    lines = DCGM_423.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| memory"))
    lines[at] = lines[at].replace("Pass", "Mayb")
    with pytest.raises(ParseError) as err:
        parse("dcgmi-diag", "\n".join(lines))
    assert err.value.line == at + 1
    assert "Mayb" in str(err.value)


def test_dcgmi_error_without_a_table_is_reported():
    # From https://github.com/NVIDIA/DCGM/issues/254.
    text = (
        "$ dcgmi diag -i 0,1,2,3 -v -r 3\n"
        "Error: Unable to complete diagnostic for entities 0,1,2,3. Return: (-30) :"
        " DCGM GPU Diagnostic returned an error\n"
    )
    with pytest.raises(ParseError, match="Unable to complete diagnostic") as err:
        parse("dcgmi-diag", text)
    assert err.value.line == 2


@pytest.mark.parametrize("garbage", ["", "Successfully ran diagnostic for group.\n", "hello world\n"])
def test_garbage_is_a_parse_error(garbage):
    with pytest.raises(ParseError, match="no dcgmi diag results"):
        parse("dcgmi-diag", garbage)
