"""NVSwitch fabric and NVIDIA service checks."""

from __future__ import annotations

from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import Param, check, need, result
from assessor.checks.common import gpu_label, join_limited, need_gpus
from assessor.checks.result import Result
from assessor.facts import NodeFacts, Service

FABRIC_MANAGER = "nvidia-fabricmanager"
PERSISTENCED = "nvidia-persistenced"
DCGM = "nvidia-dcgm"

FM_HINT = (
    "systemctl enable --now nvidia-fabricmanager (its version must equal the driver's exactly); read "
    "/var/log/fabricmanager.log; a GPU stuck 'In Progress' needs the fabric manager restarted or a reboot"
)


def find_service(services: list[Service], name: str) -> Service | None:
    """The unit called ``name`` or ``name.service``."""
    wanted = {name, name if name.endswith(".service") else f"{name}.service"}
    return next((s for s in services if s.name in wanted), None)


def service_problem(service: Service | None, name: str) -> str | None:
    """Why a unit is not running (None when it is active)."""
    if service is None:
        return f"{name} was not captured"
    if (service.load_state or "").lower() == "not-found":
        return f"{name} is not installed"
    if service.active_state == "active":
        return None
    state = service.active_state or "in an unknown state"
    detail = ", ".join(x for x in (service.sub_state, service.result) if x and x != state)
    reason = f": {service.reason}" if service.reason else ""
    return f"{name} is {state}" + (f" ({detail})" if detail else "") + reason


@check(
    "fabric.state",
    title="NVSwitch fabric",
    facts=("gpus", "services"),
    doc=(
        "On NVSwitch systems (HGX/DGX A100, H100, H200 with 8 SXM GPUs) verifies that every GPU's fabric "
        "registration is Completed with status Success and that nvidia-fabricmanager is active. Without the "
        "fabric manager, CUDA fails on those boards with 'system not yet initialized'. PCIe systems have no "
        "NVSwitch (the fabric manager exits NV_WARN_NOTHING_TO_DO there), so the check skips."
    ),
    remedy=(
        "Install the nvidia-fabricmanager package of exactly the driver's version, "
        "`systemctl enable --now nvidia-fabricmanager`, and read /var/log/fabricmanager.log."
    ),
)
def fabric_state(facts: NodeFacts, params: dict[str, Any]) -> Result:
    if facts.gpus is None and "gpus" not in facts.problems and facts.services is not None:
        fm = find_service(facts.services, FABRIC_MANAGER)
        if fm is not None and _failed_for_real(fm):
            # No GPU list (a pasted systemctl status alone), but a fabric manager that died of an error of its
            # own (a driver version mismatch) leaves whatever NVSwitch fabric the node has uninitialised.
            died = service_problem(fm, FABRIC_MANAGER) or f"{FABRIC_MANAGER} is not active"
            return result(
                "fabric.state",
                "fail",
                f"{died} (GPUs not captured)",
                observed={"nvidia-fabricmanager": died},
                expected={"nvidia-fabricmanager": "active"},
                hint=FM_HINT,
            )
    gpus = need_gpus(facts)
    if not ref.is_nvswitch_system(gpus):
        names = sorted({g.name or "unknown GPU" for g in gpus})
        return result(
            "fabric.state",
            "skip",
            f"no NVSwitch fabric on this system ({len(gpus)}x {', '.join(names)}): the fabric manager is not "
            "needed (it exits NV_WARN_NOTHING_TO_DO on PCIe systems)",
            hint="nothing to do on a PCIe system; disable nvidia-fabricmanager there if it is failing",
        )
    fails: list[str] = []
    unknown: list[str] = []
    observed: dict[str, Any] = {}
    for g in gpus:
        if g.fabric_state is None or (g.fabric_state == "Completed" and g.fabric_status is None):
            unknown.append(gpu_label(g))
            continue
        status = g.fabric_status or "unknown status"
        if g.fabric_state != "Completed" or (g.fabric_status or "") != "Success":
            fails.append(f"{gpu_label(g)} fabric {g.fabric_state}, {status}")
            observed[str(g.index)] = f"{g.fabric_state}, {status}"
    service_note = None
    if facts.services is not None:
        problem = service_problem(find_service(facts.services, FABRIC_MANAGER), FABRIC_MANAGER)
        observed["nvidia-fabricmanager"] = "active" if problem is None else problem
        if problem is not None:
            fails.insert(0, problem)
        service_note = "nvidia-fabricmanager active" if problem is None else None
    expected = {"fabric": "Completed, Success", "nvidia-fabricmanager": "active"}
    checked = len(gpus) - len(unknown)
    note = f"fabric state unknown for {', '.join(unknown)}" if unknown else ""
    if fails:
        message = join_limited(fails) + (f" ({note})" if note else "")
        return result("fabric.state", "fail", message, observed=observed, expected=expected, hint=FM_HINT)
    if checked == 0 and service_note is None:
        return result(
            "fabric.state",
            "skip",
            "fabric state unknown: no GPU reports it and services were not captured",
            hint="capture nvidia-smi -q -x (driver >= 530 reports Fabric State) and services.txt",
        )
    if checked == 0:
        # Older drivers (before 530) print no fabric section; the running service is the evidence left.
        return result(
            "fabric.state",
            "pass",
            "nvidia-fabricmanager active (this driver reports no GPU fabric state)",
            observed=observed,
            expected=expected,
        )
    if unknown:
        return result(
            "fabric.state",
            "warn",
            note,
            observed=observed,
            expected=expected,
            hint="recapture nvidia-smi -q -x so every GPU reports its fabric state",
        )
    parts = [f"fabric Completed/Success on {checked} GPUs"] + ([service_note] if service_note else [])
    return result("fabric.state", "pass", ", ".join(parts), observed=observed or None, expected=expected)


def _failed_for_real(service: Service) -> bool:
    """A unit that failed with a reason of its own, other than the fabric manager's NV_WARN_NOTHING_TO_DO."""
    if service.active_state == "active" or not service.reason:
        return False
    return "NV_WARN_NOTHING_TO_DO" not in service.reason


@check(
    "services.active",
    title="NVIDIA services active",
    facts=("services", "gpus"),
    params=(
        Param(
            "names",
            "list",
            ref.AUTO,
            "systemd units that must be active ('auto': nvidia-persistenced, nvidia-fabricmanager on "
            "NVSwitch systems, and nvidia-dcgm where it is installed)",
        ),
        Param(
            "enabled",
            "bool",
            False,
            "also require each unit enabled (UnitFileState enabled: it starts again at boot), for a fix that must "
            "survive a reboot",
        ),
    ),
    doc=(
        "Verifies that the NVIDIA daemons a node needs are active: nvidia-persistenced everywhere, "
        "nvidia-fabricmanager on NVSwitch systems, the DCGM host engine (nvidia-dcgm) where it is installed "
        "(monitoring and dcgmi diag need it), and any others a profile or lab names (a Slurm node's munge, "
        "slurmctld and slurmd). With enabled: true each unit must also be enabled, so that it runs again after a "
        "reboot: a unit started by hand but left disabled is down after the next boot."
    ),
    remedy="`systemctl enable --now <unit>`; if it fails, `journalctl -u <unit>` says why; install missing units.",
)
def services_active(facts: NodeFacts, params: dict[str, Any]) -> Result:
    services: list[Service] = need(facts, "services")
    names = params.get("names", ref.AUTO)
    note = ""
    if names in (None, ref.AUTO):
        names = [PERSISTENCED]
        if facts.gpus is None:
            note = " (GPUs unknown: fabric manager not required)"
        elif ref.is_nvswitch_system(facts.gpus):
            names.append(FABRIC_MANAGER)
        fm = find_service(services, FABRIC_MANAGER)
        if FABRIC_MANAGER not in names and fm is not None and _failed_for_real(fm):
            # Whatever the board, a fabric manager that was installed and died on an error of its
            # own (a driver version mismatch) is broken; only "nothing to do" is harmless.
            names.append(FABRIC_MANAGER)
        dcgm = find_service(services, DCGM)
        if dcgm is not None and dcgm.load_state not in (None, "not-found"):
            names.append(DCGM)  # installed, so something relies on it
    enabled = bool(params.get("enabled"))
    fails, unknown = [], []
    observed: dict[str, str] = {}
    for name in names:
        service = find_service(services, str(name))
        problem = service_problem(service, str(name))
        if service is None:
            unknown.append(str(name))
            observed[str(name)] = "not captured"
            continue
        if problem:
            fails.append(problem)
            observed[str(name)] = service.active_state or "unknown"
        else:
            observed[str(name)] = "active"
        if enabled and (service.load_state or "").lower() != "not-found":
            if service.unit_file_state is None:
                unknown.append(f"{name} (enabled or not)")
            elif service.unit_file_state not in ("enabled", "static", "alias", "indirect"):
                fails.append(f"{name} is {service.unit_file_state}: it does not start at boot")
                observed[str(name)] += f", {service.unit_file_state}"
            else:
                observed[str(name)] += f", {service.unit_file_state}"
    expected = {str(n): "active, enabled" if enabled else "active" for n in names}
    if fails:
        message = join_limited(fails) + (f" ({', '.join(unknown)} not captured)" if unknown else "")
        return result(
            "services.active",
            "fail",
            message + note,
            observed=observed,
            expected=expected,
            hint="systemctl enable --now <unit>; journalctl -u <unit> says why it stopped; "
            "install the package of a unit that is not installed",
        )
    if unknown and len([u for u in unknown if not u.endswith("(enabled or not)")]) == len(names):
        return result(
            "services.active",
            "skip",
            f"{', '.join(unknown)} not in the captured services",
            expected=expected,
            hint="capture systemctl show for these units (services.txt)",
        )
    if unknown:
        return result(
            "services.active",
            "warn",
            f"{', '.join(unknown)} not in the captured services{note}",
            observed=observed,
            expected=expected,
            hint="capture systemctl show for these units (services.txt)",
        )
    state = "active and enabled" if enabled else "active"
    return result(
        "services.active", "pass", f"{', '.join(map(str, names))} {state}{note}", observed=observed, expected=expected
    )
