from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from assessor.cli import main
from tests.support.corpus import CORPUS
from tests.support.snapshots import BROKEN_H100, HEALTHY_A100, corpus_snapshot


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def results_schema() -> dict:
    return json.loads((resources.files("assessor") / "schemas" / "results.schema.json").read_text())


def verdicts(doc: dict) -> dict[str, dict]:
    return {r["check"]: r for r in doc["targets"][0]["results"]}


def test_broken_node_gets_an_engineers_verdicts(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    code, out, _ = gpulab("assess", "--target", f"snapshot:{snap}", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, results_schema())
    got = verdicts(doc)
    assert code == 1
    assert got["ib.ports_active"]["status"] == "fail"
    assert "mlx5_11" in got["ib.ports_active"]["message"] and "Polling" in got["ib.ports_active"]["message"]
    assert got["nccl.transport"]["status"] == "fail"
    assert "Socket" in got["nccl.transport"]["message"]
    assert got["gpu.xid"]["status"] == "fail"
    assert "79" in got["gpu.xid"]["message"]
    # facts the snapshot does not hold are skipped, never passed
    assert got["gpu.count"]["status"] == "skip"
    assert got["dcgm.diag"]["status"] == "skip"


def test_healthy_a100_snapshot_passes_nccl_and_counts(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", HEALTHY_A100)
    code, out, _ = gpulab(
        "assess",
        "-t",
        f"snapshot:{snap}",
        "-c",
        "nccl.busbw:min_gbps=228",
        "-c",
        "gpu.count:expected=4",  # <attached_gpus>4 in an XML filtered to GPU 0
        "-c",
        "ib.ports_active:link_layer=InfiniBand",
        "--format",
        "json",
    )
    got = verdicts(json.loads(out))
    assert set(got) == {"nccl.busbw", "gpu.count", "ib.ports_active"}
    assert got["nccl.busbw"]["status"] == "pass"
    assert got["nccl.busbw"]["observed"]["busbw"] == pytest.approx(232.44)
    assert got["gpu.count"]["status"] == "pass"
    assert code == 0


def test_nccl_busbw_below_threshold_fails_with_observed_and_expected(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", HEALTHY_A100)
    code, out, _ = gpulab("assess", "-t", f"snapshot:{snap}", "-c", "nccl.busbw:min_gbps=460", "-f", "json")
    got = verdicts(json.loads(out))["nccl.busbw"]
    assert code == 1
    assert got["status"] == "fail"
    assert got["observed"]["busbw"] == pytest.approx(232.44)
    assert "hint" in got


def test_table_output_names_the_failing_port(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    code, out, _ = gpulab("assess", "-t", f"snapshot:{snap}", "-p", "hgx-h100")
    assert code == 1
    assert "FAIL" in out and "mlx5_11" in out


def test_garbage_tool_output_errors_its_checks_and_others_still_run(tmp_path: Path) -> None:
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    (snap / "ibstat.txt").write_bytes(b"\x00\x01\x02\xff garbage")
    code, out, _ = gpulab("assess", "-t", f"snapshot:{snap}", "-f", "json")
    got = verdicts(json.loads(out))
    assert got["ib.ports_active"]["status"] == "error"
    assert "ibstat.txt" in got["ib.ports_active"]["message"]
    assert got["gpu.xid"]["status"] == "fail"
    assert code == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["assess", "-t", "snapshot:/no/such/dir"], "does not exist"),
        (["assess", "-t", "bogus:thing"], "unknown target"),
        (["assess", "-t", "snapshot:.", "-c", "gpu.cont"], "did you mean gpu.count"),
        (["assess", "-t", "snapshot:.", "-c", "gpu.count:expect=8"], "has no parameter 'expect'"),
        (["assess", "-t", "snapshot:.", "-p", "no-such-profile"], "no profile"),
        (["parse", "ibstatt", "x"], "unknown kind"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    code, _, err = gpulab(*args)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_assess_unknown_snapshot_target_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = gpulab("assess", "-t", f"snapshot:{tmp_path / 'empty'}")
    assert code == 2 and "holds nothing usable" in err


def test_malformed_profile_file_is_exit_2_with_line(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("name: p\nchecks:\n  - id: ib.rate\n    params: {min_gbps: fast}\n")
    code, _, err = gpulab("assess", "-t", "snapshot:.", "-p", str(bad))
    assert code == 2
    assert f"{bad}:4:" in err and "min_gbps" in err


def test_parse_prints_the_facts_as_json() -> None:
    code, out, _ = gpulab("parse", "ibstat", str(CORPUS / "ibstat/02_h100_cx7_roce400_one_down_polling.txt"))
    assert code == 0
    ports = json.loads(out)["ib_ports"]
    down = [p for p in ports if p["ca"] == "mlx5_11"]
    assert down[0]["state"] == "Down" and down[0]["physical_state"] == "Polling"


def test_parse_garbage_is_exit_2_naming_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.txt"
    bad.write_bytes(b"\x00\x00binary")
    code, _, err = gpulab("parse", "lsmod", str(bad))
    assert code == 2 and str(bad) in err


def test_checks_list_and_show_document_every_check() -> None:
    code, out, _ = gpulab("checks", "list")
    assert code == 0 and "ib.ports_active" in out and "dcgm.diag" in out
    code, out, _ = gpulab("checks", "show", "nccl.busbw")
    assert code == 0
    assert "min_gbps" in out and "When it fails" in out and "nccl-tests" in out


def test_profiles_list_shows_shipped_profiles() -> None:
    code, out, _ = gpulab("profiles", "list")
    assert code == 0
    for name in ("dgx-a100", "hgx-h100", "hgx-h200", "any-gpu-node"):
        assert name in out


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, assessor.cli; "
        "heavy = [m for m in ('rich', 'yaml', 'jinja2', 'paramiko', 'pynvml', 'ansible_runner', 'jsonschema') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_local_assessment_without_a_driver_is_an_error_naming_the_way_out() -> None:
    """This machine has no NVIDIA driver: a clear error for the target, not a page of skips."""
    code, out, _ = gpulab("assess", "-t", "local", "-p", "any-gpu-node", "-f", "json")
    target = json.loads(out)["targets"][0]
    assert code == 3  # the host could not be assessed
    assert target["error"] == "NVML library not found: no NVIDIA driver on this host; try --target mock:hgx-h100"
    assert target["results"] == []
