"""Fleet runs without SSH: simulated nodes and snapshots, in processes; order, progress, errors."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from assessor.assess import fleet, profiles
from assessor.targets import open_target


def test_simulated_fleet_runs_in_processes_and_keeps_job_order(tmp_path: Path) -> None:
    from assessor.sim import faults
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import save_state

    broken = tmp_path / "broken.json"
    save_state(load_fixture("hgx-h100", host="broken"), broken)
    faults.inject(broken, "ib-port-down")
    specs = ["mock:hgx-h100"] * 5 + [f"mock:{broken}"] + ["mock:dgx-a100"] * 4
    jobs = [fleet.Job(f"n{i}", open_target(spec, name=f"n{i}")) for i, spec in enumerate(specs)]
    if (os.cpu_count() or 1) > 1:
        assert isinstance(fleet._pool(jobs, 32), ProcessPoolExecutor)
    seen: list[str] = []
    run = fleet.run(jobs, profiles.load("any-gpu-node"), progress=lambda job, _: seen.append(job.label))
    assert [r.host for r in run.results] == [f"n{i}" for i in range(10)]
    assert sorted(seen) == sorted(f"n{i}" for i in range(10))
    assert not any(r.failed for r in run.results)
    ib = profiles.Profile("ib", "", (profiles.CheckRef("ib.ports_active"),))
    statuses = [r.results[0].status for r in fleet.run(jobs, ib).results]
    assert statuses == ["pass"] * 5 + ["fail"] + ["pass"] * 4


def test_ssh_targets_run_in_threads() -> None:
    jobs = [fleet.Job(f"h{i}", open_target(f"ssh://root@127.0.0.1:{2200 + i}")) for i in range(8)]
    assert isinstance(fleet._pool(jobs, 32), ThreadPoolExecutor)
