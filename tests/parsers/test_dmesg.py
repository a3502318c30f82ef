"""Kernel log parser, against real Xid / SXid / PCIe lines in corpus/dmesg_xid."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import KernelEvent
from assessor.parsers import dmesg
from tests.support.corpus import read_corpus


def events(text: str) -> list[KernelEvent]:
    found = dmesg.parse(text).kernel_events
    assert found is not None
    return found


def test_dmesg_xid119_gsp_timeouts_with_ctime_stamps() -> None:
    found = events(read_corpus("dmesg_xid/01_xid119_gsp_rpc_timeout_h100_xe9680.txt"))
    # Five Xid lines; the RPC history, call trace and rate-limit notice around them are not events.
    assert [(e.kind, e.code, e.bus_id) for e in found] == [("xid", 119, "0000:9b:00")] * 5
    first = found[0]
    assert (first.pid, first.process, first.timestamp, first.line) == (
        "2024380",
        "nvidia-smi",
        "Sun Feb 23 16:24:18 2025",
        3,
    )
    assert first.message.startswith("Timeout after 6s of waiting for RPC response from GPU4 GSP!")
    assert [e.process for e in found[3:]] == ["cache_mgr_main", "gpud"]


def test_dmesg_xid13_unknown_pid_is_none_and_xid109_keeps_its_process() -> None:
    found = events(read_corpus("dmesg_xid/02_xid13_xid109_h100_dmesg_ctime.txt"))
    assert [e.code for e in found] == [13, 13, 13, 109]  # the nvidia-peermem line is not an event
    assert (found[0].pid, found[0].process) == (None, None)
    assert found[0].message == "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    assert (found[3].pid, found[3].process, found[3].line) == ("1797828", "pt_main_thread", 5)
    assert found[3].message == "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"


def test_dmesg_fallen_off_bus_multiline_and_xid79_variants() -> None:
    found = events(read_corpus("dmesg_xid/05_xid79_fallen_off_bus_single_and_multiline.txt"))
    assert [(e.kind, e.code, e.bus_id, e.line) for e in found] == [
        ("fallen_off_bus", 79, "0000:b3:00.0", 1),
        ("xid", 79, "0000:44:00", 6),
        ("xid", 79, "0000:01:00", 7),
        ("xid", 79, "0000:05:00", 8),
    ]
    multi = found[0]
    assert multi.timestamp == "1843.308145"
    assert "(PCI ID: 10de:26b5)" in multi.message and "fallen off the bus" in multi.message
    # Without pid/name the message is what follows the code; with them, what follows name=.
    assert [e.message for e in found[1:]] == [
        "GPU has fallen off the bus",
        "GPU has fallen off the bus.",
        "GPU has fallen off the bus.",
    ]
    assert found[1].timestamp is None and found[3].timestamp == "111111111.111"


def test_dmesg_xid94_xid64_sxid_and_degraded_pcie() -> None:
    found = events(read_corpus("dmesg_xid/06_xid94_64_sxid_imbue_doctests.txt"))
    assert [(e.kind, e.code) for e in found] == [("xid", 94), ("xid", 64), ("sxid", 12028), ("pcie_degraded", None)]
    assert (found[0].pid, found[0].process, found[0].message) == ("2503421", "python3", "Ch 00000008")
    assert found[1].message.startswith("Row Remapper Error:")
    sxid = found[2]
    assert (sxid.bus_id, sxid.timestamp) == ("0000:85:00.0", "186965.348898")
    assert sxid.message == "Non-fatal, Link 61 egress non-posted PRIV error (First)"
    pcie = found[3]
    assert pcie.bus_id == "0000:9c:00.0" and "PCIe x8 link" in pcie.message and pcie.message.startswith("mlx5_core")


@pytest.mark.parametrize(
    ("line", "timestamp"),
    [
        (
            "Nov 14 10:00:00 node01 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python, DBE",
            "Nov 14 10:00:00",
        ),
        ("Nov 14 10:00:00 node01 kernel: [ 966.503025] NVRM: Xid (PCI:0000:3b:00): 48, DBE", "Nov 14 10:00:00"),
        ("2024-11-14T10:00:00+0000 node01 kernel: NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2024-11-14T10:00:00+0000"),
        ("11月 15 14:15:47 node01 kernel: NVRM: Xid (PCI:0000:3b:00): 48, DBE", "11月 15 14:15:47"),
        ("<3>[  12.345678] NVRM: Xid (PCI:0000:3b:00): 48, DBE", "12.345678"),
        ("kern  :err   : [  12.345678] NVRM: Xid (PCI:0000:3b:00): 48, DBE", "12.345678"),
        ("NVRM: Xid (PCI:0000:3b:00): 48, DBE", None),
    ],
)
def test_dmesg_xid_with_any_log_prefix(line: str, timestamp: str | None) -> None:
    (event,) = events(line + "\n")
    assert (event.kind, event.code, event.bus_id, event.timestamp) == ("xid", 48, "0000:3b:00", timestamp)


def test_dmesg_old_driver_xid_without_pci_prefix() -> None:
    (event,) = events("May 6 00:38:27 alex kernel: [ 4909.922970] NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d\n")
    assert (event.code, event.bus_id, event.message) == (13, "0000:01:00", "0005 00000000 0000502d")


def test_dmesg_fallen_off_bus_on_one_journal_line_does_not_swallow_the_next() -> None:
    text = (
        "Nov 14 10:00:00 n1 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this "
        "system has fallen off the bus and is not responding to commands.\n"
        "Nov 14 10:00:01 n1 kernel: NVRM: Xid (PCI:0000:b3:00): 79, GPU has fallen off the bus.\n"
    )
    assert [(e.kind, e.line) for e in events(text)] == [("fallen_off_bus", 1), ("xid", 2)]


def test_dmesg_unsupported_gpu_message_is_not_fallen_off_bus() -> None:
    text = (
        "[    5.1] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1d01)\n"
        "          NVRM: installed in this system is not supported by the\n"
        "          NVRM: NVIDIA 550.54.14 driver release.\n"
    )
    assert events(text) == []


def test_dmesg_full_pcie_bandwidth_is_not_degraded() -> None:
    text = "[   18.6] mlx5_core 0000:9c:00.0: 504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)\n"
    assert events(text) == []


def test_dmesg_unrelated_and_garbage_lines_are_ignored() -> None:
    text = "Linux version 5.15.0\n\u00ff\u00fe garbage ]]][[[\n[drm] Initialized nvidia-drm 0.0.0\n"
    assert events(text) == []


def test_dmesg_permission_denied_is_an_error_not_a_clean_log() -> None:
    with pytest.raises(ParseError) as err:
        dmesg.parse("dmesg: read kernel buffer failed: Operation not permitted\n")
    assert err.value.line == 1


def test_dmesg_empty_log_is_an_error() -> None:
    with pytest.raises(ParseError):
        dmesg.parse("\n")


def test_dmesg_doctests() -> None:
    result = doctest.testmod(dmesg)
    assert result.attempted > 0 and result.failed == 0


def test_host_and_facility_prefixes_keep_every_event():
    from assessor import parsers

    text = read_corpus("dmesg_xid/05_xid79_fallen_off_bus_single_and_multiline.txt")
    plain = parsers.parse("dmesg", text).kernel_events or []
    prefixed = "\n".join(f"gpu3: kern: warning: {line}" for line in text.splitlines())
    events = parsers.parse("dmesg", prefixed).kernel_events or []
    assert [(e.kind, e.code, e.bus_id) for e in events] == [(e.kind, e.code, e.bus_id) for e in plain]
    assert plain
