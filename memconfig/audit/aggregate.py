"""The one pass: every line of every log read once, folded into the :mod:`~memconfig.audit.model`.

Memory is bounded whatever the logs' length: per source a summary (its last
:data:`~memconfig.audit.model.MAX_CHANGES` versions), the last
:data:`~memconfig.audit.model.MAX_RENDERS` renders, the renders still open
(at most :data:`MAX_OPEN_RENDERS`), and the sources' state in the last
:data:`MAX_PROCESSES` processes. A process's renders share that state because
a render logs only what changed: a source unchanged since the last turn, or
still out for the same reason, is in no event of the turn, yet in its prompt.

The loop is written for speed (a bare ``orjson.loads`` loop is the yardstick):
one dispatch on the event name, time filters compared as text, and the
matching of ``--source`` patterns remembered per source. Most renders are
unchanged turns, one ``prompt_built`` each, and most are never listed: such a
render is counted without a record, and kept as its line (:meth:`Aggregator._one_line`).
Every process logs its own manifest of a block: a manifest's entries read
before are taken again, and a process whose sources are already as listed
is not walked again (:meth:`Aggregator._unchanged`).
"""

from __future__ import annotations

import fnmatch
import itertools
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import orjson

from ..collector import paused
from ..log_schema import SCHEMA_VERSION
from . import lines as kinds
from .inputs import MAX_LINE_BYTES
from .model import (
    IN_PROMPT,
    MAX_RENDERS,
    Audit,
    InputSummary,
    LineCounts,
    PromptAt,
    RenderFailure,
    RenderSummary,
    SourceAt,
    SourceState,
    SourceSummary,
    VersionChange,
)
from .times import canonical_time

__all__ = ["MAX_OPEN_RENDERS", "MAX_PROCESSES", "Aggregator", "Filters"]

#: Renders begun and not yet finished, at most; the oldest beyond are listed as unfinished.
MAX_OPEN_RENDERS = 10_000
#: Processes whose sources' state is kept (the most recently active).
MAX_PROCESSES = 1_000
#: Distinct hashes remembered per source (to count versions); beyond, each change counts as new.
MAX_HASHES = 10_000
#: Sources itemised; the events of any further source are counted in their renders and in
#: :attr:`~memconfig.audit.model.LineCounts.not_itemised`, not listed.
MAX_SOURCES = 10_000
#: Sources' states kept across all processes; beyond, the least recently active processes are let go.
MAX_PROCESS_ENTRIES = 100_000
#: Hashes remembered across all sources, and version changes kept across all sources (each source keeps
#: at least :data:`MIN_CHANGES` of its own).
MAX_HASHES_KEPT = 100_000
MAX_CHANGES_KEPT = 100_000
MIN_CHANGES = 3
#: Distinct keys of one count (reasons, cache outcomes, unknown event names); the rest go under :data:`OTHER`.
MAX_KEYS = 50
OTHER = "(other)"
#: A failed render's failures kept (the first), each text cut at :data:`MAX_FAILURE_CHARS`.
MAX_FAILURES = 5
MAX_FAILURE_CHARS = 300
#: Render ids of finished renders remembered, so a log read twice (a copy in a bucket) counts once.
MAX_FINISHED_IDS = 100_000
#: The longest values kept: a source key or render id longer makes its line a ``bad_field``; text is cut.
MAX_KEY_CHARS = 2048
MAX_ID_CHARS = 200
MAX_HASH_CHARS = 128
MAX_TEXT_CHARS = 500
MAX_LABEL_CHARS = 100
MAX_HOST_CHARS = 255
#: Manifests kept (each one block's sources, by process and block hash), and their entries in all, at most;
#: beyond, the least recently used go (a render whose manifest went is read from its events, as before manifests).
MAX_MANIFESTS = 1_000
MAX_MANIFEST_ENTRIES = 200_000
#: Manifests' lists of sources whose entries are remembered (by their JSON, each at most so many bytes), to be
#: taken again when another process logs the same block.
MAX_ENTRIES_READ = 100
MAX_ENTRIES_READ_BYTES = 1 << 16
_LISTED = frozenset({SourceState.LOADED, SourceState.STALE, SourceState.SKIPPED})  # the states a manifest gives
#: :attr:`SourceState.LOADED` for the per-line path: a module's global is read in a tenth of an enum's attribute.
_LOADED_STATE = SourceState.LOADED
_REMOVED_DETAIL = "no longer among the sources of its pipeline's renders"


def _text(value: object, limit: int = MAX_TEXT_CHARS) -> str:
    """A logged value as text: a string (cut at *limit*, ending ``…``), a number or flag as written, else a bad field.

    Never ``str()`` of a list or an object: a value nested a thousand deep would not return.
    """
    if value.__class__ is str:
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if value is None:
        return ""
    if value.__class__ in (int, float, bool):
        return str(value)
    raise TypeError("not text")


def _label(value: object) -> str:
    """A reason or an outcome: short text, ``unknown`` when the event had none."""
    return _text(value, MAX_LABEL_CHARS) or "unknown"


def _tally(counter: Counter[str], key: str) -> None:
    """Count *key*, or :data:`OTHER` once *counter* has :data:`MAX_KEYS` keys: a hostile log cannot grow it."""
    if key in counter or len(counter) < MAX_KEYS:
        counter[key] += 1
    else:
        counter[OTHER] += 1


@dataclass(frozen=True, slots=True)
class Filters:
    """What ``--source``, ``--since``, ``--until``, ``--reason``, ``--status`` and ``--at`` ask for.

    Times are in the sortable form of :mod:`~memconfig.audit.times`.
    ``--since`` / ``--until`` bound the events read; the others choose the
    sources (and, for ``--status failed``, the renders) shown.
    """

    sources: tuple[str, ...] = ()
    """Patterns (``fnmatch``) matched against a source's key, name and URL."""
    since: str | None = None
    until: str | None = None
    reasons: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    at: str | None = None

    def as_given(self) -> dict[str, Any]:
        given = {
            "source": list(self.sources),
            "since": self.since,
            "until": self.until,
            "reason": list(self.reasons),
            "status": list(self.statuses),
            "at": self.at,
        }
        return {k: v for k, v in given.items() if v}


class _Process:
    """One process's view of its sources: what its next render's prompt holds, and since which render.

    A source's renders are counted when its record is replaced (and at the
    end), as the renders closed while it was in the prompt: closing a render
    costs the same whatever the number of sources. A process let go (past
    :data:`MAX_PROCESSES` or :data:`MAX_PROCESS_ENTRIES`) while a render of it
    is still open starts again from nothing, if its name is free.
    """

    __slots__ = ("applied", "attached", "changes", "closed", "entered", "in_step", "name", "sources")

    def __init__(self, name: str) -> None:
        self.name = name
        self.sources: dict[str, SourceAt] = {}
        self.applied: _Manifest | None = None  # the manifest its last render had
        self.entered: dict[str, int] = {}  # source: ``closed`` when it went into the prompt
        self.closed = 0  # renders of this process that finished with a prompt
        self.attached = True  # in the aggregator's table of processes (False: let go, its state forgotten)
        self.changes = 0  # its sources' states changed so many times (a state set, or all forgotten)
        # the entries of a manifest its sources' states are all as listed, as of ``changes`` then (see _apply)
        self.in_step: tuple[tuple[_Entry, ...], int] | None = None


#: A render begun and not yet listed is a plain list: :class:`RenderSummary`'s fields in order, then its
#: process. Most renders are never shown (only the latest :data:`MAX_RENDERS` are), and a list costs a
#: tenth of a dataclass to make: the summaries are made at the end, for the renders kept.
_FIELDS = tuple(f.name for f in fields(RenderSummary))
_COUNTS = frozenset(
    {"sources_loaded", "sources_skipped", "loaded", "skipped", "stale", "dropped", "truncated", "escaped"}
    | {"cache_hits", "events"}
)
_TEMPLATE: list[Any] = [
    False if name in ("failed", "finished") else () if name == "failures" else 0 if name in _COUNTS else None
    for name in _FIELDS
]
_at = _FIELDS.index
_ID, _PROCESS_NAME, _TIME, _STARTED = _at("render_id"), _at("process"), _at("time"), _at("started")
_HOST, _PID, _FAILED, _FINISHED, _SCHEMA = _at("host"), _at("pid"), _at("failed"), _at("finished"), _at("schema")
_SHA256, _CHARS, _DURATION = _at("sha256"), _at("chars"), _at("duration_ms")
_SOURCES_LOADED, _SOURCES_SKIPPED = _at("sources_loaded"), _at("sources_skipped")
_LOADED, _SKIPPED, _STALE, _DROPPED = _at("loaded"), _at("skipped"), _at("stale"), _at("dropped")
_TRUNCATED, _ESCAPED, _CACHE_HITS = _at("truncated"), _at("escaped"), _at("cache_hits")
_FAILURES, _EVENTS = _at("failures"), _at("events")
_PROCESS = len(_FIELDS)
_MANIFEST = _PROCESS + 1  # the manifest of the render's block, once its prompt_built names a known one
del _at
_BATCH = 1 << 16  # feed's progress every 65,536 lines
#: The longest line a render is kept as (see Aggregator._one_line; the CLI's ``prompt_built`` is about 500 bytes):
#: a render in a longer one has a record at once, so the renders listed hold 20 MiB of lines at most.
_KEPT_LINE = 2048


def _opened(render_id: str, name: str, time: str | None, event: dict[str, Any]) -> list[Any]:
    """The record of a render begun by *event*, its first (whose host and pid are the render's)."""
    current = _TEMPLATE.copy()
    current[_ID], current[_PROCESS_NAME], current[_STARTED] = render_id, name, time
    host, pid = event.get("host"), event.get("pid")
    if host.__class__ is str:
        current[_HOST] = host if len(host) <= MAX_HOST_CHARS else _text(host, MAX_HOST_CHARS)
    if pid.__class__ is int:
        current[_PID] = pid
    return current


def _closed(current: list[Any], time: str | None, event: dict[str, Any]) -> int | None:
    """What a render's last event (``prompt_built`` or ``prompt_failed``) says of it, in its record; its schema."""
    get = event.get
    schema = get("schema")
    if type(schema) is int:
        current[_SCHEMA] = schema
    else:
        schema = None
    current[_FINISHED] = True
    current[_TIME] = time
    duration, loaded, skipped = get("duration_ms"), get("sources_loaded"), get("sources_skipped")
    current[_DURATION] = duration if duration.__class__ in (int, float) else None
    current[_SOURCES_LOADED] = loaded if loaded.__class__ is int else 0
    current[_SOURCES_SKIPPED] = skipped if skipped.__class__ is int else 0
    if current[_HOST] is None:  # the first event had none (the CLI's lines all have host and pid)
        host, pid = get("host"), get("pid")
        current[_HOST] = _text(host, MAX_HOST_CHARS) if host.__class__ is str else None
        current[_PID] = pid if pid.__class__ is int else None
    return schema


def _built_fields(current: list[Any], event: dict[str, Any]) -> None:
    """What a ``prompt_built`` says of the block, in its render's record."""
    get = event.get
    sha256, chars, hits = get("sha256"), get("chars"), get("cache_hits")
    current[_SHA256] = sha256 if sha256.__class__ is str and len(sha256) <= MAX_HASH_CHARS else None
    current[_CHARS] = chars if chars.__class__ is int else None
    current[_CACHE_HITS] = hits if hits.__class__ is int else 0


def _line_record(line: bytes) -> list[Any]:
    """The record of a render kept as its one line (see :meth:`Aggregator._one_line`), as its events made it."""
    event = orjson.loads(line)
    render_id, time = event["render_id"], canonical_time(event.get("timestamp"))
    current = _opened(render_id, render_id.rpartition("-")[0], time, event)
    current[_EVENTS] = 1
    _closed(current, time, event)
    _built_fields(current, event)
    return current


def _summary(record: list[Any] | bytes) -> RenderSummary:
    """The model's summary of a render's record (or of its one line)."""
    if isinstance(record, bytes):
        record = _line_record(record)
    summary = RenderSummary(*record[:_PROCESS])
    summary.failures = list(summary.failures)
    return summary


class _Entry(NamedTuple):
    """One source of a manifest, as logged (checked, cut to the audit's bounds)."""

    source: str
    name: str
    url: str
    status: SourceState
    reason: str | None
    detail: str
    sha256: str | None
    chars: int | None


class _Manifest(NamedTuple):
    """A block's manifest: the config it was made for, and its sources in prompt order."""

    config: str
    entries: tuple[_Entry, ...]
    keys: frozenset[str]


def _is_expanded(found: Any) -> bool:
    """An entry for a source whose children follow it (a glob): its children are what the prompt holds."""
    return type(found) is dict and found.get("expanded") is True and found.get("status") in IN_PROMPT


def _entry(found: Any) -> _Entry:
    """A manifest's entry, checked: a bad one makes the whole line a ``bad_field``."""
    if type(found) is not dict:
        raise TypeError("entry")
    key, status, chars, sha256 = found.get("source"), found.get("status"), found.get("chars"), found.get("sha256")
    if type(key) is not str or len(key) > MAX_KEY_CHARS or status not in _LISTED:
        raise TypeError("entry")
    if (chars is not None and type(chars) is not int) or (
        sha256 is not None and (type(sha256) is not str or len(sha256) > MAX_HASH_CHARS)
    ):
        raise TypeError("entry")
    reason = found.get("reason")
    state = SourceState(status)
    if state is SourceState.SKIPPED and found.get("dropped") is True:
        state = SourceState.DROPPED  # taken out by a processor, as its source_dropped says
    return _Entry(
        key,
        _text(found.get("name")) or key,
        _text(found.get("url")),
        state,
        None if reason is None else _label(reason),
        _text(found.get("detail")),
        sha256,
        chars,
    )


class Aggregator:
    """Feed it each log's lines (:meth:`feed`), then take the :class:`~memconfig.audit.model.Audit` (:meth:`finish`)."""

    def __init__(self, filters: Filters | None = None) -> None:
        self.filters = filters or Filters()
        self.counts = LineCounts()
        self.inputs: list[InputSummary] = []
        self.sources: dict[str, SourceSummary] = {}
        self._hashes: dict[str, dict[str, str | None]] = {}  # source: {sha256: when first seen}
        self._matches: dict[str, bool] = {}
        # source: (render id, status, reason, since) as they were before a load changed them: a source loaded
        # and then dropped again in the same render stays out since its drop first began
        self._before_load: dict[str, tuple[str | None, SourceState | None, str | None, str | None]] = {}
        self._open: OrderedDict[str, list[Any]] = OrderedDict()
        self._processes: OrderedDict[str, _Process] = OrderedDict()
        self._outside = _Process("")  # events logged outside any render (``render_id`` null)
        # records (or a one-line render's line), made summaries by finish
        self._renders: deque[list[Any] | bytes] = deque(maxlen=MAX_RENDERS)
        self._finished: set[str] = set()  # the latest MAX_FINISHED_IDS finished renders' ids
        self._finished_order: deque[str] = deque()
        self._entries = 0  # sources' states held by the processes
        self._hashes_kept = 0
        self._changes_kept = 0
        self.renders_total = 0
        self.renders_failed = 0
        self.first_time: str | None = None
        self.last_time: str | None = None
        # --at: the best render so far, its process, and each source's state there that the process changed since
        self._at: list[Any] | None = None
        self._at_process: _Process | None = None
        self._at_undo: dict[str, SourceAt | None] = {}
        self._manifests: OrderedDict[tuple[str, str], _Manifest] = OrderedDict()  # (process, block sha256)
        self._manifest_entries = 0
        self._entries_read: dict[bytes, tuple[tuple[_Entry, ...], frozenset[str]]] = {}  # see _read_entries
        self._applied: OrderedDict[str, _Manifest] = OrderedDict()  # config: the manifest its last render had
        self._handlers: dict[str, Callable[[dict[str, Any], str | None, list[Any] | None], None]] = {
            "source_loaded": self._loaded,
            "source_skipped": self._skipped,
            "source_stale": self._stale,
            "source_retried": self._retried,
            "source_dropped": self._dropped,
            "source_truncated": self._truncated,
            "content_escaped": self._escaped,
            "source_expanded": self._expanded,
            "frontmatter_invalid": self._expanded,  # a rule file applied anyway: its own source_loaded says it is in
            "folder_searched": self._expanded,  # a discovery's walk: its children's own events say what came in
            "candidate_passed": self._expanded,
            "search_limited": self._expanded,  # the walk was cut: no source of its own, in or out
            "bytes_replaced": self._expanded,  # the source's own source_loaded says it is in
            "prompt_manifest": self._manifest,
            "prompt_built": self._built,
            "prompt_failed": self._failed,
            "source_unwatched": self._outside_the_prompt,
            "output_written": self._outside_the_prompt,
            "output_unchanged": self._outside_the_prompt,
            "output_failed": self._outside_the_prompt,
        }

    # -- the pass --------------------------------------------------------------------------------

    def feed(
        self,
        pieces: Iterable[bytes],
        summary: InputSummary,
        limit: int = MAX_LINE_BYTES,
        tick: Callable[[InputSummary], None] | None = None,
    ) -> None:
        """Fold every line of one log into the audit; *summary* counts its lines and events.

        *pieces* are its lines as :func:`~memconfig.audit.inputs.line_pieces`
        gives them (for *limit*); *tick* is called with *summary* every
        65,536 lines (its ``lines`` so far), for a progress display.
        """
        if summary not in self.inputs:
            self.inputs.append(summary)
        read = summary.lines
        finished = self._finished
        counts = self.counts
        foreign, malformed = counts.foreign, counts.malformed
        handlers = self._handlers
        open_renders = self._open
        begin, one_line, built = self._begin, self._one_line, self._handlers["prompt_built"]
        one_line_ok = self.filters.at is None  # --at keeps the best render's record as it goes
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        since, until = self.filters.since, self.filters.until
        timed = since is not None or until is not None
        number = 0
        others = self._not_events()  # events are the lines that are not counted as something else
        lines = iter(pieces)
        # a million parsed dicts, none kept in a cycle: the collector would only walk the model, often
        with paused():
            try:
                while True:  # in batches: the progress is told between two, not checked at every line
                    first = number
                    for number, line in enumerate(itertools.islice(lines, _BATCH), number + 1):  # noqa: B007, B020
                        if len(line) > limit and line[-1] != 10:  # limit + 1 bytes, no newline: a line too long begins
                            malformed[kinds.TOO_LONG] += 1
                            for rest in lines:  # its other pieces, not counted as lines, up to its end
                                if rest[-1] == 10:
                                    break
                            continue
                        try:
                            found = loads(line)
                        except decode_error:
                            if not line.strip():
                                counts.blank += 1
                                continue
                            kind = kinds.classify_unparsed(line)
                            if kind == kinds.FOREIGN_TEXT:
                                foreign[kind] += 1
                            else:
                                malformed[kind] += 1
                            continue
                        try:  # one try for the usual case: an object with a known event and a render id
                            handler = handlers.get(found["event"])
                            render_id = found["render_id"]
                        except (KeyError, TypeError):
                            handler = None
                        if handler is None:
                            self._not_an_event(found)
                            continue
                        current = None
                        try:  # whatever a line holds, it is this line's fault only: a bad field, and the next line
                            time = found.get("timestamp")
                            if time is not None and (  # times.is_canonical, inlined
                                time.__class__ is not str
                                or len(time) != 27
                                or time[26] != "Z"
                                or time[4] != "-"
                                or time[10] != "T"
                                or time[19] != "."
                            ):
                                time = canonical_time(time)
                            if timed and time is not None and ((since and time < since) or (until and time > until)):
                                counts.filtered += 1
                                continue
                            if render_id is not None:
                                current = open_renders.get(render_id)
                                if current is None:
                                    if render_id in finished:  # a render already read whole: this log, or a copy, again
                                        counts.repeated += 1
                                        continue
                                    if (  # a render in one line; not when _begin would close the oldest open one
                                        handler is built
                                        and one_line_ok
                                        and len(line) <= _KEPT_LINE
                                        and len(open_renders) < MAX_OPEN_RENDERS
                                        and one_line(render_id, found, time, line)
                                    ):
                                        continue
                                    current = begin(render_id, found, time)
                                current[_EVENTS] += 1  # before the handler: prompt_built closes the render
                            elif time is not None:
                                self._seen(time)
                            handler(found, time, current)
                        except Exception:  # (a hostile value's error, whichever: counted, never the log's end)
                            malformed[kinds.BAD_FIELD] += 1
                            if current is not None:
                                current[_EVENTS] -= 1
                    if number - first < _BATCH:
                        break
                    if tick is not None:
                        summary.lines = read + number
                        tick(summary)
            finally:
                events = number - (self._not_events() - others)
                counts.lines += number
                counts.events += events
                summary.lines = read + number
                summary.events += events

    def _not_events(self) -> int:
        """Lines counted so far as anything but an event."""
        c = self.counts
        others = c.blank + c.filtered + c.repeated + sum(c.foreign.values()) + sum(c.malformed.values())
        return others + sum(c.unknown_events.values())

    def _seen(self, time: str) -> None:
        """Widen the span of the logs read to *time* (a render's start and end, an event outside any render)."""
        if self.first_time is None or time < self.first_time:
            self.first_time = time
        if self.last_time is None or time > self.last_time:
            self.last_time = time

    def _not_an_event(self, found: Any) -> None:
        """Count a parsed line that is no event this reader knows: not an object, another program's, a newer event."""
        counts = self.counts
        if type(found) is not dict:
            counts.malformed[kinds.NOT_AN_OBJECT] += 1
            return
        name = found.get("event")
        if "render_id" in found and type(name) is str:
            _tally(counts.unknown_events, _label(name))
        else:
            counts.foreign[kinds.FOREIGN_JSON] += 1

    # -- what each event says --------------------------------------------------------------------

    def _begin(self, render_id: Any, event: dict[str, Any], time: str | None) -> list[Any]:
        """A render's first event: its summary, tied to its process (the render id's first part)."""
        process = self._process_of(render_id)
        if time is not None:
            self._seen(time)
        current = _opened(render_id, process.name, time, event)
        current.append(process)
        current.append(None)
        self._open[render_id] = current
        if len(self._open) > MAX_OPEN_RENDERS:
            self._close(self._open.popitem(last=False)[1])
        return current

    def _process_of(self, render_id: Any) -> _Process:
        """The process a render is of (its id's first part), now its most recently active."""
        if type(render_id) is not str or len(render_id) > MAX_ID_CHARS:
            raise TypeError("render_id")
        name = render_id.rpartition("-")[0]
        processes = self._processes
        process = processes.get(name)
        if process is None:
            process = processes[name] = _Process(name)
            if len(processes) > MAX_PROCESSES:
                self._let_go()
        else:
            processes.move_to_end(name)
        return process

    def _one_line(self, render_id: Any, event: dict[str, Any], time: str | None, line: bytes) -> bool:
        """A render whose one line is its ``prompt_built`` (an unchanged turn): as :meth:`_begin`, :meth:`_built`
        and :meth:`_close` would take it, but kept as its line, not as a record; False (nothing done) when
        its block's manifest has sources to set, which takes a record.

        Only the latest :data:`MAX_RENDERS` renders are listed: :meth:`finish` makes the record of those
        from their line (:func:`_line_record`), and the others never cost one.
        """
        manifest = self._manifest_named(render_id, event) if self._manifests else None
        if manifest is not None:
            known = self._processes.get(render_id.rpartition("-")[0])
            if known is None or not self._unchanged(known, manifest, self._applied.get(manifest.config)):
                return False
        process = self._process_of(render_id)
        if time is not None:
            self._seen(time)
        self._remember(render_id)
        schema = event.get("schema")
        if schema.__class__ is int and schema > SCHEMA_VERSION:
            self.counts.newer_schema += 1
        if manifest is not None:
            self._manifests.move_to_end((process.name, event["sha256"]))
            self._now_applied(manifest)
            process.applied = manifest
        self._renders.append(line)
        self.renders_total += 1
        process.closed += 1
        return True

    def _let_go(self) -> None:
        """Forget the least recently active processes, their sources' renders counted, till under the bounds."""
        processes = self._processes
        while len(processes) > 1 and (len(processes) > MAX_PROCESSES or self._entries > MAX_PROCESS_ENTRIES):
            process = processes.popitem(last=False)[1]
            self._settle(process)
            self._entries -= len(process.sources)
            if process is self._at_process:  # --at's render had what it holds: kept as it was then, apart
                frozen = _Process(process.name)
                frozen.sources, frozen.attached = self._at_state(), False
                self._at_process, self._at_undo = frozen, {}
            process.sources, process.entered, process.attached = {}, {}, False
            process.changes += 1

    def _source(self, event: dict[str, Any]) -> SourceSummary | None:
        """The summary of *event*'s source, or None when ``--source`` (or :data:`MAX_SOURCES`) leaves it out."""
        key = event["source"]
        summary = self.sources.get(key)  # an unhashable key raises TypeError: a bad field
        if summary is None:
            if type(key) is not str or len(key) > MAX_KEY_CHARS:
                raise TypeError("source")
            name, url = _text(event.get("name")), _text(event.get("url"))
            if not self._wanted(key, name, url):
                return None
            if len(self.sources) >= MAX_SOURCES:
                self.counts.not_itemised["sources"] += 1
                return None
            summary = self.sources[key] = SourceSummary(key, name, url)
        return summary

    def _wanted(self, key: str, name: str, url: str) -> bool:
        patterns = self.filters.sources
        if not patterns:
            return True
        found = self._matches.get(key)
        if found is None:
            found = any(fnmatch.fnmatchcase(n, p) or p == n for p in patterns for n in (key, name, url))
            if len(self._matches) < 2 * MAX_SOURCES:
                self._matches[key] = found
        return found

    @staticmethod
    def _older(summary: SourceSummary, time: str | None) -> bool:
        """Whether an event is older than the source's latest one read: another log (host) read out of time order.

        Such an event still counts (loads, skips, versions, its process's
        state), but does not change what the source's status is now.
        """
        return time is not None and summary.last_seen is not None and time < summary.last_seen

    def _put(
        self,
        current: list[Any] | None,
        summary: SourceSummary,
        status: SourceState,
        reason: str | None,
        detail: str,
        sha256: str | None,
        chars: int | None,
        time: str | None,
    ) -> None:
        """The source's new status, in its summary and in its process's state (kept as is when unchanged)."""
        last = summary.last_seen
        if time is None or last is None or time >= last:  # not older than its latest event (see _older)
            if summary.last_status != status or summary.last_reason != reason:
                before = self._before_load.pop(summary.source, None)
                render_id = current[_ID] if current is not None else None
                again = before is not None and render_id is not None and before[:3] == (render_id, status, reason)
                summary.status_since = before[3] if again and before is not None else time
                summary.last_status, summary.last_reason = status, reason
            summary.last_detail = detail
            summary.last_seen = time
        process = current[_PROCESS] if current is not None else self._outside
        old = process.sources.get(summary.source)
        if old is None or old.status != status or old.sha256 != sha256 or old.reason != reason:
            self._enter(process, summary, old, status, reason, sha256, chars, time)

    def _enter(
        self,
        process: _Process,
        summary: SourceSummary,
        old: SourceAt | None,
        status: SourceState,
        reason: str | None,
        sha256: str | None,
        chars: int | None,
        time: str | None,
    ) -> None:
        """A source's state changed in *process*: a new record, and its renders counted while it was in.

        The record's ``since`` is when its version was first seen (in any log),
        or when its current skip (or drop) began: not when this process said so.
        """
        key = summary.source
        if old is None and not process.attached and not self._attach(process):
            return  # a process let go whose name a newer one has: its state is not kept
        if process is self._at_process and key not in self._at_undo:
            self._at_undo[key] = old  # --at's render had it so: remembered, not the whole state copied
        if old is not None and old.status in IN_PROMPT:
            summary.renders += process.closed - process.entered.pop(key, process.closed)
        held = status in IN_PROMPT
        since = self._hashes.get(key, {}).get(sha256 or "", time) if held else summary.status_since
        process.sources[key] = SourceAt(key, summary.name, summary.url, status, reason, sha256, chars, since)
        process.changes += 1
        if held:
            process.entered[key] = process.closed
        if old is None:
            self._entries += 1
            if self._entries > MAX_PROCESS_ENTRIES:
                self._let_go()

    def _attach(self, process: _Process) -> bool:
        """A process let go logs again (a render of it still open): back in the table, unless its name is taken."""
        if process.name in self._processes:
            return False
        self._processes[process.name] = process
        process.attached = True
        return True

    def _settle(self, process: _Process) -> None:
        """Count the renders each source still in *process*'s prompt was part of (the process is done with)."""
        sources = self.sources
        for key, entered in process.entered.items():
            summary = sources.get(key)
            if summary is not None:
                summary.renders += process.closed - entered
        process.entered = {key: process.closed for key in process.entered}

    def _loaded(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        # The most frequent line of all: written out in full, with no call on the usual path.
        get = event.get
        sha256 = get("sha256")
        chars = get("chars")
        if (chars is not None and chars.__class__ is not int) or (
            sha256 is not None and (sha256.__class__ is not str or len(sha256) > MAX_HASH_CHARS)
        ):
            raise TypeError("chars")  # checked first: a bad line changes nothing
        summary = self.sources.get(event["source"])
        if summary is None:
            summary = self._source(event)
        if current is not None:
            current[_LOADED] += 1
            process = current[_PROCESS]
        else:
            process = self._outside
        if summary is None:
            return
        summary.loads += 1
        cache = get("cache")
        counted = summary.cache
        seen = counted.get(cache)  # type: ignore[arg-type]
        if seen is not None:  # a str: only labels are keys
            counted[cache] = seen + 1  # type: ignore[index]
        else:
            _tally(counted, _label(cache))
        last = summary.last_seen
        if time is not None and last is not None and time < last:  # read out of time order: it is not "now"
            if sha256 is not None and sha256 not in self._hashes.get(summary.source, ()):
                self._changed(summary, sha256, chars, get("bytes"), time, current)
        else:
            summary.prompt_chars = chars
            summary.last_seen = time
            if summary.last_status is not _LOADED_STATE:
                self._before_load[summary.source] = (
                    current[_ID] if current is not None else None,
                    summary.last_status,
                    summary.last_reason,
                    summary.status_since,
                )
                summary.status_since = time
                summary.last_status, summary.last_reason, summary.last_detail = _LOADED_STATE, None, ""
            if sha256 != summary.sha256 or sha256 is None:  # its size changes with its content, and only then
                size = get("bytes")
                if sha256 is not None:
                    self._changed(summary, sha256, chars, size, time, current)
                if summary.first_chars is None:
                    summary.first_chars = chars
                summary.sha256, summary.chars, summary.bytes = sha256, chars, size if size.__class__ is int else None
        old = process.sources.get(summary.source)
        if old is None or old.status is not _LOADED_STATE or old.sha256 != sha256:
            self._enter(process, summary, old, _LOADED_STATE, None, sha256, chars, time)

    def _changed(
        self,
        summary: SourceSummary,
        sha256: str,
        chars: int | None,
        size: Any,
        time: str | None,
        current: list[Any] | None,
    ) -> None:
        seen = self._hashes.setdefault(summary.source, {})
        if sha256 not in seen:
            summary.versions += 1
            if len(seen) < MAX_HASHES and self._hashes_kept < MAX_HASHES_KEPT:
                seen[sha256] = time
                self._hashes_kept += 1
        if summary.sha256_changed is None or time is None or time > summary.sha256_changed:
            summary.sha256_changed = time
        changes = summary.changes
        if len(changes) == changes.maxlen:
            pass  # the deque lets its oldest go
        elif self._changes_kept >= MAX_CHANGES_KEPT and len(changes) >= MIN_CHANGES:
            changes.popleft()
        else:
            self._changes_kept += 1
        render_id = current[_ID] if current is not None else None
        changes.append(VersionChange(time, sha256, chars, size if type(size) is int else None, render_id))

    def _skipped(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        reason, detail = event.get("reason"), event.get("detail")  # first: a bad line changes nothing
        if reason.__class__ is not str or len(reason) > MAX_LABEL_CHARS:
            reason = _label(reason)
        if detail.__class__ is not str or len(detail) > MAX_TEXT_CHARS:
            detail = _text(detail)
        summary = self._source(event)
        if current is not None:
            current[_SKIPPED] += 1
        if summary is None:
            return
        skips = summary.skips
        if reason in skips:
            skips[reason] += 1
        else:
            _tally(skips, reason)
        last = summary.last_seen
        if time is None or last is None or time >= last:  # not older (see _older)
            summary.prompt_chars = 0
            required = event.get("required")
            if type(required) is bool:
                summary.required = required
        self._put(current, summary, SourceState.SKIPPED, reason, detail, None, None, time)

    def _stale(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        reason, detail = _label(event.get("reason")), _text(event.get("detail"))
        logged = _text(event.get("sha256"), MAX_HASH_CHARS)
        summary = self._source(event)
        if current is not None:
            current[_STALE] += 1
        if summary is None:
            return
        summary.stale += 1
        sha256 = logged or summary.sha256
        self._put(current, summary, SourceState.STALE, reason, detail, sha256, summary.chars, time)

    def _outside_the_prompt(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        """How a source is watched, or where ``render -o`` put a prompt, changes nothing the audit shows of it.

        The line is counted (as every line is); what a source's state or a render's counts are is left alone.
        """

    def _retried(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        summary = self._source(event)
        if summary is not None:
            summary.retries += 1

    def _dropped(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        reason, detail = _label(event.get("reason")), _text(event.get("detail"))
        summary = self._source(event)
        if current is not None:
            current[_DROPPED] += 1
        if summary is None:
            return
        _tally(summary.drops, reason)
        if not self._older(summary, time):
            summary.prompt_chars = 0
        self._put(current, summary, SourceState.DROPPED, reason, detail, summary.sha256, summary.chars, time)

    def _truncated(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        summary = self._source(event)
        if current is not None:
            current[_TRUNCATED] += 1
        if summary is not None:
            summary.truncations += 1
            kept, last = event.get("chars_after"), summary.last_seen
            if kept.__class__ is int and (time is None or last is None or time >= last):  # not older
                summary.prompt_chars = kept

    def _escaped(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        summary = self._source(event)
        if current is not None:
            current[_ESCAPED] += 1
        if summary is not None:
            summary.escapes += 1

    def _expanded(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        return None

    def _built(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        if current is None:
            return
        self._finishing(event, time, current)
        _built_fields(current, event)
        if current[_SHA256] is not None and self._manifests:
            manifest = self._manifests.get((current[_PROCESS_NAME], current[_SHA256]))
            if manifest is not None:
                self._manifests.move_to_end((current[_PROCESS_NAME], current[_SHA256]))
                current[_MANIFEST] = manifest
                self._apply(manifest, time, current)
        self._close(current)

    def _manifest(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        """A block's manifest: kept until the renders that name its sha256 close, and applied then."""
        if current is None:
            return
        get = event.get
        sha256, config, sources = get("sha256"), get("config"), get("sources")
        if type(sha256) is not str or len(sha256) > MAX_HASH_CHARS or type(sources) is not list:
            raise TypeError("manifest")
        if type(config) is not str or len(config) > MAX_ID_CHARS:
            raise TypeError("config")
        entries, keys = self._read_entries(sources)
        if len(sources) > MAX_SOURCES:
            self.counts.not_itemised["manifest entries"] += len(sources) - MAX_SOURCES
        manifests, key = self._manifests, (current[_PROCESS_NAME], sha256)
        old = manifests.pop(key, None)
        if old is not None:
            self._manifest_entries -= len(old.entries)
        manifests[key] = _Manifest(config, entries, keys)
        self._manifest_entries += len(entries)
        while len(manifests) > 1 and (len(manifests) > MAX_MANIFESTS or self._manifest_entries > MAX_MANIFEST_ENTRIES):
            self._manifest_entries -= len(manifests.popitem(last=False)[1].entries)

    def _read_entries(self, sources: list[Any]) -> tuple[tuple[_Entry, ...], frozenset[str]]:
        """A manifest's entries (checked: a bad one raises) and their sources' keys.

        Every process logs its own manifest of the same block: the entries of a list read before are
        taken again (the same objects), found by the list's JSON, which tells ``1`` from ``1.0`` and ``true``.
        """
        try:
            written: bytes | None = orjson.dumps(sources)
        except TypeError:  # (an integer past 64 bits)
            written = None
        if written is not None:
            found = self._entries_read.get(written)
            if found is not None:
                return found
        entries = tuple(_entry(found) for found in sources[:MAX_SOURCES] if not _is_expanded(found))
        made = entries, frozenset(entry.source for entry in entries)
        if written is not None and len(written) <= MAX_ENTRIES_READ_BYTES:
            if len(self._entries_read) >= MAX_ENTRIES_READ:
                self._entries_read.clear()
            self._entries_read[written] = made
        return made

    def _apply(self, manifest: _Manifest, time: str | None, current: list[Any]) -> None:
        """A render's prompt is what its block's manifest lists: each source's state set to it, once per new manifest.

        The manifest has the last word over the render's own events (a rule
        that did not apply was read, and logged ``source_loaded``, yet is not
        in the block); a source its pipeline's previous manifest listed and
        the last render of the same config (in any process) listed and this one
        does not (a deleted glob match) is no longer a source: :attr:`~SourceState.REMOVED`.
        """
        process: _Process = current[_PROCESS]
        before = self._now_applied(manifest)
        if self._unchanged(process, manifest, before):
            process.applied = manifest
            return
        process.applied = manifest
        states = process.sources  # (a new dict if the process is let go below)
        listed = set()
        for entry in manifest.entries:
            key = entry.source
            listed.add(key)
            summary = self.sources.get(key)
            if summary is None:
                summary = self._source({"source": key, "name": entry.name, "url": entry.url})
                if summary is None:
                    continue
            old = process.sources.get(key)
            status, reason = entry.status, entry.reason
            held = status in IN_PROMPT
            same = old is not None and old.status == status and old.reason == reason
            if same and (not held or old.sha256 == entry.sha256):  # type: ignore[union-attr]
                continue
            if not held:
                had = summary.drops if status is SourceState.DROPPED else summary.skips
                if reason is not None and reason not in had:
                    _tally(had, reason)  # a reason logged below the log's level: still one it had
                if not self._older(summary, time):
                    summary.prompt_chars = 0
                self._put(current, summary, status, reason, entry.detail, None, None, time)
            else:
                self._put(current, summary, status, reason, entry.detail, entry.sha256, entry.chars, time)
        for entry in before.entries if before is not None else ():
            key = entry.source
            if key in listed:
                continue
            summary = self.sources.get(key)
            old = process.sources.get(key)
            if summary is not None and (old is None or old.status is not SourceState.REMOVED):
                if not self._older(summary, time):
                    summary.prompt_chars = 0
                self._put(current, summary, SourceState.REMOVED, None, _REMOVED_DETAIL, None, None, time)
        if (  # each entry's source is now as listed, so an equal manifest next changes nothing (see _unchanged)
            process.attached
            and process.sources is states
            and len(manifest.keys) == len(manifest.entries)
            and manifest.keys <= self.sources.keys()
        ):
            process.in_step = (manifest.entries, process.changes)

    def _now_applied(self, manifest: _Manifest) -> _Manifest | None:
        """*manifest* is its config's last applied; returns the one before."""
        applied = self._applied
        before = applied.pop(manifest.config, None)
        applied[manifest.config] = manifest
        if len(applied) > MAX_MANIFESTS:
            applied.popitem(last=False)
        return before

    def _manifest_named(self, render_id: str, event: dict[str, Any]) -> _Manifest | None:
        """The manifest kept of the block a ``prompt_built`` names, if any (nothing changed)."""
        sha256 = event.get("sha256")
        if sha256.__class__ is not str or len(sha256) > MAX_HASH_CHARS:
            return None
        return self._manifests.get((render_id.rpartition("-")[0], sha256))

    @staticmethod
    def _unchanged(process: _Process, manifest: _Manifest, before: _Manifest | None) -> bool:
        """Whether applying *manifest* (after *before*, its config's last) would change none of *process*'s sources.

        So for an unchanged turn (the process's last manifest, and its config's), and when the process's
        sources are all as the manifest lists them (set from equal entries, not changed since) with none
        of *before* to remove: each process logs its own manifest of a block, so with several rendering
        the same config, the last applied is nearly always another's, with the same entries.
        """
        if before is manifest and process.applied is manifest:
            return True
        in_step = process.in_step
        return (
            in_step is not None
            and in_step[1] == process.changes
            and (in_step[0] is manifest.entries or in_step[0] == manifest.entries)
            and (before is None or before.keys <= manifest.keys)
        )

    def _failed(self, event: dict[str, Any], time: str | None, current: list[Any] | None) -> None:
        if current is None:
            return
        failures = event.get("failures") or ()
        if failures.__class__ is not list:
            raise TypeError("failures")
        self._finishing(event, time, current)
        current[_FAILED] = True
        current[_FAILURES] = [
            RenderFailure(
                _text(f.get("source"), MAX_FAILURE_CHARS),
                _label(f.get("reason")),
                _text(f.get("detail"), MAX_FAILURE_CHARS),
                _text(f.get("name"), MAX_FAILURE_CHARS),
                _text(f.get("url"), MAX_FAILURE_CHARS),
            )
            for f in failures[:MAX_FAILURES]
            if type(f) is dict
        ]
        self._close(current)

    def _finishing(self, event: dict[str, Any], time: str | None, current: list[Any]) -> None:
        self._open.pop(current[_ID], None)
        self._remember(current[_ID])
        schema = _closed(current, time, event)
        if schema is not None and schema > SCHEMA_VERSION:
            self.counts.newer_schema += current[_EVENTS]

    def _remember(self, render_id: str) -> None:
        """Keep a finished render's id, to know the render if it is read again."""
        finished, order = self._finished, self._finished_order
        finished.add(render_id)
        order.append(render_id)
        if len(order) > MAX_FINISHED_IDS:
            finished.discard(order.popleft())

    def _close(self, current: list[Any]) -> None:
        """A render is over: list it, count it for its process's sources, keep it if it answers ``--at``."""
        time = current[_TIME]
        if time is not None:
            self._seen(time)
        self._renders.append(current)
        self.renders_total += 1
        if current[_FAILED]:
            self.renders_failed += 1
            return
        if not current[_FINISHED]:
            return
        process = current[_PROCESS]
        process.closed += 1
        at = self.filters.at
        if at is not None and time is not None and time <= at:
            best = self._at
            if best is None or (best[_TIME] or "") <= time:
                self._at, self._at_process, self._at_undo = current, process, {}

    # -- the result ------------------------------------------------------------------------------

    def _at_state(self) -> dict[str, SourceAt]:
        """The sources of ``--at``'s render as it had them: its process's state now, with later changes undone."""
        assert self._at_process is not None
        state = dict(self._at_process.sources)
        for key, old in self._at_undo.items():
            if old is None:
                state.pop(key, None)
            else:
                state[key] = old
        return state

    def _prompt_at(self, shown: set[str]) -> PromptAt:
        """``--at``: the best render, and each source as it had it."""
        at = self.filters.at
        assert at is not None
        if self._at is None or self._at_process is None:
            return PromptAt(at, None)
        state = self._at_state()
        manifest: _Manifest | None = self._at[_MANIFEST]
        if manifest is None:  # a log from before manifests: the render's prompt as its process's events left it
            records = sorted((r for r in state.values() if r.source in shown), key=lambda r: r.source)
            return PromptAt(at, _summary(self._at), records)
        records = []
        for entry in manifest.entries:  # what the block held, in prompt order
            if entry.source not in shown:
                continue
            held = state.get(entry.source)
            since = held.since if held is not None else None
            sha256 = entry.sha256 if entry.status in IN_PROMPT else None
            chars = entry.chars if entry.status in IN_PROMPT else None
            records.append(
                SourceAt(entry.source, entry.name, entry.url, entry.status, entry.reason, sha256, chars, since)
            )
        return PromptAt(at, _summary(self._at), records)

    def finish(self) -> Audit:
        """The audit of everything fed; renders never finished are listed as such."""
        while self._open:
            self._close(self._open.popitem(last=False)[1])
        for process in (*self._processes.values(), self._outside):
            self._settle(process)
        filters = self.filters
        for summary in self.sources.values():  # kept in the order read; shown in time order
            if len(summary.changes) > 1:
                ordered = sorted(summary.changes, key=lambda c: c.time or "")
                summary.changes.clear()
                summary.changes.extend(ordered)
        listed = [_summary(record) for record in self._renders]
        sources = sorted(self.sources.values(), key=lambda s: s.source)
        if filters.reasons:
            wanted = set(filters.reasons)
            sources = [s for s in sources if wanted & (set(s.skips) | set(s.drops)) or s.last_reason in wanted]
        renders = sorted(listed, key=lambda r: (r.time or r.started or "", r.render_id))
        statuses = set(filters.statuses)
        if statuses:
            if "failed" in statuses:
                renders = [r for r in renders if r.failed]
                failed = {f.source for r in renders for f in r.failures}
                sources = [s for s in sources if s.last_status in statuses or s.source in failed]
            else:
                sources = [s for s in sources if s.last_status in statuses]
        at = self._prompt_at({s.source for s in sources}) if filters.at is not None else None
        return Audit(
            schema=SCHEMA_VERSION,
            inputs=self.inputs,
            lines=self.counts,
            sources=sources,
            renders=renders,
            renders_total=self.renders_total,
            renders_failed=self.renders_failed,
            first_time=self.first_time,
            last_time=self.last_time,
            at=at,
            filters=filters.as_given(),
        )
