"""mlxfwmanager parser, against the real output in corpus/mlxfwmanager and the simulator's own."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import AdapterFirmware
from assessor.parsers import mlxfwmanager
from assessor.parsers.detect import detect_kind, snapshot_file
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import read_corpus
from tests.support.corpus_kinds import CORPUS_KINDS

REAL = "mlxfwmanager/01_connectx6lx_update_required.txt"


def adapters(text: str) -> list[AdapterFirmware]:
    found = mlxfwmanager.parse(text).adapter_firmware
    assert found is not None
    return found


def test_the_real_query_of_a_connectx6_lx() -> None:
    (a,) = adapters(read_corpus(REAL))
    assert (a.device, a.device_type, a.part_number, a.psid, a.base_guid) == (
        "0002:01:00.0",
        "ConnectX6LX",
        "MCX631102AS-ADA_Ax",
        "MT_0000000575",
        "e8ebd3030070cf12",
    )
    assert (a.firmware, a.running, a.available, a.status) == ("26.33.1048", None, "26.43.1014", "Update required")
    text = read_corpus(REAL)
    assert (detect_kind(text), snapshot_file(text)) == ("mlxfwmanager", "mlxfwmanager.txt")
    assert ("mlxfwmanager/*.txt", "mlxfwmanager") in CORPUS_KINDS


def test_a_prompted_and_cut_paste() -> None:
    text = "root@gpu01:~# mlxfwmanager --query\n" + read_corpus(REAL)[:-25]  # cut in the Status line
    facts = mlxfwmanager.parse(text)
    (a,) = facts.adapter_firmware or []
    assert a.firmware == "26.33.1048" and a.status is None
    assert "cut" in facts.partial["adapter_firmware"]


def test_the_simulators_query_update_and_pending_image() -> None:
    state = load_fixture("hgx-h100")
    state.hca("mlx5_4").firmware_next = "28.43.1014"
    found = adapters(run_tool(["mlxfwmanager", "--query"], Session(state=state)).stdout)
    assert len(found) == 8 and {a.psid for a in found} == {"MT_0000000838"}
    pending = [a for a in found if a.running]
    assert [(a.device, a.firmware, a.running) for a in pending] == [
        ("/dev/mst/mt4129_pciconf4", "28.43.1014", "28.41.1000")
    ]
    assert pending[0].base_guid == state.hca("mlx5_4").node_guid.removeprefix("0x")


@pytest.mark.parametrize(
    ("text", "line"),
    [("", 1), ("hello\n", 1), ("Device #1:\n----------\nwhat is this\n", 3)],
)
def test_what_is_not_mlxfwmanager_is_an_error_with_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError) as err:
        mlxfwmanager.parse(text)
    assert err.value.line == line


def test_doctest() -> None:
    assert doctest.testmod(mlxfwmanager).failed == 0
