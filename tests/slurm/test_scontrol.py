"""Reading and changing a node through scontrol: its output parsed, its arguments one word each, its time bounded."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.slurm.scontrol import NodeInfo, ScontrolCli, ScontrolError, check_node_name, parse_show_node

# `scontrol show node vm` from Slurm 22.05.8 (Debian 12), a node drained by gpulab
SHOW_NODE = """NodeName=vm Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=5.25
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres=(null)
   NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8
   OS=Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC
   RealMemory=1 AllocMem=0 FreeMem=20593 Sockets=1 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=main
   BootTime=2026-12-01T17:19:47 SlurmdStartTime=2026-12-02T03:32:48
   LastBusyTime=2026-12-02T03:32:48
   CfgTRES=cpu=1,mem=1M,billing=1
   AllocTRES=
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
   Reason=gpulab: gpu.xid Xid 79 on PCI 0000:5d:00: GPU has fallen off the bus (x2) [root@2026-12-02T03:32:55]
   Comment=rack 4
"""


def test_the_state_and_the_reason_are_read_without_slurms_user_and_time() -> None:
    info = parse_show_node("vm", SHOW_NODE)
    assert info == NodeInfo(
        "vm", "IDLE+DRAIN", "gpulab: gpu.xid Xid 79 on PCI 0000:5d:00: GPU has fallen off the bus (x2)"
    )
    assert info.drained and info.out_of_service
    one_line = " ".join(line.strip() for line in SHOW_NODE.splitlines()).replace(" Reason=", "\nReason=")
    assert parse_show_node("vm", one_line).state == "IDLE+DRAIN"


def test_a_node_without_a_reason_and_the_states_that_take_it_out_of_service() -> None:
    healthy = parse_show_node("vm", SHOW_NODE.replace("IDLE+DRAIN", "MIXED").split("   Reason=")[0])
    assert healthy == NodeInfo("vm", "MIXED", None)
    assert not healthy.drained and not healthy.out_of_service
    assert NodeInfo("vm", "ALLOCATED+DRAIN").drained  # draining: jobs still run
    down = NodeInfo("vm", "DOWN+NOT_RESPONDING", "Not responding")
    assert down.out_of_service and not down.drained
    assert not NodeInfo("vm", "IDLE+NOT_RESPONDING").out_of_service
    assert "NextState=" not in SHOW_NODE
    assert parse_show_node("vm", "NodeName=vm NextState=RESUME\n   State=DOWN+REBOOT_REQUESTED").state == (
        "DOWN+REBOOT_REQUESTED"
    )


def test_output_without_a_state_is_an_error_not_a_healthy_node() -> None:
    with pytest.raises(ScontrolError, match="no State="):
        parse_show_node("vm", "Node vm not found\n")


@pytest.mark.parametrize("name", ["", "a b", "vm State=DOWN", "NodeName=x", "-h", "gpu[01-04]", "vm\n"])
def test_a_node_name_that_could_be_read_as_more_than_one_node_or_an_option_is_refused(name: str) -> None:
    with pytest.raises(InputError, match="not a Slurm node name"):
        check_node_name(name)
    assert check_node_name("gpu-node01.rack4") == "gpu-node01.rack4"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ScontrolCli, Path]:
    db = tmp_path / "db.json"
    db.write_text(json.dumps({"nodes": {"gpu01": {"state": "IDLE", "reason": None}}, "calls": []}))
    program = tmp_path / "scontrol"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -S {Path(__file__).with_name("fake_scontrol.py")} "$@"\n')
    program.chmod(0o755)
    monkeypatch.setenv("FAKE_SCONTROL_DB", str(db))
    return ScontrolCli(str(program), timeout=5), db


def test_drain_passes_the_reason_as_one_word_and_resume_clears_it(fake: tuple[ScontrolCli, Path]) -> None:
    client, db = fake
    client.drain("gpu01", "gpulab: gpu.xid Xid 79 on GPU 3 [+gpu.count]")
    assert client.show("gpu01") == NodeInfo("gpu01", "IDLE+DRAIN", "gpulab: gpu.xid Xid 79 on GPU 3 [+gpu.count]")
    client.resume("gpu01")
    assert client.show("gpu01") == NodeInfo("gpu01", "IDLE", None)
    calls = json.loads(db.read_text())["calls"]
    assert calls[0] == [
        "update",
        "NodeName=gpu01",
        "State=DRAIN",
        "Reason=gpulab: gpu.xid Xid 79 on GPU 3 [+gpu.count]",
    ]
    assert calls[2] == ["update", "NodeName=gpu01", "State=RESUME"]


def test_a_refusal_a_missing_scontrol_and_a_hung_one_are_errors_with_what_happened(
    fake: tuple[ScontrolCli, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = fake
    with pytest.raises(ScontrolError, match="scontrol show node: exited 1: Node gpu99 not found"):
        ScontrolCli(client.program).show("gpu99")
    with pytest.raises(ScontrolError, match=r"not found .*--scontrol PATH"):
        ScontrolCli("/nonexistent/scontrol").show("gpu01")
    monkeypatch.setenv("FAKE_SCONTROL_SLEEP", "30")
    start = time.monotonic()
    with pytest.raises(ScontrolError, match=r"no answer within 0\.5s"):
        ScontrolCli(client.program, timeout=0.5).show("gpu01")
    assert time.monotonic() - start < 5
