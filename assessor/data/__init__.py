"""Reference data that ships with gpulab (reference numbers, the Xid catalogue), each value with its source."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@cache
def load_data(name: str) -> Any:
    """A YAML data file of this folder, parsed once (the C loader where PyYAML has it)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(HERE / name, encoding="utf-8") as f:
        return yaml.load(f, Loader=loader)
