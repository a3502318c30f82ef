"""services.active over Slurm's units: the capture asks systemd for munge, slurmctld and slurmd, so the Slurm labs'
guard (``names: [munge, slurmctld, slurmd]``) sees a daemon left stopped; and a node recorded from a capture of a
machine without Slurm (its units answered ``not-found``) does not become a Slurm node. In-process: no node runs.
"""

from __future__ import annotations

from pathlib import Path

from assessor.checks import get, run_check
from assessor.facts import NodeFacts
from assessor.parsers.assemble import facts_from_snapshot
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.record import build_from_facts
from assessor.sim.slurm_node import SLURMD_UNIT, runs_slurm
from assessor.sim.state import save_state
from assessor.targets.mock import MockTarget

SLURM_UNITS = {"names": ["munge", "slurmctld", "slurmd"]}


def _facts(spec: str) -> NodeFacts:
    return facts_from_snapshot(MockTarget.open(spec).snapshot(timeout=60))


def test_the_slurm_guard_fails_on_slurmd_left_stopped_and_holds_when_it_runs(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")
    faults.CONDITIONS["slurm"].apply(state)
    path = tmp_path / "node.json"
    save_state(state, path)
    check = get("services.active")
    assert run_check(check, _facts(f"mock:{path}"), SLURM_UNITS).status == "pass"
    state.services[SLURMD_UNIT].active_state, state.services[SLURMD_UNIT].sub_state = "inactive", "dead"
    save_state(state, path)
    stopped = _facts(f"mock:{path}")
    result = run_check(check, stopped, SLURM_UNITS)
    assert result.status == "fail" and "slurmd" in result.message, result
    assert run_check(check, stopped, {}).status == "pass"  # the NVIDIA daemons alone never saw it


def test_a_node_recorded_from_a_machine_without_slurm_runs_no_slurm() -> None:
    facts = _facts("mock:hgx-h100")
    slurmd = next(s for s in facts.services or () if s.name == SLURMD_UNIT)
    assert slurmd.load_state == "not-found"
    result = run_check(get("services.active"), facts, SLURM_UNITS)
    assert result.status == "fail" and "not installed" in result.message, result  # never a pass
    state, _ = build_from_facts(facts)
    assert SLURMD_UNIT in state.services and not runs_slurm(state)
