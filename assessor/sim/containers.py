"""The NVIDIA Container Toolkit and the docker engine on a simulated node: pure functions of its state and files.

What the real parts do, and what this module reproduces (sources: NVIDIA/nvidia-container-toolkit v1.17,
moby's ``daemon/nvidia_linux.go`` and its CDI support, the CDI specification):

- ``nvidia-ctk runtime configure --runtime=docker`` loads ``/etc/docker/daemon.json`` (an empty config when
  there is none), sets ``runtimes.nvidia`` to ``{"args": [], "path": "nvidia-container-runtime"}`` (and
  ``default-runtime`` with ``--set-as-default``), keeps every other key, and writes the file back with
  Go's ``json.MarshalIndent(cfg, "", "    ")``: keys sorted, four spaces, no newline at the end.
- dockerd reads ``daemon.json`` once, when it starts (:func:`docker_started`); a file it cannot read as JSON
  keeps it from starting. It registers the ``nvidia`` device driver that ``--gpus`` needs only if the toolkit's
  ``nvidia-container-runtime-hook`` is there at that start, and knows a ``--runtime`` only if that config
  names it. So an edit or a toolkit installed after the daemon started counts from the next start on.
- ``nvidia-ctk cdi generate`` writes a CDI spec (kind ``nvidia.com/gpu``) from the GPUs the driver sees: one
  device per GPU under its index and under its UUID, one per MIG device as ``GPU:MIG`` (the MIG device's
  index on its GPU) and under its ``MIG-`` UUID, and ``all``; common edits carry the control device nodes
  and the driver's libraries, named with the driver's version.
- The docker engine (28.x) resolves ``--device nvidia.com/gpu=NAME`` through the specs in ``/etc/cdi`` and
  ``/var/run/cdi``: an unknown name is ``unresolvable CDI devices``, a device node the spec names that the
  node no longer has fails the injection (``failed to stat CDI host device``), and a library it mounts that
  the driver no longer ships fails the container's start in runc.

MIG device nodes are ``/dev/nvidia-caps/nvidia-capN``, N from the driver's ``mig-minors`` table: 1 config,
2 monitor, then per GPU 15 GPU instances of 9 minors each (the GI's access, then its 8 compute instances).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.sim.mig_caps import device_files, gpu_minor, mig_devices
from assessor.sim.state import GpuState, NodeState

MigNamer = Callable[[GpuState, int, int], str]
DAEMON_JSON = "/etc/docker/daemon.json"
CONTAINERD_TOML = "/etc/containerd/config.toml"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
CDI_KIND = "nvidia.com/gpu"
CDI_VERSION = "0.5.0"
TOOLKIT_VERSION = "1.17.8"
TOOLKIT_COMMIT = "f202b80a9b9d0db00d9b1d73c0128c8962c55f4d"
DOCKER_VERSION = "28.3.3"
DOCKER_UNIT = "docker.service"
CONTAINERD_UNIT = "containerd.service"
NVIDIA_RUNTIME_EXE = "nvidia-container-runtime"
HOOK_PATH = "/usr/bin/nvidia-cdi-hook"
CTL_NODES = ("/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl")
# The driver's user-space libraries a spec mounts (lib + ".so." + driver version), the utilities and
# sockets beside them; what nvidia-ctk finds of the 'compute' and 'utility' capabilities on a data-centre node.
DRIVER_LIBRARIES = (
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-cfg.so",
    "libnvidia-gpucomp.so",
    "libnvidia-ml.so",
    "libnvidia-nvvm.so",
    "libnvidia-opencl.so",
    "libnvidia-ptxjitcompiler.so",
)
DRIVER_BINARIES = (
    "/usr/bin/nvidia-cuda-mps-control",
    "/usr/bin/nvidia-cuda-mps-server",
    "/usr/bin/nvidia-debugdump",
    "/usr/bin/nvidia-persistenced",
    "/usr/bin/nvidia-smi",
)
PERSISTENCED_SOCKET = "/run/nvidia-persistenced/socket"
MOUNT_OPTIONS = ("ro", "nosuid", "nodev", "bind")
# The daemon.json the node's docker package leaves (the site's logging settings, no NVIDIA runtime).
SITE_DAEMON_JSON = '{\n    "log-driver": "json-file",\n    "log-opts": {\n        "max-size": "100m"\n    }\n}\n'


def library_dir() -> str:
    """Where the driver's libraries are (Debian/Ubuntu multiarch), as the node's NVML library is laid out."""
    import os

    return f"/usr/lib/{os.uname().machine}-linux-gnu"


# ---- docker's daemon.json --------------------------------------------------------------------


class ConfigError(ValueError):
    """A config file the daemon (or nvidia-ctk) cannot read; the message is the tool's own."""


def load_daemon_json(text: str | None) -> dict[str, Any]:
    """daemon.json as a mapping; {} for no file or an empty one; ConfigError for what is not a JSON object."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(_go_json_error(exc)) from None
    if not isinstance(data, dict):
        raise ConfigError("json: cannot unmarshal into Go value of type map[string]interface {}")
    return data


# Python's JSON error -> what Go's encoding/json says there (dockerd and nvidia-ctk are Go programs).
_GO_JSON = {
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ',' delimiter": "after object key:value pair",
    "Expecting ':' delimiter": "after object key",
    "Expecting value": "looking for beginning of value",
    "Extra data": "after top-level value",
}


def _go_json_error(exc: json.JSONDecodeError) -> str:
    if exc.pos >= len(exc.doc.rstrip()):
        return "unexpected end of JSON input"
    where = _GO_JSON.get(exc.msg)
    if where is None:
        return f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    return f"invalid character {exc.doc[exc.pos]!r} {where}"


def go_json(data: Any) -> str:
    """``json.MarshalIndent(data, "", "    ")`` of a map: sorted keys, four spaces, no final newline."""
    return json.dumps(data, indent=4, sort_keys=True, ensure_ascii=False)


def configure_docker(
    text: str | None, *, name: str = "nvidia", path: str = NVIDIA_RUNTIME_EXE, default: bool = False
) -> str:
    """daemon.json after ``nvidia-ctk runtime configure --runtime=docker [--set-as-default]``."""
    config = load_daemon_json(text)
    runtimes = config.get("runtimes")
    if not isinstance(runtimes, dict):
        runtimes = {}
    runtimes[name] = {"args": [], "path": path}
    config["runtimes"] = runtimes
    if default:
        config["default-runtime"] = name
    return go_json(config)


def configure_containerd(text: str | None, *, name: str = "nvidia", default: bool = False) -> str:
    """containerd's config.toml after ``nvidia-ctk runtime configure --runtime=containerd``: the CRI plugin's
    ``nvidia`` runtime (runc v2 shim, BinaryName the toolkit's runtime), kept beside what the file had."""
    base = text if text and text.strip() else "version = 2\n"
    section = f'[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}]'
    if section in base:
        return base
    runtime_path = f"/usr/bin/{NVIDIA_RUNTIME_EXE}"
    added = (
        f"\n{section}\n"
        "  privileged_without_host_devices = false\n"
        '  runtime_engine = ""\n'
        '  runtime_root = ""\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        f"\n{section[:-1]}.options]\n"
        f'  BinaryName = "{runtime_path}"\n'
    )
    if default:
        added += f'\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "{name}"\n'
    return base.rstrip("\n") + "\n" + added


@dataclass(frozen=True)
class DaemonView:
    """What the running docker daemon knows, from the config it read at its start."""

    runtimes: tuple[str, ...]  # runc first, then the config's, sorted
    default_runtime: str
    gpu_driver: bool  # `--gpus` has its device driver (the toolkit's hook was found at the start)
    cdi: bool
    cdi_spec_dirs: tuple[str, ...]


def daemon_view(state: NodeState) -> DaemonView | None:
    """The running daemon's view; None when docker is not installed or not running."""
    service = state.services.get(DOCKER_UNIT)
    if state.docker is None or service is None or service.active_state != "active":
        return None
    try:
        config = load_daemon_json(state.docker.config)
    except ConfigError:
        config = {}  # cannot happen for a running daemon: docker_started refuses such a file
    listed = config.get("runtimes")
    runtimes: dict[str, Any] = listed if isinstance(listed, dict) else {}
    named = sorted(str(k) for k in runtimes if k != "runc")
    default = config.get("default-runtime")
    flags = config.get("features")
    features: dict[str, Any] = flags if isinstance(flags, dict) else {}
    dirs = config.get("cdi-spec-dirs")
    spec_dirs = tuple(str(d) for d in dirs) if isinstance(dirs, list) and dirs else CDI_DIRS
    return DaemonView(
        runtimes=("io.containerd.runc.v2", "runc", *named),
        default_runtime=str(default) if isinstance(default, str) and default else "runc",
        gpu_driver=state.docker.nvidia_hook,
        cdi=features.get("cdi", True) is not False,
        cdi_spec_dirs=spec_dirs,
    )


def daemon_json_error(root: Path | None) -> str | None:
    """What dockerd logs as it exits on the node's daemon.json; None when it can read the file (or has none)."""
    from assessor.sim.config_root import populated, read_config

    if not populated(root):
        return None
    try:
        load_daemon_json(read_config(root, DAEMON_JSON))
    except ConfigError as exc:
        return f"unable to configure the Docker daemon with file {DAEMON_JSON}: {exc}"
    return None


def docker_journal(state: NodeState, ok: bool, root: Path | None) -> list[str]:
    """What dockerd logs in the unit's journal as it starts (``journalctl -u docker``)."""
    if state.docker is None:
        return []
    error = None if ok else daemon_json_error(root)
    if error is not None:
        return [error]
    return [
        "Starting up",
        f"Docker daemon commit=bea959c containerd-snapshotter=false version={DOCKER_VERSION}",
        "Daemon has completed initialization",
        "API listen on /run/docker.sock",
    ]


def docker_started(state: NodeState, root: Path | None) -> str | None:
    """dockerd starts: it reads daemon.json (None when it did) or exits on it (the error it logs)."""
    from assessor.sim.config_root import populated, read_config

    if state.docker is None:
        return None
    error = daemon_json_error(root)
    if error is not None:
        return error
    if populated(root):
        state.docker.config = read_config(root, DAEMON_JSON)
    state.docker.nvidia_hook = True  # the toolkit is installed on the node: its hook is found from now on
    return None


# ---- the node's device files ----------------------------------------------------------------


def existing_paths(state: NodeState) -> set[str]:
    """Device files and driver files the node has now: what a CDI spec may name."""
    if not state.driver.loaded:
        return set()
    out = set(CTL_NODES)
    for gpu in state.gpus:
        if not gpu.lost:
            out.add(f"/dev/nvidia{gpu_minor(gpu)}")
        for gi_id, ci_id in mig_devices(gpu):
            out.update(device_files(gpu, gi_id, ci_id)[1:])
    libdir = library_dir()
    out.update(f"{libdir}/{lib}.{state.driver.version}" for lib in DRIVER_LIBRARIES)
    out.update(DRIVER_BINARIES)
    out.add(PERSISTENCED_SOCKET)
    return out


# ---- the CDI spec ----------------------------------------------------------------------------


def _edits(nodes: Iterable[str]) -> dict[str, Any]:
    return {"deviceNodes": [{"path": p} for p in nodes]}


def generate_spec(
    state: NodeState, mig_uuid: MigNamer, strategies: tuple[str, ...] = ("index", "uuid")
) -> dict[str, Any]:
    """The CDI spec ``nvidia-ctk cdi generate`` writes for the node as it is now: each device under every name
    of ``strategies`` (``--device-name-strategy``: ``index`` 0 and 0:1, ``uuid`` GPU-... and MIG-...);
    ``mig_uuid`` names a MIG device as nvidia-smi does (GPU, GI id, CI id)."""
    version = state.driver.version
    libdir = library_dir()
    gpus = [g for g in sorted(state.gpus, key=lambda g: g.index) if not g.lost]
    devices: list[dict[str, Any]] = []
    for gpu in gpus:
        nodes = [f"/dev/nvidia{gpu_minor(gpu)}"]
        names = {"index": str(gpu.index), "uuid": gpu.uuid}
        devices += [{"containerEdits": _edits(nodes), "name": names[s]} for s in strategies]
    for gpu in gpus:
        for n, (gi_id, ci_id) in enumerate(mig_devices(gpu)):
            nodes = device_files(gpu, gi_id, ci_id)
            names = {"index": f"{gpu.index}:{n}", "uuid": mig_uuid(gpu, gi_id, ci_id)}
            devices += [{"containerEdits": _edits(nodes), "name": names[s]} for s in strategies]
    every: list[str] = []
    for gpu in gpus:
        every.append(f"/dev/nvidia{gpu_minor(gpu)}")
        for gi_id, ci_id in mig_devices(gpu):
            every += [p for p in device_files(gpu, gi_id, ci_id)[1:] if p not in every]
    devices.append({"containerEdits": _edits(every), "name": "all"})
    mounts = [
        {"containerPath": PERSISTENCED_SOCKET, "hostPath": PERSISTENCED_SOCKET, "options": [*MOUNT_OPTIONS, "noexec"]}
    ]
    mounts += [{"containerPath": b, "hostPath": b, "options": list(MOUNT_OPTIONS)} for b in DRIVER_BINARIES]
    for lib in DRIVER_LIBRARIES:
        path = f"{libdir}/{lib}.{version}"
        mounts.append({"containerPath": path, "hostPath": path, "options": list(MOUNT_OPTIONS)})
    hook_env = ["NVIDIA_CTK_DEBUG=false"]
    hooks = [
        {
            "args": ["nvidia-cdi-hook", "create-symlinks", "--link", f"libcuda.so.1::{libdir}/libcuda.so"],
            "env": hook_env,
            "hookName": "createContainer",
            "path": HOOK_PATH,
        },
        {
            "args": ["nvidia-cdi-hook", "enable-cuda-compat", f"--host-driver-version={version}"],
            "env": hook_env,
            "hookName": "createContainer",
            "path": HOOK_PATH,
        },
        {
            "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", libdir],
            "env": hook_env,
            "hookName": "createContainer",
            "path": HOOK_PATH,
        },
    ]
    common = {
        "deviceNodes": [{"path": p} for p in CTL_NODES],
        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
        "hooks": hooks,
        "mounts": mounts,
    }
    return {"cdiVersion": CDI_VERSION, "containerEdits": common, "devices": devices, "kind": CDI_KIND}


_INDICATORS = tuple("[]{}*&!|>%@`#,?'\"")


def _scalar(value: Any) -> str:
    """A scalar as go-yaml writes it: plain unless it would read back as something else (``"0"``, ``"0:1"``)."""
    import yaml

    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    plain = (
        text
        and text == text.strip()
        and not text.startswith(_INDICATORS)
        and not text.startswith("- ")
        and ": " not in text
        and " #" not in text
        and not text.endswith(":")
    )
    if plain:
        try:
            plain = yaml.safe_load(text) == text
        except yaml.YAMLError:
            plain = False
    return text if plain else json.dumps(text)


def _yaml(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key in sorted(value):
            item = value[key]
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                lines += _yaml(item, indent + (0 if isinstance(item, list) else 2))
            elif isinstance(item, (dict, list)):
                lines.append(f"{pad}{key}: {'{}' if isinstance(item, dict) else '[]'}")
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = _yaml(item, indent + 2)
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines += inner[1:]
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    return lines


def render_spec(spec: dict[str, Any], fmt: str = "yaml") -> str:
    """The spec as nvidia-ctk writes it: YAML (``---``, keys sorted, lists flush with their key) or JSON."""
    if fmt == "json":
        return json.dumps(spec, separators=(",", ":"), sort_keys=True) + "\n"
    return "---\n" + "\n".join(_yaml(spec, 0)) + "\n"


# ---- reading the specs the node has ----------------------------------------------------------


@dataclass
class CdiRegistry:
    """The CDI devices the node's spec directories define: qualified name -> (spec file, its edits)."""

    devices: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    common: dict[str, dict[str, Any]] = field(default_factory=dict)  # spec file -> its common edits
    errors: dict[str, str] = field(default_factory=dict)  # spec file -> why it was not read


def spec_files(root: Path | None, directories: Iterable[str] = CDI_DIRS) -> list[str]:
    """Node paths of the ``*.yaml``/``*.json`` files in the CDI spec directories, directory by directory."""
    if root is None:
        return []
    out: list[str] = []
    for directory in directories:
        folder = root.joinpath(*[p for p in directory.split("/") if p])
        try:
            if folder.is_symlink() or not folder.is_dir():
                continue
            names = sorted(e.name for e in folder.iterdir() if e.suffix in (".yaml", ".json"))
        except OSError:
            continue
        out += [f"{directory.rstrip('/')}/{name}" for name in names]
    return out


def load_spec(text: str) -> dict[str, Any]:
    """A CDI spec document (YAML or JSON); ValueError for what is not one."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"failed to parse CDI spec: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not isinstance(data.get("devices"), list):
        raise ValueError("invalid CDI Spec: missing kind or devices")
    return data


def registry(root: Path | None, directories: Iterable[str] = CDI_DIRS) -> CdiRegistry:
    """Every device of every readable spec; a later directory's device of the same name wins (as in the CDI cache)."""
    from assessor.sim.config_root import read_config

    reg = CdiRegistry()
    for path in spec_files(root, directories):
        text = read_config(root, path)
        if text is None:
            continue
        try:
            spec = load_spec(text)
        except ValueError as exc:
            reg.errors[path] = str(exc)
            continue
        kind = spec["kind"]
        reg.common[path] = spec.get("containerEdits") or {}
        for device in spec["devices"]:
            if isinstance(device, dict) and isinstance(device.get("name"), (str, int)):
                reg.devices[f"{kind}={device['name']}"] = (path, device.get("containerEdits") or {})
    return reg


@dataclass(frozen=True)
class Injection:
    """What a container gets from its CDI devices: GPUs (index on the node) and MIG devices, or why it fails."""

    gpus: tuple[int, ...] = ()
    migs: tuple[tuple[int, int, int], ...] = ()  # (GPU index, GI id, CI id)
    error: str | None = None


def _node_paths(edits: dict[str, Any]) -> list[str]:
    nodes = edits.get("deviceNodes") or []
    return [str(n.get("path")) for n in nodes if isinstance(n, dict) and n.get("path")]


def _mount_paths(edits: dict[str, Any]) -> list[str]:
    mounts = edits.get("mounts") or []
    return [str(m.get("hostPath")) for m in mounts if isinstance(m, dict) and m.get("hostPath")]


def inject(state: NodeState, root: Path | None, names: list[str], spec_dirs: Iterable[str] = CDI_DIRS) -> Injection:
    """Resolve ``--device`` CDI names as docker's CDI cache does, then what the edits name on the node."""
    reg = registry(root, spec_dirs)
    missing = [n for n in names if n not in reg.devices]
    if missing:
        return Injection(error=f"CDI device injection failed: unresolvable CDI devices {', '.join(missing)}")
    exists = existing_paths(state)
    nodes: list[str] = []
    mounts: list[str] = []
    for name in names:
        path, edits = reg.devices[name]
        nodes += [p for p in _node_paths(edits) + _node_paths(reg.common.get(path, {})) if p not in nodes]
        mounts += [p for p in _mount_paths(reg.common.get(path, {})) if p not in mounts]
    for node in nodes:
        if node not in exists:
            return Injection(
                error="CDI device injection failed: failed to inject devices: "
                f'failed to stat CDI host device "{node}": no such file or directory'
            )
    for mount in mounts:
        if mount not in exists:
            return Injection(
                error="failed to create task for container: failed to create shim task: OCI runtime create failed: "
                "runc create failed: unable to start container process: error during container init: "
                f'error mounting "{mount}" to rootfs at "{mount}": stat {mount}: no such file or directory: unknown'
            )
    return _devices_of(state, nodes)


def _devices_of(state: NodeState, nodes: list[str]) -> Injection:
    gpus: list[int] = []
    migs: list[tuple[int, int, int]] = []
    for gpu in sorted(state.gpus, key=lambda g: g.index):
        if f"/dev/nvidia{gpu_minor(gpu)}" not in nodes:
            continue
        slices = [(gi, ci) for gi, ci in mig_devices(gpu) if device_files(gpu, gi, ci)[2] in nodes]
        if slices:
            migs += [(gpu.index, gi, ci) for gi, ci in slices]
        else:
            gpus.append(gpu.index)
    return Injection(gpus=tuple(gpus), migs=tuple(migs))


def visible_state(state: NodeState, injection: Injection) -> NodeState:
    """The node as a container sees it: only the injected GPUs (renumbered from 0) and MIG devices."""
    import copy

    seen = copy.deepcopy(state)
    keep: list[GpuState] = []
    mig_of: dict[int, set[tuple[int, int]]] = {}
    for g, gi, ci in injection.migs:
        mig_of.setdefault(g, set()).add((gi, ci))
    for gpu in sorted(seen.gpus, key=lambda g: g.index):
        if gpu.index in injection.gpus:
            keep.append(gpu)
        elif gpu.index in mig_of:
            wanted = mig_of[gpu.index]
            for instance in gpu.mig_instances:
                instance.compute_instances = [
                    c for c in instance.compute_instances if (instance.gi_id, c.ci_id) in wanted
                ]
            gpu.mig_instances = [i for i in gpu.mig_instances if i.compute_instances]
            keep.append(gpu)
    for new_index, gpu in enumerate(keep):
        gpu.index = new_index
        gpu.processes = []  # a container sees no other container's processes
    seen.gpus = keep
    return seen
