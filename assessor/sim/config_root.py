"""The configuration files of a simulated node: a directory that stands for its ``/``.

A node whose state is ``node.json`` keeps its files in ``node.json.d/`` beside it (``etc/nccl.conf``,
``etc/modprobe.d/*.conf``, the fabric manager's ``usr/share/nvidia/nvswitch/fabricmanager.cfg``, a
``nvidia-persistenced`` drop-in under ``etc/systemd/system/``). The candidate edits them with ordinary
tools; the simulated tools read them through :func:`read_config`. ``GPULAB_SIM_ROOT`` in the environment
names another directory instead. A node held only in memory (``mock:NAME``) has no root: the simulated
tools then behave as with the shipped defaults.

What the simulated node honours:

- ``/etc/modprobe.d``: ``blacklist NAME`` keeps a module from loading at boot; without the nouveau
  blacklist the boot binds the GPUs to nouveau and the NVIDIA driver does not load.
- ``/etc/nccl.conf`` and ``~/.nccl.conf`` (``NCCL_CONF_FILE``): :func:`nccl_settings`.
- The fabric manager's config must exist for it to start (once its package directory is in the root); the
  config it reads is the one its unit's ``ExecStart`` names (``-c PATH``, a drop-in under
  ``/etc/systemd/system/nvidia-fabricmanager.service.d/`` may name another), and its ``TOPOLOGY_FILE_PATH``
  must hold the board's topology file, or it exits logging ``failed to open fabric topology file PATH``.
- ``--no-persistence-mode`` in a ``nvidia-persistenced.service`` drop-in: the daemon runs without turning
  persistence mode on.

Reads are confined to the root: a path that leaves it (``..``, a symbolic link out) or is not a regular
file reads as absent, and a file is read up to :data:`MAX_CONFIG_BYTES`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from assessor.sim.state import NodeState

ROOT_ENV = "GPULAB_SIM_ROOT"
MAX_CONFIG_BYTES = 1024 * 1024

NCCL_CONF = "/etc/nccl.conf"
MODPROBE_D = "/etc/modprobe.d"
FABRIC_MANAGER_CFG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
PERSISTENCED_DROP_IN = "/etc/systemd/system/nvidia-persistenced.service.d/override.conf"
FABRIC_MANAGER_DROP_IN_DIR = "/etc/systemd/system/nvidia-fabricmanager.service.d"
FABRIC_MANAGER_TOPOLOGY_DIR = "/usr/share/nvidia/nvswitch"  # where the package installs the topology files
# The topology file the fabric manager package ships for each NVSwitch baseboard generation.
FABRIC_MANAGER_TOPOLOGY = {"Ampere": "dgxa100_hgxa100_topology", "Hopper": "dgxh100_hgxh100_topology"}


def root_for_state(state_path: str | os.PathLike[str]) -> Path:
    """The configuration root that belongs to the state file at ``state_path`` (absolute)."""
    p = Path(state_path).absolute()
    return p.with_name(p.name + ".d")


def node_root(state_path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    """The root a tool session uses: ``$GPULAB_SIM_ROOT``, else the state's own when it exists, else None."""
    named = env.get(ROOT_ENV)
    if named:
        return Path(named)
    if state_path is None:
        return None
    root = root_for_state(state_path)
    return root if root.is_dir() else None


def _inside(root: Path, node_path: str) -> Path | None:
    """``root``'s file for the node's absolute ``node_path``; None when it would lead out of the root."""
    parts = [p for p in node_path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    candidate = root.joinpath(*parts)
    try:
        resolved = candidate.resolve(strict=True)
        base = root.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if resolved != base and base not in resolved.parents:
        return None
    return resolved


def read_config(root: Path | None, node_path: str) -> str | None:
    """The text of the node's file ``node_path`` (``/etc/nccl.conf``) under ``root``; None when absent.

    Only regular files inside the root are read (never a FIFO or a device), at most MAX_CONFIG_BYTES.
    """
    if root is None:
        return None
    path = _inside(root, node_path)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")


def list_config(root: Path | None, node_dir: str) -> list[str]:
    """Node paths of the regular ``*.conf`` files in ``node_dir`` under ``root``, sorted (as modprobe reads)."""
    if root is None:
        return []
    directory = _inside(root, node_dir)
    if directory is None or not directory.is_dir():
        return []
    return sorted(
        f"{node_dir.rstrip('/')}/{entry.name}" for entry in directory.iterdir() if entry.name.endswith(".conf")
    )


# ---- what the shipped node has -----------------------------------------------------------------

_NCCL_CONF = """\
# /etc/nccl.conf: NCCL reads NAME=VALUE lines here for every job on this node.
# The environment and ~/.nccl.conf override what is set here.
"""
_BLACKLIST_NOUVEAU = "blacklist nouveau\noptions nouveau modeset=0\n"
_NVIDIA_OPTIONS = "# Options of the NVIDIA kernel module, e.g.\n# options nvidia NVreg_EnableStreamMemOPs=1\n"
# The keys and defaults of the fabricmanager.cfg that the nvidia-fabricmanager package installs.
_FABRIC_MANAGER_CFG = """\
# NVIDIA Fabric Manager configuration file.
LOG_LEVEL=4
LOG_FILE_NAME=/var/log/fabricmanager.log
LOG_APPEND_TO_LOG=1
LOG_FILE_MAX_SIZE=1024
LOG_USE_SYSLOG=0
DAEMONIZE=1
BIND_INTERFACE_IP=127.0.0.1
STARTING_TCP_PORT=16000
FABRIC_MODE=0
FABRIC_MODE_RESTART=0
STATE_FILE_NAME=/tmp/fabricmanager.state
FM_CMD_BIND_INTERFACE=127.0.0.1
FM_CMD_PORT_NUMBER=6666
FM_STAY_RESIDENT_ON_FAILURES=0
ACCESS_LINK_FAILURE_MODE=0
TRUNK_LINK_FAILURE_MODE=0
NVSWITCH_FAILURE_MODE=0
ABORT_CUDA_JOBS_ON_FM_EXIT=1
TOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch
"""


def default_files(state: NodeState) -> dict[str, str]:
    """The configuration files a freshly installed node of this kind has (node path -> text)."""
    files = {
        NCCL_CONF: _NCCL_CONF,
        f"{MODPROBE_D}/blacklist-nouveau.conf": _BLACKLIST_NOUVEAU,
        f"{MODPROBE_D}/nvidia.conf": _NVIDIA_OPTIONS,
    }
    if "nvidia-fabricmanager.service" in state.services:
        files[FABRIC_MANAGER_CFG] = _FABRIC_MANAGER_CFG
    files[NCCL_CONF] = site_nccl_conf(state.nccl_env)
    return files


def site_nccl_conf(env: Mapping[str, str]) -> str:
    """The node's ``/etc/nccl.conf`` as shipped: the header, then the site's NCCL settings (the fixture's)."""
    return _NCCL_CONF + "".join(f"{k}={v}\n" for k, v in env.items() if re.fullmatch(r"[A-Za-z_]\w*", k))


def set_nccl_conf(root: Path, changes: Mapping[str, str | None]) -> None:
    """Set (or, for None, remove) variables in the node's ``/etc/nccl.conf``, keeping its other lines."""
    lines = (read_config(root, NCCL_CONF) or _NCCL_CONF).splitlines()
    kept = [line for line in lines if line.partition("=")[0].strip() not in changes]
    kept += [f"{k}={v}" for k, v in changes.items() if v is not None]
    write_node_file(root, NCCL_CONF, "\n".join(kept) + "\n")


def sync_nccl_conf(root: Path, before: Mapping[str, str], after: Mapping[str, str]) -> None:
    """A change of the state's ``nccl_env`` (a fault, a lab step) made where NCCL reads it: the node's
    ``/etc/nccl.conf``, on a node with files of its own."""
    if not populated(root):
        return
    changed = {k: after.get(k) for k in set(before) | set(after) if before.get(k) != after.get(k)}
    if changed:
        set_nccl_conf(root, changed)


def populated(root: Path | None) -> bool:
    """The root was laid out by gpulab (``sim init``, a lab's reset): its files are the node's whole truth."""
    return root is not None and _inside(root, MODPROBE_D) is not None


def write_node_file(root: Path, node_path: str, text: str) -> Path:
    """Write the node's file ``node_path`` under ``root`` without following any symbolic link.

    A node's files are the candidate's to change, symbolic links included (inside the node, ``ln -s
    /root/.bashrc /etc/nccl.conf``; outside, that link would point at this machine's files). gpulab, writing
    from outside the node (a lab's reset, a fault, the agent), never follows one: a link where a folder should
    be is replaced by the folder, a link where the file should be by a file written beside and renamed into
    place; a regular file is rewritten in place (opened without following links), which a running node sees.
    ``root`` itself must be a real folder (InputError otherwise: someone with access to this machine put a
    link beside the state file).
    """
    import tempfile

    from assessor.errors import InputError

    parts = [p for p in node_path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InputError(f"{node_path}: not a file path on the node")
    if root.is_symlink():
        raise InputError(f"{root}: the node's files are a symbolic link; gpulab writes only into a real folder")
    root.mkdir(parents=True, exist_ok=True)
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        folder.mkdir(exist_ok=True)
    target = folder / parts[-1]
    if target.is_file() and not target.is_symlink():
        # rewritten in place: a running node's overlay keeps showing this inode, a renamed-in file it may not
        try:
            fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            pass  # replaced by a link since the check: fall through to the rename, which replaces the link
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            return target
    fd, tmp = tempfile.mkstemp(prefix=f".{parts[-1]}.", suffix=".gpulab-tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)  # replaces a link itself, never what it points at
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def populate(root: Path, state: NodeState, *, overwrite: bool = False) -> list[Path]:
    """Write the node's default configuration files under ``root``; returns the files written."""
    written = []
    for node_path, text in default_files(state).items():
        target = root.joinpath(*node_path.strip("/").split("/"))
        if os.path.lexists(target) and not overwrite:
            continue
        written.append(write_node_file(root, node_path, text))
    return written


# ---- what the simulated tools honour -----------------------------------------------------------


def _modprobe_lines(root: Path | None) -> list[list[str]]:
    out = []
    for node_path in list_config(root, MODPROBE_D):
        for raw in (read_config(root, node_path) or "").splitlines():
            words = raw.split("#", 1)[0].split()
            if words:
                out.append(words)
    return out


def modprobe_blacklist(root: Path | None) -> set[str]:
    """Modules ``blacklist``-ed in ``/etc/modprobe.d``; without a root, the shipped ``nouveau`` one."""
    if root is None:
        return {"nouveau"}
    return {w[1].replace("-", "_") for w in _modprobe_lines(root) if w[0] == "blacklist" and len(w) > 1}


def modprobe_options(root: Path | None) -> dict[str, list[str]]:
    """``options MODULE KEY=VALUE...`` lines of ``/etc/modprobe.d``, per module."""
    out: dict[str, list[str]] = {}
    for words in _modprobe_lines(root):
        if words[0] == "options" and len(words) > 2:
            out.setdefault(words[1].replace("-", "_"), []).extend(words[2:])
    return out


def fabric_manager_configured(root: Path | None) -> bool:
    """The fabric manager's config file is there.

    Judged only on a root that holds the fabric manager's package directory (``gpulab sim init`` puts it
    there): a root that never had the package's files (a bare test-bed root) does not fail the daemon.
    """
    if root is None or _inside(root, FABRIC_MANAGER_CFG.rsplit("/", 1)[0]) is None:
        return True
    return read_config(root, fabric_manager_config_path(root)) is not None


def drop_in_files(root: Path | None, unit: str) -> list[str]:
    """Node paths of the ``*.conf`` drop-ins of ``unit`` under ``/etc/systemd/system/UNIT.d``, sorted."""
    return list_config(root, f"/etc/systemd/system/{unit}.d")


def fabric_manager_config_path(root: Path | None) -> str:
    """The config file the fabric manager's unit starts it with: the last ``ExecStart=`` of its drop-ins that
    names one (``-c PATH``), else the package's own."""
    path = FABRIC_MANAGER_CFG
    for drop_in in drop_in_files(root, "nvidia-fabricmanager.service"):
        for raw in (read_config(root, drop_in) or "").splitlines():
            key, _, value = raw.strip().partition("=")
            words = value.split()
            if key.strip() == "ExecStart" and "-c" in words[:-1]:
                path = words[words.index("-c") + 1]
    return path


def fabric_manager_error(root: Path | None, state: NodeState) -> str | None:
    """What the fabric manager logs as it exits on its own configuration, or None when it would start.

    A ``TOPOLOGY_FILE_PATH`` without the board's topology file is the fabric manager's
    ``failed to open fabric topology file %s`` (FM_LOG_ERROR and FM_SYSLOG_ERR in its fabric parser, so in
    fabricmanager.log and the journal; reported on HGX H100/H200 in NVIDIA/nvrc#203). Only a root that holds
    the package's directory is judged, as :func:`fabric_manager_configured` does.
    """
    if root is None or _inside(root, FABRIC_MANAGER_TOPOLOGY_DIR) is None:
        return None
    text = read_config(root, fabric_manager_config_path(root))
    if text is None:
        return None  # no config at all: fabric_manager_configured says so
    directory = FABRIC_MANAGER_TOPOLOGY_DIR
    for raw in text.splitlines():
        key, _, value = raw.split("#", 1)[0].strip().partition("=")
        if key.strip() == "TOPOLOGY_FILE_PATH":
            directory = value.strip() or directory
    boards = [FABRIC_MANAGER_TOPOLOGY[g.architecture] for g in state.gpus if g.architecture in FABRIC_MANAGER_TOPOLOGY]
    name = boards[0] if boards else None
    if name is None:
        return None
    topology = f"{directory.rstrip('/')}/{name}"
    if directory.rstrip("/") == FABRIC_MANAGER_TOPOLOGY_DIR or read_config(root, topology) is not None:
        return None
    return f"failed to open fabric topology file {topology}"


def persistenced_sets_persistence(root: Path | None) -> bool:
    """False when a drop-in starts nvidia-persistenced with ``--no-persistence-mode``."""
    text = read_config(root, PERSISTENCED_DROP_IN) or ""
    return "--no-persistence-mode" not in text


def parse_nccl_conf(text: str) -> dict[str, str]:
    """``NAME=VALUE`` lines of an nccl.conf; ``#`` comments, blank and malformed lines are skipped, as NCCL does."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        name = name.strip()
        if name and " " not in name:
            out[name] = value.strip()
    return out


def nccl_settings(state: NodeState, env: Mapping[str, str], root: Path | None = None) -> dict[str, str]:
    """The NCCL variables a job on this node runs with, as NCCL documents it ("Environment Variables").

    Lowest to highest precedence: on a node without files of its own (in memory, or a bare root), the
    state's ``nccl_env``; then
    ``/etc/nccl.conf`` (where a node made by gpulab keeps its site settings, the fixture's ``nccl_env``),
    then the user's ``~/.nccl.conf`` (``$HOME`` from ``env``; none without it, as NCCL reads no user file
    when ``HOME`` is unset: a lab grader's job is a user's, not root's), or
    instead of both files the one ``NCCL_CONF_FILE`` names; then the process environment, which always
    wins (NCCL sets a variable from a file only when the environment does not have it). Files are read
    under ``root`` (default: ``$GPULAB_SIM_ROOT`` of ``env``).

    For the simulated nccl-tests (:mod:`assessor.sim.tools.nccl`): ``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME``,
    ``NCCL_DEBUG`` and the rest come from here, so an edit of the node's nccl.conf changes what
    ``all_reduce_perf`` does and prints.
    """
    if root is None and env.get(ROOT_ENV):
        root = Path(env[ROOT_ENV])
    out = {} if populated(root) else dict(state.nccl_env)
    conf_file = env.get("NCCL_CONF_FILE")
    if conf_file:
        out.update(parse_nccl_conf(read_config(root, conf_file) or ""))
    else:
        out.update(parse_nccl_conf(read_config(root, NCCL_CONF) or ""))
        home = env.get("HOME")
        if home:
            out.update(parse_nccl_conf(read_config(root, f"{home.rstrip('/')}/.nccl.conf") or ""))
    out.update({k: v for k, v in env.items() if k.startswith("NCCL_")})
    return out
