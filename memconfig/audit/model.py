"""What an audit finds: plain dataclasses, the one thing every output (table, JSON, HTML) is made from.

The pass that fills them (:mod:`memconfig.audit.aggregate`) reads each line
once and keeps only what is listed here, each list bounded, so a year of logs
costs what a week does. Times are the events' own ``timestamp`` strings
(ISO 8601, UTC, ``…Z``), which sort as they read; ``None`` where a line had none.
"""

from __future__ import annotations

import enum
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from ..model import Status, source_label

__all__ = [
    "IN_PROMPT",
    "MAX_CHANGES",
    "MAX_RENDERS",
    "Audit",
    "InputSummary",
    "LineCounts",
    "PromptAt",
    "RenderFailure",
    "RenderSummary",
    "SourceAt",
    "SourceState",
    "SourceSummary",
    "VersionChange",
]

#: The most renders an audit lists (the latest); the rest are counted in :attr:`Audit.renders_total`.
MAX_RENDERS = 10_000
#: The most version changes kept per source (the latest); :attr:`SourceSummary.versions` counts them all.
MAX_CHANGES = 100


class SourceState(enum.StrEnum):
    """A source's state in an audit, as its last event (or its block's manifest) left it.

    Where a render's :class:`~memconfig.model.Status` says the same, the value
    is that status's (the two cannot drift); ``dropped`` and ``removed`` are
    the audit's own: a render's record calls a dropped source ``skipped``, and
    no render records a source it no longer has. A ``str`` subclass, written
    as its value in tables, JSON and the HTML report.
    """

    LOADED = Status.LOADED.value
    """In the prompt: read, or unchanged since it was."""
    SKIPPED = Status.SKIPPED.value
    """Not in the prompt; the reason says why."""
    STALE = Status.STALE.value
    """A refresh failed; its last good copy is in the prompt."""
    DROPPED = "dropped"
    """Read, then taken out by a processor (its ``source_dropped``)."""
    REMOVED = "removed"
    """In its pipeline's previous manifest and in none of its next: no longer a source of its renders."""

    @property
    def in_prompt(self) -> bool:
        """Whether a source in this state has content in the prompt (its own, or its last good copy)."""
        return self in IN_PROMPT


#: The states of a source with content in the prompt.
IN_PROMPT = frozenset({SourceState.LOADED, SourceState.STALE})


#: The states by name, as ``audit --status`` takes them.
STATUSES = tuple(state.value for state in SourceState)


@dataclass(slots=True)
class VersionChange:
    """A source's content changed (or was first seen): when, to what, and how large it became."""

    time: str | None
    sha256: str
    chars: int | None
    bytes: int | None
    render_id: str | None


@dataclass(slots=True)
class SourceSummary:
    """One source across every render read: what happened to it, how often, and since when."""

    source: str
    """The source's key (``source`` in its events): a config source, or a glob's child."""
    name: str = ""
    url: str = ""
    """As logged: credentials already masked."""
    renders: int = 0
    """Renders whose prompt held it (loaded, or stale with its last good copy) when they finished."""
    loads: int = 0
    """``source_loaded`` events: times it was read and put in (a cached, unchanged turn logs none)."""
    skips: Counter[str] = field(default_factory=Counter)
    """``source_skipped`` events by reason."""
    last_status: SourceState | None = None
    """What its last event (or its block's manifest) said."""
    last_reason: str | None = None
    last_detail: str = ""
    last_seen: str | None = None
    status_since: str | None = None
    """When its current status (and reason) began: "skipped, ``not_found``, since Tuesday 09:12"."""
    required: bool | None = None
    sha256: str | None = None
    """Its content's hash now (the last loaded or stale copy)."""
    sha256_changed: str | None = None
    """When its hash last changed (or was first seen)."""
    versions: int = 0
    """Distinct hashes seen."""
    chars: int | None = None
    """Its size now, in characters."""
    bytes: int | None = None
    prompt_chars: int | None = None
    """Characters it took in the prompt after processing: :attr:`chars` at its last load, less a cut
    (``source_truncated``'s ``chars_after``) after it; 0 when dropped or skipped since."""
    first_chars: int | None = None
    """Its size when first seen in the logs read: with :attr:`chars`, the trend."""
    changes: deque[VersionChange] = field(default_factory=lambda: deque(maxlen=MAX_CHANGES))
    """Its latest version changes, oldest first (a size series for a chart)."""
    cache: Counter[str] = field(default_factory=Counter)
    """``source_loaded`` by ``cache`` outcome: ``miss``, ``refreshed``, ``hit``."""
    stale: int = 0
    retries: int = 0
    truncations: int = 0
    drops: Counter[str] = field(default_factory=Counter)
    """``source_dropped`` by reason."""
    escapes: int = 0

    @property
    def label(self) -> str:
        """How a report names it (see :func:`source_label`)."""
        return source_label(self.name, self.source, self.url)

    @property
    def trend(self) -> int | None:
        """Characters gained (or lost, negative) since first seen."""
        if self.chars is None or self.first_chars is None:
            return None
        return self.chars - self.first_chars


@dataclass(slots=True)
class RenderFailure:
    """One source a failed render needed and did not get."""

    source: str
    reason: str
    detail: str = ""
    name: str = ""
    """The name the config gave it (a log from before names were logged here: empty)."""
    url: str = ""

    @property
    def label(self) -> str:
        """How a report names it: by its name, the URL beside it where they differ (else its key)."""
        return source_label(self.name or self.source, self.source, self.url)


@dataclass(slots=True)
class RenderSummary:
    """One render, its events tied together by ``render_id``."""

    render_id: str
    process: str
    """The render id's process part: renders of one process share their sources' state."""
    time: str | None = None
    """When it finished (its ``prompt_built`` or ``prompt_failed``)."""
    started: str | None = None
    """Its first event's time."""
    host: str | None = None
    pid: int | None = None
    failed: bool = False
    finished: bool = False
    """False for a render whose last event was never logged (a crash, or a log cut short)."""
    schema: int | None = None
    sha256: str | None = None
    """The block's hash (``prompt_built``): a prompt-cache key."""
    chars: int | None = None
    duration_ms: float | None = None
    sources_loaded: int = 0
    sources_skipped: int = 0
    loaded: int = 0
    """Sources logged as loaded by this render (read and new or changed)."""
    skipped: int = 0
    """Sources logged as skipped by this render."""
    stale: int = 0
    dropped: int = 0
    truncated: int = 0
    escaped: int = 0
    cache_hits: int = 0
    failures: list[RenderFailure] = field(default_factory=list)
    events: int = 0


@dataclass(slots=True)
class SourceAt:
    """A source as a given render's prompt had it."""

    source: str
    name: str
    url: str
    status: SourceState
    reason: str | None
    sha256: str | None
    chars: int | None
    since: str | None
    """When this version was first seen (in the prompt), or when its current skip or drop began (out of it)."""

    @property
    def in_prompt(self) -> bool:
        return self.status in IN_PROMPT  # (a status masked after the pass is a plain str: answered all the same)

    @property
    def label(self) -> str:
        """How a report names it (see :func:`source_label`)."""
        return source_label(self.name, self.source, self.url)


@dataclass(slots=True)
class PromptAt:
    """``--at TIME``: the last render finished at or before *at*, and each source as it had it."""

    at: str
    render: RenderSummary | None
    sources: list[SourceAt] = field(default_factory=list)


@dataclass(slots=True)
class LineCounts:
    """Every line read, by what it was: nothing is dropped uncounted."""

    lines: int = 0
    events: int = 0
    """memconfig events (an ``event`` from :data:`memconfig.events.EVENTS` and a ``render_id``)."""
    filtered: int = 0
    """Events outside ``--since`` / ``--until``."""
    blank: int = 0
    foreign: Counter[str] = field(default_factory=Counter)
    """Not memconfig's: ``text`` (not JSON), ``json`` (another program's objects). Counted, never shown."""
    malformed: Counter[str] = field(default_factory=Counter)
    """``truncated`` (cut-off JSON), ``binary``, ``not_an_object``, ``too_long``, ``bad_field``."""
    newer_schema: int = 0
    """Events of a newer schema than this reader's: read for the fields it knows."""
    unknown_events: Counter[str] = field(default_factory=Counter)
    """memconfig-shaped lines (a ``render_id``) naming an event this reader does not know (past 50 names,
    under ``(other)``)."""
    repeated: int = 0
    """Events of a render already read whole: the same log given twice, or a copy of it (counted once)."""
    not_itemised: Counter[str] = field(default_factory=Counter)
    """Events read and counted in their render, but past a bound of the audit's memory: ``sources`` for
    the events of sources beyond the first 10,000."""


@dataclass(slots=True)
class InputSummary:
    """One log read: its name (credentials masked), its lines, or why it could not be read."""

    name: str
    lines: int = 0
    events: int = 0
    error: str | None = None


@dataclass(slots=True)
class Audit:
    """Everything an audit found."""

    schema: int
    """The event schema version this reader knows."""
    inputs: list[InputSummary] = field(default_factory=list)
    lines: LineCounts = field(default_factory=LineCounts)
    sources: list[SourceSummary] = field(default_factory=list)
    """Every source seen (after ``--source`` / ``--reason`` / ``--status``), by key."""
    renders: list[RenderSummary] = field(default_factory=list)
    """The latest :data:`MAX_RENDERS` renders, oldest first."""
    renders_total: int = 0
    renders_failed: int = 0
    first_time: str | None = None
    last_time: str | None = None
    at: PromptAt | None = None
    filters: dict[str, Any] = field(default_factory=dict)
    """The filters applied, as given."""
