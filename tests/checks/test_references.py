"""Reference numbers live once, as data with their source, and profiles name them."""

from __future__ import annotations

import re

import pytest

from assessor.assess import profiles
from assessor.checks import references
from assessor.data import load_data
from assessor.errors import InputError


def test_every_reference_value_has_a_source() -> None:
    data = load_data("references.yaml")
    for name, row in data.items():
        rows = row["families"].values() if "families" in row else [row]
        for entry in rows:
            assert "value" in entry and str(entry["source"]).strip(), name


def test_profiles_numbers_come_from_the_references() -> None:
    h100 = {ref.id: ref.params for ref in profiles.load("hgx-h100").checks}
    assert h100["nccl.busbw"]["min_gbps"] == 460 == references.NCCL_ALLREDUCE_BUSBW_GBPS["H100"]
    assert h100["ib.rate"]["min_gbps"] == references.IB_RATE_GBPS["H100"]
    assert h100["gpu.nvlink"]["expected_links"] == references.NVLINK_LINKS["H100"] == 18
    a100 = {ref.id: ref.params for ref in profiles.load("dgx-a100").checks}
    assert a100["gpu.pcie_link"] == {"min_gen": 4, "min_width": 16}
    assert a100["ib.write_bw"]["min_gbps"] == 180


def test_shipped_profiles_hold_no_bare_threshold_numbers() -> None:
    # a number in a shipped profile would be a second home for a reference: only ref:NAME, booleans and names
    for path in profiles.shipped().values():
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if code.startswith("description:"):
                continue
            assert not re.search(r":\s*\d", code), f"{path.name}:{lineno}: {line.strip()}"


def test_unknown_reference_in_a_profile_names_file_line_and_key(tmp_path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "name: p\nchecks:\n  - id: nccl.busbw\n    params: {min_gbps: ref:nccl_allreduce_busbw_gbps.H1000}\n"
    )
    with pytest.raises(InputError) as err:
        profiles.load(str(bad))
    text = str(err.value)
    assert "p.yaml:4" in text and "min_gbps" in text and "did you mean nccl_allreduce_busbw_gbps.H100" in text


def test_resolve_and_source() -> None:
    assert references.resolve("ref:ecc_max_corrected") == 20_000_000
    assert "Azure" in references.source("ref:ib_write_bw_gbits.H200")
    with pytest.raises(InputError):
        references.resolve("ref:nccl_allreduce_busbw_gbps")  # a family table needs its family
