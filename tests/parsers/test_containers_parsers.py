"""docker info and CDI specs: the real pastes of the corpus, cut and prompted ones, and what is neither."""

from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.parsers import parse, parse_auto
from tests.support.corpus import read_corpus

DOCKER_01 = "docker_info/01_docker29_nvidia_runtime_cdi_discovered.txt"
DOCKER_02 = "docker_info/02_docker29_cut_before_runtimes.txt"


def test_docker_info_reads_runtimes_default_and_cdi_dirs() -> None:
    facts = parse("docker-info", read_corpus(DOCKER_01))
    engine = facts.container_engine
    assert engine is not None
    assert engine.server_version == "29.7.2"
    assert engine.runtimes == ["io.containerd.runc.v2", "nvidia", "runc"]
    assert engine.default_runtime == "runc"
    assert engine.cdi_spec_dirs == ["/etc/cdi", "/var/run/cdi"]  # the Discovered Devices lines are not dirs
    assert engine.error is None and not facts.partial


def test_docker_info_cut_before_runtimes_is_partial_not_empty() -> None:
    facts = parse("docker-info", read_corpus(DOCKER_02))
    assert facts.container_engine is not None and facts.container_engine.runtimes == []
    assert "Runtimes" in facts.partial["container_engine"]


def test_docker_info_prompted_and_detected() -> None:
    text = "user@gpu01:~$ sudo docker info\n" + read_corpus(DOCKER_01)
    kind, facts = parse_auto(text)
    assert kind == "docker-info" and facts.container_engine is not None
    assert "nvidia" in facts.container_engine.runtimes


def test_docker_info_without_a_daemon() -> None:
    text = (
        "Client: Docker Engine - Community\n Version:    28.3.3\n Context:    default\n Debug Mode: false\n\nServer:\n"
        "ERROR: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"
        "errors pretty printing info\n"
    )
    engine = parse("docker-info", text).container_engine
    assert engine is not None and engine.error is not None and engine.error.startswith("Cannot connect")


def test_docker_info_refuses_other_text() -> None:
    with pytest.raises(ParseError):
        parse("docker-info", "Client: Docker Engine - Community\n Version:    28.3.3\n")


def test_minimal_spec_with_its_prompt() -> None:
    spec = parse("cdi-spec", read_corpus("cdi_spec/01_moby_minimal_vendor_spec.txt")).cdi_spec
    assert spec is not None
    assert (spec.kind, spec.cdi_version, [d.name for d in spec.devices]) == (
        "spidernet.io/test",
        "0.6.0",
        ["spidernet.io/test=demo1"],
    )


def test_ctk_spec_cut_before_devices_is_partial_with_its_driver() -> None:
    facts = parse("cdi-spec", read_corpus("cdi_spec/02_ctk1.17_575_common_edits_cut_before_devices.txt"))
    spec = facts.cdi_spec
    assert spec is not None and spec.devices == [] and "cut before its devices" in facts.partial["cdi_spec"]
    assert spec.common_device_nodes == [
        "/dev/nvidia-modeset",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidiactl",
    ]
    assert spec.driver_version == "575.57.08"  # from the enable-cuda-compat hook: no library in the excerpt


def test_early_spec_driver_from_its_library_names() -> None:
    spec = parse("cdi-spec", read_corpus("cdi_spec/03_ctk1.12_dgx_a100_460_cut_in_mounts.txt")).cdi_spec
    assert spec is not None and spec.kind == "nvidia.com/gpu" and spec.cdi_version == "0.4.0"
    assert spec.driver_version == "460.91.03"
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.460.91.03" in spec.libraries


def test_device_nodes_per_device_and_json_form() -> None:
    text = (
        '{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"0:1","containerEdits":{"deviceNodes":'
        '[{"path":"/dev/nvidia0"},{"path":"/dev/nvidia-caps/nvidia-cap21"}]}},{"name":"all","containerEdits":{}}]}\n'
    )
    kind, facts = parse_auto(text)
    assert kind == "cdi-spec" and facts.cdi_spec is not None
    assert [(d.name, d.device_nodes) for d in facts.cdi_spec.devices] == [
        ("nvidia.com/gpu=0:1", ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21"]),
        ("nvidia.com/gpu=all", []),
    ]


def test_broken_yaml_names_its_line() -> None:
    text = 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: "0\n  containerEdits: [\n'
    with pytest.raises(ParseError) as err:
        parse("cdi-spec", text)
    assert err.value.line is not None and err.value.line >= 4
    with pytest.raises(ParseError):
        parse("cdi-spec", "hello: world\n")
