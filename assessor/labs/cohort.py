"""A lab over a cohort: every selected host of an inventory at once, one candidate per host.

An instructor's inventory lists the candidates' nodes; ``gpulab lab start|grade|solve|reset ID -i INV``
without ``--target`` acts on all of them (``--limit`` selects some). The playbooks run once over the whole
selection with Ansible's forks; grading captures the hosts in a pool of threads (of processes for simulated
nodes, which only compute). Each host's candidate is
its inventory variable ``gpulab_candidate`` or a line of ``--candidates FILE``; without either, the host
name stands for the candidate. One failing or unreachable host is reported for that host; the others finish.

A lab with variants is set up, solved and reset on each host with its candidate's variant
(:func:`host_variants`), on simulated and real hosts alike: the playbooks then run once per distinct variant
(:func:`run_step` says why). The start is recorded with the variant, so each candidate's grade is against
their own; the start's capture (identity and baseline) runs in the pool too.

Planning the hosts, mapping candidates and summaries are pure functions; :func:`run_step`
and :func:`grade` do the work. A cohort's grade captures every host in the pool, then takes each later stage of
a grade for all hosts at once (:func:`assessor.labs.grade.grade_all`); every start it writes goes through
:func:`_record_start`.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assessor.errors import GpulabError, InputError
from assessor.labs.drivers.ansible import HostOutcome
from assessor.labs.next_steps import command as command  # the command lines the summaries suggest

if TYPE_CHECKING:
    import sqlite3

    from assessor.labs.grading import Grade
    from assessor.labs.model import Lab
    from assessor.targets import TargetOptions
    from assessor.targets.inventory import InventoryHost

CANDIDATE_VAR = "gpulab_candidate"
_T = TypeVar("_T")
# What a host came to after a step, by the step: a playbook step is ok, failed or unreachable.
DONE = {"start": "ready", "solve": "solved", "reset": "reset"}
EXIT_OK, EXIT_FAILED, EXIT_UNREACHABLE = 0, 1, 3


@dataclass(frozen=True)
class CohortHost:
    """One host of the cohort: its inventory name, how gpulab reaches it, whose node it is."""

    name: str
    target: str  # ssh://..., or the host's gpulab_target (mock:FILE.json)
    candidate: str
    candidate_from: str  # "inventory", "file" or "host name"

    @property
    def by_ansible(self) -> bool:
        """Playbooks reach the host over SSH; other targets (a simulated node's file) change by their driver."""
        return self.target.startswith("ssh://")


@dataclass(frozen=True)
class Cohort:
    inventory: str
    limit: str | None
    hosts: tuple[CohortHost, ...]


@dataclass(frozen=True)
class HostGrade:
    """One host's grade, or why there is none (``failed``: the capture broke; ``unreachable``)."""

    host: CohortHost
    status: str  # "graded", "failed" or "unreachable"
    grade: Grade | None = None
    message: str = ""


# ---- planning --------------------------------------------------------------------------------


def read_candidates(path: str) -> dict[str, str]:
    """A host -> candidate file: YAML (a mapping ``node01: alice``) or CSV (``host,candidate`` rows, a header
    row allowed); either may say who each candidate is too (:mod:`assessor.labs.roster`). Errors name the
    file, line and key."""
    from assessor.labs import roster

    return roster.host_candidates(roster.read(path), path)


def parse_candidates_csv(text: str, source: str) -> dict[str, str]:
    """``host,candidate`` rows; blank lines and ``#`` comments skipped; a first row ``host,candidate`` is a header."""
    from assessor.labs import roster

    return roster.host_candidates(roster.parse_csv(text, source), source)


def parse_candidates_yaml(text: str, source: str) -> dict[str, str]:
    """A YAML mapping of inventory host -> candidate name (or -> ``{candidate: NAME, email: ...}``)."""
    from assessor.labs import roster

    return roster.host_candidates(roster.parse_yaml(text, source), source)


def plan(
    hosts: Sequence[InventoryHost],
    inventory_candidates: Mapping[str, Any],
    file_candidates: Mapping[str, str] | None,
    *,
    inventory: str,
    limit: str | None = None,
    all_hosts: Sequence[str] | None = None,
) -> Cohort:
    """The cohort: ``hosts`` (the inventory after ``--limit``) with their candidates.

    A candidate comes from the candidates file, else the host's ``gpulab_candidate``, else the host name.
    A file naming a host the inventory does not have is an error ("no host named node09 in inv.yml");
    ``all_hosts`` are all of the inventory's hosts (the file may list hosts ``--limit`` left out). Two hosts
    of one candidate are an error: the time limit and the grade belong to one node.
    """
    everyone = set(all_hosts if all_hosts is not None else [h.name for h in hosts])
    for name in file_candidates or {}:
        if name not in everyone:
            raise InputError(f"no host named {name} in {inventory} (candidates file)")
    out = []
    for host in hosts:
        if file_candidates and host.name in file_candidates:
            who, source = file_candidates[host.name], "file"
        elif inventory_candidates.get(host.name) not in (None, ""):
            who, source = str(inventory_candidates[host.name]).strip(), "inventory"
        else:
            who, source = host.name, "host name"
        out.append(CohortHost(host.name, host.target, who, source))
    seen: dict[str, str] = {}
    for h in out:
        if h.candidate in seen:
            raise InputError(
                f"candidate {h.candidate} is on {seen[h.candidate]} and {h.name} in {inventory}: "
                "a cohort gives each candidate one host"
            )
        seen[h.candidate] = h.name
    return Cohort(inventory, limit, tuple(out))


class OptionsConflict(InputError):
    """Options that select the hosts of a cohort given with ones that name one node or one person: a usage
    error, reported as the command's own (``gpulab lab ... --help`` says how each is meant)."""


def is_cohort(
    inventory: str | None,
    target: str | None,
    limit: str | None,
    candidates_file: str | None,
    candidate: str | None = None,
) -> bool:
    """Whether the options select a cohort: ``--inventory`` without ``--target`` (every selected host at once).
    ``--limit`` or ``--candidates`` for one node, or ``--candidate`` for a cohort, is an :class:`OptionsConflict`."""
    if not inventory or target:
        if limit or candidates_file:
            raise OptionsConflict(
                "--limit and --candidates select the hosts of a cohort: give --inventory FILE without --target"
            )
        return False
    if candidate:
        raise OptionsConflict(
            "--candidate names one person: a cohort's candidates come from each host's gpulab_candidate "
            "in the inventory, or --candidates FILE"
        )
    return True


def load(inventory: str, *, limit: str | None = None, candidates_file: str | None = None) -> Cohort:
    """Read the inventory (after ``limit``) and the candidates into a :class:`Cohort`."""
    from assessor.labs.drivers.ansible import inventory_variable
    from assessor.targets import inventory as inv

    everyone = inv.load(inventory)  # the inventory's own errors, as every other command reports them
    selected = inventory_variable(inventory, CANDIDATE_VAR, limit)
    hosts = [h for h in everyone if h.name in selected]
    candidates = read_candidates(candidates_file) if candidates_file else None
    return plan(hosts, selected, candidates, inventory=inventory, limit=limit, all_hosts=[h.name for h in everyone])


def check_lab(lab: Lab, cohort: Cohort, action: str) -> None:
    """Refuse, before anything runs, a lab a cohort cannot do: a design lab, a simulator-only lab on SSH hosts."""
    if lab.is_design:
        raise InputError(
            f"{lab.id} is a design lab: it has no node to {action}; each candidate grades an answer file "
            f"(`gpulab lab grade {lab.id} --answer FILE`)"
        )
    if "real" not in lab.runs_on and "simulator" not in lab.runs_on:
        raise InputError(f"lab {lab.id} runs on no kind of node ({', '.join(lab.runs_on)})")


# ---- running ---------------------------------------------------------------------------------


_SIM_ONLY = (
    "lab {lab} runs on the simulator only: this host is no simulated node served over SSH whose admin login "
    "this key has (docs/NODE.md)"
)


def run_step(
    lab: Lab,
    action: str,
    cohort: Cohort,
    options: TargetOptions | None = None,
    *,
    forks: int = 32,
    extravars: Mapping[str, Any] | None = None,
) -> dict[str, HostOutcome]:
    """``start``, ``solve`` or ``reset`` on every host of the cohort; each host's outcome, in cohort order.

    Each host gets the lab built with its candidate's variant (:func:`host_variants`). SSH hosts: the lab's
    playbook through Ansible, one run per distinct variant over the hosts that share it (the playbook reads
    one ``gpulab_variant``, as on a single node; a lab has few variants, and every run still uses ``forks``),
    so a lab without variants is one run over all of them. Other hosts (a simulated node's file named by
    ``gpulab_target``): the simulator's driver, ``forks`` at a time.
    """
    from assessor.labs import lifecycle
    from assessor.labs.loader import with_variant

    check_lab(lab, cohort, action)
    variants = host_variants(lab, cohort)
    by_playbook = {h.name for h in cohort.hosts if h.by_ansible}
    simulated: set[str] = set()  # SSH hosts whose admin login says they are simulated nodes
    outcomes: dict[str, HostOutcome] = {}
    if by_playbook and "simulator" in lab.runs_on:
        # simulated nodes served over SSH take the simulator's step through their admin login, as one node
        # does (assessor.labs.drivers.sim_ssh); a lab only the simulator sets up has no other way onto them
        from assessor.labs.drivers import sim_ssh

        probed = _pooled(
            lambda h: (h.name, _probe(sim_ssh, h, options, cohort.inventory)),
            [h for h in cohort.hosts if h.by_ansible],
            forks,
            lambda h, _exc: (h.name, False),
        )
        simulated = {name for name, answer in probed if answer is True}
        by_playbook -= simulated
        if "real" not in lab.runs_on:
            # a host that could not be asked is unreachable, never taken for a real node (a lab that also runs on
            # real nodes leaves it to Ansible's run, which says the same for it)
            outcomes.update({name: answer for name, answer in probed if isinstance(answer, HostOutcome)})
            by_playbook -= set(outcomes)
        if "real" not in lab.runs_on:
            # a real node gets no simulator-only lab: each such host fails with the reason, the others go on
            outcomes.update({name: HostOutcome(name, "failed", _SIM_ONLY.format(lab=lab.id)) for name in by_playbook})
            by_playbook = set()
    by_ansible = [h.name for h in cohort.hosts if h.name in by_playbook]
    others = [h for h in cohort.hosts if h.name not in by_playbook and h.name not in outcomes]
    if by_ansible:
        from assessor.labs.drivers.ansible import run_playbook_on_hosts

        groups = variant_groups(by_ansible, variants)
        # the user's pattern selected exactly these hosts unless some are reached otherwise or run apart
        limit = cohort.limit if not others and len(groups) == 1 else None
        for variant, names in groups:
            outcomes.update(
                run_playbook_on_hosts(
                    with_variant(lab, variant),
                    lifecycle.PLAYBOOKS[action],
                    cohort.inventory,
                    names,
                    options,
                    limit=limit,
                    forks=forks,
                    extravars=extravars,
                )
            )
    step = {"start": lifecycle.start, "solve": lifecycle.solve, "reset": lifecycle.reset}[action]

    def one(host: CohortHost) -> HostOutcome:
        from assessor.labs.drivers import Unreachable

        try:
            if host.name in simulated:  # probed above: straight to its admin login
                from assessor.labs.drivers import sim_ssh

                sim_ssh.apply(with_variant(lab, variants[host.name]), action, host.name, options, cohort.inventory)
            else:
                step(with_variant(lab, variants[host.name]), host.target, options)
        except Unreachable as exc:
            return HostOutcome(host.name, "unreachable", str(exc).removeprefix("unreachable: "))
        except GpulabError as exc:
            return HostOutcome(host.name, "failed", str(exc))
        return HostOutcome(host.name, "ok")

    outcomes.update({o.host: o for o in _pooled(one, others, forks, _crashed)})
    return {h.name: outcomes[h.name] for h in cohort.hosts}


def _probe(sim_ssh: Any, host: CohortHost, options: TargetOptions | None, inventory: str) -> bool | HostOutcome:
    """Whether the SSH host is a simulated node with this key's admin login; its unreachable outcome when it
    could not be asked (:func:`assessor.labs.drivers.sim_ssh.probe`)."""
    from assessor.labs.drivers import Unreachable

    try:
        return bool(sim_ssh.is_simulated(host.name, options, inventory))
    except Unreachable as exc:
        return HostOutcome(host.name, "unreachable", str(exc).removeprefix("unreachable: "))


def host_variants(lab: Lab, cohort: Cohort) -> dict[str, dict[str, Any]]:
    """Each host's variant of ``lab``: its candidate's (:func:`~assessor.labs.loader.pick_variant`), as
    ``lab start`` on one node picks it; ``{}`` for every host of a lab without variants."""
    from assessor.labs.loader import pick_variant

    return {h.name: pick_variant(lab, h.candidate) for h in cohort.hosts}


def variant_groups(
    names: Sequence[str], variants: Mapping[str, dict[str, Any]]
) -> list[tuple[dict[str, Any], list[str]]]:
    """``names`` grouped by their variant, each group in the order of ``names``, groups by first host."""
    groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for name in names:
        key = repr(sorted(variants[name].items()))
        groups.setdefault(key, (variants[name], []))[1].append(name)
    return list(groups.values())


def start(
    lab: Lab,
    cohort: Cohort,
    options: TargetOptions | None = None,
    *,
    db: str | None = None,
    forks: int = 32,
    extravars: Mapping[str, Any] | None = None,
    timeout: float = 120.0,
) -> dict[str, HostOutcome]:
    """Set every host up for the lab and record one start per host that is ready (its candidate's clock).

    Each ready host is captured for its start (identity and baseline, with the lab's active tests) in the
    pool, ``forks`` at a time, as a grade captures them; a host set up but not captured is failed or
    unreachable, and has no start.
    """
    from assessor.labs import attempts

    outcomes = dict(run_step(lab, "start", cohort, options, forks=forks, extravars=extravars))
    variants = host_variants(lab, cohort)  # what run_step set each host up with
    ready = [h for h in cohort.hosts if outcomes[h.name].status == "ok"]

    def crashed(host: CohortHost, exc: BaseException) -> tuple[CohortHost, Any, HostOutcome | None]:
        return host, None, _crashed(host, exc)

    capture = functools.partial(_start_capture, lab, variants, timeout, options, cohort.inventory)
    captured = _pooled(capture, ready, forks, crashed, compute_only=_compute_only(ready))
    outcomes.update({host.name: problem for host, _, problem in captured if problem is not None})
    recorded = [(host, record) for host, record, _ in captured if record is not None]
    if recorded:
        with attempts.opened(db) as conn:
            for host, record in recorded:
                _record_start(conn, lab, host, cohort, options, record)
    return outcomes


def grade(
    lab: Lab,
    cohort: Cohort,
    options: TargetOptions | None = None,
    *,
    db: str | None = None,
    forks: int = 32,
    timeout: float = 120.0,
    answers: str | None = None,
) -> list[HostGrade]:
    """Capture every host (``forks`` at a time), grade each against its candidate's start, record each grade.

    Grades are in cohort order; a host that could not be captured has none and says why. A lab that grades
    a ticket reads each candidate's from ``answers``/<candidate>.yaml (:func:`ticket_file`): a candidate
    without one is graded without it (its ticket checks are ``error``), a malformed one fails that host
    only, naming the file, line and key.
    """
    from assessor.labs import grade as one_pass

    check_lab(lab, cohort, "grade")
    if answers is not None and not lab.takes_answer:
        raise InputError(f"lab {lab.id} grades the node only: it reads no answer files (drop --answers)")

    def crashed(host: CohortHost, exc: BaseException) -> tuple[CohortHost, Any, Any, str, str]:
        return host, None, None, "failed", f"internal error: {type(exc).__name__}: {exc}"

    capture = functools.partial(_grade_capture, lab, timeout, options, answers, cohort.inventory)
    taken = _pooled(capture, list(cohort.hosts), forks, crashed, compute_only=_compute_only(cohort.hosts))
    graded = [(host.candidate, captured, ticket) for host, captured, ticket, _, _ in taken if captured is not None]
    results = iter(one_pass.grade_all(lab, graded, db=db, one_connection=True))
    return [
        HostGrade(host, "graded", next(results)[0]) if captured is not None else HostGrade(host, status, None, message)
        for host, captured, _, status, message in taken
    ]


def grade_inventory(
    lab: Lab,
    inventory: str,
    *,
    limit: str | None = None,
    candidates_file: str | None = None,
    answer: str | None = None,
    answers: str | None = None,
    options: TargetOptions | None = None,
    db: str | None = None,
    forks: int = 32,
    timeout: float = 120.0,
    out: str | None = None,
) -> list[HostGrade]:
    """`lab grade ID --inventory INV` without ``--target``: the cohort (:func:`load`), every host graded
    (:func:`grade`), each grade kept in the gradebook ``out`` when given (:func:`write_gradebook`)."""
    group = load(inventory, limit=limit, candidates_file=candidates_file)
    if answer:
        raise InputError("a cohort hands in one ticket per candidate: --answers DIR (DIR/<candidate>.yaml)")
    grades = grade(lab, group, options, db=db, forks=forks, timeout=timeout, answers=answers)
    if out:
        write_gradebook(grades, out, lab_id=lab.id)
    return grades


def ticket_file(answers: str, candidate: str) -> Path:
    """Where a cohort's tickets directory keeps ``candidate``'s: ``<answers>/<candidate>.yaml``, the name
    made safe as a gradebook's (no path separators, no leading dot)."""
    stem = re.sub(r"[^A-Za-z0-9_.@-]", "_", candidate).lstrip(".") or "candidate"
    return Path(answers) / f"{stem}.yaml"


def _record_start(
    conn: sqlite3.Connection,
    lab: Lab,
    host: CohortHost,
    cohort: Cohort,
    options: TargetOptions | None,
    captured: tuple[Any, dict[str, float] | None],
) -> None:
    """One recorded start for the host's candidate, with the node's identity and baseline as ``captured``
    (:func:`~assessor.labs.capture.start_record`) and the candidate's variant (the single place a cohort
    writes a start)."""
    from assessor.labs import lifecycle

    lifecycle.record_started(
        conn, lab, host.name, candidate=host.candidate, options=options, inventory=cohort.inventory, captured=captured
    )


def _start_capture(
    lab: Lab,
    variants: Mapping[str, dict[str, Any]],
    timeout: float,
    options: TargetOptions | None,
    inventory: str | None,
    host: CohortHost,
) -> tuple[CohortHost, Any, HostOutcome | None]:
    """One ready host captured for its start (identity and baseline of the lab as it was set up there)."""
    from assessor.labs import capture as labcapture
    from assessor.labs.loader import with_variant
    from assessor.targets.ssh_connection import HostError

    not_captured = "set up, but not captured for the start"
    mine = with_variant(lab, variants[host.name])
    try:
        record = labcapture.start_record(mine, host.name, timeout=timeout, options=options, inventory=inventory)
    except HostError as exc:
        why = str(exc).removeprefix("unreachable: ")
        return host, None, HostOutcome(host.name, "unreachable", f"{not_captured}: {why}")
    except GpulabError as exc:
        return host, None, HostOutcome(host.name, "failed", f"{not_captured}: {exc}")
    return host, record, None


def _grade_capture(
    lab: Lab,
    timeout: float,
    options: TargetOptions | None,
    answers: str | None,
    inventory: str | None,
    host: CohortHost,
) -> tuple[CohortHost, Any, Any, str, str]:
    """One host captured for its grade, with its candidate's ticket from ``answers`` when the lab takes one."""
    from assessor.labs import capture as labcapture
    from assessor.labs import grade as one_pass
    from assessor.targets.ssh_connection import HostError

    try:
        path = ticket_file(answers, host.candidate) if answers is not None else None
        ticket = one_pass.load_ticket(lab, str(path)) if path is not None and path.is_file() else None
        captured = labcapture.capture_node(lab, host.name, timeout=timeout, options=options, inventory=inventory)
    except HostError as exc:
        return host, None, None, "unreachable", str(exc).removeprefix("unreachable: ")
    except GpulabError as exc:
        return host, None, None, "failed", str(exc)
    return host, captured, ticket, "graded", ""


def _compute_only(hosts: Sequence[CohortHost]) -> bool:
    """Whether capturing ``hosts`` only computes (simulated nodes' state files): a fleet assess of them runs in
    processes, and so does the cohort's capture (:func:`assessor.assess.fleet.pool_for`)."""
    return all(h.target.startswith("mock:") for h in hosts)


def _crashed(host: CohortHost, exc: BaseException) -> HostOutcome:
    return HostOutcome(host.name, "failed", f"internal error: {type(exc).__name__}: {exc}")


def _pooled(
    work: Callable[[CohortHost], _T],
    hosts: list[CohortHost],
    forks: int,
    crashed: Callable[[CohortHost, BaseException], _T],
    *,
    compute_only: bool = False,
) -> list[_T]:
    """``work`` over ``hosts`` in the pool a fleet assess uses (:func:`~assessor.assess.fleet.pool_for`: threads,
    or one process per core for ``compute_only`` work on more hosts than cores; ``work`` must then pickle),
    results in host order; a host whose work raised gets ``crashed(host, exc)`` so one
    host's bug never loses the others' results."""
    if not hosts:
        return []
    from assessor.assess.fleet import pool_for

    pool = pool_for(len(hosts), forks, cpu_bound=compute_only)
    with pool:
        futures = [pool.submit(work, h) for h in hosts]
        out = []
        for host, future in zip(hosts, futures, strict=True):
            try:
                out.append(future.result())
            except Exception as exc:  # one host's failure is that host's
                out.append(crashed(host, exc))
    return out


# ---- what the user sees ----------------------------------------------------------------------


def step_summary(action: str, cohort: Cohort, outcomes: Mapping[str, HostOutcome]) -> list[str]:
    """One line per host: ``node01 (alice): ready``, ``node03 (carol): unreachable: connection refused``."""
    from assessor.neutralise import visible

    lines = []
    for host in cohort.hosts:
        o = outcomes[host.name]
        word = DONE.get(action, "done") if o.status == "ok" else o.status
        lines.append(visible(f"{host.name} ({host.candidate}): {word}" + (f": {o.message}" if o.message else "")))
    return lines


def step_tally(action: str, outcomes: Mapping[str, HostOutcome]) -> str:
    """``8 hosts: 7 ready, 1 unreachable``."""
    counts = {s: sum(1 for o in outcomes.values() if o.status == s) for s in ("ok", "failed", "unreachable")}
    parts = [f"{counts['ok']} {DONE.get(action, 'done')}"] + [
        f"{counts[s]} {s}" for s in ("failed", "unreachable") if counts[s]
    ]
    return f"{len(outcomes)} host{'s' if len(outcomes) != 1 else ''}: " + ", ".join(parts)


def grade_summary(grades: Sequence[HostGrade]) -> list[str]:
    """One line per host: the score of its candidate and what it comes to (passed or not, a broken guard's
    message, recorded or not and why, flags: :func:`assessor.labs.gradebook.verdict`), or why it has none.
    Node and candidate data are shown neutralised."""
    from assessor.labs.gradebook import verdict
    from assessor.neutralise import visible

    lines = []
    for g in grades:
        who = f"{g.host.name} ({g.host.candidate})"
        if g.grade is None:
            lines.append(visible(f"{who}: {g.status}: {g.message}"))
            continue
        r = g.grade
        lines.append(visible(f"{who}: {r.points:g}/{r.max_points:g} ({r.percent:g} %) {verdict(r)}"))
    return lines


def grade_tally(grades: Sequence[HostGrade]) -> str:
    """``8 hosts: 5 passed, 2 not passed, 1 not graded``, and how many of the grades do not count (not
    recorded or flagged: ``; 2 do not count``)."""
    from assessor.labs.attempts import counts

    graded = [g.grade for g in grades if g.grade is not None]
    passed = sum(1 for r in graded if r.passed)
    parts = [f"{passed} passed", f"{len(graded) - passed} not passed"]
    if len(graded) < len(grades):
        parts.append(f"{len(grades) - len(graded)} not graded")
    tally = f"{len(grades)} host{'s' if len(grades) != 1 else ''}: " + ", ".join(parts)
    ignored = sum(1 for r in graded if not counts(r))
    if ignored:
        tally += f"; {ignored} {'does' if ignored == 1 else 'do'} not count (not recorded or flagged)"
    return tally


def step_exit_code(outcomes: Mapping[str, HostOutcome]) -> int:
    """3 when a host was unreachable, else 1 when one failed, else 0 (as `gpulab assess`)."""
    statuses = {o.status for o in outcomes.values()}
    if "unreachable" in statuses:
        return EXIT_UNREACHABLE
    return EXIT_FAILED if "failed" in statuses else EXIT_OK


def grade_exit_code(grades: Sequence[HostGrade]) -> int:
    """3 when a host was unreachable, else 1 when one could not be graded or did not pass, else 0."""
    if any(g.status == "unreachable" for g in grades):
        return EXIT_UNREACHABLE
    return EXIT_OK if all(g.grade is not None and g.grade.passed for g in grades) else EXIT_FAILED


def write_gradebook(grades: Sequence[HostGrade], out: str, *, lab_id: str, at: dt.datetime | None = None) -> list[Path]:
    """Keep every host's grade in the gradebook directory ``out`` beside the earlier ones (what `gpulab report
    cohort OUT` reads), and for a host that could not be graded a gpulab.ungraded/1 document saying why
    (:mod:`assessor.labs.gradebook`)."""
    from assessor.labs import attempts, gradebook

    when = at or attempts.now()
    written = []
    for g in grades:
        if g.grade is not None:
            written.append(gradebook.write_grade(out, g.grade, candidate=g.host.candidate, host=g.host.name))
        else:
            written.append(
                gradebook.write_ungraded(
                    out,
                    lab_id,
                    candidate=g.host.candidate,
                    host=g.host.name,
                    target=g.host.target,
                    status="unreachable" if g.status == "unreachable" else "failed",
                    message=g.message,
                    at=when,
                )
            )
    return written
