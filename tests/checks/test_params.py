from __future__ import annotations

import pytest

from assessor import checks
from assessor.checks import params
from assessor.errors import InputError


def test_cli_check_option_types_values_like_yaml() -> None:
    check_id, raw = params.parse_cli("ib.ports_active:ports=[mlx5_0,mlx5_1],min_ports=2")
    assert check_id == "ib.ports_active"
    assert raw == {"ports": ["mlx5_0", "mlx5_1"], "min_ports": 2}


def test_cli_check_option_without_equals_is_an_error() -> None:
    with pytest.raises(InputError, match="key=value"):
        params.parse_cli("gpu.count:8")


def test_coerce_rejects_bool_for_int_and_unknown_names() -> None:
    spec = checks.get("gpu.count")
    assert params.coerce(spec, "expected", 8) == 8
    with pytest.raises(InputError, match="must be int"):
        params.coerce(spec, "expected", True)
    with pytest.raises(InputError, match="has no parameter 'nope'"):
        params.coerce(spec, "nope", 1)


def test_unknown_check_suggests_closest_ids() -> None:
    with pytest.raises(InputError, match=r"did you mean .*ib\.ports_active"):
        checks.get("ib.port_active")


def test_a_dict_is_kept_where_list_or_dict_is_accepted() -> None:
    spec = checks.get("mig.layout")
    per_gpu = {0: ["3g.40gb", "3g.40gb"], 1: ["7g.80gb"]}
    assert params.coerce(spec, "layout", per_gpu) == per_gpu
    assert params.coerce(spec, "layout", "7g.80gb") == ["7g.80gb"]


def test_a_single_value_becomes_a_list_of_one() -> None:
    spec = checks.get("ib.ports_active")
    assert params.coerce(spec, "ports", "mlx5_0") == ["mlx5_0"]
