"""Where the report content is: templates (``reports/templates/``) and data files (``reports/*.yaml``).

A checkout uses its ``reports/`` folder; an installed wheel the copy under ``assessor/_data/reports``
(pyproject.toml force-includes it); ``$GPULAB_REPORTS`` points at another folder (your own templates).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any


def reports_root() -> Path:
    """``$GPULAB_REPORTS``, else the checkout's ``reports/``, else the installed package data."""
    env = os.environ.get("GPULAB_REPORTS")
    if env:
        return Path(env)
    return default_root()


def default_root() -> Path:
    """The report content that ships with gpulab."""
    checkout = Path(__file__).resolve().parents[2]
    # pyproject.toml beside reports/ tells a checkout from a site-packages that happens to hold one
    if (checkout / "reports" / "templates").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout / "reports"
    from importlib import resources

    return Path(str(resources.files("assessor") / "_data" / "reports"))


def templates_dir() -> Path:
    return reports_root() / "templates"


def data_file(name: str) -> Path:
    """A data file (``teams.yaml``, ``certifications.yaml``): the chosen root's own, else the shipped one."""
    own = reports_root() / name
    return own if own.is_file() else default_root() / name


@cache
def _load_yaml(path: str) -> Any:
    from assessor import yamlio

    return yamlio.load(Path(path)).data


def load_data(name: str) -> Any:
    """A data file's content (parsed once per process)."""
    return _load_yaml(str(data_file(name)))
