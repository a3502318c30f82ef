"""Reference numbers for the checks' ``auto`` defaults and the profiles' ``ref:NAME`` values.

Every number lives once, in ``assessor/data/references.yaml``, with its source beside it (see
docs/REFERENCES.md). The families are the 8-GPU SXM boards those sources measured (A100, H100,
H200); any other GPU has no reference, and a check whose default is ``auto`` then skips and asks
for the number instead of guessing one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from assessor.data import load_data
from assessor.errors import InputError
from assessor.facts import Gpu

AUTO = "auto"
REF_PREFIX = "ref:"

_DATA: dict[str, Any] = load_data("references.yaml")


def _families(name: str) -> dict[str, Any]:
    return {family: row["value"] for family, row in _DATA[name]["families"].items()}


# nccl-tests all_reduce_perf busbw (GB/s) at the largest message size, one node, 8 GPUs.
NCCL_ALLREDUCE_BUSBW_GBPS: dict[str, float] = {k: float(v) for k, v in _families("nccl_allreduce_busbw_gbps").items()}
# ibstat port rate (Gb/s) of each compute port.
IB_RATE_GBPS: dict[str, float] = {k: float(v) for k, v in _families("ib_rate_gbps").items()}
# perftest ib_write_bw with GPUDirect, one direction, Gb/s (--report_gbits).
IB_WRITE_BW_GBITS: dict[str, float] = {k: float(v) for k, v in _families("ib_write_bw_gbits").items()}
# Active NVLinks per SXM GPU.
NVLINK_LINKS: dict[str, int] = {k: int(v) for k, v in _families("nvlink_links").items()}
# HPL-NVIDIA per-GPU TFLOPS (FP64), one node, the lowest acceptable.
HPL_TFLOPS_PER_GPU: dict[str, float] = {k: float(v) for k, v in _families("hpl_tflops_per_gpu").items()}
# nvbandwidth host<->device copies of each GPU (GB/s, one direction), the lowest acceptable.
NVBANDWIDTH_HOST_DEVICE_GBPS: dict[str, float] = {
    k: float(v) for k, v in _families("nvbandwidth_host_device_gbps").items()
}
ECC_MAX_CORRECTED: int = int(_DATA["ecc_max_corrected"]["value"])
THROTTLE_FAIL: tuple[str, ...] = tuple(_DATA["throttle_fail"]["value"])
THROTTLE_WARN: tuple[str, ...] = tuple(_DATA["throttle_warn"]["value"])
TEMPERATURE_MARGIN_C: int = int(_DATA["temperature_margin_c"]["value"])
TEMPERATURE_FALLBACK_MAX_C: int = int(_DATA["temperature_fallback_max_c"]["value"])
IB_EFFECTIVE_BER_MAX: float = float(_DATA["ib_effective_ber_max"]["value"])


def names() -> list[str]:
    """Every reference a profile can name: ``NAME`` or ``NAME.FAMILY``."""
    out = []
    for name, row in _DATA.items():
        out += [f"{name}.{family}" for family in row["families"]] if "families" in row else [name]
    return out


def is_ref(value: Any) -> bool:
    """True for a ``ref:NAME`` string."""
    return isinstance(value, str) and value.startswith(REF_PREFIX)


def resolve(text: str) -> Any:
    """The value of ``ref:NAME`` or ``ref:NAME.FAMILY``; InputError for a reference that does not exist."""
    name, _, family = text.removeprefix(REF_PREFIX).partition(".")
    row = _DATA.get(name)
    if row is not None and family and family in row.get("families", {}):
        return row["families"][family]["value"]
    if row is not None and not family and "value" in row:
        return row["value"]
    import difflib

    close = difflib.get_close_matches(text.removeprefix(REF_PREFIX), names(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise InputError(f"unknown reference {text!r}{hint}")


def source(text: str) -> str:
    """Where the value of ``ref:NAME[.FAMILY]`` comes from."""
    name, _, family = text.removeprefix(REF_PREFIX).partition(".")
    row = _DATA[name]
    return str(row["families"][family]["source"] if family else row["source"])


def model_family(name: str | None) -> str | None:
    """``A100``, ``H100`` or ``H200`` from a GPU name; None for anything else.

    ``NVIDIA H100 80GB HBM3`` is H100; ``NVIDIA GH200 480GB`` is a Grace Hopper superchip,
    not an HGX board, and ``H800``/``H20`` are different parts: none has a reference.
    """
    if not name:
        return None
    upper = name.upper()
    if "GH200" in upper:
        return None
    for family in ("H200", "H100", "A100"):
        if family in upper:
            return family
    return None


def is_sxm(name: str | None) -> bool:
    """True for SXM parts: ``A100-SXM4-40GB``, ``H100 80GB HBM3``, ``H200``, ``B200`` (not NVL or PCIe).

    The HGX Blackwell parts (``NVIDIA B200``, ``B300``) come only as SXM modules; the Grace superchips
    (``GB200``, ``GH200``) are not HGX boards and are not counted here.
    """
    if not name:
        return False
    upper = name.upper()
    if "PCIE" in upper or "NVL" in upper:
        return False
    if re.search(r"(?<![A-Z0-9])B[23]00\b", upper):
        return True
    return "SXM" in upper or "HBM3" in upper or model_family(name) == "H200"


def node_family(gpus: Sequence[Gpu] | None) -> str | None:
    """The one model family every named GPU belongs to; None when unknown or mixed."""
    families = {model_family(g.name) for g in gpus or () if g.name}
    if len(families) != 1:
        return None
    return families.pop()


def family_of_names(names: Sequence[str | None]) -> str | None:
    """The one model family of a list of GPU names (e.g. from nccl-tests device lines)."""
    families = {model_family(n) for n in names if n}
    if len(families) != 1:
        return None
    return families.pop()


def is_nvswitch_system(gpus: Sequence[Gpu] | None) -> bool:
    """An HGX/DGX board with NVSwitches: the fabric manager must run there.

    Evidence: a GPU reports a fabric state other than Not Supported (drivers >= 530), or
    four or more GPUs all of an SXM model. PCIe boxes have no NVSwitch; there the fabric
    manager exits with NV_WARN_NOTHING_TO_DO, which is harmless.
    """
    gpus = list(gpus or ())
    states = [g.fabric_state for g in gpus if g.fabric_state]
    if any(s.strip().lower() not in ("not supported", "n/a") for s in states):
        return True
    if states and all(s.strip().lower() == "not supported" for s in states):
        return False
    return len(gpus) >= 4 and all(is_sxm(g.name) for g in gpus)
