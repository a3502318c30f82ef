"""The Xid catalogue and policy (assessor/data/xids.yaml), checked against their sources."""

from __future__ import annotations

import doctest
import re

from assessor.checks import xids as xid_catalog
from tests.support.corpus import read_corpus

# docs/REFERENCES.md, "Xid policy" (Azure customTests/azure_gpu_xid.nhc).
POLICY_CRITICAL = {48, 56, 57, 58, 62, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 95, 119, 120}
POLICY_WARN = {13, 31, 43, 45, 63, 94, 109}


def test_xid_policy_sets_match_thresholds() -> None:
    assert xid_catalog.critical_xids() == POLICY_CRITICAL
    assert xid_catalog.warn_xids() == POLICY_WARN
    assert not xid_catalog.critical_xids() & xid_catalog.warn_xids()


def test_every_policy_xid_has_a_name_and_an_action() -> None:
    assert set(xid_catalog.catalogue()) == POLICY_CRITICAL | POLICY_WARN
    for code, info in xid_catalog.catalogue().items():
        assert info.name and info.action.endswith("."), code
        assert info.name != f"Xid {code}", code


def test_catalog_names_agree_with_nvidia_descriptions() -> None:
    # corpus/xid_catalog holds NVIDIA's descriptions for part of the policy codes.
    described = dict(
        (int(code), text)
        for code, text in re.findall(
            r'\{Code: (\d+), Mnemonic: "[^"]*", Description: "([^"]*)"',
            read_corpus("xid_catalog/01_nvidia_xid_catalog_subset.txt").replace("\\n", " "),
        )
    )
    for code in (48, 64, 74, 79, 94, 95, 119):
        assert described[code].lower().split()[0] in xid_catalog.catalogue()[code].name.lower(), code


def test_severity_follows_the_policy() -> None:
    assert xid_catalog.severity(79) == "critical"
    assert xid_catalog.severity(63) == "warn"
    assert xid_catalog.severity(154) is None


def test_describe_an_unlisted_code_gives_a_generic_entry() -> None:
    info = xid_catalog.describe(8)
    assert info.name == "Xid 8" and "catalogue" in info.action
    assert xid_catalog.describe(48) is xid_catalog.catalogue()[48]


def test_fallen_off_bus_needs_a_power_cycle() -> None:
    assert "power-cycle" in xid_catalog.describe(79).action


def test_xid_catalog_doctests() -> None:
    result = doctest.testmod(xid_catalog)
    assert result.attempted > 0 and result.failed == 0
