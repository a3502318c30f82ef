"""The bring-up and acceptance plan for a new scalable unit: ordered stages, each with its tool, its pass
criterion (a threshold with its unit), the nodes it covers and how long it runs.

The candidate lists the stages in the order they run them. The grader checks four parts, each on its own so a
lab can give points per part:

- ``stages``: every stage of :data:`STAGES` is there, its tool is one that does that job, and it covers every
  node of the unit (a sample is not an acceptance: every node before handover).
- ``order``: the constraints of :data:`ORDER_RULES` (firmware before any test, single-node before multi-node,
  burn-ins after the short tests, handover last), each violation named with its rule and why.
- ``thresholds``: each criterion points the right way (a bandwidth is a minimum, a count of faults a maximum)
  and is no laxer than gpulab's references (``assessor/data/references.yaml``, docs/REFERENCES.md): the NCCL
  all_reduce busbw of one node and across the fabric per GPU model, the ``dcgmi diag`` level, a baseline that
  allows no exception.
- ``durations``: every burn-in runs at least the reference minimum (``burn_in_min_hours``).

Sources for the order: the NCP-AII study guide lists bring-up before the cluster tests and the burn-ins after
single-node and east-west tests; NVIDIA's DeepOps HPL burn-in (``workloads/burn-in/README.md``) runs HPL on every
node alone first, fixes the slow ones, then doubles the node count up to the whole cluster. Feedback names the
candidate's own stages and the rule they break; the reference numbers stay unsaid unless the lab reveals them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assessor.checks import references
from assessor.checks.base import Param
from assessor.checks.result import Result
from assessor.labs.design.answer import Schema, check_section
from assessor.labs.design.base import as_located, check_parts, grader, parts_param, problems_message
from assessor.yamlio import Located

SECTION = "acceptance"

# Single-value references (assessor/data/references.yaml), the defaults of the grader's params.
DIAG_MIN_LEVEL = int(references.resolve("ref:dcgm_diag_min_level"))
BURN_IN_MIN_HOURS = float(references.resolve("ref:burn_in_min_hours"))
GPUS_PER_NODE = int(references.resolve("ref:hgx_gpus"))


@dataclass(frozen=True)
class Stage:
    """One stage of an acceptance plan: its id, what it does, and the tools that do it (empty: any)."""

    id: str
    title: str
    tools: tuple[str, ...]
    direction: str | None = None  # "min" or "max": which way its pass criterion must point; None: either


# In the order a scalable unit is brought up and accepted (one valid order of several).
STAGES: dict[str, Stage] = {
    s.id: s
    for s in (
        Stage("firmware", "firmware to the fleet baseline", ("nvfwupd", "mlxfwmanager", "flint", "mlxup"), "max"),
        Stage("bmc-oob", "BMC and out-of-band management", ("ipmitool", "redfishtool", "curl"), "max"),
        Stage(
            "os-driver",
            "OS, GPU driver and network stack",
            ("apt", "apt-get", "dnf", "yum", "dpkg", "rpm", "dkms", "nvidia-smi", "cmsh", "ofed_info", "modinfo"),
            "max",
        ),
        Stage("single-node-health", "single-node stress and health (dcgmi diag)", ("dcgmi",), "max"),
        Stage("single-node-nccl", "single-node NCCL through the NVLink switch", ("all_reduce_perf",), "min"),
        Stage("single-node-hpl", "HPL on each node", ("hpl.sh", "xhpl"), "min"),
        Stage(
            "cabling",
            "cable signal quality and cabling check",
            ("mlxlink", "mlxcables", "ibdiagnet", "iblinkinfo", "ibnetdiscover"),
            "max",
        ),
        Stage("east-west-nccl", "NCCL across nodes over the east-west fabric", ("all_reduce_perf",), "min"),
        Stage("nccl-burn-in", "NCCL burn-in", ("all_reduce_perf",), "min"),
        Stage("hpl-burn-in", "HPL burn-in", ("hpl.sh", "xhpl"), "min"),
        Stage("nemo-burn-in", "NeMo training burn-in", ("nemo", "megatron")),
        Stage("storage", "storage test", ("fio", "gdsio", "ior", "mdtest", "elbencha")),
        Stage("clusterkit", "ClusterKit multi-node assessment", ("clusterkit", "clusterkit.sh")),
        Stage("handover", "hand-over to operations", ()),
    )
}

PREP = ("firmware", "bmc-oob", "os-driver")
SINGLE_NODE = ("single-node-health", "single-node-nccl", "single-node-hpl")
BURN_INS = ("nccl-burn-in", "hpl-burn-in", "nemo-burn-in")
SHORT_TESTS = (*SINGLE_NODE, "cabling", "east-west-nccl")
MULTI_NODE = ("east-west-nccl", "clusterkit", *BURN_INS)
TESTS = (*SHORT_TESTS, *BURN_INS, "storage", "clusterkit")

# (rule, stages that come first, stages that come after, why). A violation names the rule and the reason.
ORDER_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    (
        "firmware before any test",
        ("firmware",),
        TESTS,
        "a test on firmware off the baseline proves nothing about the baseline you hand over, and the update voids it",
    ),
    (
        "BMC and out-of-band before any test",
        ("bmc-oob",),
        TESTS,
        "a node that hangs under test is recovered through its BMC",
    ),
    ("OS and driver before any test", ("os-driver",), TESTS, "the tests run on the stack you hand over"),
    (
        "single-node before multi-node",
        SINGLE_NODE,
        MULTI_NODE,
        "one weak node slows or breaks every multi-node run it joins: prove each node alone first",
    ),
    (
        "cabling before east-west",
        ("cabling",),
        MULTI_NODE,
        "a marginal cable shows up as a slow or flapping rail in every multi-node run",
    ),
    (
        "burn-ins after the short tests",
        SHORT_TESTS,
        BURN_INS,
        "a burn-in holds the whole unit for hours: run it once the short tests have found what they can",
    ),
    (
        "handover last",
        tuple(s for s in STAGES if s != "handover"),
        ("handover",),
        "every stage on every node before handover",
    ),
)

PARTS = ("stages", "order", "thresholds", "durations")

# dcgmi diag -r: a digit or its alias (dcgmi-diag reference: quick/short, medium, long, xlong).
DIAG_ALIASES = {"quick": 1, "short": 1, "medium": 2, "long": 3, "xlong": 4}
_DIAG_LEVEL = re.compile(r"(?:^|\s)(?:-r|--run)(?:\s+|=)([A-Za-z0-9]+)")
_BANDWIDTH_UNITS = {"GB/s", "GBps", "GB/sec"}  # nccl-tests busbw: gigaBYTES per second (the case of B decides)
# HPL's Gflops column, as TFLOPS per node; "%" is relative (of a reference run or the unit's median node)
_HPL_UNITS: dict[str, float | None] = {"tflops": 1.0, "tflop/s": 1.0, "gflops": 1e-3, "gflop/s": 1e-3, "%": None}

CRITERION: Schema = {"min?": "number", "max?": "number", "unit": "str", "what?": "str"}
ROW: Schema = {"stage": "str", "tool": "str", "nodes": "count", "pass": CRITERION, "duration_h": "number"}
SCHEMA: Schema = {"stages": [ROW], "notes?": "str"}

ANSWER_FORMAT = (
    """\
acceptance:
  stages:                    # in the order you run them; every stage once
    - stage: <stage id>
      tool: <the command you run, e.g. dcgmi diag -r 3>
      nodes: <how many nodes it covers>
      pass: {min: <number> | max: <number>, unit: <unit>, what: <what is measured>}
      duration_h: <hours it takes>
stage ids: """
    + ", ".join(STAGES)
    + "\n"
)


def stage_key(name: str) -> str:
    """``Single node NCCL`` / ``single_node_nccl`` -> ``single-node-nccl``."""
    return "-".join(str(name).strip().lower().replace("_", " ").replace("-", " ").split())


def tool_names(command: str) -> list[str]:
    """The program names in a command line: ``mpirun -np 256 /opt/nccl-tests/build/all_reduce_perf -b 8G`` ->
    ``[mpirun, -np, 256, all_reduce_perf, -b, 8g]`` (each word's last path part, lower-cased)."""
    return [w.rsplit("/", 1)[-1].lower() for w in re.split(r"[\s;|&()]+", command) if w]


def uses_tool(stage: Stage, command: str) -> bool:
    """Whether ``command`` runs one of the stage's tools (any command for a stage without tools)."""
    if not stage.tools:
        return True
    words = tool_names(command)
    if stage.id == "nemo-burn-in":  # NeMo runs as a script or a launcher: its name appears in the command
        return any(t in w for w in words for t in stage.tools)
    if stage.id == "single-node-health":
        return "dcgmi" in words and "diag" in words
    return any(w in stage.tools for w in words)


def diag_level(command: str) -> int | None:
    """The ``dcgmi diag`` level a command runs (``-r 3``, ``--run=long``), or None when it names none."""
    match = _DIAG_LEVEL.search(command)
    if not match:
        return None
    value = match.group(1).lower()
    return int(value) if value.isdigit() else DIAG_ALIASES.get(value)


def validate(located: Located) -> None:
    """Keys and types, then stage ids from the vocabulary, each stage once, and a criterion that is a ``min`` or
    a ``max`` (one of them)."""
    section = check_section(located, SECTION, SCHEMA)
    seen: set[str] = set()
    for i, row in enumerate(section["stages"]):
        at = (SECTION, "stages", i)
        key = stage_key(row["stage"])
        if key not in STAGES:
            raise located.error((*at, "stage"), f"unknown stage {row['stage']!r} (stages: {', '.join(STAGES)})")
        if key in seen:
            raise located.error((*at, "stage"), f"{key} is named twice (one row per stage)")
        seen.add(key)
        criterion = row["pass"]
        if ("min" in criterion) == ("max" in criterion):
            raise located.error((*at, "pass"), "give min (the least that passes) or max (the most), one of them")


def _rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(row, stage=stage_key(row["stage"])) for row in answer[SECTION]["stages"]]


def stage_problems(rows: list[dict[str, Any]], nodes: int) -> list[str]:
    """Missing stages, tools that do not do the stage's job, stages that cover only some of the nodes."""
    have = {r["stage"] for r in rows}
    out = [f"{s} is missing ({STAGES[s].title})" for s in STAGES if s not in have]
    for row in rows:
        stage = STAGES[row["stage"]]
        if not uses_tool(stage, str(row["tool"])):
            tools = "dcgmi diag" if stage.id == "single-node-health" else " or ".join(stage.tools)
            out.append(f"{stage.id}: {row['tool']!r} does not run the {stage.title} (a job for {tools})")
        if row["nodes"] != nodes:
            out.append(f"{stage.id} covers {row['nodes']} of the {nodes} nodes: every node before handover")
    return out


def order_problems(rows: list[dict[str, Any]]) -> list[str]:
    """Each order rule the plan breaks, once, with the first pair that breaks it (missing stages are left to the
    ``stages`` part)."""
    position = {r["stage"]: i for i, r in enumerate(rows, 1)}
    out = []
    for rule, first, then, why in ORDER_RULES:
        late = [(position[a], a) for a in first if a in position]
        early = [(position[b], b) for b in then if b in position and b not in first]
        breaks = [(b, a) for b in early for a in late if b[0] < a[0]]
        if breaks:
            (pos_b, b), (pos_a, a) = min(breaks)
            out.append(f"{b} (stage {pos_b}) runs before {a} (stage {pos_a}): {rule}, because {why}")
    return out


def threshold_problems(rows: list[dict[str, Any]], params: dict[str, Any]) -> list[str]:
    """Criteria that point the wrong way, use the wrong unit, or are laxer than the references."""
    reveal = bool(params.get("reveal"))
    gpu = params.get("gpu") or "GPU"
    out = []

    def said(value: float, unit: str) -> str:
        return f" (reference: {value:g} {unit})" if reveal else ""

    for row in rows:
        stage, criterion = STAGES[row["stage"]], row["pass"]
        direction = "min" if "min" in criterion else "max"
        value = float(criterion[direction])
        unit = str(criterion["unit"]).strip()
        if stage.direction and direction != stage.direction:
            what = "a least value that passes (min)" if stage.direction == "min" else "a most that passes (max)"
            out.append(f"{stage.id}: a {direction} criterion points the wrong way: it needs {what}")
            continue
        if stage.id in (*PREP, "single-node-health") and value != 0:
            out.append(
                f"{stage.id}: max {value:g} {unit} lets faulty nodes through: the criterion allows no exception (0)"
            )
        if stage.id == "single-node-health":
            level = diag_level(str(row["tool"]))
            least = int(params["min_diag_level"])
            if level is None:
                out.append(f"{stage.id}: {row['tool']!r} names no level (dcgmi diag -r N)")
            elif level < least:
                out.append(
                    f"{stage.id}: dcgmi diag level {level} is a quick check, not a stress test of the GPUs"
                    + (f" (reference: level {least} or more)" if reveal else "")
                )
        bandwidth = {
            "single-node-nccl": ("single_node_busbw_gbps", f"a healthy 8x {gpu} node's all_reduce busbw"),
            "east-west-nccl": ("east_west_busbw_gbps", f"all_reduce busbw across {gpu} nodes over the fabric"),
            "nccl-burn-in": ("east_west_busbw_gbps", f"all_reduce busbw across {gpu} nodes over the fabric"),
        }
        if stage.id in bandwidth:
            param, what = bandwidth[stage.id]
            if unit.replace(" ", "") not in _BANDWIDTH_UNITS:
                out.append(f"{stage.id}: busbw is in GB/s (gigabytes), not {unit!r}: Gb/s (gigabits) is 8x smaller")
            elif value < float(params[param]):
                out.append(f"{stage.id}: min {value:g} {unit} is too lax: below {what}{said(params[param], 'GB/s')}")
        if stage.id in ("single-node-hpl", "hpl-burn-in"):
            scale = _HPL_UNITS.get(unit.lower(), 0.0)
            if scale == 0.0:
                out.append(
                    f"{stage.id}: HPL reports Gflops: give the minimum in TFLOPS, GFLOPS or % of a reference run, "
                    f"not {unit!r}"
                )
            # per node: an HPL burn-in may run node by node or across the unit, so only the one-node run compares
            elif stage.id == "single-node-hpl" and scale is not None and params.get("hpl_min_tflops_per_gpu"):
                node = float(params["hpl_min_tflops_per_gpu"]) * int(params["gpus_per_node"])
                if value * scale < node:
                    out.append(
                        f"{stage.id}: min {value:g} {unit} is too lax: below what one {gpu} node's HPL reaches"
                        f"{said(node, 'TFLOPS')}"
                    )
    return out


def duration_problems(rows: list[dict[str, Any]], params: dict[str, Any]) -> list[str]:
    """Burn-ins shorter than the reference minimum."""
    least = float(params["min_burn_in_hours"])
    shown = f" (reference: at least {least:g} h)" if params.get("reveal") else ""
    return [
        f"{r['stage']}: {float(r['duration_h']):g} h is too short for a burn-in: early-life failures need hours "
        f"under load to show{shown}"
        for r in rows
        if r["stage"] in BURN_INS and float(r["duration_h"]) < least
    ]


RULES = {
    "stages": "every stage once, with a tool that does its job, on every node",
    "order": "; ".join(rule for rule, *_ in ORDER_RULES),
    "thresholds": "a bandwidth is a minimum no lower than the reference for the GPU model (GB/s); a count of "
    "faults is a maximum of 0; dcgmi diag at a stress level",
    "durations": "every burn-in at least the reference minimum of hours",
}


def check_params(params: dict[str, Any]) -> list[tuple[str, str]]:
    """A lab's params beyond their types: the unit's node count and the two busbw references are required."""
    out = []
    for name in ("nodes", "single_node_busbw_gbps", "east_west_busbw_gbps"):
        value = params.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            out.append((name, f"{name} is required and must be a positive number"))
    return out


@grader(
    "design.acceptance",
    title="Bring-up and acceptance plan",
    section=SECTION,
    params=(
        Param("nodes", "int", None, "nodes in the scalable unit (required)"),
        Param("gpu", "str", None, "the GPU model, for the feedback's words (H100)"),
        Param(
            "single_node_busbw_gbps",
            "float",
            None,
            "the least all_reduce busbw of one 8-GPU node, GB/s: ref:nccl_allreduce_busbw_gbps.<GPU> (required)",
        ),
        Param(
            "east_west_busbw_gbps",
            "float",
            None,
            "the least all_reduce busbw across nodes, GB/s: ref:nccl_allreduce_busbw_multinode_gbps.<GPU> (required)",
        ),
        Param(
            "min_diag_level",
            "int",
            DIAG_MIN_LEVEL,
            "the least dcgmi diag level of the single-node stress test (default ref:dcgm_diag_min_level)",
        ),
        Param(
            "min_burn_in_hours",
            "float",
            BURN_IN_MIN_HOURS,
            "the least hours of each burn-in (default ref:burn_in_min_hours)",
        ),
        Param(
            "hpl_min_tflops_per_gpu",
            "float",
            None,
            "the least HPL TFLOPS per GPU of one node: ref:hpl_tflops_per_gpu.<GPU> (None: unit and direction only)",
        ),
        Param("gpus_per_node", "int", GPUS_PER_NODE, "GPUs in each node (default ref:hgx_gpus)"),
        parts_param(PARTS),
    ),
    doc=(
        "Grades the bring-up and acceptance plan of a scalable unit: every stage (firmware to handover) with a "
        "tool that does its job on every node; the order (firmware, BMC and OS before any test, single-node "
        "before multi-node, cabling before east-west, burn-ins after the short tests, handover last); pass "
        "criteria no laxer than gpulab's references (NCCL busbw per GPU model in GB/s, HPL TFLOPS per GPU, "
        "dcgmi diag level, no exception to a baseline); burn-ins at least the reference hours. Each problem "
        "is named with its rule."
    ),
    answer_format=ANSWER_FORMAT,
    validate=validate,
    check_params=check_params,
)
def grade_acceptance(answer: dict[str, Any], params: dict[str, Any]) -> Result:
    """Grade the acceptance section for a unit of ``params['nodes']`` nodes."""
    problems = check_params(params)
    if problems:
        raise ValueError("; ".join(why for _, why in problems))
    validate(as_located(answer))
    parts = check_parts("design.acceptance", params.get("parts"), PARTS) or list(PARTS)
    rows = _rows(answer)
    found = {
        "stages": stage_problems(rows, int(params["nodes"])),
        "order": order_problems(rows),
        "thresholds": threshold_problems(rows, params),
        "durations": duration_problems(rows, params),
    }
    # a part is graded on a whole plan: three stages in a good order are not a plan in a good order
    missing = [s for s in STAGES if s not in {r["stage"] for r in rows}]
    for part in ("order", "thresholds", "durations"):
        if missing:
            found[part].insert(
                0, f"{part}: {len(missing)} of {len(STAGES)} stages missing, and a part is graded on the whole plan"
            )
    fails = [p for part in PARTS if part in parts for p in found[part]]
    observed: dict[str, Any] = {"stages": [r["stage"] for r in rows]}
    if "thresholds" in parts:
        observed["criteria"] = {
            r["stage"]: f"{'min' if 'min' in r['pass'] else 'max'} {r['pass'].get('min', r['pass'].get('max')):g} "
            f"{r['pass']['unit']}"
            for r in rows
        }
    if "durations" in parts:
        observed["burn-in hours"] = {r["stage"]: r["duration_h"] for r in rows if r["stage"] in BURN_INS}
    expected = {part: RULES[part] for part in parts}
    if fails:
        return Result(
            "design.acceptance",
            "fail",
            problems_message(fails),
            observed=observed,
            expected=expected,
            hint="; ".join(f"{part}: {RULES[part]}" for part in parts if found[part]),
        )
    said = {
        "stages": f"all {len(STAGES)} stages, each with its tool, on all {params['nodes']} nodes",
        "order": "the stages run in an order every rule allows",
        "thresholds": "every pass criterion points the right way and is no laxer than the references",
        "durations": "every burn-in runs long enough",
    }
    return Result(
        "design.acceptance",
        "pass",
        "; ".join(said[p] for p in PARTS if p in parts),
        observed=observed,
        expected=expected,
    )
