"""The attempts database: what is stored, best attempts, other machines, concurrent and killed writers."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

from assessor.labs import attempts

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
NODE_A = attempts.Identity("node01", ("1650221000001", "1650221000002"), ("GPU-aaaa", "GPU-bbbb"))
NODE_B = attempts.Identity("node01", ("1650221000009",), ("GPU-zzzz",))  # same host name, other GPUs


def _fields(
    lab_id: str = "ib-301",
    *,
    percent: float = 100.0,
    passed: bool = True,
    minutes: int = 0,
    identity: attempts.Identity = NODE_A,
    candidate: str = "ana",
    note: str = "",
) -> dict[str, Any]:
    return {
        "candidate": candidate,
        "lab_id": lab_id,
        "lab_domain": "infiniband",
        "lab_level": 3,
        "lab_hash": "h",
        "target": "mock:node.json",
        "identity": identity,
        "graded_at": T0 + dt.timedelta(minutes=minutes),
        "started_at": T0,
        "late": minutes > 30,
        "percent": percent,
        "points": percent,
        "max_points": 100.0,
        "passed": passed,
        "checks": [{"check": "ib.ports_active", "status": "pass", "message": "ports active", "note": note}],
    }


def test_default_path_follows_gpulab_db_then_xdg(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("GPULAB_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert attempts.default_path() == tmp_path / "xdg" / "gpulab" / "attempts.db"
    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "x.db"))
    assert attempts.default_path() == tmp_path / "x.db"


def test_attempt_round_trips_with_identity_and_checks(tmp_path: Path):
    with attempts.opened(tmp_path / "a.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        attempts.record_attempt(conn, **_fields(minutes=45))
        (a,) = attempts.attempts(conn, candidate="ana")
    assert a.lab_id == "ib-301" and a.late and a.passed and a.percent == 100.0
    assert a.identity == {"host": "node01", "gpu_serials": list(NODE_A.serials), "gpu_uuids": list(NODE_A.uuids)}
    assert a.machine == NODE_A.key and len(a.machine) == 16
    assert a.checks[0]["check"] == "ib.ports_active"
    assert a.started_at == "2026-03-01T09:00:00+00:00"


def test_a_second_start_keeps_the_open_clock_until_a_reset_closes_it(tmp_path: Path):
    with attempts.opened(tmp_path / "a.db") as conn:
        assert attempts.last_start(conn, "ana", "ib-301") is None
        for minutes in (0, 20):
            attempts.record_start(
                conn,
                candidate="ana",
                lab_id="ib-301",
                target="t",
                lab_hash="h",
                started_at=T0 + dt.timedelta(minutes=minutes),
            )
        attempts.record_start(
            conn, candidate="bo", lab_id="ib-301", target="t", lab_hash="h", started_at=T0 + dt.timedelta(minutes=50)
        )
        assert attempts.last_start(conn, "ana", "ib-301") == T0  # starting again does not clear "late"
        attempts.close_starts(
            conn, lab_id="ib-301", target="t", closed_by="instructor", at=T0 + dt.timedelta(minutes=60)
        )
        assert attempts.last_start(conn, "ana", "ib-301") is None
        attempts.record_start(
            conn, candidate="ana", lab_id="ib-301", target="t", lab_hash="h", started_at=T0 + dt.timedelta(minutes=70)
        )
        assert attempts.last_start(conn, "ana", "ib-301") == T0 + dt.timedelta(minutes=70)


def test_a_pass_after_a_fail_is_the_best_attempt():
    rows = [
        attempts.Attempt(
            i,
            "ana",
            "ib-301",
            "infiniband",
            3,
            "h",
            "t",
            "n",
            "m",
            {},
            f"2026-03-0{i}",
            None,
            False,
            pct,
            pct,
            100.0,
            passed,
            [],
        )
        for i, (pct, passed) in enumerate([(40.0, False), (80.0, True), (60.0, False)], 1)
    ]
    assert attempts.best(rows)["ib-301"].id == 2


def test_attempts_from_another_machine_are_flagged(tmp_path: Path):
    with attempts.opened(tmp_path / "a.db") as conn:
        attempts.record_attempt(conn, **_fields(percent=20.0, passed=False))
        attempts.record_attempt(conn, **_fields(identity=NODE_A, minutes=5))
        attempts.record_attempt(conn, **_fields("mig-201", identity=NODE_A))
        assert attempts.machine_mismatches(attempts.attempts(conn, "ana")) == {}
        attempts.record_attempt(conn, **_fields(identity=NODE_B, minutes=9))
        flagged = attempts.machine_mismatches(attempts.attempts(conn, "ana"))
    assert list(flagged) == ["ib-301"]
    assert flagged["ib-301"] == sorted([f"node01 ({NODE_A.key})", f"node01 ({NODE_B.key})"])


def _writer(db: str, name: str, count: int, barrier: Any) -> None:
    barrier.wait()
    with attempts.opened(db) as conn:
        for i in range(count):
            attempts.record_attempt(conn, **_fields(candidate=name, percent=float(i), minutes=i))


def test_two_processes_grading_at_once_lose_nothing(tmp_path: Path):
    db = str(tmp_path / "a.db")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(db, name, 40, barrier)) for name in ("ana", "bo")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with attempts.opened(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for name in ("ana", "bo"):
            got = attempts.attempts(conn, candidate=name)
            assert sorted(a.percent for a in got) == [float(i) for i in range(40)]
        assert attempts.chain_breaks(conn) == {}  # two writers at once still make one unbroken chain


def _killed_mid_write(db: str, ready: Any) -> None:
    conn = attempts.connect(db)
    conn.execute("PRAGMA cache_size = 5")  # a tiny page cache: uncommitted pages spill into the WAL file
    with attempts.transaction(conn):
        for i in range(300):
            attempts.insert_attempt(conn, **_fields(candidate="victim", percent=float(i), note="x" * 2000))
        ready.set()  # the parent kills us here, inside the open transaction
        time.sleep(60)


def test_a_writer_killed_mid_transaction_leaves_every_committed_attempt(tmp_path: Path):
    db = str(tmp_path / "a.db")
    with attempts.opened(db) as conn:
        for i in range(5):
            attempts.record_attempt(conn, **_fields(percent=float(i), minutes=i))
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    child = ctx.Process(target=_killed_mid_write, args=(db, ready))
    child.start()
    assert ready.wait(30), "the child never reached the middle of its transaction"
    assert Path(db + "-wal").stat().st_size > 100_000  # uncommitted frames really are on disk
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    with attempts.opened(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sorted(a.percent for a in attempts.attempts(conn, "ana")) == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert attempts.attempts(conn, "victim") == []
        attempts.record_attempt(conn, **_fields(percent=99.0, minutes=99))  # the write lock died with the child
        assert len(attempts.attempts(conn, "ana")) == 6


def test_a_writer_waits_for_a_held_write_lock_instead_of_failing(tmp_path: Path):
    # spawn, not fork: a child forked while this process holds an SQLite lock inherits SQLite's
    # in-process lock bookkeeping and would wait on a lock that nobody will release
    db = str(tmp_path / "a.db")
    holder = attempts.connect(db)
    holder.execute("BEGIN IMMEDIATE")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    child = ctx.Process(target=_writer, args=(db, "late", 1, barrier))
    child.start()
    barrier.wait()
    time.sleep(0.5)  # the child is now blocked on the lock (busy_timeout), not failed
    assert child.is_alive()
    holder.execute("COMMIT")
    child.join(30)
    assert child.exitcode == 0
    with attempts.opened(db) as conn:
        assert len(attempts.attempts(conn, "late")) == 1
    holder.close()


def test_a_gpu_hidden_at_the_start_and_back_at_the_grade_is_the_same_machine() -> None:
    from assessor.labs.attempts import Identity, identity_mismatch

    eight = tuple(f"165322000{i}" for i in range(8))
    started = Identity("node01", serials=eight[:7], uuids=tuple(f"GPU-{s}" for s in eight[:7]))
    back = Identity("node01", serials=eight, uuids=tuple(f"GPU-{s}" for s in eight))
    assert identity_mismatch(started, back) is None  # the GPU that fell off the bus came back with the fix
    swapped = Identity("node01", serials=(*eight[:7], "9999"), uuids=(*back.uuids[:7], "GPU-9999"))
    assert identity_mismatch(back, swapped) is None  # one GPU replaced by a repair
    other = Identity("node01", serials=tuple(f"77{i}" for i in range(8)), uuids=tuple(f"GPU-77{i}" for i in range(8)))
    assert (
        identity_mismatch(back, other) == "its GPU serials and UUIDs are not those of the node the lab was started on"
    )
    half = Identity("node01", serials=(*eight[:3], *other.serials[:5]), uuids=(*back.uuids[:3], *other.uuids[:5]))
    assert identity_mismatch(back, half) is not None  # most GPUs another machine's
