"""Labs over a cohort: every selected host of an inventory at once, one candidate per host.

The SSH tests run the labs' real playbooks through ansible-runner against loopback sshd nodes (the test bed of
tests/support/sshbed.py, as in test_walk_ssh.py): cohort ``lab start`` breaks every host, candidates fix some
hosts with the node's own (simulated) tools over SSH, cohort ``lab grade`` scores each candidate, ``lab reset``
gives every host its fixture back. An unreachable host is a port nobody listens on. The pure parts of
:mod:`assessor.labs.cohort` (candidates, planning, outcomes from runner events, summaries) are tested alone.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.labs import cohort
from assessor.labs.drivers.ansible import HostOutcome, host_outcomes, inventory_variable, unreachable_reason
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps, load_state, save_state, without_history
from assessor.targets.inventory import InventoryHost
from tests.support.sshbed import Node, SshBed, free_port, sshd_available

# ---- pure: candidates, planning, outcomes, summaries --------------------------------------------


def hosts(*names: str) -> list[InventoryHost]:
    return [InventoryHost(n, f"ssh://127.0.0.1:{2200 + i}", {}) for i, n in enumerate(names)]


def test_candidates_csv_skips_header_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "cohort.csv"
    path.write_text("host,candidate\n# spring cohort\n\nnode01, alice\nnode02,bob\n")
    assert cohort.read_candidates(str(path)) == {"node01": "alice", "node02": "bob"}


def test_a_candidates_csv_row_without_a_candidate_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cohort.csv"
    path.write_text("node01,alice\nnode02\n")
    with pytest.raises(InputError, match=r"cohort\.csv:2: expected `host,candidate`, got 'node02'"):
        cohort.read_candidates(str(path))


def test_a_host_listed_twice_in_a_candidates_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cohort.csv"
    path.write_text("node01,alice\nnode01,bob\n")
    with pytest.raises(InputError, match=r"cohort\.csv:2: host node01 is listed twice"):
        cohort.read_candidates(str(path))


def test_candidates_yaml_is_a_mapping_of_host_to_candidate(tmp_path: Path) -> None:
    path = tmp_path / "cohort.yml"
    path.write_text("node01: alice\nnode02: bob\n")
    assert cohort.read_candidates(str(path)) == {"node01": "alice", "node02": "bob"}
    path.write_text("- node01\n- node02\n")
    with pytest.raises(InputError, match=r"cohort\.yml:1: expected a mapping of inventory host to candidate"):
        cohort.read_candidates(str(path))
    path.write_text("node01: alice\nnode02: [bob, carol]\n")
    with pytest.raises(InputError, match=r"cohort\.yml:2: the candidate of node02 must be a name"):
        cohort.read_candidates(str(path))


def test_a_missing_candidates_file_is_named() -> None:
    with pytest.raises(InputError, match=r"nowhere\.csv: candidates file does not exist"):
        cohort.read_candidates("nowhere.csv")


def test_the_candidates_file_beats_the_inventory_variable_which_beats_the_host_name() -> None:
    group = cohort.plan(
        hosts("node01", "node02", "node03"),
        {"node01": "alice", "node02": "bob", "node03": None},
        {"node02": "bea"},
        inventory="inv.yml",
    )
    assert [(h.name, h.candidate, h.candidate_from) for h in group.hosts] == [
        ("node01", "alice", "inventory"),
        ("node02", "bea", "file"),
        ("node03", "node03", "host name"),
    ]


def test_a_candidates_file_naming_a_host_the_inventory_lacks_names_host_and_inventory() -> None:
    with pytest.raises(InputError, match=r"^no host named node09 in inv\.yml \(candidates file\)$"):
        cohort.plan(hosts("node01"), {}, {"node09": "alice"}, inventory="inv.yml")


def test_a_candidates_file_may_name_hosts_the_limit_left_out() -> None:
    group = cohort.plan(
        hosts("node02"), {}, {"node01": "alice", "node02": "bob"}, inventory="inv.yml", all_hosts=["node01", "node02"]
    )
    assert [(h.name, h.candidate) for h in group.hosts] == [("node02", "bob")]


def test_one_candidate_on_two_hosts_is_refused() -> None:
    with pytest.raises(InputError, match=r"candidate alice is on node01 and node03 in inv\.yml"):
        cohort.plan(
            hosts("node01", "node02", "node03"), {"node01": "alice", "node03": "alice"}, None, inventory="inv.yml"
        )


def runner_event(kind: str, host: str | None = None, **data: Any) -> dict[str, Any]:
    return {"event": kind, "event_data": {"host": host, **data}}


# What ansible-runner reported for a port nobody listens on (seen on the test bed).
REFUSED = (
    'Task failed: Data could not be sent to remote host "127.0.0.1". Make sure this host can be reached over ssh: '
    "ssh: connect to host 127.0.0.1 port 33537: Connection refused"
)


def test_each_host_gets_its_own_outcome_from_the_runner_events() -> None:
    events = [
        runner_event("runner_on_ok", "node01", task="Stop the DCGM host engine", res={"rc": 0}),
        runner_event(
            "runner_on_failed",
            "node02",
            task="Stop the DCGM host engine",
            res={"rc": 5, "stderr": "Failed to stop nvidia-dcgm.service: Access denied\nSee system logs"},
        ),
        runner_event("runner_on_failed", "node02", task="A later task", res={"msg": "not the first failure"}),
        runner_event("runner_on_failed", "node01", task="Probe", ignore_errors=True, res={"msg": "ignored"}),
        runner_event("runner_on_unreachable", "node03", task="Stop the DCGM host engine", res={"msg": REFUSED}),
        runner_event("playbook_on_stats", processed={"node01": 1, "node02": 1, "node03": 1}),
    ]
    got = host_outcomes(events, ["node01", "node02", "node03", "node04"], rc=2, status="failed")
    assert list(got) == ["node01", "node02", "node03", "node04"]
    assert got["node01"] == HostOutcome("node01", "ok")
    assert got["node02"] == HostOutcome(
        "node02",
        "failed",
        "task 'Stop the DCGM host engine': Failed to stop nvidia-dcgm.service: Access denied (exit 5)",
    )
    assert got["node03"] == HostOutcome(
        "node03", "unreachable", "ssh: connect to host 127.0.0.1 port 33537: Connection refused"
    )
    # never processed: Ansible did not get to it, which is never "ok"
    assert got["node04"] == HostOutcome("node04", "failed", "Ansible did not run on this host (status failed, rc 2)")


def test_a_run_that_never_started_fails_every_host() -> None:
    got = host_outcomes([runner_event("verbose")], ["node01", "node02"], rc=127, status="failed")
    assert {o.status for o in got.values()} == {"failed"}


def test_unreachable_reason_keeps_what_ssh_said() -> None:
    # what ssh said first, not the broken pipe that followed it
    said = "Failed to connect to the host via ssh: Host key verification failed.\r\nBroken pipe\r\n"
    assert unreachable_reason(said) == "Host key verification failed."
    changed = "@@@@@\r\n@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @\r\nHost key verification failed.\r\n"
    assert unreachable_reason(changed) == "Host key verification failed."
    assert unreachable_reason(REFUSED) == "ssh: connect to host 127.0.0.1 port 33537: Connection refused"
    assert unreachable_reason("Failed to connect to the host via ssh: Host key verification failed.\r\n") == (
        "Host key verification failed."
    )
    assert unreachable_reason("") == "unreachable"


def two_hosts() -> cohort.Cohort:
    return cohort.plan(hosts("node01", "node02"), {"node01": "alice", "node02": "bob"}, None, inventory="inv.yml")


def test_the_step_summary_says_per_host_ready_failed_or_unreachable_with_why() -> None:
    group = two_hosts()
    outcomes = {"node01": HostOutcome("node01", "ok"), "node02": HostOutcome("node02", "unreachable", "refused")}
    assert cohort.step_summary("start", group, outcomes) == [
        "node01 (alice): ready",
        "node02 (bob): unreachable: refused",
    ]
    assert cohort.step_tally("start", outcomes) == "2 hosts: 1 ready, 1 unreachable"
    assert cohort.step_exit_code(outcomes) == 3
    failed = {**outcomes, "node02": HostOutcome("node02", "failed", "task 'x': no")}
    assert cohort.step_summary("reset", group, failed)[1] == "node02 (bob): failed: task 'x': no"
    assert cohort.step_exit_code(failed) == 1
    assert cohort.step_exit_code({"node01": HostOutcome("node01", "ok")}) == 0


def test_node_data_in_a_summary_is_shown_escaped_never_as_control_characters() -> None:
    group = two_hosts()
    outcomes = {"node01": HostOutcome("node01", "ok"), "node02": HostOutcome("node02", "failed", "\x1b[2Jgone")}
    line = cohort.step_summary("start", group, outcomes)[1]
    assert "\x1b" not in line and "gone" in line


def test_gradebook_file_names_are_safe() -> None:
    from assessor.labs.gradebook import safe_name

    names = ["node01", "../etc/passwd", "a/b", ".hidden", "ada@example.edu", "", "x" * 200]
    assert [safe_name(n, "host") for n in names] == [
        "node01",
        "_etc_passwd",
        "a_b",
        "hidden",
        "ada@example.edu",
        "host",
        "x" * 80,
    ]


def test_a_suggested_command_is_complete_and_quoted_for_the_shell() -> None:
    line = cohort.command(
        "lab", "grade", "mig-301", inventory="my inv.yml", target="node01", known_hosts=None, accept=False, db="a.db"
    )
    assert line == "gpulab lab grade mig-301 --inventory 'my inv.yml' --target node01 --db a.db"
    assert shlex.split(line)[1:] == [
        "lab",
        "grade",
        "mig-301",
        "--inventory",
        "my inv.yml",
        "--target",
        "node01",
        "--db",
        "a.db",
    ]


def test_a_limit_naming_no_host_is_an_error_and_ansible_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text("all:\n  hosts:\n    node01: {gpulab_candidate: alice}\n    node02: {}\n")
    assert inventory_variable(str(inventory), "gpulab_candidate") == {"node01": "alice", "node02": None}
    assert inventory_variable(str(inventory), "gpulab_candidate", "node02") == {"node02": None}
    with pytest.raises(InputError, match=r"^no host or group named node09 in .*inv\.yml \(--limit node01,node09\)$"):
        inventory_variable(str(inventory), "gpulab_candidate", "node01,node09")
    with pytest.raises(InputError, match=r"nothing in .*inv\.yml matches gpu\*"):
        inventory_variable(str(inventory), "gpulab_candidate", "gpu*")
    assert capfd.readouterr().err == ""


# ---- the CLI over a cohort of simulated nodes (state files; no SSH) --------------------------


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def sim_inventory(tmp_path: Path, names: list[str]) -> Path:
    lines = ["all:", "  hosts:"]
    for i, name in enumerate(names):
        state = tmp_path / f"{name}.json"
        save_state(load_fixture("hgx-h100", host=name), state)
        lines.append(f"    {name}: {{gpulab_target: 'mock:{state}', gpulab_candidate: c{i + 1}}}")
    path = tmp_path / "inv.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def dcgm(state: Path) -> str:
    return load_state(state).services["nvidia-dcgm.service"].active_state


def test_cohort_of_simulated_nodes_starts_grades_and_resets_each(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01", "sim02", "sim03"])
    db = ["--db", str(tmp_path / "attempts.db")]
    code, out, _ = gpulab("lab", "start", "health-101", "-i", str(inventory), "--limit", "sim01:sim02", *db)
    assert code == 0, out
    assert out.splitlines()[:3] == ["sim01 (c1): ready", "sim02 (c2): ready", "health-101 start: 2 hosts: 2 ready"]
    assert [dcgm(tmp_path / f"sim0{i}.json") for i in (1, 2, 3)] == ["inactive", "inactive", "active"]

    book = tmp_path / "book"
    code, out, err = gpulab("lab", "grade", "health-101", "-i", str(inventory), *db, "--out", str(book), "--json")
    assert code == 1, out + err
    grades = {g["candidate"]: g for g in json.loads(out)}
    assert {c: g["percent"] for c, g in grades.items()} == {
        "c1": 0.0,
        "c2": 0.0,
        "c3": 100.0,
    }  # nothing done: no points
    assert grades["c1"]["started_at"] and grades["c3"]["started_at"] is None  # c3 was never started
    assert "sim03 (c3): 100/100 (100 %) PASSED, does not count; NOT RECORDED: no open `gpulab lab start" in err
    assert "sim01 (c1): 0/100 (0 %) NOT PASSED; recorded" in err
    kept = sorted(str(p.relative_to(book)) for p in book.rglob("*.json"))
    assert [k.split("-2")[0] for k in kept] == ["health-101/c1/001", "health-101/c2/001", "health-101/c3/001"]
    assert kept[0].endswith("-sim01.json")

    code, out, _ = gpulab("report", "cohort", str(book), "--format", "json")
    assert code == 0, out
    rows = {row["candidate"]: row["labs"]["health-101"] for row in json.loads(out)["candidates"]}
    # c3's grade is shown, not counted (as `gpulab progress` would not count it)
    assert {c: lab["best"] for c, lab in rows.items()} == {"c1": 0.0, "c2": 0.0, "c3": None}
    assert [rows[c]["status"] for c in ("c1", "c2", "c3")] == ["not passed", "not passed", "not recorded"]

    code, out, _ = gpulab("lab", "reset", "health-101", "-i", str(inventory))
    assert code == 0 and out.splitlines()[-1] == "health-101 reset: 3 hosts: 3 reset", out
    assert {dcgm(tmp_path / f"sim0{i}.json") for i in (1, 2, 3)} == {"active"}


def test_a_candidates_file_names_whose_node_each_host_is(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01", "sim02"])
    names = tmp_path / "cohort.csv"
    names.write_text("host,candidate\nsim02,bea\n")
    db = ["--db", str(tmp_path / "attempts.db")]
    code, out, _ = gpulab("lab", "start", "health-101", "-i", str(inventory), "--candidates", str(names), *db)
    assert code == 0 and out.splitlines()[:2] == ["sim01 (c1): ready", "sim02 (bea): ready"], out
    # the next command keeps the candidates file: bea's grade finds bea's start
    assert f"--candidates {names}" in out.splitlines()[-1]
    code, out, _ = gpulab("lab", "grade", "health-101", "-i", str(inventory), "--candidates", str(names), *db, "--json")
    assert {g["candidate"]: bool(g["started_at"]) for g in json.loads(out)} == {"c1": True, "bea": True}
    names.write_text("sim09,carl\n")
    code, _, err = gpulab("lab", "start", "health-101", "-i", str(inventory), "--candidates", str(names), *db)
    assert code == 2 and f"no host named sim09 in {inventory}" in err


def test_the_gradebook_replaces_a_planted_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01"])
    book, elsewhere = tmp_path / "book", tmp_path / "elsewhere"
    (book / "health-101").mkdir(parents=True)
    elsewhere.mkdir()
    (book / "health-101" / "c1").symlink_to(elsewhere, target_is_directory=True)
    code, _, err = gpulab(
        "lab", "grade", "health-101", "-i", str(inventory), "--out", str(book), "--db", str(tmp_path / "a.db")
    )
    assert code == 0, err
    assert list(elsewhere.iterdir()) == []
    assert not (book / "health-101" / "c1").is_symlink()
    (kept,) = (book / "health-101" / "c1").iterdir()
    assert json.loads(kept.read_text())["candidate"] == "c1"


def test_one_target_graded_with_out_joins_the_gradebook(tmp_path: Path) -> None:
    sim_inventory(tmp_path, ["sim01"])
    book = tmp_path / "book"
    target = f"mock:{tmp_path / 'sim01.json'}"
    code, _, err = gpulab(
        "lab",
        "grade",
        "health-101",
        "-t",
        target,
        "--candidate",
        "ann",
        "--out",
        str(book),
        "--db",
        str(tmp_path / "a.db"),
    )
    assert code == 0, err
    (kept,) = book.rglob("*.json")
    assert kept.relative_to(book).parts[:2] == ("health-101", "ann") and kept.name.endswith("-sim01.json")
    assert json.loads(kept.read_text())["candidate"] == "ann"


def test_cohort_options_without_an_inventory_or_with_one_target_are_refused(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01"])
    code, _, err = gpulab("lab", "start", "health-101", "-t", "mock:x.json", "--limit", "sim01")
    assert code == 2 and "--limit and --candidates select the hosts of a cohort" in err
    code, _, err = gpulab("lab", "grade", "health-101", "-i", str(inventory), "--candidate", "alice")
    assert code == 2 and "--candidate names one person" in err


def test_a_design_lab_has_no_cohort_of_nodes(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01"])
    code, _, err = gpulab("lab", "reset", "design-501", "-i", str(inventory))
    assert code == 2 and "design-501 is a design lab: it has no node to reset" in err


# ---- the real playbooks over SSH ------------------------------------------------------------


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """Four simulated H100 nodes behind their own sshd, plus one whose systemctl refuses to work."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("cohortbed")).setup(0)
    for i in range(1, 5):
        bed.add_node(f"node0{i}", "hgx-h100", env={"GPULAB_SIM_EUID": "0"}, sim_root=True)
    refusing = 'echo "Failed to $1 nvidia-dcgm.service: Access denied" >&2; exit 4'
    bed.add_node("stuck", "hgx-h100", env={"GPULAB_SIM_EUID": "0"}, sim_root=True, extra_bin={"systemctl": refusing})
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


CANDIDATES = {"node01": "alice", "node02": "bob", "node03": "carol", "node04": "dave", "stuck": "erin"}


def bed_inventory(bed: SshBed, path: Path, names: list[str], *, unreachable: str | None = None) -> Path:
    """The named nodes with their candidates; ``unreachable`` adds a host on a port nobody listens on.

    ``ansible_become: false`` and this venv's Python stand in for root on a real node (see test_walk_ssh.py).
    """
    lines = [
        "all:",
        "  vars:",
        f"    ansible_user: {bed.user}",
        f"    ansible_ssh_private_key_file: {bed.client_key}",
        "    ansible_become: false",
        f"    ansible_python_interpreter: {sys.executable}",
        "  children:",
        "    gpu:",
        "      hosts:",
    ]
    for node in (n for n in bed.nodes if n.name in names):
        lines.append(
            f"        {node.name}: {{ansible_host: 127.0.0.1, ansible_port: {node.port}, "
            f"gpulab_candidate: {CANDIDATES[node.name]}}}"
        )
    if unreachable:
        lines.append(
            f"        {unreachable}: {{ansible_host: 127.0.0.1, ansible_port: {free_port()}, gpulab_candidate: zoe}}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def on_node(bed: SshBed, node: Node, *command: str) -> None:
    """A candidate at the node's shell: run a (simulated) tool there over SSH."""
    done = bed.at_shell(node, shlex.join(command))
    assert done.returncode == 0, done.stdout + done.stderr


def nodes(bed: SshBed, *names: str) -> list[Node]:
    return [next(n for n in bed.nodes if n.name == name) for name in names]


def fresh(*these: Node) -> None:
    for node in these:
        node.reset()


def starts(db: Path) -> list[tuple[str, str]]:
    """(candidate, host) of each recorded start; a start names its node as INVENTORY#HOST."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT candidate, target FROM starts").fetchall()
    return sorted((candidate, target.rpartition("#")[2]) for candidate, target in rows)


def test_cohort_start_breaks_every_host_grade_scores_each_candidate_reset_restores(bed: SshBed, tmp_path: Path) -> None:
    four = nodes(bed, "node01", "node02", "node03", "node04")
    fresh(*four)
    inventory = bed_inventory(bed, tmp_path / "inv.yml", [n.name for n in four])
    reach = ["-i", str(inventory), "--known-hosts", str(bed.known_hosts)]
    db = tmp_path / "attempts.db"

    code, out, err = gpulab("lab", "start", "health-101", *reach, "--db", str(db), "--forks", "4")
    assert code == 0, out + err
    assert out.splitlines()[:5] == [
        "node01 (alice): ready",
        "node02 (bob): ready",
        "node03 (carol): ready",
        "node04 (dave): ready",
        "health-101 start: 4 hosts: 4 ready",
    ]
    assert err == ""  # Ansible's own output and warnings stay out of the terminal
    assert starts(db) == [("alice", "node01"), ("bob", "node02"), ("carol", "node03"), ("dave", "node04")]
    # the printed next command is complete: run as printed, it grades the cohort
    suggested = out.splitlines()[-1].split("`")[1]
    argv = shlex.split(suggested)
    assert argv[:3] == ["gpulab", "lab", "grade"] and "--inventory" in argv and "--known-hosts" in argv
    book = tmp_path / "gradebook"
    argv[argv.index("--out") + 1] = str(book)
    code, out, err = gpulab(*argv[1:])
    assert code == 1, out + err
    assert all("NOT PASSED" in line and line.endswith("; recorded") for line in out.splitlines()[:4]), out
    assert sorted(p.name for p in (book / "health-101").iterdir()) == ["alice", "bob", "carol", "dave"]

    # alice and carol fix their nodes as the lab's solution says; bob and dave do nothing
    lab_solution = ["systemctl", "start", "nvidia-dcgm"]  # health-101's solution
    for node in nodes(bed, "node01", "node03"):
        on_node(bed, node, *lab_solution)
    code, out, err = gpulab("lab", "grade", "health-101", *reach, "--db", str(db), "--out", str(book), "--json")
    assert code == 1, err
    percent = {g["candidate"]: g["percent"] for g in json.loads(out)}
    assert percent["alice"] == percent["carol"] == 100.0
    assert percent["bob"] == percent["dave"] == 0.0  # nothing done: the healthy rest is guarded, not scored
    assert {g["candidate"]: g["target"] for g in json.loads(out)} == {
        "alice": "node01",
        "bob": "node02",
        "carol": "node03",
        "dave": "node04",
    }
    assert all(g["started_at"] for g in json.loads(out))
    code, out, _ = gpulab("report", "cohort", str(book), "--format", "json")
    assert code == 0, out
    # the gradebook directory holds every grade of each candidate; the best is the one that counts
    best = {row["candidate"]: row["labs"]["health-101"]["best"] for row in json.loads(out)["candidates"]}
    assert best == {"alice": 100.0, "bob": 0.0, "carol": 100.0, "dave": 0.0}
    assert len(list((book / "health-101" / "alice").iterdir())) == 2

    code, out, err = gpulab("lab", "reset", "health-101", *reach, "--forks", "2")
    assert code == 0 and out.splitlines()[-1] == "health-101 reset: 4 hosts: 4 reset", out + err
    for node in four:
        fixture = json.loads(dumps(load_fixture("hgx-h100", host=node.name)))
        assert without_history(json.loads(dumps(load_state(node.state)))) == without_history(fixture), node.name


def test_an_unreachable_or_failing_host_is_reported_while_the_others_finish(bed: SshBed, tmp_path: Path) -> None:
    good, stuck = nodes(bed, "node01", "node02"), nodes(bed, "stuck")[0]
    fresh(*good, stuck)
    inventory = bed_inventory(bed, tmp_path / "inv.yml", ["node01", "node02", "stuck"], unreachable="node99")
    reach = ["-i", str(inventory), "--known-hosts", str(bed.known_hosts)]
    db = tmp_path / "attempts.db"

    code, out, err = gpulab("lab", "start", "health-101", *reach, "--db", str(db))
    assert code == 3, out + err
    lines = out.splitlines()
    assert lines[:2] == ["node01 (alice): ready", "node02 (bob): ready"]
    assert lines[2] == (
        "stuck (erin): failed: task 'Stop the DCGM host engine': "
        "Failed to stop nvidia-dcgm.service: Access denied (exit 4)"
    )
    assert lines[3].startswith("node99 (zoe): unreachable: ssh: connect to host 127.0.0.1 port ")
    assert lines[3].endswith(": Connection refused")
    assert lines[4] == "health-101 start: 4 hosts: 2 ready, 1 failed, 1 unreachable"
    assert [dcgm(n.state) for n in good] == ["inactive", "inactive"]
    assert starts(db) == [("alice", "node01"), ("bob", "node02")]  # no start where the lab was not set up

    code, out, err = gpulab("lab", "grade", "health-101", *reach, "--db", str(db), "--out", str(tmp_path / "book"))
    assert code == 3, out + err
    lines = out.splitlines()
    assert lines[0] == lines[1].replace("node02 (bob)", "node01 (alice)")
    assert lines[0] == "node01 (alice): 0/100 (0 %) NOT PASSED; recorded"
    assert lines[3].startswith("node99 (zoe): unreachable: ") and "refused" in lines[3]
    # every candidate has an entry: a grade, or why there is none
    kept = {p.parent.name: p.name for p in (tmp_path / "book").rglob("*.json")}
    assert set(kept) == {"alice", "bob", "erin", "zoe"} and kept["zoe"].endswith("-node99.unreachable.json")
    code, out, _ = gpulab("report", "cohort", str(tmp_path / "book"), "--format", "json")
    zoe = next(p for p in json.loads(out)["candidates"] if p["candidate"] == "zoe")["labs"]["health-101"]
    assert zoe["status"] == "unreachable" and "refused" in zoe["why"] and zoe["best"] is None


def test_limit_selects_the_hosts_a_cohort_command_acts_on(bed: SshBed, tmp_path: Path) -> None:
    one, two, three = nodes(bed, "node01", "node02", "node03")
    fresh(one, two, three)
    inventory = bed_inventory(bed, tmp_path / "inv.yml", ["node01", "node02", "node03"])
    reach = ["-i", str(inventory), "--known-hosts", str(bed.known_hosts), "--db", str(tmp_path / "a.db")]

    code, out, err = gpulab("lab", "start", "health-101", *reach, "--limit", "node01:node03")
    assert code == 0, out + err
    assert out.splitlines()[:3] == [
        "node01 (alice): ready",
        "node03 (carol): ready",
        "health-101 start: 2 hosts: 2 ready",
    ]
    assert [dcgm(n.state) for n in (one, two, three)] == ["inactive", "active", "inactive"]
    assert "--limit node01:node03" in out.splitlines()[-1]  # the next command keeps the selection

    code, out, err = gpulab("lab", "solve", "health-101", *reach[:-2], "--limit", "gpu:!node01:!node02")
    assert (code, out.splitlines()) == (0, ["node03 (carol): solved", "health-101 solve: 1 host: 1 solved"]), err
    assert [dcgm(n.state) for n in (one, two, three)] == ["inactive", "active", "active"]

    code, out, err = gpulab("lab", "start", "health-101", *reach, "--limit", "node09")
    assert code == 2 and out == ""
    assert err.strip() == f"gpulab: error: no host or group named node09 in {inventory} (--limit node09)"


def test_single_host_start_suggests_a_grade_command_that_keeps_the_inventory(bed: SshBed, tmp_path: Path) -> None:
    node = nodes(bed, "node04")[0]
    fresh(node)
    inventory = bed_inventory(bed, tmp_path / "inv.yml", ["node04"])
    db = str(tmp_path / "a.db")
    code, out, err = gpulab(
        "lab", "start", "health-101", "-i", str(inventory), "-t", "node04", "--known-hosts", str(bed.known_hosts),
        "--db", db, "--candidate", "dave",
    )  # fmt: skip
    assert code == 0, out + err
    suggested = out.splitlines()[-1].split("`")[-2]
    assert suggested == shlex.join(
        ["gpulab", "lab", "grade", "health-101", "--inventory", str(inventory), "--target", "node04",
         "--known-hosts", str(bed.known_hosts), "--candidate", "dave", "--db", db]
    )  # fmt: skip
    code, out, err = gpulab(*shlex.split(suggested)[1:], "--json")
    assert code == 1, out + err
    assert json.loads(out)["candidate"] == "dave" and json.loads(out)["started_at"]


# ---- per-candidate variants over a cohort of simulated nodes -----------------------------------


def mig_gpus(state: Path) -> list[int]:
    """The GPUs of a simulated node in MIG mode (current or pending)."""
    return [g.index for g in load_state(state).gpus if g.mig_mode_current or g.mig_mode_pending]


def at_shell(state: Path, line: str) -> None:
    """A candidate runs one command with the node's (simulated) tools; a refusal is theirs to see."""
    from assessor.sim.tools import Session, run_tool

    run_tool(shlex.split(line), Session(path=state))


def test_cohort_start_sets_each_host_up_with_its_candidates_variant(tmp_path: Path) -> None:
    from assessor.labs.loader import find_lab, pick_variant

    inventory = sim_inventory(tmp_path, ["sim01", "sim02"])  # candidates c1 and c2
    lab = find_lab("mig-101")
    gpu = {c: pick_variant(lab, c)["gpu"] for c in ("c1", "c2")}
    default = lab.variant["gpu"]
    # two variants that differ, neither the one a lab built for nobody uses
    assert gpu["c1"] != gpu["c2"] and default not in gpu.values(), gpu
    one, two = tmp_path / "sim01.json", tmp_path / "sim02.json"
    db = tmp_path / "attempts.db"

    code, out, err = gpulab("lab", "start", "mig-101", "-i", str(inventory), "--db", str(db))
    assert code == 0, out + err
    assert (mig_gpus(one), mig_gpus(two)) == ([gpu["c1"]], [gpu["c2"]])
    with sqlite3.connect(db) as conn:
        recorded = dict(conn.execute("SELECT candidate, variant FROM starts").fetchall())
    assert {c: json.loads(v) for c, v in recorded.items()} == {"c1": {"gpu": gpu["c1"]}, "c2": {"gpu": gpu["c2"]}}

    def percents() -> dict[str, float]:
        code, out, err = gpulab("lab", "grade", "mig-101", "-i", str(inventory), "--db", str(db), "--json")
        assert code in (0, 1), out + err
        return {g["candidate"]: g["percent"] for g in json.loads(out)}

    assert percents() == {"c1": 0.0, "c2": 0.0}  # nothing done
    at_shell(one, f"nvidia-smi -i {gpu['c1']} -mig 0")  # c1 fixes their own GPU
    at_shell(two, f"nvidia-smi -i {gpu['c1']} -mig 0")  # c2 copies c1's answer: the wrong GPU for them
    assert percents() == {"c1": 100.0, "c2": 0.0}
    assert mig_gpus(two) == [gpu["c2"]]
    at_shell(two, f"nvidia-smi -i {gpu['c2']} -mig 0")
    assert percents() == {"c1": 100.0, "c2": 100.0}


def test_cohort_solve_applies_each_candidates_variant(tmp_path: Path) -> None:
    inventory = sim_inventory(tmp_path, ["sim01", "sim02"])
    db = ["--db", str(tmp_path / "attempts.db")]
    assert gpulab("lab", "start", "mig-101", "-i", str(inventory), *db)[0] == 0
    code, out, err = gpulab("lab", "solve", "mig-101", "-i", str(inventory))
    assert code == 0, out + err
    assert mig_gpus(tmp_path / "sim01.json") == mig_gpus(tmp_path / "sim02.json") == []


def test_hosts_are_grouped_by_variant_for_one_ansible_run_each() -> None:
    variants = {"n1": {"gpu": 5}, "n2": {"gpu": 6}, "n3": {"gpu": 5}, "n4": {}}
    assert cohort.variant_groups(["n1", "n2", "n3", "n4"], variants) == [
        ({"gpu": 5}, ["n1", "n3"]),
        ({"gpu": 6}, ["n2"]),
        ({}, ["n4"]),
    ]


def test_a_host_set_up_but_not_captured_for_its_start_has_no_start_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assessor.labs import capture as labcapture
    from assessor.labs.loader import find_lab
    from assessor.targets.ssh_connection import HostError

    inventory = sim_inventory(tmp_path, ["sim01", "sim02", "sim03"])
    real = labcapture.start_record
    lost = {"sim02": HostError("unreachable: connection reset"), "sim03": InputError("nvidia-smi: no answer")}

    def flaky(lab: Any, spec: str, **kw: Any) -> Any:
        if spec in lost:
            raise lost[spec]
        return real(lab, spec, **kw)

    monkeypatch.setattr(labcapture, "start_record", flaky)
    db = tmp_path / "attempts.db"
    group = cohort.load(str(inventory))
    outcomes = cohort.start(find_lab("health-101"), group, db=str(db))
    assert outcomes == {
        "sim01": HostOutcome("sim01", "ok"),
        "sim02": HostOutcome("sim02", "unreachable", "set up, but not captured for the start: connection reset"),
        "sim03": HostOutcome("sim03", "failed", "set up, but not captured for the start: nvidia-smi: no answer"),
    }
    assert starts(db) == [("c1", "sim01")]
