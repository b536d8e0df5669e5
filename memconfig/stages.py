"""The data that flows between the four stages, and the contract of each stage.

loader → state cache → formatter → appender. Each stage is a small object with
one verb; these ``Protocol``s let tests and users pass their own.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .sources import Source

__all__ = [
    "SKIP_REASONS",
    "Appender",
    "Block",
    "Entry",
    "Formatter",
    "LoadRequest",
    "LoadResult",
    "Loader",
    "Snapshot",
    "StateCache",
]

#: Why a source is not in the prompt; the fixed vocabulary of ``source_skipped``.
SKIP_REASONS = frozenset(
    {
        "not_found",
        "is_directory",
        "permission_denied",
        "decode_error",
        "too_large",
        "empty",
        "error",
        "timeout",
        "remote_error",
    }
)

Status = Literal["loaded", "unchanged", "skipped", "stale"]


@dataclass(frozen=True, slots=True)
class LoadRequest:
    """Read *source*; if its fingerprint or hash still equals what is known, say so instead.

    For a glob, *children* holds what is known of each match, by key.
    """

    source: Source
    fingerprint: str | None = None
    sha256: str | None = None
    children: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)


@dataclass(slots=True)
class LoadResult:
    """What one load pass found for one source (or one match of a glob)."""

    source: Source
    status: Status
    content: str | None = None
    reason: str | None = None
    detail: str = ""
    bytes: int = 0
    sha256: str | None = None
    fingerprint: str | None = None
    duration_ms: float = 0.0
    fatal: bool = False  # a decode error under ``on_decode_error: fail``

    @property
    def ok(self) -> bool:
        """Whether the source's content is in the prompt after this pass."""
        return self.status != "skipped"


@dataclass(frozen=True, slots=True)
class Entry:
    """One source's content as the formatter sees it."""

    key: str
    name: str
    content: str
    sha256: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One consistent set of contents, in config order, plus what the pass did."""

    entries: tuple[Entry, ...]
    digest: str
    results: tuple[LoadResult, ...] = ()
    stats: dict[str, int] = field(default_factory=dict)
    failures: tuple[tuple[str, str, str], ...] = ()  # (source, reason, detail) that must fail the render
    left_out: int = 0  # sources known to be out of the prompt, and logged as skipped when they were


@dataclass(frozen=True, slots=True)
class Block:
    """The formatted memory block."""

    text: str
    sha256: str
    memo: bool = False


@runtime_checkable
class Loader(Protocol):
    """Reads sources through fsspec: one result per source, or per match of a glob."""

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]: ...

    async def aload(self, requests: Sequence[LoadRequest]) -> list[LoadResult]: ...


@runtime_checkable
class StateCache(Protocol):
    """Keeps contents in the caller's state and decides what must be (re)loaded."""

    def resolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Snapshot: ...

    async def aresolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Snapshot: ...


@runtime_checkable
class Formatter(Protocol):
    """Turns a snapshot's entries into one memory block."""

    def format(self, snapshot: Snapshot) -> Block: ...

    def is_blank(self, text: str) -> bool: ...


@runtime_checkable
class Appender(Protocol):
    """Adds the memory block to the caller's system prompt."""

    def append(self, system: str | None, block: Block) -> str: ...
