"""What a local file is, asked of its ``stat``: the loader's checks, which ``explain`` makes too."""

from __future__ import annotations

import os
import stat

__all__ = ["file_place", "irregular_kind"]

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


def file_place(info: os.stat_result) -> str:
    """Where a local file's content is: the same for every path to one file (links, ``..``), distinct for two.

    The file's version is part of it: an inode freed by a replaced file and
    reused by another one read in the same pass is not taken for the first.
    """
    return f"file-id:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
