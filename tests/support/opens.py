"""How many times a local file is opened, as the Linux kernel reports it (inotify), to count the loader's reads.

The kernel queues an event for each ``open`` and each ``close`` of the file
while it happens, so once a render returns, :meth:`Opens.count` reads them all
without waiting. Closes are watched too: the kernel merges an event into an
identical one still unread at the end of the queue, and an ``open`` then a
``close`` never are identical.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from pathlib import Path

__all__ = ["Opens", "can_count_opens"]

_IN_CLOSE_NOWRITE = 0x10
_IN_OPEN = 0x20
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then len bytes of name)


def can_count_opens() -> bool:
    """Whether this system has inotify (Linux)."""
    return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "inotify_init1")


class Opens:
    """Counts the opens of one file from now on; a context manager that closes its inotify descriptor."""

    def __init__(self, path: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self._fd, os.fsencode(path), _IN_OPEN | _IN_CLOSE_NOWRITE) < 0:
            os.close(self._fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")

    def count(self) -> int:
        """The opens since the last count (or since the watch began)."""
        opens = 0
        while True:
            try:
                events = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return opens
            offset = 0
            while offset < len(events):
                _, mask, _, length = _EVENT.unpack_from(events, offset)
                offset += _EVENT.size + length
                opens += bool(mask & _IN_OPEN)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> Opens:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
