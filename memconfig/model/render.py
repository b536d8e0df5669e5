"""What a render is made of and makes: the cache's snapshot, the formatted block, a record per source, the render.

A :class:`Snapshot` (the cache's consistent set of contents) becomes a
:class:`Block` and a :class:`Render`, which accounts for every source with a
:class:`SourceRecord`. Records no render looks at are made on first use
(:class:`Lazy`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from .load import LoadResult
from .sections import Section
from .status import Failure, SkipReason, Status

__all__ = ["Block", "Lazy", "Records", "Render", "Snapshot", "SourceRecord"]

T = TypeVar("T")


class Lazy(Generic[T]):
    """A value made on first use and kept: what most renders never look at costs them nothing.

    Two threads asking at once may both make it; they make the same value.
    """

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], T]) -> None:
        self._make: Callable[[], T] | None = make
        self._value: T | None = None

    def __call__(self) -> T:
        make = self._make
        if make is not None:
            self._value = make()
            self._make = None
        return self._value  # type: ignore[return-value]


class SourceRecord(NamedTuple):
    """What one render did with one source: declared ones and expansion children, skipped ones too.

    A named tuple: immutable, and cheap enough to make one per source per render.

    Attributes:
        chars: the characters it takes in the block (0 when not in it).
        sha256: the hash of its content as read; for an expanded source, of its list of children.
        notes: the events processors logged about it: while keeping it (``source_truncated``,
            ``content_escaped``), or taking it out (``source_dropped``).
    """

    name: str
    source: str
    url: str
    status: Status
    reason: SkipReason | None = None
    detail: str = ""
    chars: int = 0
    sha256: str | None = None
    parent: str | None = None
    via: str | None = None
    notes: tuple[str, ...] = ()

    def sized(self, chars: int) -> SourceRecord:
        """This record with *chars* characters in the block: ``_replace(chars=chars)``, several times cheaper."""
        return SourceRecord._make((*self[:6], chars, *self[7:]))


Records = Callable[[Mapping[str, int]], tuple[SourceRecord, ...]]
"""Every source's record, given each section's characters in the block by key (the records' ``chars``)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One consistent set of contents, in prompt order, plus what the pass did.

    Attributes:
        sections: the contents in the prompt, one section per source.
        digest: the identity of what the snapshot shows: sections and records.
        records: every source, loaded or not, as the cache sees it, given each section's
            characters in the block by key (a record's ``chars``): called once per block.
        results: what this pass read (empty when nothing was read).
        stats: what the cache did, for ``prompt_built``.
        failures: sources the render needed and did not get.
        taken: the sources this pass put into the state (each logged as ``source_loaded``).
    """

    sections: tuple[Section, ...]
    digest: str
    records: Records = field(default=lambda chars: ())
    results: tuple[LoadResult, ...] = ()
    stats: Mapping[str, int] = field(default_factory=dict)
    failures: tuple[Failure, ...] = ()
    taken: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Block:
    """The formatted memory block.

    ``chars``: each section's characters in the block, by key, as laid out (a
    formatter that leaves it empty has them counted from the sections' text).
    """

    text: str
    sha256: str
    chars: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False)
class RenderCounts(Mapping[str, int]):
    """What a render counted, as logged in its ``prompt_built``; read as a mapping too (``counts["loaded"]``).

    Attributes:
        sources_loaded: sections in the block.
        sources_skipped: sources out of it (left out by the cache, or taken out by a processor).
        cache_hits: files in the block as the state held them.
        revalidated: sources checked against their known version.
        refreshed, stale, loaded, skipped: files this render read anew, kept from before a
            failure, put in for the first time, and found out of the prompt.
        dropped: sections processors took out (a rule that does not apply is none).
        truncated, escaped: sections a budget cut, and whose closing tags were escaped.
    """

    sources_loaded: int = 0
    sources_skipped: int = 0
    cache_hits: int = 0
    revalidated: int = 0
    refreshed: int = 0
    stale: int = 0
    loaded: int = 0
    skipped: int = 0
    dropped: int = 0
    truncated: int = 0
    escaped: int = 0

    def __getitem__(self, key: str) -> int:
        if key not in _COUNT_NAMES:
            raise KeyError(key)
        return int(getattr(self, key))

    def __iter__(self) -> Iterator[str]:
        return iter(_COUNT_NAMES)

    def __len__(self) -> int:
        return len(_COUNT_NAMES)


_COUNT_NAMES: tuple[str, ...] = tuple(RenderCounts.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class Render:
    """The result of one render: the memory block and an account of every source.

    Attributes:
        text: the memory block.
        sha256: the SHA-256 of *text* as UTF-8, for prompt-cache keys.
        render_id: the id every event of this render carries.
        counts: the counts logged in ``prompt_built`` (:class:`RenderCounts`).
        memo: the block was served from the memo (no processing, no formatting).
    """

    text: str
    sha256: str
    render_id: str
    _records: Lazy[tuple[SourceRecord, ...]] = field(default_factory=lambda: Lazy(tuple), repr=False, compare=False)
    counts: RenderCounts = field(default_factory=RenderCounts)
    memo: bool = False

    @property
    def sources(self) -> tuple[SourceRecord, ...]:
        """One record per declared source and per expansion child, in prompt order, skipped ones included.

        Made on first use, once per distinct block: renders that never look pay nothing for it.
        """
        return self._records()
