"""The records a render is made of, from what was read to what was shown: one home, frozen and typed.

Every part that reports a render — its events, ``explain``, ``audit``, the
errors — reads these records; none keeps a picture of its own. This module
imports nothing else of memconfig, so every stage can use it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, NamedTuple, TypeVar

__all__ = ["Failure", "Lazy", "Render", "Section", "SkipReason", "SourceRecord", "Status"]

class SkipReason(enum.StrEnum):
    """Why a source is left out of the prompt: the fixed vocabulary of ``source_skipped``.

    A ``str`` subclass: a reason compares equal to its value (``"not_found"``)
    and is written as that value in every log line.
    """

    NOT_FOUND = "not_found"
    IS_DIRECTORY = "is_directory"
    PERMISSION_DENIED = "permission_denied"
    DECODE_ERROR = "decode_error"
    TOO_LARGE = "too_large"
    EMPTY = "empty"
    TIMEOUT = "timeout"
    REMOTE_ERROR = "remote_error"
    ERROR = "error"
    DROPPED = "dropped"
    """Taken out by a processor."""
    BINARY = "binary"
    """Holds NUL bytes: not text."""
    NOT_REGULAR_FILE = "not_regular_file"
    """A FIFO, socket or device: never opened for reading (it could block or never end)."""
    SYMLINK_LOOP = "symlink_loop"
    CHANGED_DURING_READ = "changed_during_read"
    """Kept changing while it was read: no consistent copy could be had."""
    DUPLICATE = "duplicate"
    """The same file as an earlier source; it goes in once, at the first position."""
    OUTSIDE_ROOT = "outside_root"
    """A local file outside ``loader.allowed_roots`` (symlinks resolved), or an import outside the project root."""
    IMPORT_CYCLE = "import_cycle"
    """An ``@path`` import of a file already on the current import chain."""
    IMPORT_DEPTH = "import_depth"
    """An ``@path`` import in a file at ``imports.max_depth``: left as text."""
    PROTOCOL_NOT_ALLOWED = "protocol_not_allowed"
    """A protocol not in ``loader.allowed_protocols``."""
    HOST_NOT_ALLOWED = "host_not_allowed"
    """A host (or a redirect's target) not in ``loader.allowed_hosts``."""
    OVER_BUDGET = "over_budget"
    """Left out by a budget: ``formatter.budget`` (or the source's own limit) had no room for any of it."""
    NOT_APPLICABLE = "not_applicable"
    """A rule file (``rules: frontmatter``) whose frontmatter does not apply to this render's paths in play."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A source that had to be in the prompt and is not: which (its key and its name), why, and the detail."""

    source: str
    reason: SkipReason
    detail: str = ""
    name: str = ""
    """The source's name, where the config gave one; empty: its key is its name."""
    url: str = ""
    """Where it is read from, credentials masked."""

    @property
    def label(self) -> str:
        """How messages name the source: by the name the user gave, the URL beside it (else the key alone)."""
        if self.name and self.name != self.source:
            return f"{self.name!r} ({self.url or self.source})"
        return repr(self.source)

    def __str__(self) -> str:
        text = f"{self.label}: {self.reason}"
        return f"{text} ({self.detail})" if self.detail else text


class Status(enum.StrEnum):
    """Where a source stands after a load pass or a render: the one vocabulary of every record and event.

    A ``str`` subclass, as :class:`SkipReason` is: ``Status.LOADED == "loaded"``.
    """

    LOADED = "loaded"
    """Read, and its content is in the prompt."""
    UNCHANGED = "unchanged"
    """A load pass found it as it was: the copy kept is still current (a render's record says ``loaded``)."""
    SKIPPED = "skipped"
    """Not in the prompt; its record's ``reason`` says why."""
    STALE = "stale"
    """A refresh failed; the last good copy is in the prompt."""

    @property
    def in_prompt(self) -> bool:
        """Whether a source with this status has content in the prompt."""
        return self is not Status.SKIPPED


T = TypeVar("T")



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
