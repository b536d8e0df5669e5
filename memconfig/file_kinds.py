"""What a local file is, asked of its ``stat``: the loader's checks, which ``explain`` and the CLI make too."""

from __future__ import annotations

import os
import re
import stat

__all__ = ["file_place", "inherited", "irregular_kind", "not_openable"]

# A descriptor the process was given (``<(cmd)``, ``/dev/stdin``, ``/dev/stderr``): the caller's pipe, or a terminal.
_INHERITED = re.compile(r"/dev/(?:fd/\d+|stdin|stdout|stderr)|/proc/(?:self|\d+)/fd/\d+")

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
}


def irregular_kind(mode: int) -> str | None:
    """What a file of *mode* is when it is not a regular file (``a FIFO``, ``a directory``), or ``None``."""
    if stat.S_ISREG(mode):
        return None
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def inherited(path: str) -> bool:
    """Whether *path* names a descriptor the process was handed (``/dev/fd/63`` of ``<(cmd)``, ``/dev/stderr``)."""
    return _INHERITED.fullmatch(path) is not None


def not_openable(path: str, *, writing: bool = False, handed: bool = False) -> str | None:
    """Why a file the config or the command line names is not opened (``is a FIFO, not a regular file: …``), or None.

    A FIFO, a socket or a device could block the open or never end; a path
    that is not there, or a directory, is left to the caller (its own words).
    The null device may be written to, by any name (``--log-file /dev/stderr 2>/dev/null``).

    Args:
        path: The file, as named.
        writing: It is to be written (a log, an output), not read: a descriptor the process was handed
            (:func:`inherited`: ``/dev/stderr``) is written to whatever it is, a pipe or a terminal (writing
            to them does not wait for a reader that may never come).
        handed: The command line named it (``-c``, ``--log-file``, ``--system-file``, an audit input): a
            descriptor the process was handed (:func:`inherited`: ``<(cmd)``, ``/dev/stdin``) that is a
            pipe is the caller's own, and is read. A terminal to read is a device, and is not; nor is
            anything a config names to read, whose author is not the caller.
    """
    try:
        info = os.stat(path)
    except OSError:
        return None
    kind = irregular_kind(info.st_mode)
    if kind is None or kind == "a directory":
        return None
    if inherited(path) and (kind == "a FIFO" or writing) and (handed or writing):
        return None  # the caller's pipe to read; the process's own stdout or stderr (a pipe, a terminal) to write
    if writing and kind == "a character device" and os.path.samestat(info, os.stat(os.devnull)):
        return None
    return f"is {kind}, not a regular file: not opened (it could block, or never end)"


def file_place(info: os.stat_result) -> str:
    """Where a local file's content is: the same for every path to one file (links, ``..``), distinct for two.

    The file's version is part of it: an inode freed by a replaced file and
    reused by another one read in the same pass is not taken for the first.
    """
    return f"file-id:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
