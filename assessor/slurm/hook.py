"""What ``gpulab slurm health|prolog|epilog`` does with a finding: drain, resume or leave the node, and exit.

The three modes run the same checks (the profile's ``fast: true`` ones) and treat the node the same way:

- a check failed or errored, the node could not be assessed, gpulab saw nothing or found no verdict by its
  deadline: the node is drained with gpulab's reason, unless it is already out of service for a reason that
  is not gpulab's (an admin's "maintenance" stays as it is) or already drained by gpulab for the same reason;
- the checks pass: a node gpulab drained (its reason starts with ``gpulab:``) is resumed, but only when the
  check its reason names passed in this run (a run of another profile cannot undo what it did not check).
  A node drained or downed by anyone else is never touched.

What differs is what slurmd does with the exit code (Slurm 22.05, slurm.conf(5)):

- ``health``: slurmd ignores the HealthCheckProgram's exit code beyond logging it ("health_check failed:
  rc:N"), so the program drains the node itself. 0 healthy, 1 a problem (drained), 2 bad input, 3 scontrol
  failed (the node's state could not be read or changed).
- ``prolog``: a non-zero exit drains the node (slurmctld keeps the reason of a node already drained, so
  gpulab's stays) and requeues the job held. 0 healthy, 1 a problem, 2 bad input.
- ``epilog``: a non-zero exit drains the node. 0 healthy, 1 a problem, 2 bad input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assessor.assess.profiles import Profile
from assessor.errors import InputError
from assessor.slurm.reason import Finding, check_named, is_gpulab
from assessor.slurm.scontrol import Scontrol, ScontrolError

Mode = Literal["health", "prolog", "epilog"]
MODES: tuple[Mode, ...] = ("health", "prolog", "epilog")

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_BAD_INPUT = 2
EXIT_SCONTROL = 3  # health only: the node could not be read, drained or resumed

# Seconds each mode may take before its checks count as hung: slurmd kills a HealthCheckProgram after 60 s
# (scontrol's calls come after); a Prolog is expected to end within MessageTimeout (10 s by default).
DEADLINE_S: dict[Mode, float] = {"health": 40.0, "prolog": 8.0, "epilog": 20.0}

Did = Literal["drained", "resumed", "kept", "unchanged", "failed"]


@dataclass(frozen=True)
class Action:
    did: Did
    message: str


def fast_checks(profile: Profile) -> Profile:
    """The profile's checks marked ``fast: true`` (InputError naming the profile when it marks none)."""
    refs = tuple(ref for ref in profile.checks if ref.fast)
    if not refs:
        where = profile.file or profile.name
        raise InputError(
            f"{where}: no check is marked fast: true; mark the checks quick and decisive enough to run before "
            "every job (docs/SLURM.md)"
        )
    return Profile(profile.name, profile.description, refs, profile.file)


def act(scontrol: Scontrol, node: str, finding: Finding) -> Action:
    """Drain, resume or leave ``node`` for ``finding`` (see the module docstring); never raises."""
    try:
        info = scontrol.show(node)
    except ScontrolError as exc:
        return Action("failed", f"cannot read node {node}'s state: {exc}")
    if not finding.healthy:
        if info.out_of_service and info.reason and not is_gpulab(info.reason):
            return Action("kept", f"already out of service ({info.state}) for another reason: {info.reason}")
        if info.drained and info.reason == finding.reason:
            return Action("unchanged", f"already drained: {finding.reason}")
        try:
            scontrol.drain(node, finding.reason)
        except ScontrolError as exc:
            return Action("failed", f"cannot drain node {node}: {exc}")
        return Action("drained", f"drained: {finding.reason}")
    if not (info.drained and is_gpulab(info.reason)):
        return Action("unchanged", "healthy")
    named = check_named(info.reason)
    if named is not None and named not in finding.passed:
        return Action("kept", f"left drained: {info.reason} ({named} was not checked in this run)")
    try:
        scontrol.resume(node)
    except ScontrolError as exc:
        return Action("failed", f"cannot resume node {node}: {exc}")
    return Action("resumed", f"resumed: {info.reason} no longer seen")


def exit_code(mode: Mode, finding: Finding, action: Action | None) -> int:
    """The exit code slurmd gets (see the module docstring)."""
    if finding.bad_input:
        return EXIT_BAD_INPUT
    if mode == "health" and action is not None and action.did == "failed":
        return EXIT_SCONTROL
    return EXIT_OK if finding.healthy else EXIT_PROBLEM
