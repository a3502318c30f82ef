"""New facts from the new kinds survive the JSON round trip that nvml.json and results use."""

from __future__ import annotations

import json
import math

from assessor import parsers
from assessor.facts import NodeFacts, from_jsonable, to_jsonable
from tests.support.corpus import read_corpus


def _roundtrip(facts: NodeFacts) -> NodeFacts:
    return from_jsonable(NodeFacts, json.loads(json.dumps(to_jsonable(facts), allow_nan=False)))


def test_nvlink_status_mig_devices_processes_and_service_reasons_round_trip():
    facts = NodeFacts(
        nvlink_status=parsers.parse(
            "nvidia-smi-nvlink", read_corpus("nvidia_smi_nvlink/01_v100_sxm2_two_links_inactive_excerpt.txt")
        ).nvlink_status,
        mig_devices=parsers.parse("nvidia-smi", read_corpus("nvml/nvidia_smi_mig_devices_H100_NVL.txt")).mig_devices,
        gpu_processes=parsers.parse(
            "nvidia-smi", read_corpus("nvidia_smi/05_470era_mig_processes_box_venv_prompt.txt")
        ).gpu_processes,
        services=parsers.parse(
            "systemctl-status", read_corpus("systemctl_status/01_fm_driver_interface_version_mismatch_550.txt")
        ).services,
        nccl=parsers.parse(
            "nccl-debug", read_corpus("nccl_warn/01_ib_completion_err12_vendor129_roce_ipv4gid.txt")
        ).nccl,
    )
    back = _roundtrip(facts)
    assert back == facts
    assert back.nccl is not None and back.nccl.tests_output is False
    assert back.services and back.services[0].reason


def test_non_finite_floats_become_null():
    facts = parsers.parse("nvidia-smi-q", read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt"))
    assert facts.gpus
    facts.gpus[0].power_draw_w = math.nan
    facts.gpus[0].power_limit_w = -math.inf
    back = _roundtrip(facts)
    assert back.gpus and back.gpus[0].power_draw_w is None and back.gpus[0].power_limit_w is None
