"""``nvidia-smi mig ...``: list, create and destroy GPU and compute instances on a simulated node.

The MIG rules, messages and listings are :mod:`assessor.sim.mig`'s; this module parses the command line,
picks the GPUs (``-i``), checks what nvidia-smi checks before it asks the driver (MIG mode on, root for
changes) and moves instances between the node state and the engine (:func:`to_placed`, :func:`to_state`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assessor.sim import gpu_memory
from assessor.sim import mig as engine
from assessor.sim.state import ComputeInstanceState, GpuInstanceState, GpuState, NodeState
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.nvidia_smi_common import (
    EXIT_NO_PERMISSION,
    EXIT_NOT_FOUND,
    EXIT_OK,
    NO_DEVICES,
    NVML_NO_PERMISSION,
    NoSuchGpu,
    driver_failure,
    result,
    select_gpus,
    usage_error,
    visible,
)

NO_MIG_SUPPORTED = "No MIG-supported devices found."
NO_MIG_ENABLED = "No MIG-enabled devices found."

_LISTINGS = {
    "-lgip": "lgip",
    "--list-gpu-instance-profiles": "lgip",
    "-lgipp": "lgipp",
    "--list-gpu-instance-possible-placements": "lgipp",
    "-lgi": "lgi",
    "--list-gpu-instances": "lgi",
    "-lcip": "lcip",
    "--list-compute-instance-profiles": "lcip",
    "-lci": "lci",
    "--list-compute-instances": "lci",
}
_CHANGES = {
    "-cgi": "cgi",
    "--create-gpu-instance": "cgi",
    "-cci": "cci",
    "--create-compute-instance": "cci",
    "-dci": "dci",
    "--destroy-compute-instance": "dci",
    "-dgi": "dgi",
    "--destroy-gpu-instance": "dgi",
}
# nvidia-smi mig -h (R535+): the option list nvidia-smi prints, in its order.
HELP = """
    mig -- Multi Instance GPU management.

    Usage: nvidia-smi mig [options]

    Options include:
    [-h | --help]: Display help information
    [-i | --id]: Enumeration index, PCI bus ID or UUID. Provide comma
                 separated values for more than one device
    [-gi | --gpu-instance-id]: GPU instance ID. Provide comma separated
                               values for more than one GPU instance
    [-ci | --compute-instance-id]: Compute instance ID. Provide comma
                                   separated values for more than one
                                   compute instance
    [-lgip | --list-gpu-instance-profiles]: List supported GPU instance
                                            profiles. Option -i can be
                                            used to restrict the command
                                            to run on a specific GPU.
    [-lgipp | --list-gpu-instance-possible-placements]: List possible
                                            GPU instance placements in the
                                            following format, {Start}:Size.
                                            Option -i can be used to
                                            restrict the command to run on
                                            a specific GPU.
    [-C | --default-compute-instance]: Create compute instance with
                                       the default profile when used
                                       with the option to create a GPU
                                       instance (-cgi).
    [-cgi | --create-gpu-instance]: Create GPU instances for the given
                                    profile tuples. A profile tuple
                                    consists of a profile name or ID and
                                    an optional placement specifier,
                                    which consists of a colon and a
                                    placement start index. Provide
                                    comma separated values for more
                                    than one profile tuple. Option -i
                                    can be used to restrict the command
                                    to run on a specific GPU.
    [-dgi | --destroy-gpu-instance]: Destroy GPU instances. Options -i
                                     and -gi can be used individually or
                                     combined to restrict the command to
                                     run on a specific GPU or GPU
                                     instance.
    [-lgi | --list-gpu-instances]: List GPU instances. Option -i can be
                                   used to restrict the command to run
                                   on a specific GPU.
    [-lcip | --list-compute-instance-profiles]: List supported compute
                                   instance profiles. Options -i and -gi
                                   can be used individually or combined
                                   to restrict the command to run on a
                                   specific GPU or GPU instance.
    [-cci | --create-compute-instance]: Create compute instance for the
                                   given profile names or IDs. Provide
                                   comma separated values for more than
                                   one profile. If no profile name or ID
                                   is given, then the default compute
                                   instance profile ID will be used.
                                   Options -i and -gi can be used
                                   individually or combined to restrict
                                   the command to run on a specific GPU
                                   or GPU instance.
    [-dci | --destroy-compute-instance]: Destroy compute instances.
                                   Options -i, -gi and -ci can be used
                                   individually or combined to restrict
                                   the command to run on a specific GPU
                                   or GPU instance or compute instance.
    [-lci | --list-compute-instances]: List compute instances. Options
                                   -i and -gi can be used individually
                                   or combined to restrict the command
                                   to run on a specific GPU or GPU
                                   instance.

"""

_TAKES_LIST = {"cgi": True, "cci": False}  # -cgi needs its list; -cci's is optional (default profile)


@dataclass
class MigArgs:
    """A parsed ``nvidia-smi mig`` command line."""

    command: str | None = None  # lgip, lgipp, lgi, lcip, lci, cgi, cci, dci, dgi
    profiles: list[str] = field(default_factory=list)
    ids: str | None = None  # -i
    gi_ids: list[int] | None = None  # -gi
    ci_ids: list[int] | None = None  # -ci
    default_ci: bool = False  # -C


def _ints(value: str) -> list[int] | None:
    parts = [p.strip() for p in value.split(",")]
    return [int(p) for p in parts] if all(p.isdigit() for p in parts) else None


def parse_args(args: list[str]) -> MigArgs | None:
    """The ``mig`` options, or None when nvidia-smi would answer with its usage error."""
    parsed = MigArgs()
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        nxt = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
        step = 1 if eq else 2
        if arg in _LISTINGS or name in _CHANGES:
            if parsed.command is not None:
                return None
            parsed.command = _LISTINGS.get(arg) or _CHANGES[name]
            if parsed.command in _TAKES_LIST and nxt is not None and (eq or not nxt.startswith("-")):
                parsed.profiles = [p for p in nxt.split(",")]
                i += step
                continue
            if parsed.command == "cgi":
                return None  # -cgi without its profile list
            i += 1
            continue
        if name in ("-i", "--id") and nxt is not None:
            parsed.ids = nxt
        elif name in ("-gi", "--gpu-instance-id") and nxt is not None:
            parsed.gi_ids = _ints(nxt)
            if parsed.gi_ids is None:
                return None
        elif name in ("-ci", "--compute-instance-id") and nxt is not None:
            parsed.ci_ids = _ints(nxt)
            if parsed.ci_ids is None:
                return None
        elif arg in ("-C", "--default-compute-instance"):
            parsed.default_ci = True
            i += 1
            continue
        else:
            return None
        i += step
    if parsed.command is None or (parsed.default_ci and parsed.command != "cgi"):
        return None
    return parsed


# ---------------------------------------------------------------- state <-> engine


def to_placed(gpu: GpuState) -> list[engine.Placed]:
    """A GPU's instances as the MIG engine's :class:`~assessor.sim.mig.Placed`."""
    return [
        engine.Placed(
            gi.gi_id,
            gi.profile_id,
            gi.name,
            gi.start,
            gi.size,
            [engine.ComputeInstance(c.ci_id, c.profile_id, c.name, c.start, c.size) for c in gi.compute_instances],
        )
        for gi in gpu.mig_instances
    ]


def to_state(placed: list[engine.Placed]) -> list[GpuInstanceState]:
    """The engine's instances in the node state's shape."""
    return [
        GpuInstanceState(
            gi_id=p.gi_id,
            profile_id=p.profile_id,
            name=p.name,
            start=p.start,
            size=p.size,
            compute_instances=[
                ComputeInstanceState(c.ci_id, c.profile_id, c.name, c.start, c.size) for c in p.compute_instances
            ],
        )
        for p in placed
    ]


def _mig_gpu(gpu: GpuState) -> engine.MigGpu:
    return engine.MigGpu(gpu.index, gpu.name, to_placed(gpu))


@dataclass(frozen=True)
class DeviceResources:
    """What the default table's "MIG devices" box shows for one compute instance."""

    memory_mib: int
    bar1_mib: int
    sm: int
    ce: int
    enc: int
    dec: int
    ofa: int
    jpeg: int
    used_mib: int = 0  # never 0 on a real MIG device: see assessor.sim.gpu_memory


def device_resources(gpu: GpuState, gi: GpuInstanceState, ci: ComputeInstanceState) -> DeviceResources:
    """Memory, BAR1 and engines of a MIG device, from its GI and CI profiles."""
    try:
        profile = next(p for p in engine.profiles_for(gpu.name) if p.id == gi.profile_id)
        ci_profile = next(c for c in engine.ci_profiles_for(gpu.name, gi.profile_id) if c.id == ci.profile_id)
    except (engine.MigUnsupported, engine.MigError, StopIteration):
        return DeviceResources(0, 0, 0, 0, 0, 0, 0, 0)
    from assessor.sim.tools.nvidia_smi_query import bar1_total_mib

    # BAR1 is split evenly over the eight memory slots, less 1 MiB: H100 NVL (128 GiB BAR1) 65535 MiB for a
    # 4-slot GI, A100 40GB (64 GiB) 32767 (corpus nvml/nvidia_smi_mig_devices_H100_NVL.txt, ..._A100_40GB_mig_535).
    return DeviceResources(
        memory_mib=gpu_memory.mig_device_total_mib(gpu, profile),
        used_mib=gpu_memory.mig_device_used_mib(gpu, gi),
        bar1_mib=gi.size * (bar1_total_mib(gpu) // 8) - 1,
        sm=ci_profile.sm,
        ce=profile.ce,
        enc=profile.enc,
        dec=profile.dec,
        ofa=profile.ofa,
        jpeg=profile.jpeg,
    )


# ---------------------------------------------------------------- the command


def mig(args: list[str], session: Session) -> ToolResult:
    """Run ``nvidia-smi mig ARGS``."""
    if "-h" in args or "--help" in args:
        return ToolResult(EXIT_OK, HELP)
    parsed = parse_args(args)
    if parsed is None:
        return usage_error()
    assert parsed.command is not None
    if parsed.command in _LISTINGS.values():
        return _listing(parsed, session.read())
    with session.update() as state:
        return _change(parsed, state, session.euid)


def _targets(parsed: MigArgs, state: NodeState) -> list[GpuState] | ToolResult:
    """The MIG-enabled GPUs the command applies to, or nvidia-smi's answer when there are none."""
    failure = driver_failure(state)
    if failure is not None:
        return failure
    try:
        chosen = visible(select_gpus(state, parsed.ids))
    except NoSuchGpu:
        return result(EXIT_NOT_FOUND, [NO_DEVICES])
    if not any(g.mig_supported for g in chosen):
        return result(EXIT_NOT_FOUND, [NO_MIG_SUPPORTED])
    enabled = [g for g in chosen if g.mig_supported and g.mig_mode_current]
    if not enabled:
        return result(EXIT_NOT_FOUND, [NO_MIG_ENABLED])
    return enabled


def _listing(parsed: MigArgs, state: NodeState) -> ToolResult:
    targets = _targets(parsed, state)
    if isinstance(targets, ToolResult):
        return targets
    style = engine.style_for_driver(state.driver.version)
    gpus = [_mig_gpu(g) for g in targets]
    if parsed.command == "lgip":
        out = engine.render_lgip(gpus, style)
    elif parsed.command == "lgipp":
        out = engine.render_lgipp(gpus, style)
    elif parsed.command == "lgi":
        out = engine.render_lgi(gpus, style)
    elif parsed.command == "lci":
        out = engine.render_lci(gpus, parsed.gi_ids, style)
    else:
        out = engine.render_lcip(gpus, parsed.gi_ids)
    # The "nothing here" answers carry NVML's Not Found (exit 6 by nvidia-smi's documented codes).
    code = EXIT_NOT_FOUND if out.startswith(("No GPU instances found", "No compute instances found")) else EXIT_OK
    return ToolResult(code, out)


def _refuse_non_root(parsed: MigArgs, gpu: GpuState) -> ToolResult:
    reason = NVML_NO_PERMISSION
    if parsed.command == "cgi":
        first = f"Unable to create a GPU instance on GPU {gpu.index:2d} using profile {parsed.profiles[0]}: {reason}"
        summary = f"Failed to create GPU instances: {reason}"
    elif parsed.command == "cci":
        first = f"Unable to create a compute instance on GPU {gpu.index:2d}: {reason}"
        summary = f"Failed to create compute instances: {reason}"
    elif parsed.command == "dci":
        first = f"Unable to destroy compute instances on GPU {gpu.index:2d}: {reason}"
        summary = f"Failed to destroy compute instances: {reason}"
    else:
        first = f"Unable to destroy GPU instances on GPU {gpu.index:2d}: {reason}"
        summary = f"Failed to destroy GPU instances: {reason}"
    return result(EXIT_NO_PERMISSION, [first, summary])


def _change(parsed: MigArgs, state: NodeState, euid: int) -> ToolResult:
    targets = _targets(parsed, state)
    if isinstance(targets, ToolResult):
        return targets
    if euid != 0:
        # Creating and destroying instances needs the mig/config capability, which only root holds by default.
        return _refuse_non_root(parsed, targets[0])
    style = engine.style_for_driver(state.driver.version)
    out: list[str] = []
    code = EXIT_OK
    for gpu in targets:
        existing = to_placed(gpu)
        if parsed.command == "cgi":
            res = engine.create_gpu_instances(
                gpu.name, existing, parsed.profiles, gpu_index=gpu.index, default_ci=parsed.default_ci
            )
        elif parsed.command == "cci":
            res = engine.create_compute_instances(
                gpu.name, existing, parsed.gi_ids, parsed.profiles, gpu_index=gpu.index, style=style
            )
        elif parsed.command == "dci":
            res = engine.destroy_compute_instances(
                gpu.name, existing, parsed.gi_ids, parsed.ci_ids, gpu_index=gpu.index
            )
        else:
            res = engine.destroy_gpu_instances(gpu.name, existing, parsed.gi_ids, gpu_index=gpu.index)
        # What succeeded before a failure stays done, as on a real GPU.
        gpu.mig_instances = to_state(res.placed)
        out += res.lines
        if not res.ok:
            code = res.exit_code
            break
    return result(code, out)
