"""The newest good copy of each source this process holds, shared by every state a cache serves.

It lets a state that lacks a version another state already read take it
without reading again, and keeps a source in the prompt (stale) when a
refresh fails. Children of an expanded source are forgotten when they
vanish from its expansion, so churn in a glob does not grow the process.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from .meta import Stamp

__all__ = ["Known", "LatestCopies"]


class Known(NamedTuple):
    """A good version of a source held by this process (a named tuple: one is made per source read)."""

    fingerprint: str | None
    sha256: str
    content: str
    bytes: int
    read: Stamp  # the pass that read it


@dataclass(slots=True)
class LatestCopies:
    """Newest copies by source key, and the children each expanded source had last. Guarded by the cache's lock."""

    copies: dict[str, Known] = field(default_factory=dict)
    children: dict[str, frozenset[str]] = field(default_factory=dict)

    def expanded(self, parent: str, children: Iterable[str]) -> None:
        """Record *parent*'s children now; copies of the ones it no longer has are dropped."""
        now = frozenset(children)
        for gone in self.children.get(parent, frozenset()) - now:
            self.copies.pop(gone, None)
        if now:
            self.children[parent] = now
        else:
            self.children.pop(parent, None)
