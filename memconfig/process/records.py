"""What a processor says it did: a section taken out (:class:`Drop`), a change to one it kept (:class:`Note`).

Records only, apart from the chain that runs the processors, so that the
stage protocols (:mod:`memconfig.stages`) can name them without importing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from ..failures import SkipReason
from ..render import Section

__all__ = ["Drop", "Note", "Processed"]


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
