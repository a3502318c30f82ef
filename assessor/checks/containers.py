"""Container checks: docker's running daemon offers the NVIDIA runtime; the CDI spec matches the node's GPUs."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import CdiSpec, NodeFacts

CONFIGURE_HINT = (
    "nvidia-ctk runtime configure --runtime=docker (or add runtimes.nvidia with path nvidia-container-runtime to "
    "/etc/docker/daemon.json), then systemctl restart docker: the daemon reads daemon.json only when it starts"
)
GENERATE_HINT = (
    "regenerate the spec after every MIG change and driver update: nvidia-ctk cdi generate "
    "--output=/etc/cdi/nvidia.yaml (docker reads /etc/cdi and /var/run/cdi)"
)


@check(
    "containers.runtime",
    title="docker offers the NVIDIA runtime",
    facts=("container_engine",),
    params=(
        Param("runtime", "str", "nvidia", "the runtime name the NVIDIA Container Toolkit registers"),
        Param("default", "bool", False, "the runtime must also be docker's default runtime"),
    ),
    doc=(
        "Reads docker info: the runtimes the running docker daemon offers and its default runtime. The NVIDIA "
        "Container Toolkit's runtime (`nvidia`) is there only when /etc/docker/daemon.json names it and the "
        "daemon was started after that edit; until then `docker run --runtime=nvidia` is an unknown runtime. A "
        "daemon that does not answer fails too."
    ),
    remedy=CONFIGURE_HINT,
)
def runtime(facts: NodeFacts, params: dict[str, Any]) -> Result:
    engine = need(facts, "container_engine")
    wanted = str(params["runtime"])
    if engine.error or (not engine.runtimes and engine.server_version is None):
        return result(
            "containers.runtime",
            "fail",
            f"the docker daemon does not answer: {engine.error or 'docker info has no server section'}",
            observed=engine.error or "no server section",
            expected="a running docker daemon",
            hint="systemctl start docker; if it fails, journalctl -u docker says why (a daemon.json it cannot read)",
        )
    if wanted not in engine.runtimes and facts.partial.get("container_engine"):
        raise MissingFacts(f"no runtimes in the docker info: {facts.partial['container_engine']}")
    if wanted not in engine.runtimes:
        return result(
            "containers.runtime",
            "fail",
            f"docker's running daemon offers the runtimes {', '.join(engine.runtimes) or 'none'}: no {wanted}",
            observed=engine.runtimes,
            expected=f"{wanted} among the runtimes",
            hint=CONFIGURE_HINT,
        )
    if params["default"] and engine.default_runtime != wanted:
        return result(
            "containers.runtime",
            "fail",
            f"docker's default runtime is {engine.default_runtime}, not {wanted}",
            observed=engine.default_runtime,
            expected=wanted,
            hint="nvidia-ctk runtime configure --runtime=docker --set-as-default, then systemctl restart docker",
        )
    return result(
        "containers.runtime",
        "pass",
        f"docker offers the {wanted} runtime (default runtime {engine.default_runtime})",
        observed=engine.runtimes,
    )


def gi_access_cap(gpu_minor: int, gi_id: int) -> int:
    """The ``/dev/nvidia-caps`` minor of a GPU instance's access file (the driver's mig-minors table: 1 config,
    2 monitor, then per GPU 15 GPU instances of 9 minors, the GI's access then its 8 compute instances)."""
    return 3 + gpu_minor * 135 + gi_id * 9


_NVIDIA_NODE = re.compile(r"^/dev/nvidia(\d+)$")


def _gpu_minor(spec: CdiSpec, kind: str, index: int) -> int:
    """The minor number of GPU ``index``: its device node in the spec (its index when the spec lacks it)."""
    for device in spec.devices:
        if device.name == f"{kind}={index}":
            for node in device.device_nodes:
                found = _NVIDIA_NODE.match(node)
                if found:
                    return int(found.group(1))
    return index


def _mig_problems(facts: NodeFacts, spec: CdiSpec, kind: str, names: dict[str, list[str]]) -> list[str]:
    """What the spec gets wrong about the node's MIG devices (each GPU's ``G:M`` devices)."""
    problems: list[str] = []
    by_gpu = facts.mig_compute_gis or {}
    mig_mode = {g.index: bool(g.mig_mode_current) for g in facts.gpus or []}
    listed: dict[int, set[int]] = {}
    for name in names:
        found = re.fullmatch(rf"{re.escape(kind)}=(\d+):(\d+)", name)
        if found:
            listed.setdefault(int(found.group(1)), set()).add(int(found.group(2)))
    for gpu in sorted(set(listed) | {g for g, on in mig_mode.items() if on}):
        gis = list(by_gpu.get(gpu, []))
        if mig_mode.get(gpu) and gpu not in by_gpu:
            continue  # MIG on, but the snapshot does not say which MIG devices: nothing to compare
        have = listed.get(gpu, set())
        for n, gi_id in enumerate(gis):
            name = f"{kind}={gpu}:{n}"
            if n not in have:
                problems.append(f"{name} (GPU {gpu}'s MIG device {n}) is not in the spec")
                continue
            cap = f"/dev/nvidia-caps/nvidia-cap{gi_access_cap(_gpu_minor(spec, kind, gpu), gi_id)}"
            if cap not in names[name]:
                problems.append(
                    f"{name} injects the device nodes of a GPU instance that is gone (not GI {gi_id}'s {cap})"
                )
        for n in sorted(have - set(range(len(gis)))):
            problems.append(f"{kind}={gpu}:{n} names a MIG device GPU {gpu} does not have")
    return problems


@check(
    "containers.cdi",
    title="CDI spec matches the node",
    facts=("cdi_spec", "gpus", "mig_compute_gis", "driver"),
    params=(Param("kind", "str", "nvidia.com/gpu", "the CDI kind of the NVIDIA GPU devices"),),
    doc=(
        "Reads the CDI spec (/etc/cdi/nvidia.yaml) the container engines resolve `--device nvidia.com/gpu=...` "
        "through, and compares it with the node: every GPU under its index or its UUID (nvidia-ctk writes both unless "
        "told one naming strategy), every MIG device as GPU:MIG with the device nodes of the GPU instance it is now, "
        "`all`, and the driver libraries of the "
        "installed driver version. A spec generated before a MIG change or a driver update fails, naming what "
        "is missing or stale."
    ),
    remedy=GENERATE_HINT,
)
def cdi(facts: NodeFacts, params: dict[str, Any]) -> Result:
    spec: CdiSpec = need(facts, "cdi_spec")
    if facts.partial.get("cdi_spec"):
        raise MissingFacts(f"no CDI devices to compare: {facts.partial['cdi_spec']}")
    kind = str(params["kind"])
    if spec.kind != kind:
        return result(
            "containers.cdi",
            "fail",
            f"the CDI spec read defines {spec.kind} devices, not {kind}",
            observed=spec.kind,
            expected=kind,
            hint=GENERATE_HINT,
        )
    gpus = need(facts, "gpus")
    names = {d.name: d.device_nodes for d in spec.devices}
    problems: list[str] = []
    # nvidia-ctk names each device by index and by UUID unless told one strategy: either name will do
    by_index = any(re.fullmatch(rf"{re.escape(kind)}=\d+", n) for n in names)
    for gpu in sorted(gpus, key=lambda g: g.index):
        idents = [f"{kind}={gpu.index}"] + ([f"{kind}={gpu.uuid}"] if gpu.uuid else [])
        if not any(i in names for i in idents):
            problems.append(f"{idents[0]} (GPU {gpu.index}) is not in the spec")
    if f"{kind}=all" not in names:
        problems.append(f"{kind}=all is not in the spec")
    if by_index:
        problems += _mig_problems(facts, spec, kind, names)
    driver = facts.driver.version if facts.driver is not None else None
    if driver and spec.driver_version and spec.driver_version != driver:
        problems.append(f"it mounts the libraries of driver {spec.driver_version}; the node runs {driver}")
    if problems:
        return result(
            "containers.cdi",
            "fail",
            f"the CDI spec is stale: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
            observed=problems,
            expected="a spec generated for the node as it is now",
            hint=GENERATE_HINT,
        )
    migs = sum(1 for n in names if re.fullmatch(rf"{re.escape(kind)}=\d+:\d+", n))
    return result(
        "containers.cdi",
        "pass",
        f"the CDI spec names all {len(gpus)} GPUs and {migs} MIG devices, for driver {spec.driver_version or driver}",
        observed=sorted(names),
    )
