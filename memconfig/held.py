"""What a stage made per source on its last call, for the next call to take again: a changed turn redoes what changed.

A stage keeps a :class:`Held` and, on each call, looks up each source's key:
where the entry was made from the very input it is given now (the same object,
checked with ``is``), it takes the output again instead of making it anew.
The inputs it is handed are frozen and, for a source that did not change, the
same objects from turn to turn (the cache gives unchanged sections again), so
an identity check says all an equality check would, at the cost of one lookup.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["Held"]

T = TypeVar("T")


class Held(Generic[T]):
    """The outputs of a stage's last call, by source key.

    ``last`` is replaced whole at the end of a call (one assignment), never
    edited in place: a render in another thread reads the old dict or the new
    one, and each is complete. Holding no more than the last call's sources, it
    stays as large as the config.

    Nothing is kept from the first call: a pipeline's first render is often its
    only one (a ``memconfig render``), and keeping costs it an object per
    source. A stage asks :meth:`start` for the dict to fill (``None`` on the first
    call: keep nothing) and hands it to :meth:`finish`.
    """

    __slots__ = ("last", "warm")

    def __init__(self) -> None:
        self.last: dict[str, T] = {}
        self.warm = False

    def start(self) -> dict[str, T] | None:
        """The dict this call fills with what it made, by key; ``None`` on the first call."""
        if self.warm:
            return {}
        self.warm = True
        return None

    def finish(self, made: dict[str, T] | None) -> None:
        """Keep what this call made (nothing, on the first call) for the next one."""
        if made is not None:
            self.last = made
