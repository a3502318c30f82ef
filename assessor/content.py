"""Where gpulab's content lives: labs, profiles, playbooks and report templates.

Content sits at the top of a checkout (``labs/``, ``profiles/``, ``playbooks/``, ``reports/``) and
inside an installed wheel under ``assessor/_data/``. One resolver finds each, so a command works
the same from a clone, an editable install or a wheel.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

FOLDERS = ("labs", "profiles", "playbooks", "reports")


@cache
def root() -> Path:
    """The folder holding the content folders: the checkout, or the installed package's ``_data``."""
    checkout = Path(__file__).resolve().parents[1]
    # pyproject.toml beside labs/ tells a checkout from a site-packages that happens to hold a labs dir.
    if (checkout / "labs").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout
    return Path(__file__).resolve().parent / "_data"


def folder(name: str) -> Path:
    """One content folder that ships with gpulab: ``labs``, ``profiles``, ``playbooks`` or ``reports``."""
    if name not in FOLDERS:
        raise ValueError(f"unknown content folder {name!r}")
    return root() / name
