"""systemctl show / status parser. No corpus file holds `systemctl show`: the sample is built here."""

from __future__ import annotations

import doctest

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.facts import Service
from assessor.parsers import services
from tests.support.corpus import read_corpus

# `systemctl show -p Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecMainStatus
#  nvidia-fabricmanager nvidia-persistenced nvidia-dcgm` on a PCIe box where FM failed.
SHOW = """\
Id=nvidia-fabricmanager.service
LoadState=loaded
ActiveState=failed
SubState=failed
UnitFileState=enabled
Result=exit-code
ExecMainStatus=1

Id=nvidia-persistenced.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
Result=success
ExecMainStatus=0

Id=nvidia-dcgm.service
LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=
Result=success
ExecMainStatus=0
"""


def by_name(text: str) -> dict[str, Service]:
    return {s.name: s for s in services.parse(text).services or []}


def test_services_show_blocks_become_services() -> None:
    units = by_name(SHOW)
    assert list(units) == ["nvidia-fabricmanager.service", "nvidia-persistenced.service", "nvidia-dcgm.service"]
    fm = units["nvidia-fabricmanager.service"]
    assert (fm.load_state, fm.active_state, fm.sub_state, fm.unit_file_state, fm.result, fm.exec_main_status) == (
        "loaded",
        "failed",
        "failed",
        "enabled",
        "exit-code",
        1,
    )
    assert (units["nvidia-persistenced.service"].active_state, units["nvidia-persistenced.service"].sub_state) == (
        "active",
        "running",
    )


def test_services_show_empty_value_is_none() -> None:
    dcgm = by_name(SHOW)["nvidia-dcgm.service"]
    assert (dcgm.load_state, dcgm.unit_file_state) == ("not-found", None)


def test_services_show_with_fewer_properties_and_extra_ones() -> None:
    text = (
        "Type=forking\nExecStart={ path=/usr/bin/nv-fabricmanager ; argv[]=/usr/bin/nv-fabricmanager -c x.cfg }\n"
        "Id=nvidia-fabricmanager.service\nActiveState=active\n"
    )
    (fm,) = services.parse(text).services or []
    assert (fm.name, fm.active_state, fm.sub_state, fm.exec_main_status) == (
        "nvidia-fabricmanager.service",
        "active",
        None,
        None,
    )


def test_services_show_block_without_id_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        services.parse(SHOW + "\nActiveState=active\nSubState=running\n")
    assert err.value.line == 25


def test_services_show_garbage_line_names_its_line() -> None:
    with pytest.raises(ParseError) as err:
        services.parse("Id=a.service\nActiveState=active\nthis is not systemctl\n")
    assert err.value.line == 3


def test_services_status_active_running() -> None:
    (fm,) = (
        services.parse(read_corpus("fabricmanager/02_systemctl_status_active_running_b200_nvlsm.txt")).services or []
    )
    assert (fm.name, fm.load_state, fm.unit_file_state, fm.active_state, fm.sub_state) == (
        "nvidia-fabricmanager.service",
        "loaded",
        "enabled",
        "active",
        "running",
    )
    assert fm.result is None  # status does not print Result= for a running unit


def test_services_failed_start_and_journal_give_failed_exit_code() -> None:
    units = by_name(read_corpus("fabricmanager/03_fm_failed_NV_WARN_NOTHING_TO_DO_no_nvswitch.txt"))
    assert list(units) == ["nvidia-fabricmanager.service"]
    fm = units["nvidia-fabricmanager.service"]
    assert (fm.active_state, fm.sub_state, fm.result) == ("failed", "failed", "exit-code")


def test_services_status_failed_with_result_and_main_pid_status() -> None:
    text = (
        "× nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
        "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)\n"
        "     Active: failed (Result: exit-code) since Mon 2024-11-18 10:00:00 UTC; 5s ago\n"
        "   Main PID: 4177 (code=exited, status=1/FAILURE)\n"
        "\n"
        "○ nvidia-dcgm.service\n"
        "     Loaded: not-found (Reason: Unit nvidia-dcgm.service not found.)\n"
        "     Active: inactive (dead)\n"
    )
    units = by_name(text)
    fm = units["nvidia-fabricmanager.service"]
    assert (fm.active_state, fm.sub_state, fm.result, fm.exec_main_status, fm.unit_file_state) == (
        "failed",
        "failed",
        "exit-code",
        1,
        "enabled",
    )
    dcgm = units["nvidia-dcgm.service"]
    assert (dcgm.load_state, dcgm.active_state, dcgm.sub_state, dcgm.unit_file_state) == (
        "not-found",
        "inactive",
        "dead",
        None,
    )


def test_services_status_unit_could_not_be_found() -> None:
    (svc,) = services.parse("Unit nvidia-fabricmanager.service could not be found.\n").services or []
    assert (svc.name, svc.load_state, svc.active_state) == ("nvidia-fabricmanager.service", "not-found", "inactive")


def test_services_text_naming_no_unit_is_an_error() -> None:
    with pytest.raises(ParseError):
        services.parse("bash: systemctl: command not found\n")


def test_services_empty_output_is_an_error() -> None:
    with pytest.raises(ParseError):
        services.parse("")


def test_services_doctests() -> None:
    result = doctest.testmod(services)
    assert result.attempted > 0 and result.failed == 0


def test_status_journal_of_a_fabric_manager_version_mismatch_fails_it_with_the_reason() -> None:
    text = read_corpus("systemctl_status/01_fm_driver_interface_version_mismatch_550.txt")
    (fm,) = parsers.parse("systemctl-status", text).services or []
    assert (fm.name, fm.active_state, fm.exec_main_status) == ("nvidia-fabricmanager.service", "failed", 1)
    assert fm.reason is not None
    assert "driver interface version 550.127.05 don't match with driver version 550.120" in fm.reason


def test_journal_cut_mid_line_still_names_the_unit_by_its_description_and_keeps_the_reason() -> None:
    text = read_corpus("systemctl_status/02_fm_journal_mismatch_535_cut_mid_line.txt")
    (fm,) = parsers.parse("systemctl-status", text).services or []
    assert fm.name == "nvidia-fabricmanager.service"
    assert fm.reason is not None and "driver interface version 535.183.01" in fm.reason


def test_nothing_to_do_failure_keeps_its_first_error_line_as_the_reason() -> None:
    text = read_corpus("systemctl_status/03_fm_start_failed_pre_nvl5_nothing_to_do.txt")
    (fm,) = parsers.parse("systemctl-status", text).services or []
    assert fm.active_state == "failed"
    assert fm.reason is not None and fm.reason.endswith("[NV_WARN_NOTHING_TO_DO]")


def test_an_active_unit_gets_no_reason_from_its_informational_journal_lines() -> None:
    text = read_corpus("fabricmanager/02_systemctl_status_active_running_b200_nvlsm.txt")
    (fm,) = parsers.parse("systemctl-status", text).services or []
    assert (fm.active_state, fm.reason) == ("active", None)
