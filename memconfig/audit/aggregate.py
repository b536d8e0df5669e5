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
matching of ``--source`` patterns remembered per source.
"""

from __future__ import annotations

import fnmatch
import gc
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..events import EVENTS, SCHEMA_VERSION
from ..sources.redact import redact_url
from . import lines as kinds
from .inputs import MAX_LINE_BYTES
from .model import (
    MAX_RENDERS,
    Audit,
    InputSummary,
    LineCounts,
    PromptAt,
    RenderFailure,
    RenderSummary,
    SourceAt,
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
_IN_PROMPT = frozenset({"loaded", "stale"})


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
    costs the same whatever the number of sources.
    """

    __slots__ = ("closed", "entered", "sources")

    def __init__(self) -> None:
        self.sources: dict[str, SourceAt] = {}
        self.entered: dict[str, int] = {}  # source: ``closed`` when it went into the prompt
        self.closed = 0  # renders of this process that finished with a prompt


class _Open:
    """A render begun and not finished: its summary, and its process."""

    __slots__ = ("events", "process", "render")

    def __init__(self, render: RenderSummary, process: _Process) -> None:
        self.render, self.process = render, process
        self.events = 0


class Aggregator:
    """Feed it each log's lines (:meth:`feed`), then take the :class:`~memconfig.audit.model.Audit` (:meth:`finish`)."""

    def __init__(self, filters: Filters | None = None) -> None:
        self.filters = filters or Filters()
        self.counts = LineCounts()
        self.inputs: list[InputSummary] = []
        self.sources: dict[str, SourceSummary] = {}
        self._hashes: dict[str, set[str]] = {}
        self._matches: dict[str, bool] = {}
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._processes: OrderedDict[str, _Process] = OrderedDict()
        self._outside = _Process()  # events logged outside any render (``render_id`` null)
        self.renders: deque[RenderSummary] = deque(maxlen=MAX_RENDERS)
        self.renders_total = 0
        self.renders_failed = 0
        self.first_time: str | None = None
        self.last_time: str | None = None
        self._at: tuple[RenderSummary, dict[str, SourceAt]] | None = None
        self._handlers: dict[str, Callable[[dict[str, Any], str | None, _Open | None], None]] = {
            "source_loaded": self._loaded,
            "source_skipped": self._skipped,
            "source_stale": self._stale,
            "source_retried": self._retried,
            "source_dropped": self._dropped,
            "source_truncated": self._truncated,
            "content_escaped": self._escaped,
            "source_expanded": self._expanded,
            "prompt_built": self._built,
            "prompt_failed": self._failed,
        }
        missing = set(EVENTS) - set(self._handlers)
        assert not missing, f"events the audit does not read: {missing}"

    # -- the pass --------------------------------------------------------------------------------

    def feed(self, pieces: Iterable[bytes], summary: InputSummary, limit: int = MAX_LINE_BYTES) -> None:
        """Fold every line of one log into the audit; *summary* counts its lines and events as they go.

        *pieces* are its lines as :func:`~memconfig.audit.inputs.line_pieces` gives them (for *limit*).
        """
        self.inputs.append(summary)
        counts = self.counts
        foreign, malformed = counts.foreign, counts.malformed
        handlers = self._handlers
        open_renders = self._open
        begin = self._begin
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        since, until = self.filters.since, self.filters.until
        timed = since is not None or until is not None
        number = events = 0
        skipping = False  # inside a line over the limit
        collecting = gc.isenabled()
        gc.disable()  # a million parsed dicts, none kept in a cycle: the collector would only walk the model, often
        try:
            for line in pieces:
                if skipping or len(line) > limit:
                    if skipping:  # a later piece of a line too long: its end, or more of it
                        skipping = line[-1] != 10
                        continue
                    if line[-1] != 10:  # limit + 1 bytes and no newline: the first piece of a line too long
                        number += 1
                        malformed[kinds.TOO_LONG] += 1
                        skipping = True
                        continue
                number += 1
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
                time = found.get("timestamp")
                if time is not None and (time.__class__ is not str or len(time) != 27 or time[-1] != "Z"):
                    time = canonical_time(time)
                if timed and time is not None and ((since and time < since) or (until and time > until)):
                    counts.filtered += 1
                    continue
                current = None
                try:
                    if render_id is not None:
                        current = open_renders.get(render_id)
                        if current is None:
                            current = begin(render_id, found, time)
                        current.events += 1  # before the handler: prompt_built closes the render
                    elif time is not None:
                        self._seen(time)
                    handler(found, time, current)
                except (TypeError, ValueError, AttributeError, KeyError):
                    malformed[kinds.BAD_FIELD] += 1
                    if current is not None:
                        current.events -= 1
                    continue
                events += 1
        finally:
            if collecting:
                gc.enable()
            counts.lines += number
            counts.events += events
            summary.lines += number
            summary.events += events

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
            counts.unknown_events[name] += 1
        else:
            counts.foreign[kinds.FOREIGN_JSON] += 1

    # -- what each event says --------------------------------------------------------------------

    def _begin(self, render_id: Any, event: dict[str, Any], time: str | None) -> _Open:
        """A render's first event: its summary, tied to its process (the render id's first part)."""
        if type(render_id) is not str:
            raise TypeError("render_id")
        name = render_id.rpartition("-")[0]
        processes = self._processes
        process = processes.get(name)
        if process is None:
            process = processes[name] = _Process()
            if len(processes) > MAX_PROCESSES:
                self._settle(processes.popitem(last=False)[1])
        else:
            processes.move_to_end(name)
        render = RenderSummary(render_id, name, started=time, host=event.get("host"), pid=event.get("pid"))
        if time is not None:
            self._seen(time)
        current = self._open[render_id] = _Open(render, process)
        if len(self._open) > MAX_OPEN_RENDERS:
            self._close(self._open.popitem(last=False)[1])
        return current

    def _source(self, event: dict[str, Any]) -> SourceSummary | None:
        """The summary of *event*'s source, or None when ``--source`` leaves it out."""
        key = event["source"]
        summary = self.sources.get(key)  # an unhashable key raises TypeError: a bad field
        if summary is None:
            if type(key) is not str:
                raise TypeError("source")
            if not self._wanted(key, event):
                return None
            summary = self.sources[key] = SourceSummary(key, str(event.get("name") or ""), str(event.get("url") or ""))
        return summary

    def _wanted(self, key: str, event: dict[str, Any]) -> bool:
        patterns = self.filters.sources
        if not patterns:
            return True
        found = self._matches.get(key)
        if found is None:
            names = [key, str(event.get("name") or ""), str(event.get("url") or "")]
            found = self._matches[key] = any(fnmatch.fnmatchcase(n, p) or p == n for p in patterns for n in names)
        return found

    def _put(
        self,
        current: _Open | None,
        summary: SourceSummary,
        status: str,
        reason: str | None,
        detail: str,
        sha256: str | None,
        chars: int | None,
        time: str | None,
    ) -> None:
        """The source's new status, in its summary and in its process's state (kept as is when unchanged)."""
        if summary.last_status != status or summary.last_reason != reason:
            summary.status_since = time
            summary.last_status, summary.last_reason = status, reason
        summary.last_detail = detail
        summary.last_seen = time
        process = current.process if current is not None else self._outside
        old = process.sources.get(summary.source)
        if old is None or old.status != status or old.sha256 != sha256 or old.reason != reason:
            self._enter(process, summary, old, status, reason, sha256, chars, time)

    def _enter(
        self,
        process: _Process,
        summary: SourceSummary,
        old: SourceAt | None,
        status: str,
        reason: str | None,
        sha256: str | None,
        chars: int | None,
        time: str | None,
    ) -> None:
        """A source's state changed in *process*: a new record, and its renders counted while it was in."""
        key = summary.source
        if old is not None and old.status in _IN_PROMPT:
            summary.renders += process.closed - process.entered.pop(key, process.closed)
        process.sources[key] = SourceAt(key, summary.name, summary.url, status, reason, sha256, chars, time)
        if status in _IN_PROMPT:
            process.entered[key] = process.closed

    def _settle(self, process: _Process) -> None:
        """Count the renders each source still in *process*'s prompt was part of (the process is done with)."""
        sources = self.sources
        for key, entered in process.entered.items():
            summary = sources.get(key)
            if summary is not None:
                summary.renders += process.closed - entered
        process.entered = {key: process.closed for key in process.entered}

    def _loaded(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        # The most frequent line of all: written out in full, with no call on the usual path.
        get = event.get
        sha256 = get("sha256")
        chars = get("chars")
        if (chars is not None and chars.__class__ is not int) or (sha256 is not None and sha256.__class__ is not str):
            raise TypeError("chars")  # checked first: a bad line changes nothing
        summary = self.sources.get(event["source"])
        if summary is None:
            summary = self._source(event)
        if current is not None:
            current.render.loaded += 1
            process = current.process
        else:
            process = self._outside
        if summary is None:
            return
        summary.loads += 1
        cache = get("cache")
        summary.cache[cache if cache.__class__ is str else str(cache)] += 1
        summary.last_seen = time
        if summary.last_status != "loaded":
            summary.status_since = time
            summary.last_status, summary.last_reason, summary.last_detail = "loaded", None, ""
        if sha256 != summary.sha256 or sha256 is None:  # its size changes with its content, and only then
            size = get("bytes")
            if sha256 is not None:
                self._changed(summary, sha256, chars, size, time, current)
            if summary.first_chars is None:
                summary.first_chars = chars
            summary.sha256, summary.chars, summary.bytes = sha256, chars, size if size.__class__ is int else None
        old = process.sources.get(summary.source)
        if old is None or old.status != "loaded" or old.sha256 != sha256:
            self._enter(process, summary, old, "loaded", None, sha256, chars, time)

    def _changed(
        self,
        summary: SourceSummary,
        sha256: str,
        chars: int | None,
        size: Any,
        time: str | None,
        current: _Open | None,
    ) -> None:
        seen = self._hashes.setdefault(summary.source, set())
        if sha256 not in seen:
            summary.versions += 1
            if len(seen) < MAX_HASHES:
                seen.add(sha256)
        summary.sha256_changed = time
        render_id = current.render.render_id if current is not None else None
        summary.changes.append(VersionChange(time, sha256, chars, size if type(size) is int else None, render_id))

    def _skipped(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        summary = self._source(event)
        if current is not None:
            current.render.skipped += 1
        if summary is None:
            return
        reason = str(event.get("reason"))
        summary.skips[reason] += 1
        required = event.get("required")
        if type(required) is bool:
            summary.required = required
        self._put(current, summary, "skipped", reason, str(event.get("detail") or ""), None, None, time)

    def _stale(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        summary = self._source(event)
        if current is not None:
            current.render.stale += 1
        if summary is None:
            return
        summary.stale += 1
        reason = str(event.get("reason"))
        sha256 = event.get("sha256") or summary.sha256
        detail = str(event.get("detail") or "")
        self._put(current, summary, "stale", reason, detail, sha256, summary.chars, time)

    def _retried(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        summary = self._source(event)
        if summary is not None:
            summary.retries += 1

    def _dropped(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        summary = self._source(event)
        if current is not None:
            current.render.dropped += 1
        if summary is None:
            return
        reason = str(event.get("reason"))
        summary.drops[reason] += 1
        detail = str(event.get("detail") or "")
        self._put(current, summary, "dropped", reason, detail, summary.sha256, summary.chars, time)

    def _truncated(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        summary = self._source(event)
        if current is not None:
            current.render.truncated += 1
        if summary is not None:
            summary.truncations += 1

    def _escaped(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        summary = self._source(event)
        if current is not None:
            current.render.escaped += 1
        if summary is not None:
            summary.escapes += 1

    def _expanded(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        return None

    def _built(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        if current is None:
            return
        render = self._finishing(event, time, current)
        render.sha256 = event.get("sha256")
        render.chars = event.get("chars")
        render.cache_hits = int(event.get("cache_hits") or 0)
        self._close(current)

    def _failed(self, event: dict[str, Any], time: str | None, current: _Open | None) -> None:
        if current is None:
            return
        render = self._finishing(event, time, current)
        render.failed = True
        for failure in event.get("failures") or ():
            if type(failure) is dict:
                render.failures.append(
                    RenderFailure(
                        str(failure.get("source")), str(failure.get("reason")), str(failure.get("detail") or "")
                    )
                )
        self._close(current)

    def _finishing(self, event: dict[str, Any], time: str | None, current: _Open) -> RenderSummary:
        render = current.render
        self._open.pop(render.render_id, None)
        schema = event.get("schema")
        if type(schema) is int:
            render.schema = schema
            if schema > SCHEMA_VERSION:
                self.counts.newer_schema += current.events
        render.finished = True
        render.time = time
        render.duration_ms = event.get("duration_ms")
        render.sources_loaded = int(event.get("sources_loaded") or 0)
        render.sources_skipped = int(event.get("sources_skipped") or 0)
        if render.host is None:
            render.host, render.pid = event.get("host"), event.get("pid")
        return render

    def _close(self, current: _Open) -> None:
        """A render is over: list it, count it for its process's sources, keep it if it answers ``--at``."""
        render = current.render
        render.events = current.events
        if render.time is not None:
            self._seen(render.time)
        self.renders.append(render)
        self.renders_total += 1
        if render.failed:
            self.renders_failed += 1
        if not render.finished or render.failed:
            return
        process = current.process
        process.closed += 1
        at = self.filters.at
        if at is not None and render.time is not None and render.time <= at:
            best = self._at
            if best is None or (best[0].time or "") <= render.time:
                self._at = (render, dict(process.sources))

    # -- the result ------------------------------------------------------------------------------

    def finish(self) -> Audit:
        """The audit of everything fed; renders never finished are listed as such."""
        while self._open:
            self._close(self._open.popitem(last=False)[1])
        for process in (*self._processes.values(), self._outside):
            self._settle(process)
        filters = self.filters
        for summary in self.sources.values():  # memconfig masks before it logs; a log from elsewhere may not have
            summary.url, summary.last_detail = redact_url(summary.url), redact_url(summary.last_detail)
        for render in self.renders:
            for failure in render.failures:
                failure.detail = redact_url(failure.detail)
        sources = sorted(self.sources.values(), key=lambda s: s.source)
        if filters.reasons:
            wanted = set(filters.reasons)
            sources = [s for s in sources if wanted & (set(s.skips) | set(s.drops)) or s.last_reason in wanted]
        renders = sorted(self.renders, key=lambda r: (r.time or r.started or "", r.render_id))
        statuses = set(filters.statuses)
        if statuses:
            if "failed" in statuses:
                renders = [r for r in renders if r.failed]
                failed = {f.source for r in renders for f in r.failures}
                sources = [s for s in sources if s.last_status in statuses or s.source in failed]
            else:
                sources = [s for s in sources if s.last_status in statuses]
        at = None
        if filters.at is not None:
            shown = {s.source for s in sources}
            if self._at is None:
                at = PromptAt(filters.at, None)
            else:
                render, state = self._at
                records = sorted((r for r in state.values() if r.source in shown), key=lambda r: r.source)
                at = PromptAt(filters.at, render, records)
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
