"""The ``scontrol show node`` parser and the Slurm checks, on real outputs (tests/data/corpus/scontrol_node)."""

from __future__ import annotations

import doctest

import pytest

from assessor.checks import get, run_check
from assessor.checks import slurm as slurm_checks
from assessor.errors import ParseError
from assessor.facts import Gpu, MigDevice, NodeFacts
from assessor.parsers import detect, parse_auto, slurm_nodes
from tests.support.corpus import CORPUS


def read(path: str) -> str:
    return (CORPUS / path).read_text(encoding="utf-8")


LONG = "scontrol_node/01_awslabs_idle_drain_gres_long_form.txt"
ONE_LINE = "scontrol_node/02_slurm22.05_oneline_invalid_reg_and_idle.txt"


def test_doctests() -> None:
    assert doctest.testmod(slurm_nodes).failed == 0
    assert doctest.testmod(slurm_checks).failed == 0


def test_long_form_with_typed_gres_and_a_reason_on_its_own_line() -> None:
    facts = slurm_nodes.parse(read(LONG))
    [node] = facts.slurm_nodes or []
    assert (node.name, node.state, node.gres) == ("yigou-dev-102-68", "IDLE+DRAIN", "gpu:nvidia-rtx-3090:1")
    assert node.reason == "gres/gpu count reported lower than configured (0 < 1)"  # [slurm@...] split off
    assert node.version == "24.05.0-0rc1" and node.partitions == ["compute100"]
    assert node.alloc_tres is None  # AllocTRES= with nothing after it
    assert "slurm_nodes" not in facts.partial


def test_one_line_form_invalid_registration_and_a_healthy_node() -> None:
    facts = slurm_nodes.parse(read(ONE_LINE))
    bad, good = facts.slurm_nodes or []
    assert bad.state == "IDLE+DRAIN+INVALID_REG" and bad.gres == "gpu:4"
    assert bad.reason == "gres/gpu count reported lower than configured (3 < 4)"
    assert (good.name, good.state, good.reason, good.version) == ("hgx-h100-01", "IDLE", None, "22.05.8")


def test_detected_by_content_and_parsed_after_a_prompt() -> None:
    assert detect.detect(read(ONE_LINE)).kind == "scontrol-node"
    assert detect.detect(read(LONG)).kind == "scontrol-node"
    prompted = "root@gpu01:~# scontrol show node -o\n" + read(ONE_LINE)
    kind, facts = parse_auto(prompted)
    assert kind == "scontrol-node"
    assert [n.name for n in facts.slurm_nodes or []] == ["node01", "hgx-h100-01"]


def test_a_paste_cut_in_its_last_node_keeps_the_nodes_before_it() -> None:
    text = read(ONE_LINE)
    cut = text[: text.index("NodeName=hgx-h100-01") + 120]  # the second node cut before its State=
    facts = slurm_nodes.parse(cut)
    assert [n.name for n in facts.slurm_nodes or []] == ["node01"]
    assert "slurm_nodes" in facts.partial


def test_not_this_output_is_an_error() -> None:
    with pytest.raises(ParseError):
        slurm_nodes.parse("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu* up infinite 1 idle n1\n")
    with pytest.raises(ParseError):
        slurm_nodes.parse("NodeName=n1 Arch=x86_64 Gres=gpu:8\n")  # a whole node without State=


def _facts(text: str, gpus: int = 8, host: str | None = None) -> NodeFacts:
    facts = slurm_nodes.parse(text)
    facts.host = host
    facts.gpus = [Gpu(index=i) for i in range(gpus)]
    return facts


def _run(check: str, facts: NodeFacts, **params: object) -> tuple[str, str]:
    r = run_check(get(check), facts, dict(params))
    return r.status, r.message


def test_node_state_passes_only_in_service_without_a_reason() -> None:
    facts = _facts(read(ONE_LINE), host="hgx-h100-01")
    assert _run("slurm.node_state", facts)[0] == "pass"
    status, message = _run("slurm.node_state", facts, node="node01")
    assert status == "fail" and "IDLE+DRAIN+INVALID_REG (gres/gpu count reported lower" in message
    idle_with_reason = _facts(
        "NodeName=n1 State=IDLE Gres=gpu:8 Reason=was drained for a DIMM [root@2024-01-01T00:00:00]\n"
    )
    assert _run("slurm.node_state", idle_with_reason)[0] == "fail"  # one node: it is the node
    not_responding = _facts("NodeName=n1 State=IDLE* Gres=gpu:8\n")
    assert _run("slurm.node_state", not_responding)[0] == "fail"
    assert _run("slurm.node_state", _facts("NodeName=n1 State=MIXED Gres=gpu:8\n"))[0] == "pass"
    assert _run("slurm.node_state", facts, node="gpu99")[0] == "skip"  # Slurm knows no such node


def test_gres_matches_the_gpus_or_the_mig_devices() -> None:
    assert _run("slurm.gres", _facts("NodeName=n1 State=IDLE Gres=gpu:h100:8(S:0-1)\n"))[0] == "pass"
    status, message = _run("slurm.gres", _facts("NodeName=n1 State=IDLE Gres=gpu:7\n"))
    assert status == "fail" and "the node has 8 GPU device(s)" in message
    status, message = _run("slurm.gres", _facts(read(ONE_LINE), gpus=4), node="node01")
    assert status == "fail" and "refused" in message  # INVALID_REG, whatever the counts say
    mig = _facts("NodeName=n1 State=IDLE Gres=gpu:1g.10gb:7,gpu:h100:1\n", gpus=2)
    assert mig.gpus is not None
    mig.gpus[0].mig_mode_current = True
    mig.mig_devices = [MigDevice(gpu=0, gi_id=7 + i, ci_id=0, mig_device=i) for i in range(7)]
    assert _run("slurm.gres", mig)[0] == "pass"
    assert _run("slurm.gres", NodeFacts(gpus=[Gpu(index=0)]))[0] == "skip"  # no scontrol output at all
    broken = NodeFacts(gpus=[Gpu(index=0)], problems={"slurm_nodes": "scontrol-node.txt: capture failed"})
    assert _run("slurm.node_state", broken)[0] == "error"
