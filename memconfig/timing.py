"""Durations as the load log writes them: milliseconds since a ``time.perf_counter()``, to the microsecond."""

from __future__ import annotations

import time

__all__ = ["ms_since"]


def ms_since(started: float) -> float:
    """Milliseconds since *started* (a ``time.perf_counter()``), rounded to three places.

    Rounded through an integer of microseconds: ``round(x, 3)`` goes through the
    float's decimal digits, three times the cost on a path timed once per source.
    """
    return int((time.perf_counter() - started) * 1_000_000 + 0.5) / 1000
