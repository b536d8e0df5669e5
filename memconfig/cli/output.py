"""``render -o FILE``: the output written to a file atomically, and left untouched when it would not change.

Generated files (``AGENTS.md``, ``CLAUDE.md``) are read by other tools at any
moment: a reader must see the old file or the new one, never half of one. So
the text goes to a temporary file in the same folder (a rename never crosses
filesystems), is flushed to disk, given the mode of the file it replaces, and
renamed over it. A file that already holds the text is not written at all,
not even its modification time changes: a tool that watches it is not woken
for nothing. A link is followed: its target is replaced, the link stays.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

__all__ = ["write_output"]


def write_output(path: str, data: bytes) -> bool:
    """Put *data* in the file *path*; ``False`` if it already held exactly that.

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
        if info is not None and info.st_size == len(data) and _holds(target, data):
            return False
        _replace(target, data, info)
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: {exc.strerror or exc}") from None
    return True


def _holds(target: str, data: bytes) -> bool:
    """Whether *target* holds exactly *data* (read up to one byte more than that: bounded)."""
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        held = b""
        while len(held) <= len(data):
            chunk = os.read(fd, len(data) + 1 - len(held))
            if not chunk:
                break
            held += chunk
        return held == data
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
