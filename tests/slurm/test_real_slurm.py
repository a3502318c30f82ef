"""gpulab inside a real Slurm (Debian's slurmctld, slurmd and munge, which scripts/setup.sh installs).

Each test starts its own cluster on loopback (tests/slurm/bed.py): one node, a simulated HGX H100 whose state
file the node's HealthCheckProgram, Prolog and Epilog read through ``gpulab slurm health|prolog|epilog``. A
fault injected into the simulated node must drain the node with gpulab's reason (``sinfo -R``); the repair
must resume it; a node an admin drained for another reason must stay drained with the admin's reason; a
failing Prolog must drain the node with gpulab's reason and requeue the job held, a failing Epilog drain it.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.slurm.reason import MAX_REASON_BYTES
from tests.slurm.bed import HEALTH_INTERVAL_S, SlurmBed, make_root, missing_binaries


@contextlib.contextmanager
def cluster(*, health_paused: bool = False) -> Iterator[SlurmBed]:
    """A cluster running until the test ends, its daemons ended and its folder removed even on a failure."""
    missing = missing_binaries()
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not installed: run scripts/setup.sh "
            "(it installs slurmctld, slurmd, slurm-client and munge)"
        )
    root = make_root()
    try:
        bed = SlurmBed(root).setup()
        if health_paused:
            (root / "health.paused").touch()
        try:
            bed.start()
            bed.wait(lambda: bed.node()[0] == "IDLE", "idle node", 30)
            yield bed
        finally:
            bed.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def bed() -> Iterator[SlurmBed]:
    with cluster() as running:
        yield running


@pytest.fixture
def paused_bed() -> Iterator[SlurmBed]:
    """A cluster whose health check does nothing: what drains the node is the prolog or the epilog."""
    with cluster(health_paused=True) as running:
        yield running


def sim(*args: str) -> None:
    result = CliRunner().invoke(main, ["sim", *args])
    assert result.exit_code == 0, result.output


def gpulab_reason(bed: SlurmBed) -> str:
    """The node's reason in ``sinfo -R`` when gpulab drained it, else ""."""
    for line in bed.reasons():
        reason, _, nodes = line.rpartition("|")
        if nodes == bed.host and reason.startswith("gpulab: "):
            return reason
    return ""


def test_the_health_check_drains_on_a_fault_resumes_after_the_repair_and_leaves_an_admins_drain(
    bed: SlurmBed,
) -> None:
    # a GPU falls off the bus: the next health check drains the node, naming the checks and what they saw
    sim("fault", str(bed.state), "xid-79", "-o", "gpu=3")
    bed.wait(lambda: bool(gpulab_reason(bed)), "drain by gpulab", 6 * HEALTH_INTERVAL_S)
    reason = gpulab_reason(bed)
    assert "GPU 3" in reason and "gpu.xid" in reason, reason
    assert len(reason.encode()) <= MAX_REASON_BYTES
    state, said = bed.node()
    assert "DRAIN" in state.split("+") and said == reason
    # sinfo -R's own columns: the first 20 characters of the reason name gpulab and the check
    assert bed.slurm("sinfo", "-R", "-h").stdout.startswith(reason[:20])
    bed.wait_log("health", f"drained: {reason}")
    # the next check finds the reason it wrote, as Slurm gives it back: the node is not drained again
    bed.wait_log("health", f"already drained: {reason}", 6 * HEALTH_INTERVAL_S)

    # the GPU is replaced: the next health check resumes the node
    sim("repair", str(bed.state), "xid-79", "-o", "gpu=3")
    bed.wait(lambda: "DRAIN" not in bed.node()[0], "resume", 6 * HEALTH_INTERVAL_S)
    assert bed.reasons() == []
    bed.wait_log("health", f"resumed: {reason} no longer seen")

    # an admin drains the healthy node for maintenance: health checks pass and leave it drained
    bed.slurm("scontrol", "update", f"NodeName={bed.host}", "State=DRAIN", "Reason=maintenance")
    bed.wait_runs("health", 2)
    assert bed.node() == ("IDLE+DRAIN", "maintenance")
    # and a fault found meanwhile does not overwrite the admin's reason
    sim("fault", str(bed.state), "xid-79", "-o", "gpu=3")
    bed.wait_runs("health", 2)
    assert bed.node() == ("IDLE+DRAIN", "maintenance")
    assert "already out of service (IDLE+DRAIN) for another reason: maintenance" in bed.log("health")
    bed.assert_running()


def test_a_failing_epilog_drains_the_node_and_a_failing_prolog_holds_the_job_with_gpulabs_reason(
    paused_bed: SlurmBed,
) -> None:
    bed = paused_bed
    # a healthy node: the prolog and the epilog pass, the job runs
    assert bed.slurm("srun", "-N1", "-t", "1", "true").returncode == 0
    bed.wait(lambda: bed.runs("epilog") >= 1, "the epilog", 10)
    assert bed.runs("prolog") == 1 and "DRAIN" not in bed.node()[0]

    # a job hits an Xid 79 (the job itself breaks the simulated GPU): the epilog drains the node
    python = sys.executable
    broke = bed.slurm("srun", "-N1", "-t", "1", python, "-m", "assessor.cli", "sim", "fault", str(bed.state), "xid-79")
    assert broke.returncode == 0
    bed.wait(lambda: bool(gpulab_reason(bed)), "drain by the epilog", 15)
    bed.wait(lambda: bed.last_exit("epilog") == 1, "the epilog to exit 1", 10)
    # slurmctld drains the node for the failed epilog in turn (DRAINING until then), keeping gpulab's reason
    bed.wait(lambda: bed.node()[0] == "IDLE+DRAIN", "slurmctld's drain for the epilog", 10)
    assert "gpu.xid" in gpulab_reason(bed) and bed.node()[1] == gpulab_reason(bed)

    # the admin resumes it without a repair: the next job's prolog fails, the job is requeued held
    bed.slurm("scontrol", "update", f"NodeName={bed.host}", "State=RESUME")
    bed.wait(lambda: bed.node()[0] == "IDLE", "resume (responding again, so the job is scheduled at once)", 10)
    job = bed.slurm("sbatch", "--parsable", "-N1", "-t", "1", "--wrap", "true").stdout.strip().split(";")[0]
    try:
        bed.wait(
            lambda: "held" in bed.slurm("squeue", "-h", "-j", job, "-o", "%r").stdout, "the job held by the prolog", 15
        )
        # slurmctld keeps the reason of a node already drained: gpulab's, not "Prolog error"
        bed.wait(lambda: bool(gpulab_reason(bed)), "drain by the prolog", 10)
        assert "gpu.xid" in gpulab_reason(bed)
        bed.wait(lambda: bed.last_exit("prolog") == 1, "the prolog to exit 1", 10)
    finally:
        bed.slurm("scancel", job, check=False)
    bed.assert_running()
