"""The mock: target end to end: a simulated node is captured, parsed and checked like a real one; every
fault makes its catalogue check fail, and a healthy fixture passes its shipped profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.assess.pipeline import assess, run_profile
from assessor.assess.profiles import CheckRef, Profile, load
from assessor.capture.run import COMMANDS
from assessor.checks.result import Result
from assessor.errors import InputError
from assessor.parsers.assemble import facts_from_snapshot
from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from assessor.sim.tools import Session, run_tool
from assessor.targets import open_target
from assessor.targets.mock import MockTarget

PROFILED = ("dgx-a100", "hgx-h100", "hgx-h200")  # fixtures with a shipped profile
# Faults whose check reads an active source (`capture --with ...`): nccl-tests with NCCL_DEBUG=INFO.
ACTIVE = {"nccl-socket-fallback": ("nccl",), "ib-ber-high": ("mlxlink",), "ib-link-flapped": ("mlxlink",)}
ACTIVE["weak-hbm-row"] = ("dcgm:4",)  # only memtest finds it: dcgmi diag -r 4
# Every fault's check fails (dcgm-stopped's is services.active: dcgm.diag can only say `error` there,
# since dcgmi prints nothing but the connection error).
EXPECTED: dict[str, str] = {
    # a stale CDI spec is a file on the node's disk: a node held in memory has none, and the check has no spec to read
    "cdi-spec-stale": "skip",
    "cdi-spec-old-driver": "skip",
    # Slurm's view comes from the node's running slurmctld: a node not running gives an error, never a pass
    "slurm-gres-short": "error",
    "slurm-mig-untyped": "error",
    # a switch's firmware is not in a node's snapshot (no in-band switch query is captured): the node's own
    # components stay at the baseline, and the lab that injects it (ib-304) grades the candidate's ticket
    "switch-firmware-old": "pass",
}
# After a repair, gpu.ecc_errors still warns, rightly: the lifetime (aggregate) uncorrectable count survives
# the GPU reset that clears the volatile one.
AFTER_REPAIR = {"ecc-uncorrectable": "warn", "cdi-spec-stale": "skip", "cdi-spec-old-driver": "skip"}
AFTER_REPAIR["slurm-gres-short"] = "skip"  # the repair takes the cluster away: no scontrol on the node
AFTER_REPAIR["slurm-mig-untyped"] = "skip"
AFTER_REPAIR["iommu-translated"] = "skip"  # the fixture's command line names no IOMMU parameter: the default
AFTER_REPAIR["bmc-factory-default"] = "skip"  # the repair takes the BMC away: the fixtures model none
# the repair is a new GPU; on a DCGM 3.3 node level 4 still lists the uninstalled EUD as Skip, not a pass
AFTER_REPAIR["weak-hbm-row"] = "warn"


def _profile_for(fixture: str, check: str) -> Profile:
    """The fixture's shipped profile, plus the fault's check when the profile does not run it."""
    profile = load(fixture)
    if any(ref.id == check for ref in profile.checks):
        return profile
    params = {"expected": False} if check == "mig.mode" else {}
    return Profile(profile.name, profile.description, (*profile.checks, CheckRef(check, params)), profile.file)


def _bad(results: list[Result]) -> list[str]:
    return [f"{r.check}: {r.status}: {r.message}" for r in results if r.status in ("fail", "error")]


def _active_results(spec: str, profile: Profile, active: tuple[str, ...]) -> list[Result]:
    """What `gpulab assess --with ...` gives, with NCCL_DEBUG=INFO in the node's environment."""
    target = open_target(spec)
    assert isinstance(target, MockTarget)
    target.env = {"NCCL_DEBUG": "INFO"}
    return run_profile(facts_from_snapshot(target.snapshot(timeout=30, active=active)), profile)


# ---- opening -----------------------------------------------------------------------------------


def test_mock_name_is_a_fresh_fixture_in_memory() -> None:
    target = open_target("mock:hgx-h100")
    assert isinstance(target, MockTarget)
    assert target.path is None and target.fixture == "hgx-h100"
    assert target.session().read().host == "hgx-h100-01"  # built on first use, then kept
    assert target.state is not None and target.session().read() is target.state


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mock:hgx-h999", "unknown simulated node 'hgx-h999'"),
        ("mock:", "mock: target needs a fixture or a state file"),
    ],
)
def test_bad_mock_specs_are_input_errors(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        open_target(spec)


def test_missing_state_file_names_it_and_suggests_sim_init(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    with pytest.raises(InputError) as err:
        open_target(f"mock:{missing}")
    assert str(missing) in str(err.value) and "gpulab sim init" in str(err.value)


# ---- capture -----------------------------------------------------------------------------------


def test_snapshot_captures_every_source_from_the_simulator() -> None:
    snap = open_target("mock:dgx-a100").snapshot(timeout=30)
    assert snap.host == "dgx-a100-01"
    expected = {c.file for c in COMMANDS} | {"nvml.json"}
    assert set(snap.sources) == expected
    # `nvidia-smi mig -lgi` exits nonzero when no GPU is in MIG mode, as on a real node; the docker CLI finds
    # no daemon (a node no container lab set up) and there is no CDI spec.
    assert {name: s.status for name, s in snap.sources.items() if s.status != "ok"} == {
        "nvidia-smi-mig-lgi.txt": "failed",
        "docker-info.txt": "failed",
        "cdi-spec.yaml": "missing",
        "scontrol-node.txt": "missing",  # a node no Slurm lab set up has no Slurm
        "grub-default.txt": "missing",  # a node held in memory has no files: no /etc/default/grub
        "ipmitool-lan.txt": "missing",  # the fixtures model no BMC: ipmitool finds no /dev/ipmi0
        "ipmitool-users.txt": "missing",
    }


def test_active_sources_are_captured_on_request() -> None:
    snap = open_target("mock:hgx-h100").snapshot(timeout=30, active=("nccl", "dcgm"))
    assert snap.sources["nccl-tests.txt"].status == "ok"
    assert snap.sources["dcgmi-diag.txt"].text is not None
    assert snap.sources["dcgmi-diag.txt"].text.startswith("Successfully ran diagnostic for group.")


def test_state_file_target_sees_what_the_tools_changed(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    assert run_tool(["systemctl", "stop", "nvidia-fabricmanager"], Session(path=path)).exit_code == 0
    facts = facts_from_snapshot(open_target(f"mock:{path}").snapshot(timeout=30))
    fm = next(s for s in facts.services or [] if s.name == "nvidia-fabricmanager.service")
    assert fm.active_state == "inactive"


# ---- the catalogue, end to end -----------------------------------------------------------------


@pytest.mark.parametrize("fixture", PROFILED)
def test_healthy_fixture_passes_its_shipped_profile(fixture: str) -> None:
    results = assess(f"mock:{fixture}", load(fixture))
    assert results.error is None
    assert _bad(results.results) == []
    assert {r.check for r in results.results if r.status == "pass"} >= {"gpu.count", "ib.ports_active", "fabric.state"}


@pytest.mark.parametrize("fixture", PROFILED)
def test_healthy_fixture_passes_with_nccl_and_dcgm_captured(fixture: str) -> None:
    results = _active_results(f"mock:{fixture}", load(fixture), ("nccl", "dcgm"))
    assert _bad(results) == []
    by_check = {r.check: r.status for r in results}
    assert (by_check["nccl.busbw"], by_check["nccl.transport"], by_check["nccl.errors"]) == ("pass", "pass", "pass")


def _check_result(path: Path, fixture: str, name: str) -> Result:
    """The fault's check on the node in ``path``, as `gpulab assess --target mock:PATH` reports it."""
    spec, check = f"mock:{path}", FAULTS[name].check
    profile = _profile_for(fixture, check)
    if name in ACTIVE:
        results = _active_results(spec, profile, ACTIVE[name])
    else:
        target_results = assess(spec, profile)
        assert target_results.error is None
        results = target_results.results
    (mine,) = [r for r in results if r.check == check]
    return mine


# Faults of one kind of node only (a GB200 tray's IMEX daemon), and that node (it has a shipped profile too).
ONLY_ON = {"imex-stopped": "gb200-tray"}
FAULT_CASES = [(f, n) for n in sorted(FAULTS) for f in ((ONLY_ON[n],) if n in ONLY_ON else PROFILED)]


@pytest.mark.parametrize(("fixture", "name"), FAULT_CASES, ids=[f"{n}-{f}" for f, n in FAULT_CASES])
def test_fault_makes_its_check_fail_through_assess(tmp_path: Path, fixture: str, name: str) -> None:
    state = load_fixture(fixture)
    FAULTS[name].apply(state)
    save_state(state, tmp_path / "node.json")
    result = _check_result(tmp_path / "node.json", fixture, name)
    assert result.status == EXPECTED.get(name, "fail"), result.message


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_reverting_a_fault_repairs_the_node(tmp_path: Path, name: str) -> None:
    fixture = ONLY_ON.get(name, "hgx-h100")
    state = load_fixture(fixture)
    FAULTS[name].apply(state)
    FAULTS[name].revert(state)
    save_state(state, tmp_path / "node.json")
    result = _check_result(tmp_path / "node.json", fixture, name)
    assert result.status == AFTER_REPAIR.get(name, "pass"), result.message
