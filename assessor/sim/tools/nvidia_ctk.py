"""``nvidia-ctk`` (NVIDIA Container Toolkit CLI, v1.17): ``--version``, ``runtime configure``, ``cdi generate``
and ``cdi list`` on the simulated node's files (:mod:`assessor.sim.containers` has the model).

Its messages are logrus lines on stderr as a terminal shows them (``INFO[0000] ...``); an error ends the
command with ``ERRO[0000] ...`` and exit 1, as the real CLI's ``main`` prints what a subcommand returned.
"""

from __future__ import annotations

import posixpath

from assessor.sim import containers as ctr
from assessor.sim.tools import Session, ToolResult

_USAGE = (
    "NAME:\n   NVIDIA Container Toolkit CLI - Tools to configure the NVIDIA Container Toolkit\n\n"
    "USAGE:\n   nvidia-ctk [global options] command [command options]\n\n"
    "COMMANDS:\n   hook     A collection of hooks that may be injected into an OCI spec\n"
    "   runtime  A collection of runtime-related utilities for the NVIDIA Container Toolkit\n"
    "   info     Provide information about the system\n"
    "   cdi      Provide tools for interacting with Container Device Interface specifications\n"
    "   system   A collection of system-related utilities for the NVIDIA Container Toolkit\n"
    "   config   Interact with the NVIDIA Container Toolkit configuration\n"
    "   help, h  Shows a list of commands or help for one command\n"
)
RUNTIMES = {"docker": ctr.DAEMON_JSON, "containerd": ctr.CONTAINERD_TOML, "crio": "/etc/crio/crio.conf"}


def _log(level: str, message: str) -> str:
    """One logrus line as a terminal shows it: the message padded to 44 columns, then a space."""
    return f"{level}[0000] {message:<44} \n"


def _info(*messages: str) -> str:
    seen: list[str] = []
    for m in messages:
        if m not in seen:  # each file is selected once, however many devices name it
            seen.append(m)
    return "".join(_log("INFO", m) for m in seen)


def _error(message: str) -> ToolResult:
    return ToolResult(1, "", _log("ERRO", message))


def _options(args: list[str], takes_value: set[str]) -> tuple[dict[str, str], list[str]] | str:
    """``--name=value``, ``--name value`` and bare flags; an unknown option is urfave/cli's message."""
    out: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.lstrip("-").partition("=")
            if name in takes_value and not eq:
                if i + 1 >= len(args):
                    return f"flag needs an argument: {arg}"
                i += 1
                value = args[i]
            elif name not in takes_value and eq:
                return f"invalid boolean flag {name}: parse error"
            out[name] = value if (eq or name in takes_value) else "true"
        else:
            rest.append(arg)
        i += 1
    return out, rest


def main(args: list[str], session: Session) -> ToolResult:
    if args in (["--version"], ["-v"]):
        return ToolResult(
            0, f"NVIDIA Container Toolkit CLI version {ctr.TOOLKIT_VERSION}\ncommit: {ctr.TOOLKIT_COMMIT}\n"
        )
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] in ("help", "h"):
        return ToolResult(0, _USAGE)
    if words[:2] == ["runtime", "configure"]:
        return runtime_configure(args[args.index("configure") + 1 :], session)
    if words[:2] == ["cdi", "generate"]:
        return cdi_generate(args[args.index("generate") + 1 :], session)
    if words[:2] == ["cdi", "list"]:
        return cdi_list(args[args.index("list") + 1 :], session)
    return ToolResult(3, _USAGE, f"No help topic for '{words[-1]}'\n")


def _writable(session: Session, path: str) -> str | None:
    """Why nvidia-ctk cannot write ``path`` on this node (None when it can)."""
    if session.euid != 0:
        return f"open {path}: permission denied"
    if session.root() is None:
        return f"open {path}: read-only file system"
    return None


def runtime_configure(args: list[str], session: Session) -> ToolResult:
    """``nvidia-ctk runtime configure [--runtime=docker|containerd] [--config=PATH] [--set-as-default] [--dry-run]``."""
    from assessor.sim.config_root import read_config, write_node_file

    parsed = _options(args, {"runtime", "config", "nvidia-runtime-name"})
    if isinstance(parsed, str):
        return _error(parsed)
    opts, _ = parsed
    runtime = opts.get("runtime", "docker")
    if runtime not in RUNTIMES:
        return _error(f"unrecognized runtime '{runtime}'")
    if runtime == "crio":
        return _error("unable to load config for runtime crio: the simulated node has no CRI-O")
    path = opts.get("config") or RUNTIMES[runtime]
    name = opts.get("nvidia-runtime-name", "nvidia")
    default = "set-as-default" in opts or "nvidia-set-as-default" in opts
    root = session.root()
    before = read_config(root, path)
    try:
        if runtime == "docker":
            text = ctr.configure_docker(before, name=name, default=default)
        else:
            text = ctr.configure_containerd(before, name=name, default=default)
    except ctr.ConfigError as exc:
        return _error(f"unable to load config for runtime {runtime}: unable to read config: {exc}")
    if "dry-run" in opts:
        return ToolResult(0, text + ("" if text.endswith("\n") else "\n"))
    why = _writable(session, path)
    if why is not None:
        return _error(f"unable to flush config: unable to open {path} for writing: {why}")
    assert root is not None
    write_node_file(root, path, text)
    return ToolResult(
        0, "", _info(f"Wrote updated config to {path}", f"It is recommended that {runtime} daemon be restarted.")
    )


def cdi_generate(args: list[str], session: Session) -> ToolResult:
    """``nvidia-ctk cdi generate [--output=PATH] [--format=yaml|json]``: to stdout without ``--output``."""
    from assessor.sim.config_root import write_node_file

    parsed = _options(args, {"output", "format", "device-name-strategy", "mode", "driver-root", "vendor", "class"})
    if isinstance(parsed, str):
        return _error(parsed)
    opts, _ = parsed
    output = opts.get("output", "")
    fmt = opts.get("format", "")
    implied = "json" if output.endswith(".json") else "yaml"
    if fmt and fmt not in ("yaml", "json"):
        return _error(f"invalid output format: {fmt}")
    notes: list[str] = []
    if output and fmt and fmt != implied:
        notes.append(
            _log(
                "WARN",
                f'Requested output format "{fmt}" does not match format implied by output file name: "{implied}"',
            )
        )
    fmt = fmt or implied
    strategies = tuple(dict.fromkeys(s.strip() for s in opts.get("device-name-strategy", "index,uuid").split(",")))
    unknown = [s for s in strategies if s not in ("index", "uuid")]
    if unknown:
        return _error(f"failed to create device namer: invalid device name strategy: {unknown[0]}")
    state = session.read()
    if not state.driver.loaded or not state.module_loaded("nvidia"):
        return ToolResult(
            1,
            "",
            _info("Auto-detected mode as 'nvml'")
            + _log(
                "ERRO",
                "failed to generate CDI spec: failed to create device CDI specs: failed to initialize NVML: "
                "ERROR_DRIVER_NOT_LOADED",
            ),
        )
    if state.driver.version != state.driver.kernel_module_version:
        return _error(
            "failed to generate CDI spec: failed to create device CDI specs: failed to initialize NVML: "
            "ERROR_LIB_RM_VERSION_MISMATCH"
        )
    from assessor.sim.tools.nvidia_smi_query import mig_uuid

    spec = ctr.generate_spec(state, mig_uuid, strategies)
    libdir = ctr.library_dir()
    log = [f"Using {libdir}/libnvidia-ml.so.{state.driver.version}", "Auto-detected mode as 'nvml'"]
    for device in spec["devices"]:
        if device["name"] == "all":
            continue
        for node in device["containerEdits"]["deviceNodes"]:
            log.append(f"Selecting {node['path']} as {node['path']}")
    log.append(f"Using driver version {state.driver.version}")
    log += [f"Selecting {p} as {p}" for p in ctr.CTL_NODES]
    log += [f"Selecting {m['hostPath']} as {m['hostPath']}" for m in spec["containerEdits"]["mounts"]]
    text = ctr.render_spec(spec, fmt)
    if not output:
        log.append(f"Generated CDI spec with version {ctr.CDI_VERSION}")
        return ToolResult(0, text, _info(*log) + "".join(notes))
    if not output.startswith("/"):
        output = posixpath.normpath(posixpath.join(session.env.get("PWD") or "/root", output))
    why = _writable(session, output)
    if why is not None:
        return ToolResult(1, "", _info(*log) + _log("ERRO", f"failed to save CDI spec: failed to write spec: {why}"))
    root = session.root()
    assert root is not None
    write_node_file(root, output, text)
    log.append(f"Generated CDI spec with version {ctr.CDI_VERSION}")
    return ToolResult(0, "", _info(*log) + "".join(notes))


def cdi_list(args: list[str], session: Session) -> ToolResult:
    """``nvidia-ctk cdi list [--spec-dir=DIR]...``: the qualified names of every device in the spec directories."""
    dirs = [a.split("=", 1)[1] for a in args if a.startswith("--spec-dir=")]
    reg = ctr.registry(session.root(), dirs or ctr.CDI_DIRS)
    err = ""
    if reg.errors:
        err += _log("WARN", "The following registry errors were reported:")
        err += "".join(_log("WARN", f"{path}: {why}") for path, why in sorted(reg.errors.items()))
    names = sorted(reg.devices)
    err += _info(f"Found {len(names)} CDI devices")
    return ToolResult(0, "".join(f"{n}\n" for n in names), err)
