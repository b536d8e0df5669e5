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
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..events import EVENTS, SCHEMA_VERSION
from ..sources.redact import redact_url
from . import lines as kinds
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


class Aggregator:
    """Feed it each log's lines (:meth:`feed`), then take the :class:`~memconfig.audit.model.Audit` (:meth:`finish`)."""

    def __init__(self, filters: Filters | None = None) -> None:
        self.filters = filters or Filters()
        self.counts = LineCounts()
        self.inputs: list[InputSummary] = []
        self.sources: dict[str, SourceSummary] = {}
        self._hashes: dict[str, set[str]] = {}
        self._matches: dict[str, bool] = {}
        self._open: OrderedDict[str, RenderSummary] = OrderedDict()
        self._states: OrderedDict[str, dict[str, SourceAt]] = OrderedDict()
        self.renders: deque[RenderSummary] = deque(maxlen=MAX_RENDERS)
        self.renders_total = 0
        self.renders_failed = 0
        self.first_time: str | None = None
        self.last_time: str | None = None
        self._at: tuple[RenderSummary, dict[str, SourceAt]] | None = None
        self._handlers = {
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

    def feed(self, lines: Iterable[bytes | None], summary: InputSummary) -> None:
        """Fold every line of one log into the audit; *summary* counts its lines and events as they go."""
        self.inputs.append(summary)
        counts = self.counts
        foreign, malformed, unknown = counts.foreign, counts.malformed, counts.unknown_events
        handlers = self._handlers
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        since, until = self.filters.since, self.filters.until
        timed = since is not None or until is not None
        number = events = 0
        try:
            for line in lines:
                number += 1
                if line is None:
                    malformed[kinds.TOO_LONG] += 1
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
                if type(found) is not dict:
                    malformed[kinds.NOT_AN_OBJECT] += 1
                    continue
                name = found.get("event")
                handler = handlers.get(name) if "render_id" in found else None  # type: ignore[arg-type]
                if handler is None:
                    if "render_id" in found and type(name) is str:
                        unknown[name] += 1
                    else:
                        foreign[kinds.FOREIGN_JSON] += 1
                    continue
                time = found.get("timestamp")
                if time is not None and (type(time) is not str or len(time) != 27 or time[-1] != "Z"):
                    time = canonical_time(time)
                if timed and time is not None and ((since and time < since) or (until and time > until)):
                    counts.filtered += 1
                    continue
                try:
                    handler(found, time)
                except (TypeError, ValueError, AttributeError, KeyError):
                    malformed[kinds.BAD_FIELD] += 1
                    continue
                events += 1
                if time is not None:
                    if self.first_time is None or time < self.first_time:
                        self.first_time = time
                    if self.last_time is None or time > self.last_time:
                        self.last_time = time
        finally:
            counts.lines += number
            counts.events += events
            summary.lines += number
            summary.events += events

    # -- what each event says --------------------------------------------------------------------

    def _render(self, event: dict[str, Any], time: str | None) -> RenderSummary | None:
        """The open render *event* belongs to (begun by it if it is the first), or None outside a render."""
        render_id = event["render_id"]
        if render_id is None:
            return None
        if type(render_id) is not str:
            raise TypeError("render_id")
        render = self._open.get(render_id)
        if render is None:
            render = self._open[render_id] = RenderSummary(
                render_id, render_id.rpartition("-")[0], started=time, host=event.get("host"), pid=event.get("pid")
            )
            if len(self._open) > MAX_OPEN_RENDERS:
                self._close(self._open.popitem(last=False)[1])
        render.events += 1
        return render

    def _state(self, render: RenderSummary | None) -> dict[str, SourceAt]:
        """The sources' state in *render*'s process (a render outside a render scope: a process of its own)."""
        process = render.process if render is not None else ""
        states = self._states
        state = states.get(process)
        if state is None:
            state = states[process] = {}
            if len(states) > MAX_PROCESSES:
                states.popitem(last=False)
        else:
            states.move_to_end(process)
        return state

    def _source(self, event: dict[str, Any]) -> SourceSummary | None:
        """The summary of *event*'s source, or None when ``--source`` leaves it out."""
        key = event["source"]
        summary = self.sources.get(key)
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

    @staticmethod
    def _status(summary: SourceSummary, status: str, reason: str | None, detail: str, time: str | None) -> None:
        if summary.last_status != status or summary.last_reason != reason:
            summary.status_since = time
        summary.last_status, summary.last_reason, summary.last_detail = status, reason, detail
        summary.last_seen = time

    def _put(
        self,
        state: dict[str, SourceAt],
        summary: SourceSummary,
        status: str,
        reason: str | None,
        sha256: str | None,
        chars: int | None,
        time: str | None,
    ) -> None:
        """Record the source's new state in its process, keeping the old record when nothing changed."""
        old = state.get(summary.source)
        if old is not None and old.status == status and old.reason == reason and old.sha256 == sha256:
            return
        state[summary.source] = SourceAt(summary.source, summary.name, summary.url, status, reason, sha256, chars, time)

    def _loaded(self, event: dict[str, Any], time: str | None) -> None:
        sha256 = event.get("sha256")
        chars = event.get("chars")
        size = event.get("bytes")
        if (chars is not None and type(chars) is not int) or (sha256 is not None and type(sha256) is not str):
            raise TypeError("chars")  # checked first: a bad line changes nothing
        render = self._render(event, time)
        if render is not None:
            render.loaded += 1
        summary = self._source(event)
        if summary is None:
            return
        summary.loads += 1
        summary.cache[str(event.get("cache"))] += 1
        if sha256 != summary.sha256 and sha256 is not None:
            self._changed(summary, str(sha256), chars, size, time, render)
        summary.sha256, summary.chars, summary.bytes = sha256, chars, size
        if summary.first_chars is None:
            summary.first_chars = chars
        self._status(summary, "loaded", None, "", time)
        self._put(self._state(render), summary, "loaded", None, sha256, chars, time)

    def _changed(
        self,
        summary: SourceSummary,
        sha256: str,
        chars: int | None,
        size: Any,
        time: str | None,
        render: RenderSummary | None,
    ) -> None:
        seen = self._hashes.setdefault(summary.source, set())
        if sha256 not in seen:
            summary.versions += 1
            if len(seen) < MAX_HASHES:
                seen.add(sha256)
        summary.sha256_changed = time
        summary.changes.append(
            VersionChange(
                time,
                sha256,
                chars,
                size if type(size) is int else None,
                render.render_id if render is not None else None,
            )
        )

    def _skipped(self, event: dict[str, Any], time: str | None) -> None:
        render = self._render(event, time)
        if render is not None:
            render.skipped += 1
        summary = self._source(event)
        if summary is None:
            return
        reason = str(event.get("reason"))
        summary.skips[reason] += 1
        required = event.get("required")
        if type(required) is bool:
            summary.required = required
        self._status(summary, "skipped", reason, str(event.get("detail") or ""), time)
        self._put(self._state(render), summary, "skipped", reason, None, None, time)

    def _stale(self, event: dict[str, Any], time: str | None) -> None:
        render = self._render(event, time)
        if render is not None:
            render.stale += 1
        summary = self._source(event)
        if summary is None:
            return
        summary.stale += 1
        reason = str(event.get("reason"))
        self._status(summary, "stale", reason, str(event.get("detail") or ""), time)
        sha256 = event.get("sha256") or summary.sha256
        self._put(self._state(render), summary, "stale", reason, sha256, summary.chars, time)

    def _retried(self, event: dict[str, Any], time: str | None) -> None:
        self._render(event, time)
        summary = self._source(event)
        if summary is not None:
            summary.retries += 1

    def _dropped(self, event: dict[str, Any], time: str | None) -> None:
        render = self._render(event, time)
        if render is not None:
            render.dropped += 1
        summary = self._source(event)
        if summary is None:
            return
        reason = str(event.get("reason"))
        summary.drops[reason] += 1
        self._status(summary, "dropped", reason, str(event.get("detail") or ""), time)
        self._put(self._state(render), summary, "dropped", reason, summary.sha256, summary.chars, time)

    def _truncated(self, event: dict[str, Any], time: str | None) -> None:
        render = self._render(event, time)
        if render is not None:
            render.truncated += 1
        summary = self._source(event)
        if summary is not None:
            summary.truncations += 1

    def _escaped(self, event: dict[str, Any], time: str | None) -> None:
        render = self._render(event, time)
        if render is not None:
            render.escaped += 1
        summary = self._source(event)
        if summary is not None:
            summary.escapes += 1

    def _expanded(self, event: dict[str, Any], time: str | None) -> None:
        self._render(event, time)

    def _built(self, event: dict[str, Any], time: str | None) -> None:
        render = self._finishing(event, time)
        if render is None:
            return
        render.sha256 = event.get("sha256")
        render.chars = event.get("chars")
        render.cache_hits = int(event.get("cache_hits") or 0)
        self._close(render, self._state(render))

    def _failed(self, event: dict[str, Any], time: str | None) -> None:
        render = self._finishing(event, time)
        if render is None:
            return
        render.failed = True
        for failure in event.get("failures") or ():
            if type(failure) is dict:
                render.failures.append(
                    RenderFailure(
                        str(failure.get("source")), str(failure.get("reason")), str(failure.get("detail") or "")
                    )
                )
        self._close(render, self._state(render))

    def _finishing(self, event: dict[str, Any], time: str | None) -> RenderSummary | None:
        render = self._render(event, time)
        if render is None:
            return None
        self._open.pop(render.render_id, None)
        schema = event.get("schema")
        if type(schema) is int:
            render.schema = schema
            if schema > SCHEMA_VERSION:
                self.counts.newer_schema += render.events
        render.finished = True
        render.time = time
        render.duration_ms = event.get("duration_ms")
        render.sources_loaded = int(event.get("sources_loaded") or 0)
        render.sources_skipped = int(event.get("sources_skipped") or 0)
        if render.host is None:
            render.host, render.pid = event.get("host"), event.get("pid")
        return render

    def _close(self, render: RenderSummary, state: dict[str, SourceAt] | None = None) -> None:
        """A render is over: list it, count it in its sources, and keep it if it answers ``--at``."""
        self.renders.append(render)
        self.renders_total += 1
        if render.failed:
            self.renders_failed += 1
        if state is None or render.failed:
            return
        sources = self.sources
        for record in state.values():
            if record.status in _IN_PROMPT:
                summary = sources.get(record.source)
                if summary is not None:
                    summary.renders += 1
        at = self.filters.at
        if at is not None and render.time is not None and render.time <= at:
            best = self._at
            if best is None or (best[0].time or "") <= render.time:
                self._at = (render, dict(state))

    # -- the result ------------------------------------------------------------------------------

    def finish(self) -> Audit:
        """The audit of everything fed; renders never finished are listed as such."""
        while self._open:
            self._close(self._open.popitem(last=False)[1])
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
