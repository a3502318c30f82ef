"""A node holds one open lab: ``lab start`` refuses another (exit 2, naming it) unless ``--replace``, a candidate
closes their own with ``lab close``, and ``lab reset`` gives the whole node back and closes what was open on it.

The same rules on every kind of node: a simulated node in a state file (``mock:FILE.json``), an inventory host
(one ``--target HOST -i INV``, or a cohort), and a simulated node served over SSH (a loopback sshd whose
sessions land inside the node, tests/support/sshbed.py, ``add_node(inside=True)``: the bed's client key is
the instructor's admin login, ``candidate_key`` a candidate's). A node nobody answers for is reported
unreachable (exit 3), by one node's reset and a cohort's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from assessor.labs.drivers.ansible import host_outcomes
from assessor.sim.config_root import root_for_state
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps, load_state, save_state, without_history
from tests.support.sshbed import Node, SshBed, free_port, sshd_available


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def closes(db: Path) -> list[dict[str, object]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM closes ORDER BY id")]


def open_labs(db: Path, candidate: str) -> list[str]:
    with attempts.opened(db) as conn:
        return [s.lab_id for s in attempts.open_starts(conn, candidate)]


def clock_of(db: Path, candidate: str, lab_id: str) -> object:
    with attempts.opened(db) as conn:
        begun = attempts.open_start(conn, candidate, lab_id)
        assert begun is not None
        return begun.started_at


@pytest.fixture
def node(tmp_path: Path) -> Path:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100", host="lab07"), path)
    return path


# ---- a simulated node in a state file ---------------------------------------------------------------


def test_a_state_file_node_refuses_another_lab_until_replaced_and_a_candidate_closes_their_own(
    node: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "attempts.db")
    spec, ada, bob = f"mock:{node}", ["--candidate", "ada", "--db", db], ["--candidate", "bob", "--db", db]
    assert gpulab("lab", "start", "mig-101", "-t", spec, *ada)[0] == 0
    started = load_state(node).node_id

    # another lab, or this lab for someone else: refused before the node changes, naming what is open
    for who, lab in ((bob, "health-101"), (bob, "mig-101"), (ada, "health-101")):
        code, out, err = gpulab("lab", "start", lab, "-t", spec, *who)
        assert code == 2, out + err
        assert "holds another open lab: mig-101 (started by ada at " in err
        assert "--replace" in err and "gpulab lab close mig-101 --candidate ada" in err
    assert load_state(node).node_id == started
    # ada starting her own lab again keeps her clock, as before
    clock = clock_of(Path(db), "ada", "mig-101")
    assert gpulab("lab", "start", "mig-101", "-t", spec, *ada)[0] == 0
    assert clock_of(Path(db), "ada", "mig-101") == clock

    code, out, err = gpulab("lab", "start", "health-101", "-t", spec, *bob, "--replace")
    assert code == 0, out + err
    assert "closed mig-101 (started by ada at " in out and "as abandoned (--replace)" in out
    assert open_labs(Path(db), "ada") == [] and open_labs(Path(db), "bob") == ["health-101"]
    last = closes(Path(db))[-1]
    assert (last["lab_id"], last["for_candidate"], last["closed_by"]) == ("mig-101", "ada", "bob")
    assert last["why"] == "abandoned: health-101 started in its place (--replace)"
    # ada's clock is stopped: her grade of the replaced lab is shown, not recorded
    code, out, _ = gpulab("lab", "grade", "mig-101", "-t", spec, *ada, "--json")
    assert json.loads(out)["recorded"] is False

    code, out, _ = gpulab("lab", "close", *bob)
    assert code == 0 and "closed health-101 (started by bob at " in out and "as abandoned" in out
    assert open_labs(Path(db), "bob") == []
    assert gpulab("lab", "close", *bob)[1].startswith("no open lab for bob")
    code, _, err = gpulab("lab", "close", "health-101", *bob)
    assert code == 2 and "bob has no open health-101" in err
    # the node is free again: a new lab starts without --replace
    assert gpulab("lab", "start", "mig-301", "-t", spec, *bob)[0] == 0
    with attempts.opened(db) as conn:
        assert attempts.chain_breaks(conn) == {}  # every close is a chained row like the others


def test_close_without_a_lab_needs_one_when_several_are_open(tmp_path: Path) -> None:
    db = tmp_path / "attempts.db"
    with attempts.opened(db) as conn:
        for lab_id, target in (("mig-101", "mock:/a.json"), ("ib-301", "mock:/b.json")):
            attempts.record_start(
                conn, candidate="ada", lab_id=lab_id, target=target, lab_hash="x", started_at=attempts.now()
            )
    code, _, err = gpulab("lab", "close", "--candidate", "ada", "--db", str(db))
    assert code == 2 and "ada has 2 open labs: ib-301 (started by ada at " in err and "mig-101" in err
    assert gpulab("lab", "close", "ib-301", "--candidate", "ada", "--db", str(db))[0] == 0
    assert open_labs(db, "ada") == ["mig-101"]


def test_a_version_2_database_gains_candidate_closes_and_keeps_its_chain(tmp_path: Path) -> None:
    db = tmp_path / "attempts.db"
    with attempts.opened(db) as conn:
        attempts.record_start(
            conn, candidate="ada", lab_id="mig-101", target="t", lab_hash="x", started_at=attempts.now()
        )
        attempts.close_starts(conn, lab_id="mig-101", target="t", closed_by="prof", at=attempts.now())
    raw = sqlite3.connect(db)  # as version 2 left it: closes without the two columns of version 3
    raw.execute("ALTER TABLE closes DROP COLUMN for_candidate")
    raw.execute("ALTER TABLE closes DROP COLUMN why")
    raw.execute("PRAGMA user_version = 2")
    raw.commit()
    raw.close()
    with attempts.opened(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == attempts.SCHEMA_VERSION == 3
        assert attempts.chain_breaks(conn) == {}
        assert attempts.open_start(conn, "ada", "mig-101") is None


# ---- an inventory host: one at a time, and a cohort --------------------------------------------------


def test_an_inventory_host_and_a_cohort_refuse_a_held_node_unless_replacing(node: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "attempts.db")
    inventory = tmp_path / "cohort.yml"
    inventory.write_text(f"all:\n  hosts:\n    lab07:\n      gpulab_target: mock:{node}\n      gpulab_candidate: eve\n")
    inv = ["-i", str(inventory), "--db", db]
    # one host of the inventory (its gpulab_target is a state file: the simulator sets it up)
    code, out, err = gpulab("lab", "start", "mig-101", "-t", "lab07", *inv, "--candidate", "ada")
    assert code == 0, out + err
    code, _, err = gpulab("lab", "start", "health-101", *inv)  # the cohort: lab07 is eve's
    assert code == 2 and "1 host of " in err and "lab07: mig-101 (started by ada at " in err
    code, out, err = gpulab("lab", "start", "health-101", *inv, "--replace")
    assert code == 0, out + err
    assert "lab07 (eve): ready" in out and "lab07: closed mig-101 (started by ada at " in out
    assert open_labs(Path(db), "ada") == [] and open_labs(Path(db), "eve") == ["health-101"]
    code, _, err = gpulab("lab", "start", "mig-101", "-t", "lab07", *inv, "--candidate", "ada")
    assert code == 2 and "health-101 (started by eve at " in err
    # a cohort reset closes what it re-imaged: the node is free for the next lab
    code, out, _ = gpulab("lab", "reset", "health-101", *inv)
    assert code == 0 and "lab07 (eve): reset" in out
    assert open_labs(Path(db), "eve") == []
    assert gpulab("lab", "start", "mig-101", "-t", "lab07", *inv, "--candidate", "ada")[0] == 0


# ---- a node nobody answers for -------------------------------------------------------------------------


def test_an_unreachable_node_is_reported_unreachable_by_reset(tmp_path: Path) -> None:
    db = ["--db", str(tmp_path / "attempts.db")]
    port = free_port()  # nobody listens there
    for lab in ("mig-101", "drv-201"):  # a lab with playbooks, and one for the simulator only
        code, out, err = gpulab("lab", "reset", lab, "-t", f"ssh://127.0.0.1:{port}", *db)
        assert code == 3, out + err
        assert "unreachable" in err and "connection refused" in err
        assert "All items completed" not in err and "no simulated node" not in err
    inventory = tmp_path / "cohort.yml"
    inventory.write_text(f"all:\n  hosts:\n    gone:\n      ansible_host: 127.0.0.1\n      ansible_port: {port}\n")
    code, out, err = gpulab("lab", "reset", "drv-201", "-i", str(inventory), *db)
    assert code == 3, out + err
    assert out.startswith("gone (gone): unreachable: ") and "connection refused" in out


def test_a_looped_task_on_an_unreachable_host_says_why_not_all_items_completed() -> None:
    lost = "Task failed: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.9 port 22: No route to host"
    res = {
        "results": [{"unreachable": True, "msg": lost, "item": 1}],
        "unreachable": True,
        "msg": "All items completed",
    }
    events = [
        {"event": "runner_on_unreachable", "event_data": {"host": "gpu09", "task": "Tear down", "res": res}},
        {"event": "playbook_on_stats", "event_data": {"processed": {"gpu09": 1}}},
    ]
    outcome = host_outcomes(events, ["gpu09"], rc=4, status="failed")["gpu09"]
    assert (outcome.status, outcome.message) == (
        "unreachable",
        "ssh: connect to host 10.0.0.9 port 22: No route to host",
    )


# ---- a simulated node served over SSH ------------------------------------------------------------------


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("rulesbed")).setup(0)
    bed.add_node("gpu07", "hgx-h100", inside=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def over_ssh(bed: SshBed, node: Node, db: Path) -> list[str]:
    return [
        "-t",
        f"ssh://{bed.user}@127.0.0.1:{node.port}",
        "--identity",
        str(bed.client_key),
        "--known-hosts",
        str(bed.known_hosts),
        "--db",
        str(db),
    ]


def test_over_ssh_a_held_node_is_refused_replaced_and_a_reset_undoes_a_wrong_fix_anywhere(
    bed: SshBed, tmp_path: Path
) -> None:
    node = bed.nodes[0]
    db = tmp_path / "attempts.db"
    ssh = over_ssh(bed, node, db)
    code, out, err = gpulab("lab", "start", "mig-101", *ssh, "--candidate", "ada")
    assert code == 0, out + err
    code, _, err = gpulab("lab", "start", "health-101", *ssh, "--candidate", "bob")
    assert code == 2 and "holds another open lab: mig-101 (started by ada at " in err
    code, out, err = gpulab("lab", "start", "health-101", *ssh, "--candidate", "bob", "--replace")
    assert code == 0, out + err
    assert "closed mig-101 (started by ada at " in out
    assert open_labs(db, "ada") == [] and open_labs(db, "bob") == ["health-101"]

    # a wrong fix on GPUs the lab is not about, and a file left behind, typed at the node's own shell
    wrong = (
        "nvidia-smi -i 7 -pm 0 && nvidia-smi -i 5 -mig 1"
        " && echo 'blacklist nvidia_peermem' > /etc/modprobe.d/left-behind.conf && echo NCCL_DEBUG=WARN > ~/.nccl.conf"
    )
    done = bed.at_shell(node, wrong, key=bed.candidate_key)
    assert done.returncode == 0, done.stderr
    assert not load_state(node.state).gpu(7).persistence_mode

    # bob gives his lab up himself: the node stays as he left it, his clock stops
    code, out, _ = gpulab("lab", "close", "--candidate", "bob", "--db", str(db))
    assert code == 0 and "closed health-101 (started by bob at " in out
    assert open_labs(db, "bob") == []
    code, out, err = gpulab("lab", "reset", "health-101", *ssh)
    assert code == 0, out + err
    fresh = load_fixture("hgx-h100", host="gpu07", in_use=True)
    assert without_history(json.loads(dumps(load_state(node.state)))) == without_history(json.loads(dumps(fresh)))
    root = root_for_state(node.state)
    assert not (root / "etc" / "modprobe.d" / "left-behind.conf").exists()
    assert not (root / "root" / ".nccl.conf").exists()
    assert (root / "etc" / "modprobe.d" / "blacklist-nouveau.conf").is_file()  # the shipped files are back
