"""The check catalogue. Importing this package registers every check."""

from __future__ import annotations

from assessor.checks import (  # noqa: F401  (registration side effects)
    bmc,
    cabling,
    containers,
    dcgm,
    driver,
    driver_packages,
    fabric,
    firmware,
    gpu,
    hpl,
    ib,
    iommu,
    mig,
    nccl,
    node,
    nvbandwidth,
    slurm,
    topo,
)
from assessor.checks.base import REGISTRY, CheckSpec, run_check

__all__ = ["REGISTRY", "CheckSpec", "get", "run_check"]


def get(check_id: str) -> CheckSpec:
    """The spec for an id; raises InputError suggesting the closest ids."""
    import difflib

    from assessor.errors import InputError

    spec = REGISTRY.get(check_id)
    if spec is None:
        close = difflib.get_close_matches(check_id, REGISTRY, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `gpulab checks list`"
        raise InputError(f"unknown check id {check_id!r}{hint}")
    return spec
