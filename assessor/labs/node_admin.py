"""The admin verbs of a simulated node served over SSH, run on its host (``gpulab sim login --admin``).

``gpulab-node probe`` says the node is simulated (its fixture and host name); ``gpulab-node flags`` prints
the tamper evidence its state carries (``flag: ...`` lines); ``gpulab-node start|solve|reset LAB
[VARIANT_JSON]`` takes the simulator's lab step on the node, as ``gpulab lab start LAB --target mock:STATE``
would. The controller's side is :mod:`assessor.labs.drivers.sim_ssh`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path

from assessor.errors import InputError
from assessor.labs.drivers import StepFailed
from assessor.labs.drivers.sim_ssh import FLAG_PREFIX
from assessor.sim.machine.login import ADMIN_COMMAND, PROBE_ANSWER


def admin(state: str, words: Sequence[str]) -> tuple[int, list[str]]:
    """Run an admin verb for the node in ``state`` on its host; (exit status, lines to print)."""
    from assessor.labs.capture import node_flags
    from assessor.sim.state import load_state

    if not words:
        return 2, [f"usage: {ADMIN_COMMAND} probe|flags|start|solve|reset LAB [VARIANT_JSON]"]
    verb, args = words[0], list(words[1:])
    if verb == "probe":
        node = load_state(state)
        return 0, [f"{PROBE_ANSWER} {node.fixture} {node.host}"]
    if verb == "flags":
        return 0, [f"{FLAG_PREFIX}{flag}" for flag in node_flags(f"mock:{Path(state).absolute()}")]
    if verb in ("start", "solve", "reset") and 1 <= len(args) <= 2:
        try:
            return 0, _lab_step(state, verb, args[0], args[1] if len(args) > 1 else "{}")
        except StepFailed as exc:
            return 1, [f"{ADMIN_COMMAND} {verb}: {exc}"]
    return 2, [f"{ADMIN_COMMAND}: unknown verb or arguments: {shlex.join(words)}"]


def _lab_step(state: str, verb: str, lab_id: str, variant_json: str) -> list[str]:
    from assessor.labs import lifecycle
    from assessor.labs.loader import find_lab, with_variant

    try:
        variant = json.loads(variant_json)
    except ValueError:
        raise InputError(f"{ADMIN_COMMAND} {verb}: the variant is not JSON") from None
    if not isinstance(variant, dict):
        raise InputError(f"{ADMIN_COMMAND} {verb}: the variant must be a JSON object")
    lab = with_variant(find_lab(lab_id), variant)
    spec = f"mock:{Path(state).absolute()}"
    if verb == "start":
        return lifecycle.start(lab, spec, replace_node=True)
    if verb == "solve":
        return lifecycle.solve(lab, spec)
    return lifecycle.reset(lab, spec)
