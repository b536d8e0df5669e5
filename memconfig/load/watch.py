"""Watching a load pass as it goes: a caller's watcher is told how many sources are read and when each is done.

The load log tells what happened to each source once a pass is over (the
events are written after the pass, outside the cache's lock); a progress
display needs to know sooner. The library prints nothing and knows nothing of
terminals: a caller (the command line) installs a :class:`ReadWatcher` with
:func:`watching`, and the loader calls it from whichever thread finishes a
read (remote reads finish on fsspec's I/O thread), so a watcher must be
thread-safe. The watcher is a context variable: it reaches the reads of the
pass started in that context, fsspec's loop included, and no other thread's.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Protocol

__all__ = ["ReadWatcher", "expect", "finished", "watching"]


class ReadWatcher(Protocol):
    """Told of a pass's reads as they happen; called from any thread, so it must be thread-safe."""

    def expect(self, count: int) -> None:
        """*count* more sources are to be read (a glob's matches, once the glob is listed, add to it)."""

    def finished(self, name: str) -> None:
        """One source (named *name*, as in the load log) was read, or skipped."""


_WATCHER: contextvars.ContextVar[ReadWatcher | None] = contextvars.ContextVar("memconfig_read_watcher", default=None)


@contextlib.contextmanager
def watching(watcher: ReadWatcher) -> Iterator[ReadWatcher]:
    """Tell *watcher* of every read of the passes run in this context."""
    token = _WATCHER.set(watcher)
    try:
        yield watcher
    finally:
        _WATCHER.reset(token)


def expect(count: int) -> None:
    """The loader's side: *count* more sources are to be read (nothing, when no one watches)."""
    watcher = _WATCHER.get()
    if watcher is not None and count:
        watcher.expect(count)


def finished(name: str) -> None:
    """The loader's side: one source was read or skipped (nothing, when no one watches)."""
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher.finished(name)
