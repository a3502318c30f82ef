"""The simulated node state: JSON round trip, atomic saves, and the lock around read-modify-write."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.sim import state as state_mod
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import (
    GpuInstanceState,
    NodeState,
    load_state,
    lock_path,
    save_state,
    updating,
)


def test_state_round_trips_through_json_unchanged(tmp_path: Path) -> None:
    state = load_fixture("dgx-a100")
    state.gpus[2].mig_mode_current = True
    state.gpus[2].mig_instances = [
        GpuInstanceState(gi_id=1, profile_id=9, name="3g.20gb", start=4, size=4),
    ]
    path = tmp_path / "node.json"
    save_state(state, path)
    again = load_state(path)
    assert again == state
    assert again.services["nvidia-fabricmanager.service"].active_state == "active"
    assert again.gpus[2].mig_instances[0].name == "3g.20gb"


def test_mig_instances_are_stored_in_the_shared_plain_shape(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")
    state.gpus[0].mig_instances = [GpuInstanceState(gi_id=2, profile_id=14, name="2g.20gb", start=0, size=2)]
    path = tmp_path / "node.json"
    save_state(state, path)
    gi = json.loads(path.read_text())["gpus"][0]["mig_instances"][0]
    assert gi == {"gi_id": 2, "profile_id": 14, "name": "2g.20gb", "start": 0, "size": 2, "compute_instances": []}


def test_a_crash_mid_write_leaves_the_old_state_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    before = path.read_bytes()

    def dump_half_then_crash(obj: object, fh: object, **kwargs: object) -> None:
        text = json.dumps(obj, **kwargs)  # type: ignore[arg-type]
        fh.write(text[: len(text) // 2])  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state_mod.json, "dump", dump_half_then_crash)
    changed = load_fixture("hgx-h100")
    changed.gpus[0].persistence_mode = False
    with pytest.raises(OSError, match="No space left"):
        save_state(changed, path)

    assert path.read_bytes() == before
    assert load_state(path).gpus[0].persistence_mode is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.json"]  # no temporary file left behind


def test_updating_writes_back_what_the_body_changed(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("pcie-l40s"), path)
    with updating(path) as state:
        state.gpu(1).throttle_reasons = ["hw_slowdown"]
    assert load_state(path).gpu(1).throttle_reasons == ["hw_slowdown"]
    assert lock_path(path).name == "node.json.lock"


def test_updating_writes_nothing_when_the_body_refuses(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("pcie-l40s"), path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError), updating(path) as state:
        state.gpu(0).persistence_mode = False
        raise RuntimeError("Insufficient Permissions")
    assert path.read_bytes() == before


def _bump(path: str, times: int) -> None:
    for _ in range(times):
        with updating(path) as state:
            value = int(state.nccl_env.get("COUNTER", "0"))
            state.nccl_env["COUNTER"] = str(value + 1)


def test_the_lock_serialises_concurrent_updaters_so_no_update_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("pcie-l40s"), path)
    workers, times = 4, 15
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump, args=(str(path), times)) for _ in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * workers
    assert load_state(path).nccl_env["COUNTER"] == str(workers * times)


def test_a_missing_state_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.json: no such simulated node state"):
        load_state(tmp_path / "nope.json")


def test_a_state_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    path.write_text('{\n  "fixture": "x",\n  oops\n}\n')
    with pytest.raises(InputError, match=r"node\.json:3: not JSON"):
        load_state(path)


def test_a_state_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    path.write_text(json.dumps({"schema": "gpulab.simstate/99", "fixture": "x", "host": "h", "driver": {}}))
    with pytest.raises(InputError, match="unknown state schema"):
        load_state(path)


def test_gpu_and_hca_lookups_find_by_index_and_name() -> None:
    state: NodeState = load_fixture("dgx-a100")
    assert state.gpu(7).bus_id == "00000000:BD:00.0"
    assert state.hca("mlx5_6").ports[0].rate_gbps == 200
    assert state.module_loaded("nvidia_peermem")
    with pytest.raises(IndexError):
        state.gpu(8)
