"""What each mode does with a finding: drain with gpulab's reason, resume only its own drains, exit as slurmd wants."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from assessor.assess.profiles import load, parse
from assessor.errors import InputError
from assessor.slurm import hook, reason
from assessor.slurm.hook import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEM, EXIT_SCONTROL, act, exit_code
from assessor.slurm.reason import Finding
from assessor.slurm.run import node_name, respond
from assessor.slurm.scontrol import NodeInfo, ScontrolError

XID = Finding(False, "gpulab: gpu.xid Xid 79 on GPU 3", frozenset({"gpu.count"}))
HEALTHY = Finding(True, "ok", frozenset({"gpu.count", "gpu.xid"}))


@dataclass
class FakeScontrol:
    """One node's state in memory; every change recorded; ``fail`` makes every call refuse."""

    state: str = "IDLE"
    reason: str | None = None
    fail: str | None = None
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def show(self, node: str) -> NodeInfo:
        self._maybe_fail()
        return NodeInfo(node, self.state, self.reason)

    def drain(self, node: str, reason: str) -> None:
        self.calls.append(("drain", node, reason))
        self._maybe_fail()
        self.state, self.reason = self.state.split("+")[0] + "+DRAIN", reason

    def resume(self, node: str) -> None:
        self.calls.append(("resume", node))
        self._maybe_fail()
        self.state, self.reason = self.state.split("+")[0], None

    def _maybe_fail(self) -> None:
        if self.fail:
            raise ScontrolError(self.fail)


def test_a_problem_drains_a_node_in_service_with_gpulabs_reason() -> None:
    slurm = FakeScontrol()
    action = act(slurm, "gpu01", XID)
    assert action.did == "drained" and slurm.calls == [("drain", "gpu01", XID.reason)]
    assert (slurm.state, slurm.reason) == ("IDLE+DRAIN", XID.reason)
    # the next run finding the same: nothing to change (Slurm's reason time stays the first drain's)
    assert act(slurm, "gpu01", XID).did == "unchanged" and len(slurm.calls) == 1
    # a different problem found on a node gpulab drained: the reason says what is wrong now
    ecc = Finding(False, "gpulab: gpu.ecc_errors 3 uncorrectable on GPU 5")
    assert act(slurm, "gpu01", ecc).did == "drained" and slurm.reason == ecc.reason


@pytest.mark.parametrize(
    ("state", "why"),
    [("IDLE+DRAIN", "maintenance"), ("ALLOCATED+DRAIN", "RMA ticket 4411"), ("DOWN", "Not responding")],
)
def test_a_node_out_of_service_for_anyone_elses_reason_is_never_touched(state: str, why: str) -> None:
    slurm = FakeScontrol(state, why)
    problem = act(slurm, "gpu01", XID)
    assert problem.did == "kept" and why in problem.message
    assert act(slurm, "gpu01", HEALTHY).did == "unchanged"
    assert slurm.calls == [] and (slurm.state, slurm.reason) == (state, why)


def test_a_node_gpulab_drained_is_resumed_once_the_check_its_reason_names_passes() -> None:
    slurm = FakeScontrol("IDLE+DRAIN", XID.reason)
    action = act(slurm, "gpu01", HEALTHY)
    assert action.did == "resumed" and action.message == f"resumed: {XID.reason} no longer seen"
    assert slurm.calls == [("resume", "gpu01")] and slurm.state == "IDLE"
    assert act(slurm, "gpu01", HEALTHY).did == "unchanged" and len(slurm.calls) == 1


def test_a_run_that_did_not_check_what_drained_the_node_leaves_it_drained() -> None:
    slurm = FakeScontrol("IDLE+DRAIN", "gpulab: gpu.nvlink GPU 3: 0 of 18 links up")
    action = act(slurm, "gpu01", HEALTHY)  # gpu.nvlink is not among what passed
    assert action.did == "kept" and "gpu.nvlink was not checked" in action.message and slurm.calls == []
    # a gpulab reason naming no check (no verdict, cannot run) is undone by any healthy run
    slurm.reason = "gpulab: no verdict within 8s: a GPU tool hung"
    assert act(slurm, "gpu01", HEALTHY).did == "resumed"


def test_an_scontrol_that_fails_is_an_action_that_failed_never_an_exception() -> None:
    slurm = FakeScontrol(fail="slurm_load_node error: Unable to contact slurm controller")
    assert act(slurm, "gpu01", XID).did == "failed"
    assert "Unable to contact" in act(slurm, "gpu01", HEALTHY).message

    class DrainRefused(FakeScontrol):
        def drain(self, node: str, reason: str) -> None:
            raise ScontrolError("Access/permission denied")

    assert act(DrainRefused(), "gpu01", XID).message == "cannot drain node gpu01: Access/permission denied"


@pytest.mark.parametrize(
    ("mode", "finding", "scontrol_fails", "code"),
    [
        ("health", HEALTHY, False, EXIT_OK),
        ("health", XID, False, EXIT_PROBLEM),
        ("health", XID, True, EXIT_SCONTROL),  # slurmd only logs it: the log must say the node is not drained
        ("health", HEALTHY, True, EXIT_SCONTROL),
        ("prolog", HEALTHY, False, EXIT_OK),
        ("prolog", XID, False, EXIT_PROBLEM),  # slurmd drains the node and requeues the job held
        ("prolog", XID, True, EXIT_PROBLEM),  # slurmd's own drain still happens
        ("prolog", HEALTHY, True, EXIT_OK),  # a job is never refused because slurmctld was slow to answer
        ("epilog", HEALTHY, False, EXIT_OK),
        ("epilog", XID, False, EXIT_PROBLEM),
        ("epilog", XID, True, EXIT_PROBLEM),
        ("epilog", HEALTHY, True, EXIT_OK),
    ],
)
def test_the_exit_code_of_each_mode_is_the_one_slurmd_acts_on(
    mode: hook.Mode, finding: Finding, scontrol_fails: bool, code: int
) -> None:
    slurm = FakeScontrol(fail="Unable to contact slurm controller" if scontrol_fails else None)
    report = respond(mode, "gpu01", finding, slurm)
    assert report.exit_code == code == exit_code(mode, finding, report.action)


@pytest.mark.parametrize("mode", hook.MODES)
def test_bad_input_exits_2_in_every_mode_and_drains_with_what_is_wrong(mode: hook.Mode) -> None:
    slurm = FakeScontrol()
    bad = reason.broken("no profile 'hgx-h1000'", bad_input=True)
    report = respond(mode, "gpu01", bad, slurm)
    assert report.exit_code == EXIT_BAD_INPUT
    assert slurm.reason == "gpulab: cannot run: no profile 'hgx-h1000'"
    assert report.lines()[0].startswith(f"gpulab slurm {mode} on gpu01: drained: gpulab: cannot run:")


def test_the_node_is_the_one_slurmd_names_else_this_hosts_short_name() -> None:
    assert node_name(None, {"SLURMD_NODENAME": "gpu07"}) == "gpu07"
    assert node_name("gpu09", {"SLURMD_NODENAME": "gpu07"}) == "gpu09"
    import socket

    assert node_name(None, {}) == socket.gethostname().split(".")[0]
    with pytest.raises(InputError):
        node_name(None, {"SLURMD_NODENAME": "gpu07 State=DOWN"})


def test_the_modes_run_the_profiles_fast_checks_and_a_profile_without_any_is_refused() -> None:
    fast = hook.fast_checks(load("hgx-h100"))
    ids = [ref.id for ref in fast.checks]
    assert ids[:3] == ["driver.loaded", "gpu.count", "gpu.ecc_errors"] and "gpu.xid" in ids
    assert all(ref.fast for ref in fast.checks) and len(ids) < len(load("hgx-h100").checks)
    none = parse("name: slow\nchecks:\n  - gpu.count\n  - {id: gpu.xid, fast: false}\n", "slow.yaml")
    with pytest.raises(InputError, match=r"slow\.yaml: no check is marked fast: true"):
        hook.fast_checks(none)


@pytest.mark.parametrize("name", ["any-gpu-node", "dgx-a100", "hgx-h100", "hgx-h200", "hgx-b200", "gb200-tray"])
def test_no_shipped_profile_marks_fast_a_check_that_needs_an_active_test(name: str) -> None:
    active = {"nccl.busbw", "nccl.errors", "nccl.transport", "ib.write_bw", "dcgm.diag"}
    fast = {ref.id for ref in load(name).checks if ref.fast}
    assert {"driver.loaded", "gpu.count", "gpu.xid"} <= fast and not fast & active


def test_a_fast_marker_that_is_not_a_boolean_is_refused_with_its_line() -> None:
    with pytest.raises(InputError, match=r"p\.yaml:4: fast must be true or false"):
        parse("name: p\nchecks:\n  - gpu.count\n  - {id: gpu.xid, fast: yes please}\n", "p.yaml")
    with pytest.raises(InputError, match=r"unknown key 'quick' in a check; use id, params and fast"):
        parse("name: p\nchecks:\n  - {id: gpu.xid, quick: true}\n", "p.yaml")
