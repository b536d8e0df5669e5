"""What a render produces, and what flows from the cache through the processors to the formatter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, NamedTuple

from .failures import SkipReason

__all__ = ["Render", "Section", "SourceRecord", "Status"]

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
    """

    source: str
    name: str
    url: str
    text: str
    sha256: str = ""
    parent: str | None = None
    via: str | None = None

    def with_text(self, text: str) -> Section:
        """This section with other text: ``dataclasses.replace(section, text=text)``, several times cheaper."""
        return Section(self.source, self.name, self.url, text, self.sha256, self.parent, self.via)


class SourceRecord(NamedTuple):
    """What one render did with one source: declared ones and expansion children, skipped ones too.

    A named tuple: immutable, and cheap enough to make one per source per render.

    Attributes:
        chars: the characters it takes in the block (0 when not in it).
        sha256: the hash of its content as read; for an expanded source, of its list of children.
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


@dataclass(frozen=True, slots=True)
class Render:
    """The result of one render: the memory block and an account of every source.

    Attributes:
        text: the memory block.
        sha256: the SHA-256 of *text* as UTF-8, for prompt-cache keys.
        render_id: the id every event of this render carries.
        sources: one record per declared source and per expansion child, in prompt order.
        counts: the counts logged in ``prompt_built`` (``sources_loaded``, ``sources_skipped``,
            ``cache_hits``, ``revalidated``, ``refreshed``, ``stale``, ``loaded``, ``skipped``, ``dropped``).
        memo: the block was served from the memo (no processing, no formatting).
    """

    text: str
    sha256: str
    render_id: str
    sources: tuple[SourceRecord, ...] = ()
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    memo: bool = False
