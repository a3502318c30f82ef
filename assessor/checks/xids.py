"""What an Xid means and what to do about it, for the Xids the readiness policy names.

The catalogue and the policy are data: ``assessor/data/xids.yaml`` (with their sources). The critical
codes make a node unfit for work until acted on; the warn codes are usually an application's fault or
the echo of another error.

>>> describe(79).name
'GPU has fallen off the bus'
>>> severity(79), severity(13), severity(8)
('critical', 'warn', None)
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from assessor.data import load_data


class XidInfo(NamedTuple):
    name: str  # short human name
    action: str  # what an operator should do


@cache
def _data() -> tuple[frozenset[int], frozenset[int], dict[int, XidInfo]]:
    data = load_data("xids.yaml")
    policy = data["policy"]
    catalogue = {int(code): XidInfo(str(x["name"]), str(x["action"])) for code, x in data["xids"].items()}
    return frozenset(policy["critical"]), frozenset(policy["warn"]), catalogue


def critical_xids() -> frozenset[int]:
    """Xids that fail gpu.xid."""
    return _data()[0]


def warn_xids() -> frozenset[int]:
    """Xids that make gpu.xid warn."""
    return _data()[1]


def catalogue() -> dict[int, XidInfo]:
    """Every Xid the policy names, with its name and action."""
    return _data()[2]


def severity(code: int) -> str | None:
    """``critical``, ``warn`` or None (not in the policy) for an Xid code."""
    if code in critical_xids():
        return "critical"
    if code in warn_xids():
        return "warn"
    return None


def describe(code: int) -> XidInfo:
    """The catalogue entry, or a generic one for a code the policy does not name."""
    return catalogue().get(
        code,
        XidInfo(f"Xid {code}", "Look the code up in NVIDIA's Xid catalogue and act on its resolution."),
    )
