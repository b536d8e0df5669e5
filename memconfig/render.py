"""What a render produces, and what flows from the cache through the processors to the formatter."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, Literal, NamedTuple, TypeVar

from .failures import SkipReason

__all__ = ["Lazy", "Render", "Section", "SourceRecord", "Status"]

T = TypeVar("T")

Status = Literal["loaded", "skipped", "stale"]


@dataclass(frozen=True, slots=True)
class Section:
    """One source's text on its way into the block; processors return changed copies (``dataclasses.replace``).

    Attributes:
        source: the source's key (the location as written, credentials masked): ``{path}``.
        name: its display name: ``{name}``.
        url: where it was read from, credentials masked.
        text: what goes into the block.
        sha256: the hash of the source's content as read (not of *text*).
        parent: the key of the source it was expanded from, or ``None``.
        via: the expander that found it (``"glob"``), or ``None``.
        read_bytes: the file's size in bytes as read, while *text* is still the text read
            (``None`` once a processor changed it: :meth:`with_text` drops it). A byte
            budget spends these, as Codex spends raw bytes: an invalid byte the loader
            replaced by U+FFFD costs 1 byte, not U+FFFD's 3.
    """

    source: str
    name: str
    url: str
    text: str
    sha256: str = ""
    parent: str | None = None
    via: str | None = None
    read_bytes: int | None = None

    def with_text(self, text: str) -> Section:
        """This section with other text: ``dataclasses.replace(section, text=text)``, several times cheaper."""
        return Section(self.source, self.name, self.url, text, self.sha256, self.parent, self.via)


class SourceRecord(NamedTuple):
    """What one render did with one source: declared ones and expansion children, skipped ones too.

    A named tuple: immutable, and cheap enough to make one per source per render.

    Attributes:
        chars: the characters it takes in the block (0 when not in it).
        sha256: the hash of its content as read; for an expanded source, of its list of children.
        notes: the events processors logged about it while keeping it (``source_truncated``, ``content_escaped``).
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


@dataclass(frozen=True, slots=True)
class Render:
    """The result of one render: the memory block and an account of every source.

    Attributes:
        text: the memory block.
        sha256: the SHA-256 of *text* as UTF-8, for prompt-cache keys.
        render_id: the id every event of this render carries.
        counts: the counts logged in ``prompt_built`` (``sources_loaded``, ``sources_skipped``,
            ``cache_hits``, ``revalidated``, ``refreshed``, ``stale``, ``loaded``, ``skipped``, ``dropped``,
            ``truncated``, ``escaped``).
        memo: the block was served from the memo (no processing, no formatting).
    """

    text: str
    sha256: str
    render_id: str
    _records: Lazy[tuple[SourceRecord, ...]] = field(default_factory=lambda: Lazy(tuple), repr=False, compare=False)
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    memo: bool = False

    @property
    def sources(self) -> tuple[SourceRecord, ...]:
        """One record per declared source and per expansion child, in prompt order, skipped ones included.

        Made on first use, once per distinct block: renders that never look pay nothing for it.
        """
        return self._records()
