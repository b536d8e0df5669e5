"""What a local file is, asked of its ``stat``: the loader's checks, which ``explain`` and the CLI make too."""

from __future__ import annotations

import os
import re
import stat

__all__ = ["file_place", "inherited", "irregular_kind", "not_openable"]

# A descriptor the process was given (``<(cmd)``, ``/dev/stdin``, ``/dev/stderr``): a pipe the caller made.
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


def not_openable(path: str, *, writing: bool = False) -> str | None:
    """Why a file the config or the command line names is not opened (``is a FIFO, not a regular file: …``), or None.

    A FIFO, a socket or a device could block the open or never end; a path
    that is not there, or a directory, is left to the caller (its own words).
    Descriptors the process was handed (:func:`inherited`) are the caller's
    own pipes and are opened, as is ``os.devnull`` to write to.
    """
    if inherited(path) or (writing and path == os.devnull):
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    kind = irregular_kind(info.st_mode)
    if kind is None or kind == "a directory":
        return None
    return f"is {kind}, not a regular file: not opened (it could block, or never end)"


def file_place(info: os.stat_result) -> str:
    """Where a local file's content is: the same for every path to one file (links, ``..``), distinct for two.

    The file's version is part of it: an inode freed by a replaced file and
    reused by another one read in the same pass is not taken for the first.
    """
    return f"file-id:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
