"""A source's text on its way into the block, and what a processor did to it: cut, escaped, dropped.

A processor returns changed :class:`Section` copies, and may say what it did
(:class:`Processed`): a section taken out (:class:`Drop`), a change to one it
kept (:class:`Note`). Records only, apart from the chain that runs the
processors, so that the stage protocols can name them without importing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from .status import SkipReason

__all__ = ["NO_REASONS", "Drop", "Note", "Processed", "Section"]


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


class Drop(NamedTuple):
    """A section a processor took out of the prompt (or left with no text)."""

    section: Section
    reason: SkipReason
    processor: str
    detail: str = ""


class Note(NamedTuple):
    """Something a processor did to a section it kept (a cut, an escape): logged as *event*, with *fields*.

    *event* is one of :data:`memconfig.events.EVENTS` (``source_truncated``,
    ``content_escaped``); *section* is the section as it came in.
    """

    section: Section
    event: str
    fields: Mapping[str, Any]
    processor: str = ""


#: A :class:`Processed` that gives no reasons: every section it left out is ``dropped``.
NO_REASONS: Mapping[str, tuple[SkipReason, str]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Processed:
    """What a processor may return instead of bare sections, to say what it did.

    Attributes:
        sections: the sections that go on, as a bare return would be.
        notes: what it did to sections it kept.
        reasons: for a section it left out, by key, why (``reason``, ``detail``);
            one not listed is ``dropped``.
    """

    sections: Sequence[Section]
    notes: Sequence[Note] = ()
    reasons: Mapping[str, tuple[SkipReason, str]] = field(default_factory=lambda: NO_REASONS)
