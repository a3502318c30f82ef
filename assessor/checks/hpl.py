"""HPL checks: the per-GPU figure of an HPL-NVIDIA run against its reference, and its residual check."""

from __future__ import annotations

from typing import Any

from assessor.checks import references as ref
from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.common import reading
from assessor.checks.result import Result
from assessor.facts import HplResult, HplRun, NodeFacts


def family_reference(facts: NodeFacts, table: dict[str, float], param: str, names: list[str] | None = None) -> float:
    """The reference of ``table`` for this node's GPU model; MissingFacts (skip) when the model has none.

    The model comes from the GPU facts, else from ``names`` (the GPUs a benchmark itself listed).
    """
    family = ref.node_family(facts.gpus) if facts.gpus else ref.family_of_names(names or [])
    if family is None or family not in table:
        models = sorted({g.name or "unknown" for g in facts.gpus or ()} | set(names or ()))
        what = ", ".join(models) if models else "an unknown GPU model"
        raise MissingFacts(f"no reference {param} for {what}: set {param} in the profile or lab")
    return table[family]


def _last(run: HplRun) -> HplResult:
    """The run's result: its last row (HPL-NVIDIA prints one per test; a warm-up run comes first)."""
    return run.results[-1]


def per_gpu_tflops(row: HplResult) -> float | None:
    """TFLOPS per GPU: HPL-NVIDIA's own column, else the total over the P x Q ranks (one GPU each)."""
    if row.gflops_per_gpu is not None:
        return reading(row.gflops_per_gpu / 1000)
    ranks = row.p * row.q
    return reading(row.gflops / ranks / 1000) if ranks > 0 else None


def _no_result(check_id: str, run: HplRun) -> Result:
    why = f": {run.error}" if run.error else ""
    return result(
        check_id,
        "error",
        f"HPL printed no result row{why}",
        hint="rerun HPL over every GPU (mpirun -np N hpl.sh --dat ...) and keep its whole output; a run that "
        "stops early names why above its abort",
    )


@check(
    "hpl.gflops",
    title="HPL per-GPU performance",
    facts=("hpl", "gpus"),
    params=(
        Param(
            "min_tflops",
            "float",
            ref.AUTO,
            "lowest acceptable HPL-NVIDIA TFLOPS per GPU ('auto': A100 16, H100 40, H200 40)",
        ),
    ),
    doc=(
        "Reads the result row of an HPL run (HPL-NVIDIA's per-GPU column, or the total over P x Q ranks) and "
        "compares the figure per GPU with the reference for the GPU model. HPL advances in lockstep, so one slow "
        "GPU (clocks locked low, a lowered power limit, thermal slowdown) lowers every GPU's figure."
    ),
    remedy=(
        "Read each GPU's clocks, power limit and clock-event reasons (nvidia-smi -q -d CLOCK,POWER,PERFORMANCE): "
        "reset locked clocks (-rgc), restore the default power limit (-pl), and send a GPU in thermal slowdown "
        "to the data centre; rerun HPL."
    ),
)
def hpl_gflops(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: HplRun = need(facts, "hpl")
    if not run.results:
        return _no_result("hpl.gflops", run)
    row = _last(run)
    tflops = per_gpu_tflops(row)
    if tflops is None:
        return result("hpl.gflops", "error", f"HPL row {row.variant} has no usable Gflops figure")
    wanted = params.get("min_tflops", ref.AUTO)
    minimum = (
        family_reference(facts, ref.HPL_TFLOPS_PER_GPU, "min_tflops") if wanted in (None, ref.AUTO) else float(wanted)
    )
    ranks = row.p * row.q
    observed = {"tflops_per_gpu": round(tflops, 2), "gflops": row.gflops, "gpus": ranks, "n": row.n}
    expected = f">= {minimum:g} TFLOPS per GPU"
    where = f"{row.variant}, N {row.n}, {ranks} GPU{'s' if ranks != 1 else ''}"
    if tflops >= minimum:
        return result(
            "hpl.gflops", "pass", f"{tflops:.2f} TFLOPS per GPU ({where})", observed=observed, expected=expected
        )
    return result(
        "hpl.gflops",
        "fail",
        f"{tflops:.2f} TFLOPS per GPU ({where}), expected >= {minimum:g}",
        observed=observed,
        expected=expected,
        hint="HPL runs at its slowest GPU's pace: compare every GPU's clocks, power limit and clock-event reasons "
        "(nvidia-smi -q -d CLOCK,POWER,PERFORMANCE)",
    )


@check(
    "hpl.residual",
    title="HPL residual check",
    facts=("hpl",),
    doc=(
        "Every result row of an HPL run must be followed by its scaled residual check, and every check must say "
        "PASSED: a FAILED residual means the solve computed a wrong answer (a GPU, its memory or the software "
        "stack is unsound), whatever the speed. A row without its residual line (a cut paste) is no evidence."
    ),
    remedy=(
        "Look for ECC errors and Xids on the node (nvidia-smi -q -d ECC, dmesg), run dcgmi diag -r 3, and rerun "
        "HPL; a residual that keeps failing on one GPU is a hardware case."
    ),
)
def hpl_residual(facts: NodeFacts, params: dict[str, Any]) -> Result:
    run: HplRun = need(facts, "hpl")
    if not run.results:
        return _no_result("hpl.residual", run)
    failed = [r for r in run.results if r.residual_check == "FAILED"]
    unknown = [r for r in run.results if r.residual_check is None]
    observed = {r.variant: r.residual_check or "unknown" for r in run.results}
    if failed:
        row = failed[0]
        return result(
            "hpl.residual",
            "fail",
            f"{len(failed)} of {len(run.results)} HPL test(s) FAILED the residual check "
            f"({row.variant}: {row.residual:g} against HPL's 16.0)",
            observed=observed,
            expected="PASSED",
            hint="a wrong solution: check ECC and Xids (nvidia-smi -q -d ECC, dmesg) and run dcgmi diag -r 3",
        )
    if unknown:
        return result(
            "hpl.residual",
            "error",
            f"no residual check for {', '.join(r.variant for r in unknown)}: the output ends before it",
            observed=observed,
            expected="PASSED",
            hint="keep the whole HPL output: the ||Ax-b||_oo line under each result says PASSED or FAILED",
        )
    return result(
        "hpl.residual", "pass", f"{len(run.results)} HPL test(s) PASSED the residual check", observed=observed
    )
