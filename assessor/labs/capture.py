"""Capture a node for grading, as `gpulab assess` does, and say which machine it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.facts import NodeFacts
from assessor.labs.attempts import Identity
from assessor.labs.model import Lab
from assessor.targets import TargetOptions
from assessor.targets.inventory import find_host


@dataclass(frozen=True)
class Captured:
    """What a grade learns from the node in its one capture: the target as the user wrote it (``spec``), the
    facts, which machine it is, the target as a start names it (:func:`target_key`) and the tamper evidence
    the node carries (:func:`node_flags`). A design lab's answer is taken in the same shape: ``facts`` is the
    answer, from no machine (``key`` ``design``)."""

    spec: str
    facts: Any  # NodeFacts, or a design lab's answer (Located)
    identity: Identity
    key: str
    flags: tuple[str, ...] = ()


def capture_node(
    lab: Lab,
    spec: str,
    *,
    timeout: float = 120.0,
    options: TargetOptions | None = None,
    inventory: str | None = None,
) -> Captured:
    """Everything a grade needs from the node ``spec``, in one visit: its facts (:func:`capture_facts`), then
    what :func:`with_facts` adds to them."""
    facts = capture_facts(lab, spec, timeout=timeout, options=options, inventory=inventory)
    return with_facts(facts, spec, inventory=inventory, options=options)


def with_facts(
    facts: NodeFacts, spec: str, *, inventory: str | None = None, options: TargetOptions | None = None
) -> Captured:
    """Facts captured from ``spec`` with the machine they came from, its key and its flags."""
    ident = identity(facts, spec, inventory)
    return Captured(spec, facts, ident, target_key(spec, inventory), tuple(node_flags(spec, inventory, options)))


def answer_captured(answer: Any, spec: str) -> Captured:
    """A design lab's answer (read from ``spec``, ``answer:FILE``), as a grade takes it in: no machine, no flags."""
    return Captured(spec, answer, Identity(host=None), "design")


def capture_facts(
    lab: Lab,
    spec: str,
    *,
    timeout: float = 120.0,
    options: TargetOptions | None = None,
    inventory: str | None = None,
) -> NodeFacts:
    """Capture ``spec`` as `gpulab assess` does, with the active tests the lab's checks need.

    ``options`` are the SSH settings (key, known_hosts, new host keys); with ``inventory``, ``spec`` is one
    of its hosts, reached as the inventory says.
    """
    from assessor.capture import run as capture
    from assessor.parsers.assemble import facts_from_snapshot
    from assessor.targets import open_target

    wanted = lab.active_tests
    active: list[str] = []
    if "dcgm" in wanted:
        active.append(capture.dcgm_diag(lab.dcgm_level))
    target: Any
    if inventory is not None:
        host = find_host(inventory, spec)
        spec = host.target
        ssh = host.ssh if spec.startswith("ssh://") else None
        target = open_target(spec, options, name=host.name, ssh=ssh)
    else:
        target = open_target(spec, options)
    gpus: int | None = None
    every_gpu = "nccl" in wanted or "hpl" in wanted  # tests run over every GPU of the node
    if "nccl" in wanted and spec.startswith("mock:"):
        # NCCL_DEBUG=INFO so nccl.transport sees the network NCCL chose, as a candidate would run it; the job is
        # a user's (the node's /etc/nccl.conf, nobody's ~/.nccl.conf: a fix in root's own file is not the
        # node's) unless the lab grades root's jobs
        root_job = {"HOME": "/root"} if lab.nccl_job == "root" else {}
        target.env = {**target.env, "NCCL_DEBUG": "INFO", **root_job}
    if every_gpu and spec.startswith("mock:"):
        gpus = len(target.session().read().gpus)
    if every_gpu and gpus is None:
        # other targets: learn the GPU count (`nvidia-smi -L` where the target runs a line, else a first
        # capture), then run the test over every GPU
        gpus = _listed_gpus(target, timeout)
    if every_gpu and gpus is None:
        first = facts_from_snapshot(target.snapshot(timeout=timeout, active=tuple(active)))
        gpus = len(first.gpus or ()) or 8
    if "nccl" in wanted:
        active.append(capture.nccl_test(max(gpus or 8, 1)))
    if "hpl" in wanted:
        active.append(capture.hpl_run(max(gpus or 8, 1)))
    if "nvbandwidth" in wanted:
        active.append("nvbandwidth")
    if "mlxlink" in wanted:
        active.append("mlxlink")  # once per adapter (assessor.capture.per_adapter)
    snap = target.snapshot(timeout=timeout, active=tuple(active))
    return facts_from_snapshot(snap)


def identity(facts: NodeFacts, spec: str | None = None, inventory: str | None = None) -> Identity:
    """Which machine the facts came from: host, GPU serials and UUIDs, and (a simulated node in a state
    file, ``mock:FILE.json``, also as an inventory host's ``gpulab_target``) the simulator's node id."""
    gpus = facts.gpus or []
    return Identity(
        host=facts.host,
        serials=tuple(sorted(g.serial for g in gpus if g.serial)),
        uuids=tuple(sorted(g.uuid for g in gpus if g.uuid)),
        node_id=_sim_node_id(spec, inventory),
    )


def _state_file(spec: str | None, inventory: str | None = None) -> Path | None:
    """The state file of a simulated node target (an inventory host's ``gpulab_target`` included), or None."""
    if spec and inventory is not None:
        try:
            spec = find_host(inventory, spec).target
        except InputError:
            return None
    if not spec or not spec.startswith("mock:"):
        return None
    from assessor.targets import parse_spec

    target = parse_spec(spec)
    return target.path if target.kind.name == "mock-file" else None


def _sim_node_id(spec: str | None, inventory: str | None = None) -> str | None:
    path = _state_file(spec, inventory)
    if path is None:
        return None
    from assessor.sim.state import look_at_state

    state, _ = look_at_state(path)
    return (state.node_id or None) if state is not None else None


def target_key(spec: str, inventory: str | None = None) -> str:
    """The target as a start and a grade compare it: a state file by its absolute path, an inventory host
    with its inventory, anything else as written."""
    path = _state_file(spec) if inventory is None else None
    if path is not None:
        return f"mock:{path.resolve()}"
    if inventory is not None:
        return f"{Path(inventory).resolve()}#{spec}"
    return spec


# What the state file says when gpulab's own tools were not the last to write it, or a solution was applied.
HAND_EDITED = "state file edited by hand"
SOLUTION_APPLIED = "reference solution applied on this node"
SIM_COMMAND = "simulator command used on this node instead of the node's tools"


def node_flags(spec: str | None, inventory: str | None = None, options: TargetOptions | None = None) -> list[str]:
    """Tamper evidence a simulated node carries: a state file edited by hand (its stamp does not match),
    a reference solution applied to it (``lab solve`` marks the state), a simulator command used on it.

    The same on every kind of target: a ``mock:FILE.json`` is read here; an inventory host is read through
    its ``gpulab_target`` (a state file here, ``mock:NAME`` has none); a node over SSH (``ssh://``, or an
    inventory host reached over SSH, one node or a cohort's) is asked through its admin login
    (:func:`assessor.labs.drivers.sim_ssh.remote_flags`): a simulated one answers, a real one has none, and one
    that could not be asked is flagged as such."""
    path = _state_file(spec, inventory)
    if path is None and spec and (spec.startswith("ssh://") or inventory is not None):
        from assessor.labs.drivers.sim_ssh import remote_flags

        return remote_flags(spec, options, inventory)
    if path is None or not path.exists():
        return []
    from assessor.sim.state import EDITED_MARK, look_at_state

    out = []
    state, status = look_at_state(path)
    if status == "mismatch":
        out.append(f"{HAND_EDITED}: {path.name} was changed since the simulator last wrote it")
    elif status == "missing":
        out.append(f"{HAND_EDITED}: {path.name} has no integrity stamp (not written by the simulator)")
    marks = state.marks if state is not None else []
    for mark in marks:
        if mark == EDITED_MARK and status == "ok":
            out.append(f"{HAND_EDITED}: {path.name} was changed outside the simulator, then a simulated tool saved it")
        elif mark.startswith("solved "):
            out.append(f"{SOLUTION_APPLIED} (`lab solve {mark.removeprefix('solved ')}`)")
        elif mark.startswith("sim "):  # `gpulab sim repair|fault` changes the node from outside its tools
            out.append(f"{SIM_COMMAND} (`gpulab {mark}`)")
    return out


def start_record(
    lab: Lab,
    spec: str,
    *,
    timeout: float = 120.0,
    options: TargetOptions | None = None,
    inventory: str | None = None,
) -> tuple[Identity, dict[str, float]]:
    """Right after ``lab start``: the node's identity and the lab's baseline (what each task check earns
    before the candidate did anything), on every kind of node: a simulated one, ``ssh://`` or an inventory
    host. The capture is the one a grade makes (:func:`capture_facts`, with the lab's active tests), so a
    check that already held when the lab started earns nothing later, wherever the node is."""
    from assessor.labs import grading

    facts = capture_facts(lab, spec, timeout=timeout, options=options, inventory=inventory)
    return identity(facts, spec, inventory), grading.baseline(lab, grading.facts_evaluator(facts))


def _listed_gpus(target: Any, timeout: float) -> int | None:
    """How many GPUs ``nvidia-smi -L`` lists on the node; None when the target cannot run a line or the tool
    did not answer with a list."""
    run_line = getattr(target, "run_line", None)
    if run_line is None:
        return None
    try:
        code, out = run_line("nvidia-smi -L", timeout=min(timeout, 60))
    except Exception:  # the capture that follows reports the host's trouble properly
        return None
    count = sum(1 for line in out.splitlines() if line.startswith("GPU ") and ": " in line)
    return count if code == 0 and count else None
