"""Where gpulab's content lives: labs, profiles, playbooks and report templates.

Content sits at the top of a checkout (``labs/``, ``profiles/``, ``playbooks/``, ``reports/``) and
inside an installed wheel under ``assessor/_data/``. One resolver finds each, so a command works
the same from a clone, an editable install or a wheel.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

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


# ---- reading what people hand in, within bounds --------------------------------------------------------
#
# Every file gpulab reads from a person (an answer, a ticket, a lab folder, a candidates file, a gradebook)
# is read only up to a bound, checked before anything is parsed or walked: a 50 MB answer or a 1 GB README
# is one line of error naming the file and the bound, never a MemoryError (docs/THREAT_MODEL.md).

MAX_YAML_BYTES = 4 << 20  # a lab, profile, answer, ticket or candidates file: the largest shipped is 6 KiB
MAX_README_BYTES = 1 << 20  # a lab's README (the largest shipped is 6 KiB)
# one report input (results of a fleet, a grade), alone or in a gradebook folder: `assess --json` of 10,000
# HGX hosts is some 62 MiB, so this takes 40,000 such hosts in one file (a larger fleet: several files, which
# `report fleet` reads together) at about 5 bytes of memory for each byte read
MAX_DOCUMENT_BYTES = 256 << 20


def size_words(n: int) -> str:
    """A byte count as a person writes it: ``4 MiB``, ``1.5 GiB``, ``100 bytes``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


def too_big(path: Path | str, size: int | None, limit: int, what: str) -> Exception:
    """The one-line InputError for a file over its bound."""
    from assessor.errors import InputError

    shown = f"{size_words(size)} ({size:,} bytes)" if size is not None else "more than that"
    return InputError(f"{path}: {shown}, over the {size_words(limit)} limit of {what}: refused")


def read_bytes(path: Path | str, *, limit: int, what: str = "this file") -> bytes:
    """The bytes of ``path``, refused (InputError naming the file and the bound) when there are more than
    ``limit``: a regular file by its size before anything is read, anything else (a pipe, a device) after
    at most ``limit`` + 1 bytes. OSError (no such file, not readable) is left to the caller."""
    import os
    import stat

    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise too_big(path, info.st_size, limit, what)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise too_big(path, None, limit, what)
    return data


def read_text(path: Path | str, *, limit: int, what: str = "this file") -> str:
    """:func:`read_bytes` decoded as UTF-8 (InputError naming the line of a byte that is not UTF-8)."""
    from assessor.errors import InputError

    data = read_bytes(path, limit=limit, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text") from None


def digest_file(h: Any, path: Path | str, *, limit: int, what: str = "this file") -> None:
    """Feed the bytes of ``path`` to the hash ``h`` a block at a time, refusing more than ``limit`` bytes
    (InputError naming the file and the bound): a lab's digest never holds a whole file in memory."""
    import os
    import stat

    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise too_big(path, info.st_size, limit, what)
        seen = 0
        while block := f.read(1 << 16):
            seen += len(block)
            if seen > limit:
                raise too_big(path, None, limit, what)
            h.update(block)
