"""A lab's life on a target: start (set the node up, or break it), solve, reset, close.

Which driver acts depends on what the target can do (:data:`assessor.targets.KINDS`): a simulated node in a
state file is changed by the simulator's driver (:mod:`.drivers.sim`), a simulated node served over SSH by
the simulator's steps through its admin login (:mod:`.drivers.sim_ssh`), a real node (``ssh://`` or a host
of an Ansible inventory) by the lab's playbooks (:mod:`.drivers.ansible`). An inventory host whose
``gpulab_target`` is a state file is that simulated node. A target that cannot be changed, or whose change
would not last (``mock:NAME``), is refused with what to do instead; a node that cannot be reached is
:class:`~assessor.labs.drivers.Unreachable`.

A node holds one open lab at a time (the attempts database says which: :func:`labs_held`). ``lab start``
refuses a node that holds another (:class:`LabOpen`, naming it, its candidate and its start) unless told to
replace it, which closes it as abandoned; a candidate closes their own open lab with :func:`close_own`; a
reset re-images the node and closes every lab open on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assessor.errors import GpulabError, InputError
from assessor.labs.drivers import StepFailed, Unreachable
from assessor.labs.model import FaultStep, Lab
from assessor.targets import TargetOptions, TargetSpec, parse_spec

__all__ = ["LabOpen", "StepFailed", "Unreachable", "close_own", "describe_steps", "reset", "solve", "start"]


class LabOpen(InputError):
    """``lab start`` on a node that holds another open lab: refused (exit 2), naming it, unless replacing it."""


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
    if "real" not in lab.runs_on and "simulator" not in lab.runs_on and target.kind.lab_driver == "ansible":
        raise InputError(f"lab {lab.id} runs on no kind of node ({', '.join(lab.runs_on)})")


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
    spec, inventory = on_node(spec, inventory)
    other = other_fixture(lab, spec, inventory)
    if other is not None:
        if not replace_node:
            raise InputError(
                f"{spec} is a {other} node but lab {lab.id} is written for {lab.fixture}: starting it would "
                f"replace the node with a fresh {lab.fixture} (only the host name kept). Use a {lab.fixture} node "
                f"(`gpulab sim init --fixture {lab.fixture} --state FILE`), or pass --replace-node"
            )
        log.append(f"{spec}: the {other} node is replaced by a fresh {lab.fixture} node (--replace-node)")
    log += _apply(lab, spec, "start", options, inventory, host_vars)
    target = parse_spec(spec, inventory) if spec else None
    if target is not None and target.kind.name == "mock-file" and target.path is not None:
        import uuid

        from assessor.sim.state import updating

        # a new id for the node this start set up: a grade on another state file (a copy of another
        # node, a replayed one) no longer matches the start
        with updating(target.path) as state:
            state.node_id = uuid.uuid4().hex
    return log


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
    are flagged "reference solution applied on this node" (over SSH, its admin login marks it)."""
    spec, inventory = on_node(spec, inventory)
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
    """Restore the whole node to where the lab starts from: a simulated one (a state file, or served over SSH)
    is re-imaged as the lab's fixture, its files included, whatever was changed on it; a real node runs the
    lab's reset playbook (built with the variant it was started with: :func:`reset_and_close`)."""
    spec, inventory = on_node(spec, inventory)
    return _apply(lab, spec, "reset", options, inventory, host_vars)


def on_node(spec: str | None, inventory: str | None) -> tuple[str | None, str | None]:
    """The target a lab step acts on: an inventory host whose ``gpulab_target`` is not SSH (a simulated node's
    state file) is that target itself; anything else as given. The attempts database still names the host
    by its inventory (:func:`~assessor.labs.capture.target_key`)."""
    if not spec or inventory is None:
        return spec, inventory
    from assessor.targets.inventory import find_host

    host = find_host(inventory, spec)
    return (spec, inventory) if host.target.startswith("ssh://") else (host.target, None)


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
    if target.kind.lab_driver == "ansible" and "simulator" in lab.runs_on:
        # a simulated node served over SSH: its admin login takes the simulator's own step (and marks the node
        # as the simulator does); a lab only the simulator can set up has no other way onto an SSH node. A
        # node that cannot be reached is Unreachable here: never taken for a real node, never a playbook run.
        from assessor.labs.drivers import sim_ssh

        why_not = sim_ssh.probe(spec or "", options, inventory)
        if why_not is None:
            return sim_ssh.apply(lab, action, spec or "", options, inventory)
        if "real" not in lab.runs_on:
            raise InputError(
                f"lab {lab.id} runs on the simulator only (it injects what real hardware can't safely): "
                f"{target.spec} is no simulated node served over SSH whose admin login this key has ({why_not}; "
                "docs/NODE.md); use a mock:FILE.json target or such a node"
            )
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


# ---- starts and grades in the attempts database ---------------------------------------------------------


def start_and_record(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    candidate: str,
    db: str | None = None,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
    replace_node: bool = False,
    replace: bool = False,
    timeout: float = 120.0,
) -> tuple[list[str], Any]:
    """``lab start``: set the node up with the candidate's variant, then record the start with the node's
    identity and baseline (:func:`record_started`).

    The attempts database is opened first, so an unusable one stops the start before the node changes. A node
    that holds another open lab (:func:`labs_held`: another lab, or this lab of another candidate) is refused
    with :class:`LabOpen` before anything runs, unless ``replace``: then the labs it holds are closed as
    abandoned once the node is set up (a node that could not be set up keeps them). Returns the steps (with
    a line per lab closed) and the :class:`~assessor.labs.attempts.Start` (its clock is an open start's, when
    the candidate had one of this lab).
    """
    from assessor.labs import attempts
    from assessor.labs.loader import pick_variant, with_variant

    with attempts.guarded(db) as conn:
        _writable(conn)
        held = labs_held(conn, lab, spec, candidate=candidate, inventory=inventory)
    if held and not replace:
        raise LabOpen(refusal(lab, spec or "", held, db=db))
    lab = with_variant(lab, pick_variant(lab, candidate))
    at = attempts.now()  # the held labs end when the replacing start began
    steps = start(lab, spec, options, inventory=inventory, host_vars=host_vars, replace_node=replace_node)
    with attempts.guarded(db) as conn:
        steps += abandon(conn, held, for_lab=lab, closed_by=candidate, at=at)
        begun = record_started(
            conn, lab, spec, candidate=candidate, options=options, inventory=inventory, timeout=timeout
        )
    return steps, begun


def labs_held(conn: Any, lab: Lab, spec: str | None, *, candidate: str, inventory: str | None = None) -> list[Any]:
    """The open starts that keep ``candidate`` from starting ``lab`` on the node ``spec``: every lab open
    there (:func:`~assessor.labs.attempts.open_starts_on`) but the candidate's own start of this lab (starting
    it again keeps its clock). Design labs hold no node."""
    if lab.is_design or not spec:
        return []
    from assessor.labs import attempts
    from assessor.labs import capture as labcapture

    key = labcapture.target_key(spec, inventory)
    return [s for s in attempts.open_starts_on(conn, key) if (s.candidate, s.lab_id) != (candidate, lab.id)]


def describe_open(start: Any) -> str:
    """``drv-101 (started by ada at 2026-03-01T09:00:00+00:00)``: an open lab, its candidate and its clock."""
    from assessor.labs.attempts import iso

    return f"{start.lab_id} (started by {start.candidate} at {iso(start.started_at)})"


def refusal(lab: Lab, where: str, held: list[Any], *, db: str | None = None) -> str:
    """Why ``lab start`` refuses a node that holds another open lab, and the ways on."""
    import shlex

    first = held[0]
    close = ["gpulab", "lab", "close", first.lab_id, "--candidate", first.candidate] + (["--db", db] if db else [])
    return (
        f"{where} holds another open lab: {'; '.join(describe_open(s) for s in held)}. Starting {lab.id} there would "
        f"end it ungraded: grade it first, or close it (`{shlex.join(close)}`), or start {lab.id} with --replace, "
        "which closes it as abandoned"
    )


def abandon(conn: Any, held: list[Any], *, for_lab: Lab, closed_by: str, at: Any) -> list[str]:
    """Close the open starts ``held`` (each its candidate's only) as abandoned for ``for_lab``, as of ``at``;
    a line for each."""
    from assessor.labs import attempts

    lines = []
    for s in held:
        why = f"abandoned: {for_lab.id} started in its place (--replace)"
        attempts.close_starts(
            conn, lab_id=s.lab_id, target=s.target, closed_by=closed_by, at=at, candidate=s.candidate, why=why
        )
        lines.append(f"closed {describe_open(s)} as abandoned (--replace): its clock is stopped")
    return lines


def _writable(conn: Any) -> None:
    """Raise (as :func:`assessor.labs.attempts.guarded` reports it) when the database cannot be written."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("CREATE TABLE IF NOT EXISTS gpulab_write_probe (x)")
    conn.execute("ROLLBACK")


def close_own(lab_id: str | None, *, candidate: str, db: str | None = None) -> list[Any]:
    """``lab close [LAB]``: the candidate ends their own open lab (``lab_id``; without one, their only open
    lab): its clock stops and later grades of it are not recorded; the node is left as it is. Returns the
    starts closed. InputError when the lab named is not open for them, or none is named and several are."""
    from assessor.labs import attempts

    with attempts.guarded(db) as conn:
        mine = attempts.open_starts(conn, candidate)
        if lab_id is not None:
            mine = [s for s in mine if s.lab_id == lab_id]
            if not mine:
                raise InputError(f"{candidate} has no open {lab_id} to close (`gpulab lab status` lists the open labs)")
        elif len(mine) > 1:
            raise InputError(
                f"{candidate} has {len(mine)} open labs: {'; '.join(f'{describe_open(s)} on {s.target}' for s in mine)}"
                ": name the one to close (`gpulab lab close LAB`)"
            )
        at = attempts.now()
        for s in mine:
            attempts.close_starts(
                conn,
                lab_id=s.lab_id,
                target=s.target,
                closed_by=candidate,
                at=at,
                candidate=s.candidate,
                why="abandoned: closed by the candidate (`lab close`)",
            )
    return mine


def solve_and_record(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    solved_by: str,
    db: str | None = None,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """``lab solve`` on a node, remembered in the attempts database: later grades of starts on that node
    are flagged "reference solution applied on this node" (the state file of a simulated node says so too,
    local or served over SSH, so the flag reaches a grader with another database)."""
    from assessor.labs import attempts
    from assessor.labs import capture as labcapture

    lab = variant_on(lab, spec, db=db, inventory=inventory)
    log = solve(lab, spec, options, inventory=inventory, host_vars=host_vars)
    assert spec is not None  # solve() refused a missing target
    with attempts.guarded(db) as conn:
        attempts.record_solve(
            conn,
            lab_id=lab.id,
            target=labcapture.target_key(spec, inventory),
            solved_by=solved_by,
            at=attempts.now(),
        )
    return log


def variant_on(lab: Lab, spec: str | None, *, db: str | None = None, inventory: str | None = None) -> Lab:
    """``lab`` built with the variant of the open start on the node ``spec`` (the lab as it is when none)."""
    if not spec or not lab.variants:
        return lab
    from assessor.labs import attempts
    from assessor.labs import capture as labcapture
    from assessor.labs.loader import with_variant

    with attempts.guarded(db) as conn:
        begun = attempts.open_start_on(conn, lab.id, labcapture.target_key(spec, inventory))
    return with_variant(lab, begun.variant if begun else None)


def record_answer_shown(lab: Lab, *, shown_to: str, db: str | None = None) -> None:
    """The reference answer (a design lab's, or a node lab's ticket) was shown to ``shown_to``: their later
    grades of the lab are flagged."""
    from assessor.labs import attempts

    with attempts.guarded(db) as conn:
        attempts.record_solve(conn, lab_id=lab.id, target="design", solved_by=shown_to, at=attempts.now())


def reset_and_close(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    closed_by: str,
    db: str | None = None,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """``lab reset`` (an instructor's): return the whole node to where the lab starts from (:func:`reset`, a
    real node's playbook with the variant the lab was started with there) and close every lab open on it, so
    the next ``lab start`` has a new clock; a line for each other lab closed. Unreachable (nothing closed)
    when the node cannot be reached."""
    from assessor.labs import attempts
    from assessor.labs import capture as labcapture

    lab = variant_on(lab, spec, db=db, inventory=inventory)
    log = reset(lab, spec, options, inventory=inventory, host_vars=host_vars)
    assert spec is not None
    with attempts.guarded(db) as conn:
        log += close_node(conn, lab, labcapture.target_key(spec, inventory), closed_by=closed_by, at=attempts.now())
    return log


def close_node(conn: Any, lab: Lab, key: str, *, closed_by: str, at: Any) -> list[str]:
    """After a reset of ``lab`` on the node ``key``: close its starts there, and every other lab open there
    (the reset re-imaged their node too); a line for each of those others."""
    from assessor.labs import attempts

    others = [s for s in attempts.open_starts_on(conn, key) if s.lab_id != lab.id]
    attempts.close_starts(conn, lab_id=lab.id, target=key, closed_by=closed_by, at=at)
    lines = []
    for s in others:
        why = f"the node was reset for {lab.id}"
        attempts.close_starts(conn, lab_id=s.lab_id, target=key, closed_by=closed_by, at=at, why=why)
        lines.append(f"also closed {describe_open(s)}: the reset re-imaged its node")
    return lines


# ---- a cohort: the same rules, host by host ---------------------------------------------------------


def cohort_held(lab: Lab, group: Any, *, db: str | None = None, replace: bool = False) -> dict[str, list[Any]]:
    """``lab start`` over a cohort (:class:`assessor.labs.cohort.Cohort`): the labs each host holds for
    another start (:func:`labs_held`, with the host's candidate). Raises :class:`LabOpen` naming every such
    host before anything runs, unless ``replace``."""
    from assessor.labs import attempts

    with attempts.guarded(db) as conn:
        _writable(conn)
        held = {
            h.name: found
            for h in group.hosts
            if (found := labs_held(conn, lab, h.name, candidate=h.candidate, inventory=group.inventory))
        }
    if held and not replace:
        where = "; ".join(f"{name}: {', '.join(describe_open(s) for s in starts)}" for name, starts in held.items())
        raise LabOpen(
            f"{len(held)} host{'s' if len(held) != 1 else ''} of {group.inventory} hold another open lab ({where}). "
            f"Starting {lab.id} there would end {'it' if len(held) == 1 else 'them'} ungraded: grade "
            f"{'it' if len(held) == 1 else 'them'} first, or start {lab.id} with --replace, which closes "
            f"{'it' if len(held) == 1 else 'them'} as abandoned"
        )
    return held


def after_cohort_step(
    lab: Lab,
    action: str,
    group: Any,
    done: list[str],
    *,
    by: str,
    db: str | None = None,
    at: Any = None,
    held: Mapping[str, list[Any]] | None = None,
) -> list[str]:
    """What a cohort step leaves in the attempts database for the hosts in ``done`` (the step went through
    there), as one node's step does: a start closes the labs it replaced (``held``, as of ``at``, when the
    step began); a solve is recorded (later grades there are flagged); a reset closes every lab open on the
    host. A line per lab closed."""
    from assessor.labs import attempts
    from assessor.labs import capture as labcapture

    lines: list[str] = []
    with attempts.guarded(db) as conn:
        for name in done:
            key = labcapture.target_key(name, group.inventory)
            found: list[str] = []
            if action == "start":
                replaced = list((held or {}).get(name, ()))
                found = abandon(conn, replaced, for_lab=lab, closed_by=by, at=at or attempts.now())
            elif action == "solve":
                attempts.record_solve(conn, lab_id=lab.id, target=key, solved_by=by, at=attempts.now())
            elif action == "reset":
                found = close_node(conn, lab, key, closed_by=by, at=attempts.now())
            lines += [f"{name}: {line}" for line in found]
    return lines


def grade_and_record(lab: Lab, **how: Any) -> tuple[Any, Any]:
    """``lab grade``: :func:`assessor.labs.grade.grade_and_record` (a grade is no step of a lab's life; kept here
    for callers that grade beside a start)."""
    from assessor.labs import grade

    return grade.grade_and_record(lab, **how)


def load_ticket(lab: Lab, answer: str | None) -> Any:
    """:func:`assessor.labs.grade.load_ticket`."""
    from assessor.labs import grade

    return grade.load_ticket(lab, answer)


def grade_captured(
    lab: Lab,
    captured: Any,
    *,
    candidate: str,
    spec: str,
    db: str | None = None,
    inventory: str | None = None,
    conn: Any = None,
    answer: Any = None,
    options: TargetOptions | None = None,
) -> tuple[Any, Any]:
    """Grade facts (or a design lab's answer) captured by the caller: :func:`assessor.labs.grade.grade_captured`
    once they are taken in as a capture would take them."""
    from assessor.labs import capture as labcapture
    from assessor.labs import grade

    if lab.is_design:
        taken = labcapture.answer_captured(captured, spec)
    else:
        taken = labcapture.with_facts(captured, spec, inventory=inventory, options=options)
    return grade.grade_captured(lab, taken, candidate=candidate, db=db, conn=conn, ticket=answer)


def record_started(
    conn: Any,
    lab: Lab,
    spec: str | None,
    *,
    candidate: str,
    options: TargetOptions | None = None,
    inventory: str | None = None,
    timeout: float = 120.0,
    captured: tuple[Any, dict[str, float] | None] | None = None,
) -> Any:
    """Record the start of ``lab`` on a node just set up (with :func:`start` and the candidate's variant):
    its identity and baseline are captured now, unless ``captured`` holds them already (what
    :func:`~assessor.labs.capture.start_record` returned: a cohort captures its hosts in parallel). For one
    node or each host of a cohort."""
    from assessor.labs import attempts
    from assessor.labs import capture as labcapture
    from assessor.labs.loader import pick_variant

    if lab.is_design or not spec:
        ident, baseline, key = attempts.Identity(None), None, "design"
    else:
        ident, baseline = captured or labcapture.start_record(
            lab, spec, timeout=timeout, options=options, inventory=inventory
        )
        key = labcapture.target_key(spec, inventory)
    return attempts.record_start(
        conn,
        candidate=candidate,
        lab_id=lab.id,
        target=key,
        lab_hash=lab.digest,
        started_at=attempts.now(),
        identity=ident,
        baseline=baseline,
        variant=pick_variant(lab, candidate),
    )
