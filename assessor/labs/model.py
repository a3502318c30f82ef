"""What a lab is once loaded: plain, frozen dataclasses (the YAML shape is in ``lab.schema.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Lab domain -> the id prefix its labs use (``drv-101``, ``ib-202``).
DOMAIN_PREFIX: dict[str, str] = {
    "drivers": "drv",
    "mig": "mig",
    "nccl": "nccl",
    "infiniband": "ib",
    "health": "health",
    "slurm": "slurm",
    "containers": "ctr",
    "design": "design",
}
DOMAINS: tuple[str, ...] = tuple(DOMAIN_PREFIX)

# The five skill levels (docs/LEVELS.md, "The five levels").
LEVEL_NAMES: dict[int, str] = {
    0: "not yet Foundation",
    1: "Foundation",
    2: "Operational",
    3: "Professional",
    4: "Expert",
    5: "Architect",
}


@dataclass(frozen=True)
class Partial:
    """Partial credit: re-run the check with ``param`` multiplied by ``factor``; a pass earns ``credit`` × points."""

    param: str
    factor: float
    credit: float


@dataclass(frozen=True)
class LabCheck:
    """One graded check of a lab (a catalogue check, or a ``design.*`` grader for design labs).

    A *task* check is what the candidate is asked to change and carries the points; a *guard* is what must
    stay true (GPUs 1-7 stay whole): it carries no points, and when it fails the lab is not passed.
    """

    id: str
    params: dict[str, Any]
    points: float
    hint: str
    partial: tuple[Partial, ...] = ()
    role: str = "task"  # task | guard
    baseline_ok: bool = False  # a task check already passing at `lab start` still earns its points

    @property
    def is_guard(self) -> bool:
        return self.role == "guard"

    @property
    def grades_answer(self) -> bool:
        """A ``design.*`` grader: it reads the candidate's answer file (a design, or a ticket for the data
        centre in a node lab whose remedy is physical), not the node."""
        return self.id.startswith("design.")


@dataclass(frozen=True)
class TicketGrades:
    """How often a lab grades the candidate's answer file (``answer.grades`` in lab.yaml): at most ``limit``
    grades read it, each counted in the attempts database and shown with the grade, and each after the first
    earns ``penalty_percent`` less of the answer's points than the one before. A grade past the limit leaves
    the answer ungraded (0 points for it); the best grade stands. So repeated grading cannot enumerate a
    ticket's answer."""

    limit: int
    penalty_percent: float = 0.0

    def factor(self, nth: int) -> float:
        """The share of its points the answer may earn in its ``nth`` grade (1-based)."""
        return max(0.0, 1.0 - self.penalty_percent * (nth - 1) / 100.0)


# A node lab's ticket is graded at most this many times unless its lab.yaml says otherwise (answer.grades).
DEFAULT_TICKET_GRADES = TicketGrades(limit=3, penalty_percent=0.0)


@dataclass(frozen=True)
class LabObjective:
    """An exam objective a lab trains (``labs/objectives.yaml``), as lab.yaml names it: ``NCP-AII-2.2`` when the
    lab trains the whole task as the exam describes it, ``NCP-AII-1.8 (part)`` when it trains a part of it."""

    id: str
    whole: bool = True

    @classmethod
    def parse(cls, text: str) -> LabObjective:
        name = text.strip()
        if name.endswith(PART):
            return cls(name.removesuffix(PART).strip(), whole=False)
        return cls(name)

    def __str__(self) -> str:
        return self.id if self.whole else self.id + PART


PART = " (part)"  # the mark of an objective a lab trains only in part


@dataclass(frozen=True)
class FaultStep:
    """A simulator fault and its options (``assessor.sim.faults``)."""

    fault: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Lab:
    """A loaded, validated lab."""

    id: str
    title: str
    domain: str
    level: int
    exam_domains: tuple[str, ...]
    time_limit_min: int
    target: str  # node | nodes | any | design
    runs_on: tuple[str, ...]
    fixture: str | None
    checks: tuple[LabCheck, ...]
    pass_percent: float
    path: Path  # the lab directory
    digest: str  # sha256 of lab.yaml bytes + README.md bytes: which version of the lab was graded
    warn_counts: bool = False
    dcgm_level: int = 1
    nccl_job: str = "user"  # whose job the grader's all_reduce is on a simulated node: a user's or root's
    faults: tuple[FaultStep, ...] = ()
    commands: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # simulator: node config files the scenario writes
    playbooks: dict[str, str] = field(default_factory=dict)  # setup / solve / reset -> file in the lab's folder
    solution_commands: tuple[str, ...] = ()
    solution_files: dict[str, str] = field(default_factory=dict)  # simulator: config files the solution writes
    solution_answer: str | None = None  # reference answer (design) or ticket (node lab) file in the lab dir
    answer_example: str | None = None  # example answer or ticket file in the lab dir
    answer_grades: TicketGrades | None = None  # how often the answer is graded; None: as often as asked
    variants: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # name -> values to pick from
    variant: dict[str, Any] = field(default_factory=dict)  # the values this Lab was built with
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # lab.yaml, for variants
    objectives: tuple[LabObjective, ...] = ()  # the exam objectives it trains (labs/objectives.yaml)

    @property
    def is_design(self) -> bool:
        return self.target == "design"

    @property
    def needs_running_node(self) -> bool:
        """The scenario runs real daemons inside the simulated node (a Slurm cluster): the lab is practised, walked
        and graded on the running node, not through the simulator's functions alone."""
        from assessor.sim.slurm_node import SCENARIO_FAULTS

        return any(step.fault in SCENARIO_FAULTS for step in self.faults)

    @property
    def takes_answer(self) -> bool:
        """The candidate hands in an answer file (``lab grade --answer FILE``): every design lab, and a node
        lab that grades a ticket for a physical fault beside what is done on the node."""
        return self.is_design or any(c.grades_answer for c in self.checks)

    @property
    def grades_ticket(self) -> bool:
        """A node lab that also grades a ticket for the data centre (its remedy is physical)."""
        return not self.is_design and any(c.grades_answer for c in self.checks)

    @property
    def answer_check_ids(self) -> list[str]:
        """The graders that read the answer file."""
        return [c.id for c in self.checks if c.grades_answer]

    @property
    def active_tests(self) -> tuple[str, ...]:
        """Which active tests a capture for this lab runs: ``nccl`` for nccl.* checks, ``dcgm`` for dcgm.diag,
        ``hpl`` for hpl.*, ``nvbandwidth`` for nvbandwidth.*, ``mlxlink`` for cable.* and for a firmware.baseline
        of the transceivers."""
        ids = {c.id for c in self.checks}
        out = []
        if any(i.startswith("nccl.") for i in ids):
            out.append("nccl")
        if "dcgm.diag" in ids:
            out.append("dcgm")
        if any(i.startswith("hpl.") for i in ids):
            out.append("hpl")
        if any(i.startswith("nvbandwidth.") for i in ids):
            out.append("nvbandwidth")
        transceivers = any(c.id == "firmware.baseline" and c.params.get("transceiver") for c in self.checks)
        if any(i.startswith("cable.") for i in ids) or transceivers:
            out.append("mlxlink")
        return tuple(out)

    @property
    def readme(self) -> Path:
        return self.path / "README.md"

    @property
    def total_points(self) -> float:
        return sum(c.points for c in self.checks if not c.is_guard)

    @property
    def level_name(self) -> str:
        return LEVEL_NAMES.get(self.level, str(self.level))
