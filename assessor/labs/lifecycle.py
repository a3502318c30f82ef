"""A lab's life on a target: start (set the node up, or break it), solve, reset.

Which driver acts depends on what the target can do (:data:`assessor.targets.KINDS`): a simulated node in a
state file is changed by the simulator's driver (:mod:`.drivers.sim`), a real node (``ssh://`` or a host of
an Ansible inventory) by the lab's playbooks (:mod:`.drivers.ansible`). A target that cannot be changed, or
whose change would not last (``mock:NAME``), is refused with what to do instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assessor.errors import GpulabError, InputError
from assessor.labs.drivers import StepFailed
from assessor.labs.model import FaultStep, Lab
from assessor.targets import TargetOptions, TargetSpec, parse_spec

__all__ = ["StepFailed", "describe_steps", "reset", "solve", "start"]


def _refuse(lab: Lab, action: str, target: TargetSpec) -> GpulabError:
    if target.kind.name == "mock":
        fixture = lab.fixture or target.rest
        return InputError(
            f"{target.spec} is a fresh in-memory node that is gone when this command ends, so `lab {action}` "
            f"would change nothing the next command sees; make a node that lasts: "
            f"`gpulab sim init --fixture {fixture} --state node.json` then `--target mock:node.json`"
        )
    return InputError(
        f"`lab {action}` needs a target it can change: mock:FILE.json (a simulated node) or ssh://host, "
        f"not {target.spec}"
    )


def _check_runs_on(lab: Lab, target: TargetSpec) -> None:
    if "simulator" not in lab.runs_on and target.kind.name in ("mock", "mock-file"):
        raise InputError(f"lab {lab.id} runs on real nodes only (runs_on: {', '.join(lab.runs_on)})")
    if "real" not in lab.runs_on and target.kind.lab_driver == "ansible":
        raise InputError(
            f"lab {lab.id} runs on the simulator only (it injects what real hardware can't safely): "
            f"use a mock:FILE.json target"
        )


def start(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
    replace_node: bool = False,
) -> list[str]:
    """Set the target up for ``lab``; design labs need no target.

    ``options`` (SSH key, known_hosts, accepting new host keys) and ``inventory`` matter for real nodes.
    A simulated node of another fixture than the lab's is refused unless ``replace_node``: the start
    would replace it with a fresh node of the lab's fixture.
    """
    if lab.is_design:
        return [
            f"design lab {lab.id}: write your answer (format: {lab.answer_example}) and grade it with "
            f"`gpulab lab grade {lab.id} --answer FILE`"
        ]
    log = []
    other = other_fixture(lab, spec, inventory)
    if other is not None:
        if not replace_node:
            raise InputError(
                f"{spec} is a {other} node but lab {lab.id} is written for {lab.fixture}: starting it would "
                f"replace the node with a fresh {lab.fixture} (only the host name kept). Use a {lab.fixture} node "
                f"(`gpulab sim init --fixture {lab.fixture} --state FILE`), or pass --replace-node"
            )
        log.append(f"{spec}: the {other} node is replaced by a fresh {lab.fixture} node (--replace-node)")
    return log + _apply(lab, spec, "start", options, inventory, host_vars)


def other_fixture(lab: Lab, spec: str | None, inventory: str | None = None) -> str | None:
    """The fixture of the simulated node in ``spec`` when it is not the lab's (None: the lab's, or no node yet)."""
    if not spec or inventory is not None or lab.fixture is None:
        return None
    target = parse_spec(spec)
    if target.kind.name != "mock-file" or target.path is None or not target.path.exists():
        return None
    from assessor.sim.state import load_state

    fixture = load_state(target.path).fixture
    return fixture if fixture != lab.fixture else None


def solve(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """Apply the reference solution (instructors, CI); a simulated node is marked, so later grades there
    are flagged "reference solution applied on this node"."""
    log = _apply(lab, spec, "solve", options, inventory, host_vars)
    target = parse_spec(spec, inventory) if spec else None
    if target is not None and target.kind.name == "mock-file" and target.path is not None:
        from assessor.sim.state import updating

        with updating(target.path) as state:
            state.marks.append(f"solved {lab.id}")
    return log


def reset(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """Restore the target to the lab's fixture (a real node: undo what the setup and the solution changed)."""
    return _apply(lab, spec, "reset", options, inventory, host_vars)


# The playbook each step runs on a real node.
PLAYBOOKS = {"start": "setup", "solve": "solve", "reset": "reset"}


def _apply(
    lab: Lab,
    spec: str | None,
    action: str,
    options: TargetOptions | None,
    inventory: str | None,
    host_vars: Mapping[str, Any] | None,
) -> list[str]:
    """One lifecycle step, by the driver of the target's kind."""
    target = _need_target(lab, spec, action, inventory)
    if target.kind.lab_driver == "sim" and target.path is not None:
        from assessor.labs.drivers import sim

        steps = {"start": sim.start_file, "solve": sim.solve_file, "reset": sim.reset_file}
        return steps[action](lab, target.path)
    if target.kind.lab_driver == "ansible":
        from assessor.labs.drivers.ansible import run_playbook

        return run_playbook(lab, PLAYBOOKS[action], target, options, host_vars=host_vars)
    raise _refuse(lab, action, target)


def _need_target(lab: Lab, spec: str | None, action: str, inventory: str | None = None) -> TargetSpec:
    if lab.is_design:
        raise InputError(f"{lab.id} is a design lab: it has no node to {action}")
    if not spec:
        what = "a host of the inventory" if inventory else "mock:FILE.json or ssh://host"
        raise InputError(f"`lab {action} {lab.id}` needs --target ({what})")
    target = parse_spec(spec, inventory)
    _check_runs_on(lab, target)
    return target


def describe_steps(steps: tuple[FaultStep, ...]) -> list[str]:
    return [
        step.fault + (f" ({', '.join(f'{k}={v}' for k, v in step.options.items())})" if step.options else "")
        for step in steps
    ]
