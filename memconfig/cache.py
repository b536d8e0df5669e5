"""The state cache stage: contents live in the caller's state; this decides what to read.

The caller's state mapping holds, as plain JSON-serialisable data:

* ``state[state_key]`` — ``{source: content}``, the shape deepagents uses, so a
  state written by either tool reads in the other;
* ``state[state_key + "_meta"]`` — the order, names, hashes and fingerprints
  of those contents, the sources left out and why, and when they were last
  checked.

Policies: ``once`` reads a source once per state; ``revalidate`` checks every
source's fingerprint on every render and re-reads only what changed; ``ttl``
revalidates at most every ``ttl`` seconds; ``always`` re-reads everything.

Besides the state, one process-wide copy of the newest good version of each
source is kept, and concurrent reads of the same source with the same known
version share one fetch, so many threads or tasks rendering after a change
cause one read per changed source.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from . import events
from .config import Config
from .sources import Source
from .stages import Entry, LoadRequest, LoadResult, Loader, Snapshot

__all__ = ["STALE_REASONS", "PolicyCache"]

#: Failures after which a source keeps its last good content (they may pass).
STALE_REASONS = frozenset({"timeout", "remote_error", "permission_denied", "error"})
_META_VERSION = 1
_SNAPSHOT_MEMO = 64


@dataclass(frozen=True, slots=True)
class _Known:
    """The newest good version of a source seen by this process."""

    fingerprint: str | None
    sha256: str
    content: str
    bytes: int


@dataclass(slots=True)
class _Pass:
    """The work of one render: which sources to read and what was known of them."""

    requests: list[LoadRequest]
    meta: dict[str, Any]
    force: bool
    basis: dict[str, _Known] = field(default_factory=dict)  # the process copies the requests were made against


class PolicyCache:
    """Keeps contents in state under ``state_key`` and refreshes them by *policy*."""

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        policy: str = "once",
        ttl: float = 60.0,
        state_key: str = "memory_contents",
        clean: Callable[[str], str] = str.rstrip,
    ) -> None:
        self.sources = tuple(sources)
        self.policy = policy
        self.ttl = ttl
        self.state_key = state_key
        self.meta_key = f"{state_key}_meta"
        self.clean = clean
        self._by_key = {s.key: s for s in self.sources}
        self._lock = threading.Lock()
        self._latest: dict[str, _Known] = {}
        self._inflight: dict[tuple[Any, ...], Future[list[LoadResult]]] = {}
        self._snapshots: OrderedDict[str, tuple[Entry, ...]] = OrderedDict()
        self._parents: dict[str, str] = {}  # glob match key -> glob key, for matches in _latest

    @classmethod
    def from_config(cls, config: Config, sources: Sequence[Source], clean: Callable[[str], str]) -> PolicyCache:
        opts = config.cache
        return cls(sources, policy=opts.policy, ttl=opts.ttl, state_key=opts.state_key, clean=clean)

    def __repr__(self) -> str:
        return f"PolicyCache(policy={self.policy!r}, ttl={self.ttl}, state_key={self.state_key!r}, sources={len(self.sources)})"

    # -- the stage's verbs --------------------------------------------------

    def resolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Snapshot:
        """A consistent snapshot for *state*, reading what the policy says must be read."""
        work = self._plan(state, force)
        if isinstance(work, Snapshot):
            return work
        mine, theirs = self._claim(work.requests)
        results: dict[int, list[LoadResult]] = {}
        if mine:
            try:
                loaded = loader.load([work.requests[i] for i, _ in mine])
            except BaseException as exc:
                self._release(work.requests, mine, exc)
                raise
            results.update(self._release(work.requests, mine, loaded))
        for index, future in theirs:
            results[index] = future.result()
        return self._merge(state, work, results)

    async def aresolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Snapshot:
        """:meth:`resolve` for asyncio callers."""
        work = self._plan(state, force)
        if isinstance(work, Snapshot):
            return work
        mine, theirs = self._claim(work.requests)
        results: dict[int, list[LoadResult]] = {}
        if mine:
            try:
                loaded = await loader.aload([work.requests[i] for i, _ in mine])
            except BaseException as exc:
                self._release(work.requests, mine, exc)
                raise
            results.update(self._release(work.requests, mine, loaded))
        for index, future in theirs:
            results[index] = await asyncio.wrap_future(future)
        return self._merge(state, work, results)

    # -- planning -----------------------------------------------------------

    def _plan(self, state: MutableMapping[str, Any], force: bool) -> _Pass | Snapshot:
        with self._lock:
            contents = state.get(self.state_key)
            meta = state.get(self.meta_key)
            if contents is not None and not isinstance(meta, dict):
                meta = self._adopt(state, contents)
        fresh = contents is None or force or self.policy == "always"
        if not fresh:
            assert contents is not None and meta is not None
            due = self.policy == "revalidate" or (
                self.policy == "ttl" and time.time() - meta.get("checked_at", 0.0) >= self.ttl
            )
            wanted = self.sources if due else [self._by_key[k] for k in meta.get("pending", ()) if k in self._by_key]
            if not wanted:
                return self._hit(meta, contents)
        else:
            wanted = self.sources
        work = _Pass([], dict(meta or {}), force)
        known = {e[0]: e for e in work.meta.get("entries", ())}
        work.requests = [self._request(source, known, work) for source in wanted]
        return work

    def _request(self, source: Source, known: dict[str, list[Any]], work: _Pass) -> LoadRequest:
        if work.force:
            return LoadRequest(source)
        always = self.policy == "always"

        def version(key: str) -> tuple[str | None, str | None]:
            latest = self._latest.get(key)
            if latest is not None:
                work.basis[key] = latest
            entry = known.get(key)
            fingerprint = latest.fingerprint if latest else entry[3] if entry else None
            sha256 = latest.sha256 if latest else entry[2] if entry else None
            return (None if always else fingerprint), sha256

        if source.glob:
            children = {k: version(k) for k, e in known.items() if e[4] == source.key}
            children.update({k: version(k) for k, p in self._parents.items() if p == source.key})
            return LoadRequest(source, children=children)
        return LoadRequest(source, *version(source.key))

    def _hit(self, meta: dict[str, Any], contents: dict[str, str]) -> Snapshot:
        digest = meta["digest"]
        with self._lock:
            entries = self._snapshots.get(digest)
            if entries is None:
                entries = tuple(Entry(e[0], e[1], contents[e[0]], e[2]) for e in meta["entries"] if e[0] in contents)
                self._remember(digest, entries)
        stats = {"cache_hits": len(entries), "revalidated": 0, "refreshed": 0, "stale": 0}
        return Snapshot(entries, digest, (), stats, (), len(meta.get("skipped", ())))

    def _adopt(self, state: MutableMapping[str, Any], contents: dict[str, str]) -> dict[str, Any]:
        """Meta for contents written without it (by deepagents, or by hand)."""
        entries = [
            [s.key, s.name, _sha(contents[s.key]), None, None] for s in self.sources if s.key in contents
        ]
        meta = {"v": _META_VERSION, "entries": entries, "skipped": {}, "pending": [], "checked_at": time.time()}
        meta["digest"] = _digest(entries)
        state[self.meta_key] = meta
        return meta

    # -- single flight --------------------------------------------------------

    def _claim(
        self, requests: Sequence[LoadRequest]
    ) -> tuple[list[tuple[int, Future[list[LoadResult]]]], list[tuple[int, Future[list[LoadResult]]]]]:
        """Split requests into those this caller reads and those already being read by another."""
        mine, theirs = [], []
        with self._lock:
            for index, request in enumerate(requests):
                key = _flight_key(request)
                future = self._inflight.get(key)
                if future is None:
                    future = Future()
                    self._inflight[key] = future
                    mine.append((index, future))
                else:
                    theirs.append((index, future))
        return mine, theirs

    def _release(
        self,
        requests: Sequence[LoadRequest],
        mine: list[tuple[int, Future[list[LoadResult]]]],
        loaded: list[LoadResult] | BaseException,
    ) -> dict[int, list[LoadResult]]:
        """Hand this caller's results to everyone waiting on them."""
        grouped: dict[int, list[LoadResult]] = {}
        if not isinstance(loaded, BaseException):
            # The loader expands globs in place: regroup the matches under their request.
            position = 0
            for index, _ in mine:
                key = requests[index].source.key
                group = grouped[index] = []
                while position < len(loaded) and _belongs(loaded[position].source, key):
                    group.append(loaded[position])
                    position += 1
        with self._lock:
            for index, _ in mine:
                self._inflight.pop(_flight_key(requests[index]), None)
        for index, future in mine:
            if isinstance(loaded, BaseException):
                future.set_exception(loaded)
            else:
                future.set_result(grouped[index])
        return grouped

    # -- merging a pass into the state ----------------------------------------

    def _merge(self, state: MutableMapping[str, Any], work: _Pass, results: dict[int, list[LoadResult]]) -> Snapshot:
        stats = {"cache_hits": 0, "revalidated": 0, "refreshed": 0, "stale": 0, "loaded": 0, "skipped": 0}
        reported: list[LoadResult] = []
        failures: list[tuple[str, str, str]] = []
        with self._lock:
            old_contents = state.get(self.state_key) or {}
            old_meta = state.get(self.meta_key) or work.meta or {}
            old_entries = {e[0]: e for e in old_meta.get("entries", ())}
            contents = dict(old_contents)
            entries_by_source: dict[str, list[list[Any]]] = {}
            for e in old_meta.get("entries", ()):
                entries_by_source.setdefault(e[4] or e[0], []).append(e)
            skipped = dict(old_meta.get("skipped", {}))
            for index, request in enumerate(work.requests):
                source = request.source
                group = results.get(index, [])
                new_entries: list[list[Any]] = []
                previous = {e[0]: e for e in entries_by_source.get(source.key, [])}
                glob_failed = source.glob and len(group) == 1 and group[0].source is source
                if glob_failed and group[0].reason in STALE_REASONS and previous:
                    for key, entry in previous.items():
                        events.source_stale(group[0].source, group[0].reason or "", group[0].detail, entry[2])
                        stats["stale"] += 1
                        new_entries.append(entry)
                    reported.append(replace(group[0], status="stale"))
                else:
                    matches = [r.source.key for r in group if r.source.parent == source.key]
                    if matches:
                        skipped.pop(source.key, None)
                        if work.force or matches != list(previous):
                            events.source_expanded(source, matches)
                    for result in group:
                        entry = self._merge_one(result, work, old_entries, contents, skipped, stats)
                        reported.append(result if entry is None or result.status != "skipped" else replace(result, status="stale"))
                        if entry is not None:
                            new_entries.append(entry)
                            skipped.pop(result.source.key, None)
                        if result.fatal:
                            failures.append((result.source.key, result.reason or "", result.detail))
                    seen = {e[0] for e in new_entries} | {r.source.key for r in group}
                    for key in previous:
                        if key not in seen:
                            contents.pop(key, None)
                            gone = replace(source, key=key, name=key, glob=False, parent=source.key)
                            events.source_skipped(gone, "not_found", "no longer matched by the glob")
                if request.fingerprint or request.sha256 or request.children:
                    stats["revalidated"] += len(group)
                entries_by_source[source.key] = new_entries
                if source.required and not new_entries:
                    reason = group[0].reason if group else "not_found"
                    failures.append((source.key, reason or "", group[0].detail if group else ""))
            ordered = [e for s in self.sources for e in entries_by_source.get(s.key, [])]
            self._parents.update({e[0]: e[4] for e in ordered if e[4] is not None})
            pending = [s.key for s in self.sources if s.required and not entries_by_source.get(s.key)]
            meta = {
                "v": _META_VERSION,
                "entries": ordered,
                "skipped": skipped,
                "pending": pending,
                "checked_at": time.time(),
                "digest": _digest(ordered),
            }
            keep = {e[0] for e in ordered}
            contents = {k: v for k, v in contents.items() if k in keep}
            state[self.state_key] = contents
            state[self.meta_key] = meta
            entries = tuple(Entry(e[0], e[1], contents[e[0]], e[2]) for e in ordered)
            self._remember(meta["digest"], entries)
        stats["cache_hits"] += len(ordered) - stats["refreshed"] - stats["loaded"] - stats["stale"]
        stats["cache_hits"] = max(stats["cache_hits"], 0)
        return Snapshot(entries, meta["digest"], tuple(reported), stats, tuple(failures), len(skipped))

    def _merge_one(
        self,
        result: LoadResult,
        work: _Pass,
        old_entries: dict[str, list[Any]],
        contents: dict[str, str],
        skipped: dict[str, str],
        stats: dict[str, int],
    ) -> list[Any] | None:
        """Fold one result into *contents*; the new meta entry, or None if the source is out."""
        source = result.source
        key = source.key
        old = old_entries.get(key)
        parent = source.parent
        force = work.force
        if result.status == "loaded":
            assert result.content is not None and result.sha256 is not None
            self._latest[key] = _Known(result.fingerprint, result.sha256, result.content, result.bytes)
            cache = "miss" if key not in contents else "refreshed"
            if force and old is not None and old[2] == result.sha256:
                cache = "hit"
            contents[key] = result.content
            if cache != "hit":
                stats["loaded" if cache == "miss" else "refreshed"] += 1
            events.source_loaded(result, len(result.content), cache)
            return [key, source.name, result.sha256, result.fingerprint, parent]
        if result.status == "unchanged":
            latest = work.basis.get(key)
            if old is not None and key in contents and old[2] == result.sha256:
                return [key, source.name, old[2], result.fingerprint or old[3], parent]
            if latest is not None and latest.sha256 == result.sha256:
                cache = "miss" if key not in contents else "refreshed"
                contents[key] = latest.content
                stats["loaded" if cache == "miss" else "refreshed"] += 1
                events.source_loaded(replace(result, bytes=latest.bytes), len(latest.content), cache)
                return [key, source.name, latest.sha256, result.fingerprint or latest.fingerprint, parent]
            # Nothing to serve from: should not happen, but never drop silently.
            events.source_skipped(source, "error", "unchanged but no copy is held", result.duration_ms)
            stats["skipped"] += 1
            skipped[key] = "error"
            return None
        # skipped
        reason = result.reason or "error"
        good = contents.get(key) if old is not None else None
        latest = self._latest.get(key)
        if reason in STALE_REASONS and not result.fatal and not force and (good is not None or latest is not None):
            if good is None and latest is not None:
                contents[key] = latest.content
            sha256 = old[2] if good is not None and old is not None else latest.sha256  # type: ignore[union-attr]
            events.source_stale(source, reason, result.detail, sha256)
            stats["stale"] += 1
            fingerprint = old[3] if old is not None and good is not None else None
            return [key, source.name, sha256, fingerprint, parent]
        if reason not in STALE_REASONS:
            self._latest.pop(key, None)
        contents.pop(key, None)
        known_out = skipped.get(key) == reason and not force
        skipped[key] = reason
        stats["skipped"] += 1
        if not known_out:  # a source still out for the same reason was logged when it went out
            events.source_skipped(source, reason, result.detail, result.duration_ms)
        return None

    # -- helpers ------------------------------------------------------------

    def _remember(self, digest: str, entries: tuple[Entry, ...]) -> None:
        self._snapshots[digest] = entries
        self._snapshots.move_to_end(digest)
        while len(self._snapshots) > _SNAPSHOT_MEMO:
            self._snapshots.popitem(last=False)


def _belongs(source: Source, key: str) -> bool:
    return source.parent == key if source.parent is not None else source.key == key


def _flight_key(request: LoadRequest) -> tuple[Any, ...]:
    return (request.source.key, request.source.url, request.fingerprint, request.sha256, tuple(sorted(request.children.items())))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(entries: Iterable[Sequence[Any]]) -> str:
    h = hashlib.sha256()
    for e in entries:
        h.update(f"{e[0]}\x1f{e[1]}\x1f{e[2]}\x1e".encode())
    return h.hexdigest()
