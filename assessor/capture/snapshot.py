"""Snapshots: a directory of raw tool outputs, one file per source (DESIGN.md, Snapshot files).

``meta.json`` (command, exit code, duration, stderr excerpt per file; host; time; version)
is optional when reading: a directory of raw files pasted by a user is a valid snapshot.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.errors import InputError

META = "meta.json"


def known_files() -> dict[str, str]:
    """Snapshot file name -> parser kind."""
    from assessor.capture.sources import FILES

    return {f.file: f.kind for f in FILES}


@dataclass
class Source:
    """One captured source: its text and how the capture of it went."""

    file: str
    text: str | None = None
    status: str = "ok"  # ok, missing (tool not installed), failed, timeout, unreadable
    exit_code: int | None = None
    command: str | None = None
    duration_s: float | None = None
    stderr: str | None = None
    message: str | None = None  # why it is not ok, in words

    def to_meta(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in {
                "command": self.command,
                "status": self.status,
                "exit_code": self.exit_code,
                "duration_s": self.duration_s,
                "stderr": self.stderr,
                "message": self.message,
            }.items()
            if v is not None
        }


@dataclass
class Snapshot:
    sources: dict[str, Source] = field(default_factory=dict)
    host: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    # Files of a pasted snapshot that were not used, with why (content not recognised, ambiguous, a second
    # output of the same kind): reported by name, never guessed.
    unused: dict[str, str] = field(default_factory=dict)


# Given a file's text: the snapshot file name its content belongs under, or ValueError saying why none.
Recogniser = Callable[[str], str]

MAX_FILE_BYTES = 64 * 1024 * 1024  # one tool output; `--max-file-size` changes it
MAX_PASTED_FILES = 1_000  # files of a pasted snapshot looked at by content (one per tool output is a few dozen)
UNUSED_LISTED = 10  # files not used that are named one by one; the rest are counted


def read_safely(file: Path, directory: Path, max_bytes: int) -> bytes:
    """The bytes of ``file`` if it is a regular file inside ``directory`` and at most ``max_bytes`` long.

    ValueError (with the reason in words) for a symbolic link leading outside the directory, a FIFO, a
    device or a socket (reading them can hang or never end), or a file over the cap.
    """
    import os
    import stat

    real = file.resolve()
    if file.is_symlink() and not real.is_relative_to(directory.resolve()):
        raise ValueError(f"a symbolic link leading out of the snapshot (to {real}): refused")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if not real.exists():
            raise ValueError("a link to nothing") from None
        raise exc
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file (a FIFO, a device or a socket): refused")
        if info.st_size > max_bytes:
            raise ValueError(f"{info.st_size} bytes, over the {max_bytes}-byte limit (--max-file-size): refused")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"over the {max_bytes}-byte limit (--max-file-size): refused")
    return data


def validate_dir(directory: Path | str, *, any_names: bool = False) -> Path:
    """The path, or InputError when it is not a snapshot with something usable in it.

    With ``any_names`` (content is recognised), a directory holding any regular file, or a single
    file, is a snapshot.
    """
    path = Path(directory)
    if not path.exists():
        raise InputError(f"{path}: snapshot directory does not exist")
    if any_names and path.is_file():
        return path
    if not path.is_dir():
        raise InputError(f"{path}: not a directory (a snapshot is a directory of tool outputs)")
    if any_names and any(p.is_file() for p in path.iterdir()):
        return path
    names = {*known_files(), META}
    if not any((path / name).exists() for name in names):
        expected = ", ".join(sorted(known_files()))
        raise InputError(f"{path}: holds nothing usable (no known tool output; expected files such as {expected})")
    return path


def read(directory: Path | str, *, max_bytes: int | None = None, recognise: Recogniser | None = None) -> Snapshot:
    """Read a snapshot directory; InputError when it does not exist or holds nothing usable.

    Only regular files inside the directory are read, each up to ``max_bytes`` (default
    :data:`MAX_FILE_BYTES`): a FIFO, a device, a symbolic link leading out of the directory or an
    oversized file is an ``unreadable`` source naming it, so the checks that need it say ``error``.
    With ``recognise``, files under other names (and ``directory`` itself when it is one file) are
    taken by their content; what cannot be placed is listed in ``Snapshot.unused`` with why.
    """
    given = Path(directory)
    path = validate_dir(directory, any_names=recognise is not None)
    single = path.is_file()
    if single:
        path = path.parent
    cap = MAX_FILE_BYTES if max_bytes is None else max_bytes
    meta: dict[str, Any] = {}
    meta_path = path / META
    if not single and (meta_path.exists() or meta_path.is_symlink()):
        try:
            meta = json.loads(read_safely(meta_path, path, cap).decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            line = getattr(exc, "lineno", None)
            raise InputError(f"{meta_path}{':' + str(line) if line else ''}: unreadable meta.json: {exc}") from None
        except ValueError as exc:
            raise InputError(f"{meta_path}: {exc}") from None
        if not isinstance(meta, dict):
            raise InputError(f"{meta_path}: meta.json must be a JSON object")
    files_meta: dict[str, Any] = meta.get("files") or {}
    snap = Snapshot(host=meta.get("host"), meta=meta, path=given if single else path)
    for name in () if single else known_files():
        info = files_meta.get(name) or {}
        file = path / name
        if not file.exists() and not file.is_symlink():
            if info:  # capture recorded why the file is absent (tool missing, failed)
                snap.sources[name] = _source_from_meta(name, None, info)
            continue
        try:
            text = read_safely(file, path, cap).decode("utf-8", errors="replace")
        except OSError as exc:
            snap.sources[name] = Source(name, None, "unreadable", message=f"{file}: cannot read: {exc.strerror or exc}")
            continue
        except ValueError as exc:  # not a regular file of the snapshot, or too big
            snap.sources[name] = Source(name, None, "unreadable", message=f"{file}: {exc}")
            continue
        snap.sources[name] = _source_from_meta(name, text, info)
    if recognise is not None:
        others = [given] if single else [p for p in sorted(path.iterdir()) if p.name not in {*known_files(), META}]
        _recognise_files(snap, others, path, cap, recognise)
    if not snap.sources:
        if snap.unused:
            why = "; ".join(f"{name}: {reason}" for name, reason in snap.unused.items())
            raise InputError(f"{given}: holds nothing usable ({why})")
        expected = ", ".join(sorted(known_files()))
        raise InputError(f"{path}: holds nothing usable (no known tool output; expected files such as {expected})")
    if snap.host is None:
        snap.host = _host_from_uname(snap.sources.get("uname.txt"))
    return snap


def _recognise_files(snap: Snapshot, files: list[Path], directory: Path, cap: int, recognise: Recogniser) -> None:
    """Place files pasted under any name by what their content is.

    At most :data:`MAX_PASTED_FILES` files are looked at (a snapshot holds one file per tool output, a few
    dozen), and at most :data:`UNUSED_LISTED` files not used are named one by one; the rest are counted in
    one last entry (``… and 99,990 more files``), so a directory of 100,000 files is neither read whole nor
    reported line by line.
    """
    skipped = max(0, len(files) - MAX_PASTED_FILES)
    for file in files[:MAX_PASTED_FILES]:
        if file.is_dir() and not file.is_symlink():
            continue
        try:
            text = read_safely(file, directory, cap).decode("utf-8", errors="replace")
            name = recognise(text)
        except OSError as exc:
            snap.unused[file.name] = f"cannot read: {exc.strerror or exc}"
            continue
        except ValueError as exc:
            snap.unused[file.name] = str(exc)
            continue
        if name in snap.sources:
            snap.unused[file.name] = f"a second {name} (the first one is used)"
            continue
        snap.sources[name] = Source(name, text, command=f"recognised from {file.name}")
    named = list(snap.unused.items())
    if len(named) > UNUSED_LISTED or skipped:
        rest = len(named) - min(len(named), UNUSED_LISTED) + skipped
        snap.unused = dict(named[:UNUSED_LISTED])
        snap.unused[f"… and {rest:,} more files"] = (
            f"not used either ({skipped:,} of them not read: a snapshot holds one file per tool output, "
            f"and only the first {MAX_PASTED_FILES:,} files of a directory are looked at)"
            if skipped
            else "not used either (the reasons of the first ones are above)"
        )


def _source_from_meta(name: str, text: str | None, info: dict[str, Any]) -> Source:
    return Source(
        name,
        text,
        status=str(info.get("status", "ok" if text is not None else "missing")),
        exit_code=info.get("exit_code"),
        command=info.get("command"),
        duration_s=info.get("duration_s"),
        stderr=info.get("stderr"),
        message=info.get("message"),
    )


def _host_from_uname(source: Source | None) -> str | None:
    if source is None or not source.text:
        return None
    parts = source.text.split()
    return parts[1] if len(parts) > 1 else None


def write(snap: Snapshot, directory: Path | str, extra_meta: dict[str, Any] | None = None) -> Path:
    """Write a snapshot directory with its meta.json.

    A symbolic link already in the directory (or the directory itself being one) is never followed:
    each file is written beside its name and renamed over it, which replaces a link rather than
    writing where it points.
    """
    path = _own_dir(Path(directory))
    for source in snap.sources.values():
        if source.text is not None:
            _write_file(path / source.file, source.text)
    meta = dict(extra_meta or {})
    meta["host"] = snap.host
    meta["files"] = {name: s.to_meta() for name, s in sorted(snap.sources.items())}
    _write_file(path / META, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    snap.path = path
    return path


def _own_dir(path: Path) -> Path:
    """``path`` created as a real directory; InputError when it is a symbolic link."""
    if path.is_symlink():
        raise InputError(f"{path}: is a symbolic link; refusing to write a snapshot through it")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_file(path: Path, text: str) -> None:
    """Write ``text`` to a new file and rename it to ``path``: a link at ``path`` is replaced, not followed."""
    import os
    import tempfile

    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def host_snapshots(directory: Path | str) -> list[Path]:
    """The host snapshots in ``directory`` when it is a fleet (one subdirectory per host), else [].

    A fleet is what ``capture.yml``, ``gpulab capture -i`` and ``assess --out`` write: ``DIR/<host>/``,
    each a snapshot or an error record (``meta.json`` saying why the host could not be captured).
    A directory that is itself a snapshot is not a fleet.
    """
    path = Path(directory)
    if not path.is_dir() or any((path / name).is_file() for name in (*known_files(), META)):
        return []
    names = {*known_files(), META}
    return sorted(
        sub
        for sub in path.iterdir()
        if sub.is_dir() and not sub.is_symlink() and any((sub / name).is_file() for name in names)
    )


def dir_name(label: str) -> str:
    """A host label as a safe directory name (snapshots under --out DIR/<host>/)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label) or "target"


def now_iso() -> str:
    """The time now, as snapshots record it (UTC, seconds)."""
    import datetime

    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def write_error_record(directory: Path, spec: str, host: str, why: str) -> None:
    """Keep why a host could not be captured (``meta.json`` with ``error``) in its snapshot directory."""
    _own_dir(directory)
    record = {"target": spec, "host": host, "error": why, "time": now_iso(), "files": {}}
    _write_file(directory / META, json.dumps(record, indent=2, sort_keys=True) + "\n")


def error_record(directory: Path | None) -> tuple[str | None, str] | None:
    """(host, why) when ``directory`` is a snapshot holding an error record, else None."""
    if not isinstance(directory, Path) or not (directory / META).is_file():
        return None
    try:
        meta = json.loads((directory / META).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("error"), str):
        return None
    host = meta.get("host")
    return (host if isinstance(host, str) else None), meta["error"]
