from __future__ import annotations

import pytest

from assessor.assess import profiles
from assessor.errors import InputError


def test_every_shipped_profile_loads_and_names_known_checks() -> None:
    shipped = profiles.shipped()
    assert {"dgx-a100", "hgx-h100", "hgx-h200", "any-gpu-node"} <= set(shipped)
    for name in shipped:
        prof = profiles.load(name)
        assert prof.name == name
        assert prof.checks


def test_hgx_h100_profile_carries_threshold_numbers() -> None:
    prof = profiles.load("hgx-h100")
    by_id = {c.id: c.params for c in prof.checks}
    assert by_id["nccl.busbw"] == {"min_gbps": 460.0}
    assert by_id["ib.rate"] == {"min_gbps": 400.0}
    assert by_id["gpu.count"] == {"expected": 8}


def test_shipped_profile_thresholds_are_named_references_with_a_source() -> None:
    from assessor.checks import references

    for path in profiles.shipped().values():
        for line in path.read_text().splitlines():
            if "min_gbps" in line or "max_corrected" in line:
                ref = line.split(": ")[-1].strip(" {}")
                assert ref.startswith("ref:"), f"{path.name}: a bare number instead of a reference: {line}"
                assert references.source(ref), ref


def test_bare_string_is_check_with_default_params() -> None:
    prof = profiles.parse("name: p\nchecks:\n  - ib.ports_active\n", "p.yaml")
    assert prof.checks[0].id == "ib.ports_active"
    assert prof.checks[0].params == {}


def test_unknown_check_id_names_file_line_and_suggests() -> None:
    text = "name: p\nchecks:\n  - gpu.count\n  - id: gpu.cont\n"
    with pytest.raises(InputError) as err:
        profiles.parse(text, "p.yaml")
    msg = str(err.value)
    assert msg.startswith("p.yaml:4:")
    assert "gpu.count" in msg  # the suggestion
    assert "checks[1].id" in msg


def test_unknown_parameter_names_line_and_key() -> None:
    text = "name: p\nchecks:\n  - id: gpu.count\n    params:\n      expect: 8\n"
    with pytest.raises(InputError) as err:
        profiles.parse(text, "p.yaml")
    msg = str(err.value)
    assert msg.startswith("p.yaml:5:")
    assert "'expect'" in msg and "checks[0].params.expect" in msg
    assert "expected" in msg  # lists the real parameters


def test_wrong_parameter_type_is_reported() -> None:
    text = "name: p\nchecks:\n  - id: gpu.count\n    params: {expected: eight}\n"
    with pytest.raises(InputError, match=r"p.yaml:4: .*must be int"):
        profiles.parse(text, "p.yaml")


def test_malformed_yaml_names_the_line() -> None:
    with pytest.raises(InputError, match=r"^bad.yaml:4: invalid YAML: .*starts at line 3"):
        profiles.parse("name: p\nchecks:\n  - [unclosed\n", "bad.yaml")


def test_profile_without_checks_is_refused() -> None:
    with pytest.raises(InputError, match=r"p.yaml:1: profile needs a non-empty list of checks"):
        profiles.parse("name: p\n", "p.yaml")


def test_unknown_top_level_key_is_refused() -> None:
    with pytest.raises(InputError, match=r"p.yaml:2: unknown key 'chekcs'"):
        profiles.parse("name: p\nchekcs: []\n", "p.yaml")


def test_missing_profile_name_lists_shipped_ones() -> None:
    with pytest.raises(InputError, match="hgx-h100"):
        profiles.load("no-such-profile")
