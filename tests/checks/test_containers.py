"""containers.runtime and containers.cdi: pass, fail, missing and broken facts, on real pastes and on specs
the simulator generates."""

from __future__ import annotations

from assessor.facts import CdiDevice, CdiSpec, ContainerEngine, DriverInfo
from assessor.parsers import parse
from tests.support.builders import gpus, node, run
from tests.support.corpus import read_corpus

ENGINE = ContainerEngine(
    server_version="28.3.3", runtimes=["io.containerd.runc.v2", "nvidia", "runc"], default_runtime="runc"
)
KIND = "nvidia.com/gpu"


def test_runtime_passes_on_the_real_docker_info() -> None:
    facts = parse("docker-info", read_corpus("docker_info/01_docker29_nvidia_runtime_cdi_discovered.txt"))
    assert run("containers.runtime", facts).status == "pass"
    wanted_default = run("containers.runtime", facts, default=True)
    assert wanted_default.status == "fail" and "runc" in wanted_default.message and wanted_default.hint


def test_runtime_fails_without_nvidia_and_names_the_restart() -> None:
    r = run(
        "containers.runtime",
        node(container_engine=ContainerEngine(server_version="28.3.3", runtimes=["io.containerd.runc.v2", "runc"])),
    )
    assert r.status == "fail" and "no nvidia" in r.message
    assert r.hint is not None and "systemctl restart docker" in r.hint


def test_runtime_fails_when_the_daemon_does_not_answer() -> None:
    down = ContainerEngine(error="Cannot connect to the Docker daemon at unix:///var/run/docker.sock.")
    r = run("containers.runtime", node(container_engine=down))
    assert r.status == "fail" and "does not answer" in r.message


def test_runtime_skips_without_docker_info_and_on_a_cut_paste() -> None:
    assert run("containers.runtime", node()).status == "skip"
    cut = parse("docker-info", read_corpus("docker_info/02_docker29_cut_before_runtimes.txt"))
    assert run("containers.runtime", cut).status == "skip"


def test_runtime_errors_on_a_broken_source() -> None:
    facts = node()
    facts.problems["container_engine"] = "docker-info.txt: line 3: not docker info output"
    assert run("containers.runtime", facts).status == "error"


def _spec(n_gpus: int, migs: dict[int, list[int]], version: str = "535.129.03", uuids: bool = True) -> CdiSpec:
    devices = []
    for g in range(n_gpus):
        devices.append(CdiDevice(f"{KIND}={g}", [f"/dev/nvidia{g}"]))
        if uuids:
            devices.append(CdiDevice(f"{KIND}=GPU-{g:08d}", [f"/dev/nvidia{g}"]))
    for g, gis in migs.items():
        for m, gi in enumerate(gis):
            cap = 3 + g * 135 + gi * 9
            devices.append(
                CdiDevice(
                    f"{KIND}={g}:{m}",
                    [f"/dev/nvidia{g}", f"/dev/nvidia-caps/nvidia-cap{cap}", f"/dev/nvidia-caps/nvidia-cap{cap + 1}"],
                )
            )
    devices.append(CdiDevice(f"{KIND}=all", []))
    return CdiSpec(kind=KIND, cdi_version="0.5.0", devices=devices, driver_version=version)


def _node(spec: CdiSpec, migs: dict[int, list[int]] | None = None, version: str = "535.129.03"):
    fleet = gpus(2)
    for g in fleet:
        g.uuid = f"GPU-{g.index:08d}"
        g.mig_mode_current = g.index in (migs or {})
    return node(gpus=fleet, cdi_spec=spec, mig_compute_gis=migs or {}, driver=DriverInfo(version=version))


def test_cdi_passes_when_the_spec_is_the_node() -> None:
    r = run("containers.cdi", _node(_spec(2, {0: [1, 2]}), {0: [1, 2]}))
    assert r.status == "pass" and "2 GPUs and 2 MIG devices" in r.message
    # one naming strategy is enough: index only
    assert run("containers.cdi", _node(_spec(2, {}, uuids=False))).status == "pass"


def test_cdi_fails_after_a_mig_change_naming_what_is_stale() -> None:
    r = run("containers.cdi", _node(_spec(2, {0: [0]}), {0: [1, 2]}))
    assert r.status == "fail" and r.hint and "nvidia-ctk cdi generate" in r.hint
    assert any("0:0 injects the device nodes of a GPU instance that is gone" in p for p in r.observed)
    assert any("nvidia.com/gpu=0:1 (GPU 0's MIG device 1) is not in the spec" in p for p in r.observed)
    leftover = run("containers.cdi", _node(_spec(2, {0: [1, 2]})))  # MIG turned off since
    assert leftover.status == "fail" and "does not have" in leftover.message


def test_cdi_fails_on_a_missing_gpu_and_an_older_driver() -> None:
    r = run("containers.cdi", _node(_spec(1, {})))
    assert r.status == "fail" and "nvidia.com/gpu=1 (GPU 1) is not in the spec" in r.message
    old = run("containers.cdi", _node(_spec(2, {}, version="535.97.03")))
    assert old.status == "fail" and "535.97.03" in old.message and "535.129.03" in old.message


def test_cdi_fails_on_another_vendors_spec_and_skips_a_cut_one() -> None:
    other = parse("cdi-spec", read_corpus("cdi_spec/01_moby_minimal_vendor_spec.txt"))
    r = run("containers.cdi", other)
    assert r.status == "fail" and "spidernet.io/test" in r.message
    cut = parse("cdi-spec", read_corpus("cdi_spec/02_ctk1.17_575_common_edits_cut_before_devices.txt"))
    cut.gpus = gpus(2)
    assert run("containers.cdi", cut).status == "skip"
    assert run("containers.cdi", node(gpus=gpus(2))).status == "skip"
