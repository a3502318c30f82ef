"""The dpkg -l and dkms status parsers, on real pastes (tests/data/corpus/dpkg, dkms) and the simulator's output."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.parsers import detect, dkms, dpkg, parse_auto
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import CORPUS


def read(path: str) -> str:
    return (CORPUS / path).read_text(encoding="utf-8")


def test_doctests() -> None:
    for module in (dpkg, dkms):
        assert doctest.testmod(module).failed == 0


def test_dpkg_prompted_table_with_un_and_rc_rows_and_cut_versions() -> None:
    facts = dpkg.parse(read("dpkg/01_dpkg_l_nvidia_440_prompted_cut.txt"))
    rows = [(p.name, p.status, p.version, p.arch) for p in facts.packages or []]
    assert ("libnvidia-compute-435", "rc", "435.21-0ubuntu0.18", "amd64") in rows  # cut version kept as printed
    assert ("libnvidia-compute-440", "ii", "440.59-0ubuntu0.18", "i386") in rows  # second architecture
    assert all(status != "un" for _, status, _, _ in rows)  # never installed: left out
    assert len(rows) == 5
    assert "packages" not in facts.partial  # the header is there: a whole table


def test_dpkg_grep_excerpt_is_partial_and_keeps_a_row_without_version() -> None:
    facts = dpkg.parse(read("dpkg/02_dpkg_l_grep_550_server_cut.txt"))
    names = [p.name for p in facts.packages or []]
    assert names[0] == "libnvidia-cfg1-550-server" and "linux-modules-nvidia-550-server-6.8.0-51-generic" in names
    assert facts.packages[-1].version is None  # "ii  nvidia-kernel-common-550-server" and nothing after it
    assert "grep" in facts.partial["packages"]


def test_dpkg_skips_dpkg_query_errors_and_drops_a_row_cut_mid_name() -> None:
    facts = dpkg.parse(read("dpkg/03_dpkg_l_two_branches_stderr_first.txt"))
    names = [p.name for p in facts.packages or []]
    assert "libnvidia-compute" not in names  # "ii  libnvidia-compute" cut before its branch
    assert names[-1] == "libnvidia-compute-495"
    assert "middle of a row" in facts.partial["packages"]


def test_dpkg_garbage_names_its_line() -> None:
    with pytest.raises(ParseError) as err:
        dpkg.parse("Desired=Unknown/Install/Remove/Purge/Hold\nii  nvidia-dkms-535 535.1 amd64 x\nthis is not a row\n")
    assert err.value.line == 3


def test_dkms_both_formats_and_added_only() -> None:
    slash = dkms.parse(read("dkms/01_dkms_status_slash_format.txt")).dkms or []
    assert next((d.module, d.version, d.kernel, d.arch, d.state) for d in slash) == (
        "nvidia",
        "535.86.05",
        "6.5.0-060500rc5-generic",
        "x86_64",
        "installed",
    )
    comma = dkms.parse(read("dkms/02_dkms_status_comma_format.txt")).dkms or []
    assert (comma[0].module, comma[0].version, comma[0].kernel) == ("nvidia", "460.91.03", "5.11.0-36-generic")
    added = dkms.parse("nvidia/535.129.03: added\n").dkms or []
    assert (added[0].kernel, added[0].state) == (None, "added")


def test_dkms_warning_after_state_and_empty_tree() -> None:
    line = (
        "nvidia/535.129.03, 5.15.0-91-generic, x86_64: installed (WARNING! Diff between built and installed module!)\n"
    )
    assert (dkms.parse(line).dkms or [])[0].state == "installed"
    assert dkms.parse("").dkms == []
    with pytest.raises(ParseError) as err:
        dkms.parse("nvidia/535.129.03, 5.15.0-91-generic, x86_64: installed\nError! something\n")
    assert err.value.line == 2


def test_recognised_by_content() -> None:
    for path, kind in (
        ("dpkg/01_dpkg_l_nvidia_440_prompted_cut.txt", "dpkg-list"),
        ("dpkg/02_dpkg_l_grep_550_server_cut.txt", "dpkg-list"),  # header-less: by the rows' shape
        ("dpkg/03_dpkg_l_two_branches_stderr_first.txt", "dpkg-list"),
        ("dkms/01_dkms_status_slash_format.txt", "dkms-status"),
        ("dkms/02_dkms_status_comma_format.txt", "dkms-status"),
    ):
        assert detect.detect_kind(read(path)) == kind, path
    assert detect.snapshot_file(read("dkms/01_dkms_status_slash_format.txt")) == "dkms-status.txt"
    assert detect.snapshot_file(read("dpkg/02_dpkg_l_grep_550_server_cut.txt")) == "dpkg.txt"


def test_the_simulators_output_reads_back() -> None:
    session = Session(state=load_fixture("dgx-a100"))
    kind, facts = parse_auto(run_tool(["dpkg", "-l"], session).stdout)
    assert kind == "dpkg-list"
    assert {p.name for p in facts.packages or []} >= {"nvidia-dkms-535-server", "libnvidia-compute-535-server"}
    kind, facts = parse_auto(run_tool(["dkms", "status"], session).stdout)
    assert kind == "dkms-status"
    assert [(d.version, d.kernel) for d in facts.dkms or []] == [("535.129.03", "5.15.0-91-generic")]
