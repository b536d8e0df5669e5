"""Counts in words, for every message and report that counts something: ``1 render``, ``2 renders``."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """*n* (thousands separated) and *noun*, in the plural unless *n* is 1: ``1 source``, ``1,204 lines``.

    The plural is *plural* when given, else *noun* with ``es`` after s, x, ch
    or sh (``matches``) and ``s`` after anything else.
    """
    if n == 1:
        return f"1 {noun}"
    return f"{n:,} {plural or noun + ('es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's')}"
