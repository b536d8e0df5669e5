"""``render -o FILE``: the output written to a file atomically, and left untouched when it would not change.

Generated files (``AGENTS.md``, ``CLAUDE.md``) are read by other tools at any
moment: a reader must see the old file or the new one, never half of one. So
the text goes to a temporary file in the same folder (a rename never crosses
filesystems), is flushed to disk, given the mode of the file it replaces, and
renamed over it. A file that already holds the text is not written at all,
not even its modification time changes: a tool that watches it is not woken
for nothing. For a JSON output whose top-level keys include some that differ
on every run (``--format json``'s ``render_id`` and cache ``counts``), "holds
the text" means "holds the same JSON but for those keys": else every run
would rewrite a file whose prompt did not change. A link is followed: its
target is replaced, the link stays.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Collection
from typing import Any, NamedTuple

__all__ = ["Outcome", "write_output"]

PER_RUN_SLACK = 4096
"""How many bytes larger than the new output a file may be and still hold it but for per-run keys (an id, counts)."""


class Outcome(NamedTuple):
    """What :func:`write_output` did: *written*, and the bytes the file holds now (*data*, or what it kept)."""

    written: bool
    held: bytes


def write_output(path: str, data: bytes, per_run: Collection[str] = ()) -> Outcome:
    """Put *data* in the file *path*, unless it holds that already.

    *per_run*: *data* is a JSON object, and these of its top-level keys differ on every run (``render_id``):
    a file holding the same object but for them is left as it is.

    Raises:
        OSError: it could not be written (a full disk, no permission, not a
            regular file); the file is as it was, and no temporary file is left.
            Its ``strerror`` names the file.
    """
    target = os.path.realpath(path)
    try:
        try:
            info: os.stat_result | None = os.stat(target)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):  # a folder, or a FIFO: never opened
            raise OSError(0, "not a regular file")
        if info is not None:
            held = _held(target, data, per_run, info.st_size)
            if held is not None:
                return Outcome(False, held)
        _replace(target, data, info)
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: {exc.strerror or exc}") from None
    return Outcome(True, data)


def _held(target: str, data: bytes, per_run: Collection[str], size: int) -> bytes | None:
    """What *target* holds if it holds *data* (but for *per_run* keys), else ``None``; bounded reads."""
    if not per_run:
        return data if size == len(data) and _read(target, len(data) + 1) == data else None
    if size > len(data) + PER_RUN_SLACK:
        return None
    held = _read(target, len(data) + PER_RUN_SLACK + 1)
    if held == data:
        return held
    kept = _without(held, per_run)
    return held if kept is not None and kept == _without(data, per_run) else None


def _without(data: bytes, keys: Collection[str]) -> dict[str, Any] | None:
    """The JSON object *data* less *keys*; ``None`` if it is not one."""
    try:
        value = json.loads(data)
    except ValueError:  # not UTF-8 or not JSON: a file to replace
        return None
    if not isinstance(value, dict):
        return None
    return {key: item for key, item in value.items() if key not in keys}


def _read(target: str, limit: int) -> bytes:
    """Up to *limit* bytes of *target* (a FIFO put there since the stat is not waited on)."""
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        held = b""
        while len(held) < limit:
            chunk = os.read(fd, limit - len(held))
            if not chunk:
                break
            held += chunk
        return held
    finally:
        os.close(fd)


def _replace(target: str, data: bytes, info: os.stat_result | None) -> None:
    folder, name = os.path.split(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) if info is not None else _new_file_mode())
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable, where the platform allows it
        dir_fd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _new_file_mode() -> int:
    """The mode ``open(path, "w")`` would give a new file: 0o666 less the umask (mkstemp's is 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
