"""nvidia-smi -L. Fixture: corpus/nvml/nvidia_smi_L_mig_A100_40GB_guide.txt (NVIDIA MIG User Guide)."""

from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.parsers import nvidia_smi_list
from tests.support.corpus import read_corpus

MIG_A100 = "nvml/nvidia_smi_L_mig_A100_40GB_guide.txt"


def test_a100_with_mig_devices_lists_one_gpu() -> None:
    facts = nvidia_smi_list.parse(read_corpus(MIG_A100))
    assert facts.gpus is not None and len(facts.gpus) == 1
    gpu = facts.gpus[0]
    assert (gpu.index, gpu.name) == (0, "A100-SXM4-40GB")
    assert gpu.uuid == "GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0"
    # the MIG lines name no GPU instance: nothing is made up from them
    assert facts.mig_instances is None


def test_several_gpus_keep_their_printed_indices_and_full_names() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-0000-1111-2222-333344445555)\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-0000-1111-2222-333344446666)\n"
        "GPU 3: Tesla V100-SXM2-16GB (rev a1) (UUID: GPU-0a1b2c3d-0000-1111-2222-333344447777)\n"
    )
    gpus = nvidia_smi_list.parse(text).gpus
    assert gpus is not None
    assert [g.index for g in gpus] == [0, 1, 3]
    assert gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert gpus[2].name == "Tesla V100-SXM2-16GB (rev a1)"
    assert gpus[2].uuid == "GPU-0a1b2c3d-0000-1111-2222-333344447777"


def test_tabs_crlf_and_wide_mig_lines_are_tolerated() -> None:
    text = (
        "GPU 0:\tA100-SXM4-40GB (UUID: GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0)\r\n"
        "\tMIG 1g.5gb     Device  0: (UUID: MIG-c7384736-a75d-5afc-978f-d2f1294409fd)\r\n"
    )
    gpus = nvidia_smi_list.parse(text).gpus
    assert gpus is not None and [g.name for g in gpus] == ["A100-SXM4-40GB"]


def test_no_devices_found_means_zero_gpus() -> None:
    assert nvidia_smi_list.parse("No devices were found\n").gpus == []


def test_driver_failure_text_is_carried_verbatim() -> None:
    message = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running."
    )
    with pytest.raises(ParseError) as caught:
        nvidia_smi_list.parse(message + "\n")
    assert caught.value.reason == message


def test_a_gpu_that_lost_its_handle_is_a_failure_not_a_shorter_list() -> None:
    text = (
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)\n"
        "Unable to determine the device handle for gpu 0000:07:00.0: Unknown Error\n"
    )
    with pytest.raises(ParseError) as caught:
        nvidia_smi_list.parse(text)
    assert caught.value.line == 2
    assert "Unable to determine the device handle for gpu 0000:07:00.0: Unknown Error" in caught.value.reason


def test_unknown_line_is_a_parse_error_with_its_line() -> None:
    text = read_corpus(MIG_A100) + "GPU zero: something else\n"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_list.parse(text)
    assert caught.value.line == 5


def test_line_cut_before_the_uuid_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_list.parse("GPU 0: A100-SXM4-40GB (UUID: GPU-e86cb44c-67")
    assert caught.value.line == 1


def test_the_same_gpu_twice_is_a_parse_error() -> None:
    line = "GPU 0: A100-SXM4-40GB (UUID: GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0)\n"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_list.parse(line + line)
    assert caught.value.line == 2


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_empty_output_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        nvidia_smi_list.parse(text)


def test_binary_data_is_a_parse_error_with_line() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_list.parse("GPU 0: A100 (UUID: GPU-1)\n\x7fELF\x02\x01\x01\x00\x00")
    assert caught.value.line == 2
