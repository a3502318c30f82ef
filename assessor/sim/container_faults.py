"""Faults of the container stack: docker without the NVIDIA runtime, a CDI spec older than the node.

:data:`FAULTS` lists them as the fields of :class:`assessor.sim.faults.Fault` (name, description, the check it
makes fail, apply, revert, the cause on disk, its cure); ``faults`` registers them. Each installs the docker
engine and the NVIDIA Container Toolkit on the node (``docker.service`` and ``containerd.service`` running,
the toolkit's binaries there), then sets what the real failure leaves behind, in the state (what the running
daemon read) and in the node's files (``/etc/docker/daemon.json``, ``/etc/cdi/nvidia.yaml``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.sim import containers as ctr
from assessor.sim.state import DockerDaemonState, NodeState, ServiceState
from assessor.sim.tools.nvidia_smi_query import mig_uuid

# The config.toml the containerd.io package ships: the CRI plugin off (docker does not use it).
CONTAINERD_PACKAGE_TOML = (
    "#   Copyright 2018-2022 Docker Inc.\n\n"
    '#   Licensed under the Apache License, Version 2.0 (the "License");\n'
    "#   you may not use this file except in compliance with the License.\n\n"
    'disabled_plugins = ["cri"]\n'
)
# The MIG layout GPU 0 had when the stale spec was generated (the whole GPU, profile 0: 7g.80gb on an H100) and
# the one it has now (two of profile 9: 3g.40gb on an H100, 3g.20gb on an A100 40GB).
MIG_BEFORE = "0"
MIG_NOW = "9,9"


def install_docker(state: NodeState, *, configured: bool) -> None:
    """docker and containerd installed and running; the daemon read the site's daemon.json (with the NVIDIA
    runtime when ``configured``) and found the toolkit's hook at its start when ``configured``."""
    for unit in (ctr.CONTAINERD_UNIT, ctr.DOCKER_UNIT):
        state.services.setdefault(unit, ServiceState())
    config = ctr.configure_docker(ctr.SITE_DAEMON_JSON) if configured else ctr.SITE_DAEMON_JSON
    state.docker = DockerDaemonState(config=config, nvidia_hook=configured)


def _write_docker_files(root: Path, *, configured: bool) -> None:
    from assessor.sim.config_root import write_node_file

    text = ctr.configure_docker(ctr.SITE_DAEMON_JSON) if configured else ctr.SITE_DAEMON_JSON
    write_node_file(root, ctr.DAEMON_JSON, text)
    write_node_file(root, ctr.CONTAINERD_TOML, CONTAINERD_PACKAGE_TOML)


# ---- docker-runtime-missing ------------------------------------------------------------------


def _runtime_missing(state: NodeState) -> None:
    # The toolkit was installed after dockerd started, and nobody configured or restarted docker since.
    install_docker(state, configured=False)


def _runtime_configured(state: NodeState) -> None:
    install_docker(state, configured=True)


def _runtime_missing_cause(state: NodeState, root: Path) -> None:
    _write_docker_files(root, configured=False)


def _runtime_configured_cure(state: NodeState, root: Path) -> None:
    _write_docker_files(root, configured=True)


# ---- cdi-spec-stale (a MIG change) -----------------------------------------------------------


def _mig(state: NodeState, gpu: int, *commands: list[str]) -> None:
    from assessor.sim.tools import Session, run_tool

    session = Session(state=state)
    for argv in commands:
        result = run_tool(
            ["nvidia-smi", "mig", "-i", str(gpu), *argv]
            if argv[0] != "-mig"
            else ["nvidia-smi", "-i", str(gpu), *argv],
            session,
        )
        if result.exit_code != 0:
            raise InputError(
                f"{state.host}: GPU {gpu}: nvidia-smi {' '.join(argv)}: {result.stdout}{result.stderr}".strip()
            )


def _layout(state: NodeState, gpu: int, profiles: str) -> None:
    """GPU ``gpu`` in MIG mode with exactly ``profiles`` (each GPU instance with its default compute instance)."""
    try:
        target = state.gpu(gpu)
    except IndexError:
        raise InputError(f"no GPU {gpu} on {state.host}") from None
    if not target.mig_supported:
        raise InputError(f"GPU {gpu} of {state.host} ({target.name}) does not support MIG")
    if not target.mig_mode_current:
        _mig(state, gpu, ["-mig", "1"])
    if target.mig_instances:
        _mig(state, gpu, ["-dci"], ["-dgi"])
    _mig(state, gpu, ["-cgi", profiles, "-C"])


def _gpu_option(gpu: Any) -> int:
    try:
        return 0 if gpu is None else int(gpu)
    except (TypeError, ValueError):
        raise InputError(f"option gpu must be a number, not {gpu!r}") from None


def _spec_stale(state: NodeState, gpu: Any = None) -> None:
    install_docker(state, configured=True)
    _layout(state, _gpu_option(gpu), MIG_NOW)


def _spec_kept(state: NodeState, gpu: Any = None) -> None:
    """Nothing in the state: the new MIG layout is what the node should have; the spec is what was wrong."""
    install_docker(state, configured=True)


def _spec_stale_cause(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file

    gpus = [g.index for g in state.gpus if g.mig_mode_current and g.mig_instances]
    before = copy.deepcopy(state)
    for index in gpus:
        _layout(before, index, MIG_BEFORE)
    _write_docker_files(root, configured=True)
    write_node_file(root, "/etc/cdi/nvidia.yaml", ctr.render_spec(ctr.generate_spec(before, mig_uuid)))


def _spec_fresh(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file

    write_node_file(root, "/etc/cdi/nvidia.yaml", ctr.render_spec(ctr.generate_spec(state, mig_uuid)))


# ---- cdi-spec-old-driver ---------------------------------------------------------------------


def _older(version: str) -> str:
    """An earlier release of the same branch: 565.57.01 -> 565.25.01."""
    parts = version.split(".")
    if len(parts) >= 2 and parts[1].isdigit() and int(parts[1]) > 32:
        parts[1] = str(int(parts[1]) - 32)
        return ".".join(parts)
    return f"{int(parts[0]) - 15}.{'.'.join(parts[1:])}" if parts[0].isdigit() else version + ".0"


def _old_driver(state: NodeState) -> None:
    install_docker(state, configured=True)


def _old_driver_cause(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file

    before = copy.deepcopy(state)
    before.driver.version = before.driver.kernel_module_version = _older(state.driver.version)
    _write_docker_files(root, configured=True)
    write_node_file(root, "/etc/cdi/nvidia.yaml", ctr.render_spec(ctr.generate_spec(before, mig_uuid)))


FAULTS: tuple[tuple[Any, ...], ...] = (
    (
        "docker-runtime-missing",
        "docker runs without the NVIDIA runtime: the toolkit was installed after dockerd started and "
        "/etc/docker/daemon.json names no nvidia runtime (docker run --gpus: could not select device driver)",
        "containers.runtime",
        _runtime_missing,
        _runtime_configured,
        _runtime_missing_cause,
        _runtime_configured_cure,
    ),
    (
        "cdi-spec-stale",
        "/etc/cdi/nvidia.yaml was generated before GPU 0 went from one MIG device to two 3g ones: its MIG devices "
        "name GPU instances that are gone and miss the new ones (option gpu)",
        "containers.cdi",
        _spec_stale,
        _spec_kept,
        _spec_stale_cause,
        _spec_fresh,
    ),
    (
        "cdi-spec-old-driver",
        "/etc/cdi/nvidia.yaml was generated under the previous driver: it mounts libraries of a version the "
        "node no longer has",
        "containers.cdi",
        _old_driver,
        _old_driver,
        _old_driver_cause,
        _spec_fresh,
    ),
)
