"""Readiness profiles: YAML lists of checks with parameters (docs/CONTRACTS.md, Profiles)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.errors import InputError


@dataclass(frozen=True)
class CheckRef:
    id: str
    params: dict[str, Any] = field(default_factory=dict)
    fast: bool = False  # fast enough to run before every job (`gpulab slurm prolog`, docs/SLURM.md)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    checks: tuple[CheckRef, ...]
    file: str | None = None


def shipped_dir() -> Path:
    from assessor import content

    return content.folder("profiles")


def shipped() -> dict[str, Path]:
    """Profiles that ship with gpulab, by name."""
    return {p.stem: p for p in sorted(shipped_dir().glob("*.yaml"))}


def load(name_or_path: str) -> Profile:
    """A shipped profile by name, or a profile file by path."""
    path = Path(name_or_path)
    if not path.suffix and name_or_path in shipped():
        path = shipped()[name_or_path]
    elif not path.exists():
        names = ", ".join(shipped())
        raise InputError(f"no profile {name_or_path!r}: not a file, and not a shipped profile ({names})")
    from assessor.content import MAX_YAML_BYTES, read_text

    try:
        # the size is checked before a byte is read: a 1 GB profile is one line of error naming the bound
        text = read_text(path, limit=MAX_YAML_BYTES, what="a profile")
    except IsADirectoryError:
        raise InputError(f"{path}: a directory, not a profile") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse(text, str(path))


def parse(text: str, filename: str) -> Profile:
    from assessor import checks, yamlio
    from assessor.checks import params, references

    doc = yamlio.load(filename, text=text)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a profile is a mapping with name, description and checks")
    unknown = set(data) - {"name", "description", "checks"}
    if unknown:
        key = sorted(map(str, unknown))[0]
        raise doc.error((key,), f"unknown key {key!r}; a profile has name, description, checks")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise doc.error(("name",), "profile needs a name (a string)")
    items = data.get("checks")
    if not isinstance(items, list) or not items:
        raise doc.error(("checks",), "profile needs a non-empty list of checks")
    refs: list[CheckRef] = []
    for i, item in enumerate(items):
        raw: Any
        check_id: Any
        if isinstance(item, str):
            check_id, raw = item, {}
        elif isinstance(item, dict):
            extra = set(item) - {"id", "params", "fast"}
            if extra:
                key = sorted(map(str, extra))[0]
                raise doc.error(("checks", i, key), f"unknown key {key!r} in a check; use id, params and fast")
            if not isinstance(item.get("fast", False), bool):
                raise doc.error(("checks", i, "fast"), "fast must be true or false")
            check_id, raw = item.get("id"), item.get("params") or {}
            if not isinstance(check_id, str):
                raise doc.error(("checks", i), "a check needs an id")
            if not isinstance(raw, dict):
                raise doc.error(("checks", i, "params"), "params must be a mapping")
        else:
            raise doc.error(("checks", i), "a check is an id or a mapping with id and params")
        try:
            spec = checks.get(check_id)
        except InputError as exc:
            raise doc.error(("checks", i, "id") if isinstance(item, dict) else ("checks", i), str(exc)) from None
        typed = {}
        for key, value in raw.items():
            try:
                if references.is_ref(value):
                    value = references.resolve(value)
                typed[key] = params.coerce(spec, key, value)
            except InputError as exc:
                raise doc.error(("checks", i, "params", key), str(exc)) from None
        refs.append(CheckRef(check_id, typed, isinstance(item, dict) and item.get("fast") is True))
    return Profile(name, str(data.get("description") or ""), tuple(refs), filename)


def everything() -> Profile:
    """Every check with its defaults: what `assess` runs with no profile."""
    from assessor import checks

    return Profile(
        "all-checks",
        "every check in the catalogue with default parameters",
        tuple(CheckRef(i) for i in sorted(checks.REGISTRY)),
    )
