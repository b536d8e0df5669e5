"""The cyclic garbage collector held off while memconfig allocates in a burst.

Validating a config, building its pipeline and a render that reads make a few
objects per source, none in a reference cycle, and keep most of them. With the
collector on, its passes over the growing heap cost about a sixth of a cold
start at 10,000 sources, and more per source the more there are. Held off for
the burst, it finds nothing of ours afterwards (the tests check that a pipeline
dropped leaves no cycle), and its count of allocations makes it run as soon as
the burst ends. A render that reads nothing allocates too little to matter and
does not pay for the switch.
"""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["paused"]


class paused:  # lower case: read as a statement, ``with paused():``
    """``with paused():``: no collection in the block; the collector as it was after it (off stays off)."""

    __slots__ = ("_was_on",)

    def __enter__(self) -> None:
        self._was_on = gc.isenabled()
        gc.disable()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._was_on:
            gc.enable()
