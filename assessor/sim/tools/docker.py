"""``docker`` on the simulated node: ``version``, ``info`` and ``run`` answered from the running daemon's view.

No image is pulled and nothing is isolated: ``docker run`` resolves the GPUs a container would get exactly as
the engine and the NVIDIA Container Toolkit do (:mod:`assessor.sim.containers`), then runs the container's
command when it is ``nvidia-smi`` (the simulated one, restricted to those GPUs and MIG devices), ``echo``,
``true`` or ``ls /dev``. Anything else is a command the image does not have.
"""

from __future__ import annotations

from assessor.sim import containers as ctr
from assessor.sim.mig_caps import gpu_minor, mig_devices
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool

NO_DAEMON = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
_RUN_HELP = "\n\nRun 'docker run --help' for more information\n"
_SHIM = "failed to create task for container: failed to create shim task: OCI runtime create failed: "
_BUILD = "980b856"
_CONTAINERD = ("1.7.27", "05044ec0a9a75232cad458027ca83437aae3f4da")
_RUNC = ("1.2.5", "v1.2.5-0-g59923ef")
_INIT = "de40ad0"
# docker run options that take a value (the rest used here are flags).
_VALUE_OPTIONS = {
    "--gpus", "--runtime", "--device", "-e", "--env", "--name", "-v", "--volume", "--ipc", "--shm-size",
    "--ulimit", "-w", "--workdir", "--entrypoint", "-u", "--user", "--network", "--net", "--cap-add",
    "--security-opt", "--pull", "--platform", "-p", "--publish", "--mount", "--cpus", "-m", "--memory",
}  # fmt: skip


def main(args: list[str], session: Session) -> ToolResult:
    state = session.read()  # the CLI is on every node (DGX OS ships it); the engine only where a lab put it
    if args in (["--version"], ["-v"]):
        return ToolResult(0, f"Docker version {ctr.DOCKER_VERSION}, build {_BUILD}\n")
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return ToolResult(0, "\nUsage:  docker [OPTIONS] COMMAND\n\nA self-sufficient runtime for containers\n")
    if words[0] == "version":
        return version(state)
    if words[0] == "info" or words[:2] == ["system", "info"]:
        return info(state)
    if words[0] == "run" or words[:2] == ["container", "run"]:
        start = args.index("run") + 1
        return run(args[start:], session)
    if words[0] == "ps":
        if ctr.daemon_view(state) is None:
            return ToolResult(1, "", NO_DAEMON + "\n")
        return ToolResult(0, "CONTAINER ID   IMAGE     COMMAND   CREATED   STATUS    PORTS     NAMES\n")
    return ToolResult(1, "", f"docker {words[0]}: not simulated on this node (docker version, info and run are)\n")


def _client_version() -> list[str]:
    return [
        "Client: Docker Engine - Community",
        f" Version:           {ctr.DOCKER_VERSION}",
        " API version:       1.51",
        " Go version:        go1.24.5",
        f" Git commit:        {_BUILD}",
        " Built:             Fri Jul 25 11:34:09 2025",
        " OS/Arch:           linux/amd64",
        " Context:           default",
    ]


def version(state: NodeState) -> ToolResult:
    """``docker version``: the client, and the engine's components when the daemon answers."""
    lines = _client_version()
    if ctr.daemon_view(state) is None:
        return ToolResult(1, "\n".join(lines) + "\n", NO_DAEMON + "\n")
    lines += [
        "",
        "Server: Docker Engine - Community",
        " Engine:",
        f"  Version:          {ctr.DOCKER_VERSION}",
        "  API version:      1.51 (minimum version 1.24)",
        "  Go version:       go1.24.5",
        "  Git commit:       bea959c",
        "  Built:            Fri Jul 25 11:34:09 2025",
        "  OS/Arch:          linux/amd64",
        "  Experimental:     false",
        " containerd:",
        f"  Version:          {_CONTAINERD[0]}",
        f"  GitCommit:        {_CONTAINERD[1]}",
        " runc:",
        f"  Version:          {_RUNC[0]}",
        f"  GitCommit:        {_RUNC[1]}",
        " docker-init:",
        "  Version:          0.19.0",
        f"  GitCommit:        {_INIT}",
    ]
    return ToolResult(0, "\n".join(lines) + "\n")


def info(state: NodeState) -> ToolResult:
    """``docker info``: the runtimes the daemon loaded, its default runtime and its CDI spec directories."""
    from assessor.sim.tools.system import machine

    client = [
        "Client: Docker Engine - Community",
        f" Version:    {ctr.DOCKER_VERSION}",
        " Context:    default",
        " Debug Mode: false",
        "",
    ]
    view = ctr.daemon_view(state)
    if view is None:
        out = "\n".join([*client, "Server:"]) + "\n"
        return ToolResult(1, out, f"ERROR: {NO_DAEMON}\nerrors pretty printing info\n")
    kernel = (state.uname or "").split()
    lines = [
        *client,
        "Server:",
        " Containers: 0",
        "  Running: 0",
        "  Paused: 0",
        "  Stopped: 0",
        " Images: 1",
        f" Server Version: {ctr.DOCKER_VERSION}",
        " Storage Driver: overlay2",
        "  Backing Filesystem: extfs",
        "  Supports d_type: true",
        "  Using metacopy: false",
        "  Native Overlay Diff: true",
        "  userxattr: false",
        " Logging Driver: json-file",
        " Cgroup Driver: systemd",
        " Cgroup Version: 2",
        " Plugins:",
        "  Volume: local",
        "  Network: bridge host ipvlan macvlan null overlay",
        "  Log: awslogs fluentd gcplogs gelf journald json-file local splunk syslog",
    ]
    if view.cdi:
        lines += [" CDI spec directories:", *(f"  {d}" for d in view.cdi_spec_dirs)]
    lines += [
        " Swarm: inactive",
        f" Runtimes: {' '.join(sorted(view.runtimes))}",
        f" Default Runtime: {view.default_runtime}",
        " Init Binary: docker-init",
        f" containerd version: {_CONTAINERD[1]}",
        f" runc version: {_RUNC[1]}",
        f" init version: {_INIT}",
        " Security Options:",
        "  apparmor",
        "  seccomp",
        "   Profile: builtin",
        "  cgroupns",
        f" Kernel Version: {kernel[2] if len(kernel) > 2 else '5.15.0-91-generic'}",
        f" Operating System: {state.os_release.get('PRETTY_NAME', 'Ubuntu 22.04.3 LTS')}",
        " OSType: linux",
        f" Architecture: {machine(state)}",
        f" Name: {state.host}",
        " Docker Root Dir: /var/lib/docker",
        " Debug Mode: false",
        " Experimental: false",
        " Insecure Registries:",
        "  ::1/128",
        "  127.0.0.0/8",
        " Live Restore Enabled: false",
    ]
    return ToolResult(0, "\n".join(lines) + "\n")


# ---- docker run ------------------------------------------------------------------------------


def _fail(message: str, code: int = 125) -> ToolResult:
    return ToolResult(code, "", f"docker: {message.rstrip('.')}.{_RUN_HELP}")


def _parse_run(args: list[str]) -> tuple[dict[str, list[str]], list[str]] | str:
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg == "-":
            return opts, args[i:]
        name, eq, value = arg.partition("=")
        if name in _VALUE_OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    return f"flag needs an argument: '{name.lstrip('-')}' in {name}"
                i += 1
                value = args[i]
            opts.setdefault(name, []).append(value)
        else:
            opts.setdefault(name, []).append("true")
        i += 1
    return opts, []


def _gpus_request(state: NodeState, request: str) -> ctr.Injection:
    """``--gpus`` through the toolkit's hook (NVML's view): ``all``, a count, or ``device=I,J`` (index, UUID, G:M)."""
    from assessor.sim.tools.nvidia_smi_query import mig_uuid

    request = request.strip().strip('"').strip("'")
    gpus = sorted((g for g in state.gpus if not g.lost), key=lambda g: g.index)
    if request == "all":
        return ctr.Injection(gpus=tuple(g.index for g in gpus))
    if request.isdigit():
        wanted = int(request)
        if wanted > len(gpus):
            return ctr.Injection(
                error=f"{_SHIM}could not apply required modification: requested {wanted} GPUs, {len(gpus)} available"
            )
        return ctr.Injection(gpus=tuple(g.index for g in gpus[:wanted]))
    ids = request.split("=", 1)[1] if request.startswith("device=") else ""
    chosen: list[int] = []
    migs: list[tuple[int, int, int]] = []
    for ident in (i.strip() for i in ids.split(",") if i.strip()):
        found = False
        for gpu in gpus:
            if ident in (str(gpu.index), gpu.uuid):
                chosen.append(gpu.index)
                found = True
            for n, (gi, ci) in enumerate(mig_devices(gpu)):
                if ident in (f"{gpu.index}:{n}", mig_uuid(gpu, gi, ci)):
                    migs.append((gpu.index, gi, ci))
                    found = True
        if not found:
            return ctr.Injection(
                error=f"{_SHIM}runc create failed: unable to start container process: error during container init: "
                "error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
                f"nvidia-container-cli: device error: {ident}: unknown device: unknown"
            )
    if not chosen and not migs:
        return ctr.Injection(error=f'invalid argument "{request}" for "--gpus" flag: unexpected key \'{request}\'')
    return ctr.Injection(gpus=tuple(chosen), migs=tuple(migs))


def run(args: list[str], session: Session) -> ToolResult:
    """``docker run [--rm] [--runtime=R] [--gpus G] [--device nvidia.com/gpu=N] IMAGE [CMD...]``."""
    parsed = _parse_run(args)
    if isinstance(parsed, str):
        return ToolResult(125, "", f"{parsed}\nSee 'docker run --help'.\n")
    opts, rest = parsed
    if not rest:
        return ToolResult(125, "", "\"docker run\" requires at least 1 argument.\nSee 'docker run --help'.\n")
    state = session.read()
    view = ctr.daemon_view(state)
    if view is None:
        return _fail(NO_DAEMON)
    runtime = (opts.get("--runtime") or [view.default_runtime])[-1]
    if runtime not in view.runtimes:
        return _fail(f"Error response from daemon: unknown or invalid runtime name: {runtime}")
    injected = ctr.Injection()
    env = dict(e.partition("=")[::2] for e in opts.get("-e", []) + opts.get("--env", []))
    visible = env.get("NVIDIA_VISIBLE_DEVICES", "")
    if runtime == "nvidia" and visible and visible not in ("void", "none") and not opts.get("--gpus"):
        # the NVIDIA runtime injects what NVIDIA_VISIBLE_DEVICES names through its hook (the legacy path)
        got = _gpus_request(state, visible if visible == "all" else f"device={visible}")
        if got.error:
            return _fail(f"Error response from daemon: {got.error}")
        injected = got
    for request in opts.get("--gpus", []):
        if not view.gpu_driver:
            return _fail('Error response from daemon: could not select device driver "" with capabilities: [[gpu]]')
        if not state.driver.loaded or not state.module_loaded("nvidia"):
            return _fail(
                f"Error response from daemon: {_SHIM}runc create failed: unable to start container process: error "
                "during container init: error running prestart hook #0: exit status 1, stdout: , stderr: "
                "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown",
                127,
            )
        got = _gpus_request(state, request)
        if got.error:
            return _fail(f"Error response from daemon: {got.error}")
        injected = ctr.Injection(gpus=injected.gpus + got.gpus, migs=injected.migs + got.migs)
    cdi_names = [d for d in opts.get("--device", []) if "=" in d and "/" in d.split("=", 1)[0]]
    if cdi_names:
        if not view.cdi:
            return _fail(
                "Error response from daemon: error gathering device information while adding custom device "
                f'"{cdi_names[0]}": no such file or directory'
            )
        got = ctr.inject(state, session.root(), cdi_names, view.cdi_spec_dirs)
        if got.error:
            return _fail(f"Error response from daemon: {got.error}")
        injected = ctr.Injection(gpus=injected.gpus + got.gpus, migs=injected.migs + got.migs)
    return _container(state, injected, rest[1:])


def _container(state: NodeState, injected: ctr.Injection, command: list[str]) -> ToolResult:
    """The container's command: nvidia-smi sees the injected devices only."""
    if not command:
        return ToolResult(0)
    program = command[0].rsplit("/", 1)[-1]
    has_gpu = bool(injected.gpus or injected.migs)
    if program == "nvidia-smi" and has_gpu:
        seen = ctr.visible_state(state, injected)
        return run_tool(["nvidia-smi", *command[1:]], Session(state=seen))
    if program == "echo":
        return ToolResult(0, " ".join(command[1:]) + "\n")
    if program == "true":
        return ToolResult(0)
    if program == "ls" and command[1:] == ["/dev"]:
        seen = ctr.visible_state(state, injected)
        names = ["console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr"]
        names += ["stdin", "stdout", "tty", "urandom", "zero"]
        if has_gpu:
            names += ["nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl"]
            names += [f"nvidia{gpu_minor(g)}" for g in seen.gpus]
            if injected.migs:
                names.append("nvidia-caps")
        return ToolResult(0, "\n".join(sorted(names)) + "\n")
    return ToolResult(
        127,
        "",
        f"docker: Error response from daemon: {_SHIM}runc create failed: unable to start container process: error "
        f'during container init: exec: "{command[0]}": executable file not found in $PATH: unknown{_RUN_HELP}',
    )
