"""What a load pass is asked and what it finds: one request and one result per source, and a stat-only check.

The loader answers each :class:`LoadRequest` with a :class:`LoadResult`; a
revalidation checks a local file's :class:`LocalCheck` with one ``stat``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from .status import SkipReason, Status

if TYPE_CHECKING:
    from ..sources.source import Source

__all__ = ["LoadRequest", "LoadResult", "LocalCheck"]

_NONE_KNOWN: Mapping[str, tuple[str | None, str | None]] = MappingProxyType({})


class LoadRequest(NamedTuple):
    """Read *source*; if its fingerprint or hash still equals what is known, say so instead.

    For an expandable source (a glob), *children* holds what is known of each child, by key.
    A named tuple: a render asks one per source.
    """

    source: Source
    fingerprint: str | None = None
    sha256: str | None = None
    children: Mapping[str, tuple[str | None, str | None]] = _NONE_KNOWN


@dataclass(slots=True)
class LoadResult:
    """What one load pass found for one source (or one child of an expanded source)."""

    source: Source
    status: Status
    content: str | None = None
    reason: SkipReason | None = None
    detail: str = ""
    bytes: int = 0
    sha256: str | None = None
    fingerprint: str | None = None
    duration_ms: float = 0.0
    fatal: bool = False  # a decode error under ``on_decode_error: fail``
    read_at: float | None = None
    """``time.perf_counter()`` when the read began (its successful attempt's). Of two reads of one
    source in one process, the one begun later holds the newer version, whichever pass asked;
    ``None``: the time the pass began."""
    place: str | None = None
    """Which file was read, in a form equal for every path to it (a local file's device and inode), set
    by a loader that knows it: two sources whose results share a place are one file, the later a repeat.
    ``None``: the source's URL, normalised, says where it was read."""

    @property
    def ok(self) -> bool:
        """Whether the source's content is in the prompt after this pass."""
        return self.status != Status.SKIPPED


class LocalCheck(NamedTuple):
    """What a revalidation expects of one local file, to be checked with one ``stat``."""

    path: str
    fingerprint: str | None
    """The fingerprint of the version in the prompt, if it is in."""
    out: SkipReason | None = None
    """Why it is out of the prompt, if it is."""
    out_fingerprint: str | None = None
    """The fingerprint it had when it went out for its content."""
