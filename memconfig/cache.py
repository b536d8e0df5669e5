"""The state cache stage: contents live in the caller's state; this decides what to read.

The caller's state mapping holds, as plain JSON-serialisable data:

* ``state[state_key]`` — ``{source: content}``, the shape deepagents uses, so a
  state written by either tool reads in the other;
* ``state[state_key + "_meta"]`` — per source in prompt order its name, hash,
  fingerprint, size and glob, and when it was read; the sources left out, why
  and since when; the sources to try again; when they were last checked; which
  configuration it was made for; a digest of it all.

Policies: ``once`` reads a source once per state; ``revalidate`` checks every
source's fingerprint on every render and re-reads only what changed; ``ttl``
revalidates at most every ``ttl`` seconds; ``always`` re-reads everything. Under
every policy, a state made under another configuration (sources added, removed,
renamed, re-pointed, or read differently) is read afresh.

Besides the state, the process keeps the newest good copy of each source, and
concurrent reads of one source against the same known version share one
fetch, so many threads or tasks rendering after a change cause one read per
changed source, whichever states they render for.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import stat
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from . import events
from .config import Config
from .loader import local_fingerprint
from .sources import Source
from .stages import Entry, Loader, LoadRequest, LoadResult, Snapshot

__all__ = ["STALE_REASONS", "PolicyCache"]

#: Failures after which a source keeps its last good content (they may pass).
STALE_REASONS = frozenset({"timeout", "remote_error", "permission_denied", "error"})
_META_VERSION = 1
_SNAPSHOT_MEMO = 64

Meta = dict[str, Any]
MetaEntry = dict[str, Any]  # {"source", "name", "url", "sha256", "fingerprint", "bytes", "glob", "stale", "read"}
OutRecord = dict[str, Any]  # {"reason", "fingerprint", "glob", "fatal", "since"}: a source left out of the prompt
Stamp = list[Any]  # [process, monotonic time] of the pass that read a version or took a source out

#: This process, in stamps: passes are ordered only against passes of the same process
#: (a wall clock from another host, or from before a clock step, would order them wrongly).
_PROCESS = uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class _Known:
    """A good version of a source held by this process."""

    fingerprint: str | None
    sha256: str
    content: str
    bytes: int
    read: Stamp  # the pass that read it


@dataclass(slots=True)
class _Pass:
    """One render's work: what to read, and what was known when it was asked."""

    requests: list[LoadRequest]
    force: bool
    started: float = field(default_factory=time.monotonic)
    revalidation: bool = False  # checking a state that holds contents, not filling an empty one
    basis: dict[str, _Known] = field(default_factory=dict)  # process copies the requests were made against


@dataclass(slots=True)
class _Claim:
    """What one caller reads (under one future) and what it waits for from others."""

    mine: list[int]  # indexes of the requests this caller reads
    keys: list[tuple[Any, ...]]  # their flight keys
    batch: Future[list[list[LoadResult]]]  # this caller's results, per request in *mine*
    theirs: list[tuple[int, Future[list[list[LoadResult]]], int]]  # (index, future, position in it)


class _Flights:
    """Single flight: concurrent reads of the same request share one result.

    A caller claims the requests nobody is reading yet, under one future for
    all of them; later callers asking for any of those wait on that future. A
    caller whose reader failed or was cancelled reads for itself.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading: dict[tuple[Any, ...], tuple[Future[list[list[LoadResult]]], int]] = {}

    def claim(self, requests: Sequence[LoadRequest], *, share: bool = True) -> _Claim:
        """Claim *requests*; with *share* false, read all of them alone (neither joining nor joined)."""
        claim = _Claim([], [], Future(), [])
        if not share:
            claim.mine = list(range(len(requests)))
            return claim
        keys = [_flight_key(request) for request in requests]
        with self._lock:
            for index, key in enumerate(keys):
                held = self._reading.get(key)
                if held is None:
                    self._reading[key] = (claim.batch, len(claim.mine))
                    claim.mine.append(index)
                    claim.keys.append(key)
                else:
                    claim.theirs.append((index, *held))
        return claim

    def release(
        self, requests: Sequence[LoadRequest], claim: _Claim, outcome: list[LoadResult] | BaseException
    ) -> dict[int, list[LoadResult]]:
        """Publish this caller's results (regrouped per request) to everyone waiting."""
        grouped = {} if isinstance(outcome, BaseException) else _group(requests, claim.mine, outcome)
        with self._lock:
            for flight in claim.keys:
                del self._reading[flight]
        if isinstance(outcome, BaseException):
            claim.batch.set_exception(outcome)
        else:
            claim.batch.set_result([grouped[index] for index in claim.mine])
        return grouped


class PolicyCache:
    """Keeps contents in state under ``state_key`` and refreshes them by *policy*.

    Args:
        sources: the configured sources, in order.
        policy: ``once``, ``revalidate``, ``ttl`` or ``always``.
        ttl: seconds between checks under ``ttl``.
        state_key: where contents live in a state mapping.
        reading: what else decides how sources read (encoding, limits); a state
            made under other settings is read afresh.
    """

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        policy: str = "once",
        ttl: float = 60.0,
        state_key: str = "memory_contents",
        reading: str = "",
    ) -> None:
        if policy not in ("once", "revalidate", "ttl", "always"):
            raise ValueError(f"unknown cache policy {policy!r}")
        self.sources = tuple(sources)
        self.policy = policy
        self.ttl = ttl
        self.state_key = state_key
        self.meta_key = f"{state_key}_meta"
        self._by_key = {s.key: s for s in self.sources}
        self._lock = threading.Lock()
        self._flights = _Flights()
        self._latest: dict[str, _Known] = {}
        self._parents: dict[str, str] = {}  # glob match key -> glob key, for matches in _latest
        self._snapshots: OrderedDict[str, tuple[Entry, ...]] = OrderedDict()
        self._indexes: OrderedDict[int, tuple[list[MetaEntry], dict[str, str | None] | None]] = OrderedDict()
        # The configuration a state was made for: what is read, from where, under which name, how.
        # Masked URLs: the state must not carry a hash of secrets that could be guessed offline.
        made_for = [reading] + [
            f"{s.key}\x1f{s.name}\x1f{s.display_url}\x1f{s.required}\x1f{s.glob}" for s in self.sources
        ]
        self._config_digest = hashlib.sha256("\x1e".join(made_for).encode()).hexdigest()
        local = [(s.key, s.local_path) for s in self.sources]
        # When every source is a plain local file, a revalidation is a loop of os.stat calls.
        self._stat_paths = local if all(path is not None for _, path in local) else None

    @classmethod
    def from_config(cls, config: Config, sources: Sequence[Source]) -> PolicyCache:
        opts, loader = config.cache, config.loader
        strip = config.formatter.layout(config.template_text).strip_html_comments  # decides what is empty
        reading = f"{loader.encoding}\x1f{loader.on_decode_error}\x1f{loader.max_bytes}\x1f{strip}"
        return cls(sources, policy=opts.policy, ttl=opts.ttl, state_key=opts.state_key, reading=reading)

    def __repr__(self) -> str:
        return (
            f"PolicyCache(policy={self.policy!r}, ttl={self.ttl}, state_key={self.state_key!r}, "
            f"sources={len(self.sources)})"
        )

    # -- the stage's verbs --------------------------------------------------

    def resolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Snapshot:
        """A consistent snapshot for *state*, reading what the policy says must be read."""
        work = self._plan(state, force)
        if isinstance(work, Snapshot):
            return work
        # On a thread running an event loop, waiting for a read that loop owns would never end.
        share = not _in_event_loop()
        results: dict[int, list[LoadResult]] = {}
        todo = list(range(len(work.requests)))
        while todo:  # again only for reads whose owner failed or was cancelled: one of us takes them over
            requests = [work.requests[i] for i in todo]
            claim = self._flights.claim(requests, share=share)
            if claim.mine:
                try:
                    loaded = loader.load([requests[i] for i in claim.mine])
                except BaseException as exc:
                    self._flights.release(requests, claim, exc)
                    raise
                results.update({todo[i]: group for i, group in self._flights.release(requests, claim, loaded).items()})
            retry = []
            for i, future, slot in claim.theirs:
                try:
                    results[todo[i]] = future.result()[slot]
                except BaseException:
                    retry.append(todo[i])
            todo = retry
        return self._merge(state, work, results)

    async def aresolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Snapshot:
        """:meth:`resolve` for asyncio callers."""
        work = self._plan(state, force)
        if isinstance(work, Snapshot):
            return work
        results: dict[int, list[LoadResult]] = {}
        todo = list(range(len(work.requests)))
        while todo:  # again only for reads whose owner failed or was cancelled: one of us takes them over
            requests = [work.requests[i] for i in todo]
            claim = self._flights.claim(requests)
            if claim.mine:
                try:
                    loaded = await loader.aload([requests[i] for i in claim.mine])
                except BaseException as exc:
                    self._flights.release(requests, claim, exc)
                    raise
                results.update({todo[i]: group for i, group in self._flights.release(requests, claim, loaded).items()})
            retry = []
            for i, future, slot in claim.theirs:
                try:
                    # Shielded: cancelling this task must not cancel the read others wait for.
                    results[todo[i]] = (await asyncio.shield(asyncio.wrap_future(future)))[slot]
                except BaseException:
                    if not future.done():
                        raise  # this task itself was cancelled
                    retry.append(todo[i])
            todo = retry
        return self._merge(state, work, results)

    # -- planning -----------------------------------------------------------

    def _read_state(self, state: MutableMapping[str, Any]) -> tuple[dict[str, str] | None, Meta]:
        with self._lock:
            contents = state.get(self.state_key)
            meta = state.get(self.meta_key)
            if contents is not None and not isinstance(meta, dict):
                meta = self._adopt(state, contents)
            elif contents is not None and isinstance(meta, dict) and len(contents) != len(meta.get("entries", ())):
                contents, meta = self._repair(state, contents, meta)
        return contents, meta or {}

    def _plan(self, state: MutableMapping[str, Any], force: bool) -> _Pass | Snapshot:
        contents, meta = self._read_state(state)
        current = meta.get("sources") == self._config_digest
        wanted: Sequence[Source] = self.sources
        if contents is not None and current and not force and self.policy != "always":
            due = self.policy == "revalidate" or (
                self.policy == "ttl" and time.time() - meta.get("checked_at", 0.0) >= self.ttl
            )
            if not due:
                wanted = [self._by_key[k] for k in meta.get("pending", ()) if k in self._by_key]
                if not wanted:
                    return self._snapshot(meta, contents, {"revalidated": 0})
            elif self._stat_paths is not None and not meta.get("pending") and self._unchanged_on_disk(meta):
                if self.policy == "ttl":
                    with self._lock:
                        if state.get(self.meta_key) is meta:  # unless another render changed it meanwhile
                            state[self.meta_key] = meta = {**meta, "checked_at": time.time()}
                return self._snapshot(meta, contents, {"revalidated": len(self._stat_paths)})
        work = _Pass([], force, revalidation=contents is not None and current and not force)
        if force or (contents is not None and not current):  # read everything as it is now, whatever is held
            work.requests = [LoadRequest(source) for source in wanted]
            return work
        held = contents or {}
        known = {e["source"]: e for e in meta.get("entries", ()) if e["source"] in held}
        out: dict[str, OutRecord] = meta.get("skipped", {})
        with self._lock:
            work.requests = [self._request(source, known, out, work) for source in wanted]
        return work

    def _request(
        self, source: Source, known: Mapping[str, MetaEntry], out: Mapping[str, OutRecord], work: _Pass
    ) -> LoadRequest:
        """Ask for *source*, giving the newest version held (or seen, if it was left out) for "unchanged"."""

        def version(key: str) -> tuple[str | None, str | None]:
            latest = self._latest.get(key)
            if latest is not None:
                work.basis[key] = latest
                fingerprint, sha256 = latest.fingerprint, latest.sha256
            elif key in known:
                fingerprint, sha256 = known[key]["fingerprint"], known[key]["sha256"]
            elif key in out and not out[key].get("fatal"):  # a fatal one is read again, to fail again
                fingerprint, sha256 = out[key].get("fingerprint"), None  # left out for its content
            else:
                return None, None
            return (None if self.policy == "always" else fingerprint), sha256

        if source.glob:
            keys = {k for k, e in known.items() if e["glob"] == source.key}
            keys |= {k for k, r in out.items() if r.get("glob") == source.key}
            keys |= {k for k, parent in self._parents.items() if parent == source.key}
            return LoadRequest(source, children={k: version(k) for k in keys})
        return LoadRequest(source, *version(source.key))

    def _unchanged_on_disk(self, meta: Meta) -> bool:
        """Whether every (local) source still has the fingerprint *meta* recorded, in or out of the prompt."""
        with self._lock:
            index = self._fingerprint_index(meta["entries"])
        if index is None:
            return False
        out: dict[str, OutRecord] = meta.get("skipped", {})
        for key, path in self._stat_paths or ():
            try:
                info = os.stat(path)  # type: ignore[arg-type]
            except FileNotFoundError:
                if key in out and out[key]["reason"] == "not_found":
                    continue
                return False
            except OSError:
                return False
            fingerprint = local_fingerprint(info)
            if index.get(key) == fingerprint:
                continue
            if key in out and (
                out[key].get("fingerprint") == fingerprint
                or (stat.S_ISDIR(info.st_mode) and out[key]["reason"] == "is_directory")
            ):
                continue
            return False
        return True

    def _fingerprint_index(self, entries: list[MetaEntry]) -> dict[str, str | None] | None:
        """Fingerprints by source for a meta entry list (kept while that list is, so its id stays unique).

        None if a source is stale: its recovery must be read and logged, which only the full pass does.
        """
        held = self._indexes.get(id(entries))
        if held is None or held[0] is not entries:
            stale = any(e.get("stale") for e in entries)
            held = (entries, None if stale else {e["source"]: e["fingerprint"] for e in entries})
            self._indexes[id(entries)] = held
            while len(self._indexes) > _SNAPSHOT_MEMO:
                self._indexes.popitem(last=False)
        return held[1]

    def _repair(
        self, state: MutableMapping[str, Any], contents: dict[str, str], meta: Meta
    ) -> tuple[dict[str, str], Meta]:
        """Contents and meta that disagree (a key deleted by hand, deepagents' way to force a reload).

        What both hold stays; a source whose content is gone is read again on this render.
        """
        entries = [e for e in meta.get("entries", ()) if e["source"] in contents]
        gone = {e["glob"] or e["source"] for e in meta.get("entries", ()) if e["source"] not in contents}
        pending = list(dict.fromkeys([*meta.get("pending", ()), *(k for k in gone if k in self._by_key)]))
        kept = {e["source"] for e in entries}
        contents = {k: v for k, v in contents.items() if k in kept}
        meta = {**meta, "entries": entries, "pending": pending, "digest": _digest(entries)}
        state[self.state_key], state[self.meta_key] = contents, meta
        return contents, meta

    def _adopt(self, state: MutableMapping[str, Any], contents: Mapping[str, str]) -> Meta:
        """Meta for contents written without it (by deepagents, or by hand).

        What the state holds is taken as is; the sources it lacks are tried on
        the next render, so each ends up in the prompt or logged as skipped.
        """
        entries = [
            _entry(s, _sha(contents[s.key]), None, len(contents[s.key].encode()), [])
            for s in self.sources
            if s.key in contents
        ]
        missing = [s.key for s in self.sources if s.key not in contents]
        meta = _meta(entries, {}, missing, self._config_digest)
        state[self.meta_key] = meta
        return meta

    # -- merging a pass into the state ----------------------------------------

    def _merge(self, state: MutableMapping[str, Any], work: _Pass, results: Mapping[int, list[LoadResult]]) -> Snapshot:
        """Fold a pass's results into *state*, log what changed, and snapshot the result."""
        with self._lock:
            meta = state.get(self.meta_key) or {}
            merge = _Merge(work, self._latest, dict(state.get(self.state_key) or {}), meta, self._by_key)
            for index, request in enumerate(work.requests):
                merge.source(request.source, results.get(index, []))
            ordered = [e for s in self.sources for e in merge.by_source.get(s.key, [])]
            # Only configured sources (and their glob matches) count as left out: not ones since removed.
            skipped = {k: r for k, r in merge.skipped.items() if k in self._by_key or r.get("glob") in self._by_key}
            pending = [
                s.key for s in self.sources if s.key in merge.fatal or (s.required and not merge.by_source.get(s.key))
            ]
            unchanged = (
                not merge.changed
                and meta.get("sources") == self._config_digest
                and _same(ordered, meta["entries"])
                and skipped == meta.get("skipped", {})
                and pending == meta.get("pending", [])
            )
            if unchanged:
                if self.policy == "ttl":
                    state[self.meta_key] = meta = {**meta, "checked_at": time.time()}
            else:
                self._parents.update({e["source"]: e["glob"] for e in ordered if e["glob"] is not None})
                keep = {e["source"] for e in ordered}
                state[self.state_key] = {k: v for k, v in merge.contents.items() if k in keep}
                state[self.meta_key] = meta = _meta(ordered, skipped, pending, self._config_digest)
            snapshot = self._snapshot(
                meta, state[self.state_key], merge.stats, tuple(merge.reported), tuple(merge.failures), locked=True
            )
        with events.one_pass():  # logged outside the lock: other renders need not wait on log I/O
            for emit in merge.log:
                emit()
        return snapshot

    # -- snapshots ----------------------------------------------------------

    def _snapshot(
        self,
        meta: Meta,
        contents: Mapping[str, str],
        stats: dict[str, int],
        results: tuple[LoadResult, ...] = (),
        failures: tuple[tuple[str, str, str], ...] = (),
        *,
        locked: bool = False,
    ) -> Snapshot:
        """The entries of *meta*, shared by every state with the same digest."""
        digest = meta["digest"]
        if not locked:
            self._lock.acquire()
        try:
            entries = self._snapshots.get(digest)
            if entries is None:
                entries = tuple(
                    Entry(e["source"], e["name"], contents[e["source"]], e["sha256"]) for e in meta["entries"]
                )
                self._snapshots[digest] = entries
                while len(self._snapshots) > _SNAPSHOT_MEMO:
                    self._snapshots.popitem(last=False)
        finally:
            if not locked:
                self._lock.release()
        fresh = stats.get("loaded", 0) + stats.get("refreshed", 0) + stats.get("stale", 0)
        stats = {"cache_hits": len(entries) - fresh, "refreshed": 0, "stale": 0, "loaded": 0, "skipped": 0, **stats}
        return Snapshot(entries, digest, results, stats, failures, len(meta.get("skipped", ())))


class _Merge:
    """Folding one pass's results into copies of a state's contents and meta.

    Holds what the pass changes (contents, sources left out, counts), what it
    reports (results, failures) and the events to log once the cache's lock is
    released; the cache writes the outcome back under its lock.
    """

    def __init__(
        self,
        work: _Pass,
        latest: dict[str, _Known],
        contents: dict[str, str],
        meta: Meta,
        configured: Mapping[str, Source],
    ) -> None:
        self.work = work
        self.configured = configured  # a glob match that is also configured on its own belongs to that source
        self.latest = latest  # the cache's process-wide copies; updated as sources load or vanish
        self.contents = contents
        self.skipped: dict[str, OutRecord] = dict(meta.get("skipped", {}))
        self.old: dict[str, MetaEntry] = {e["source"]: e for e in meta.get("entries", ())}
        self.by_source: dict[str, list[MetaEntry]] = {}
        for e in meta.get("entries", ()):
            self.by_source.setdefault(e["glob"] or e["source"], []).append(e)
        self.stats = {"revalidated": 0, "refreshed": 0, "stale": 0, "loaded": 0, "skipped": 0}
        self.reported: list[LoadResult] = []
        self.failures: list[tuple[str, str, str]] = []
        self.fatal: set[str] = set()  # configured sources whose failure fails every render until fixed
        self.log: list[Callable[[], None]] = []

    @property
    def changed(self) -> bool:
        stats = self.stats
        return bool(stats["loaded"] or stats["refreshed"] or stats["stale"] or stats["skipped"] or self.work.force)

    def source(self, source: Source, group: list[LoadResult]) -> None:
        """Fold the results of one configured source (a glob: all its matches)."""
        if self.work.revalidation:
            self.stats["revalidated"] += len(group)
        kept = self._glob(source, group) if source.glob else self._file(group[0])
        self.by_source[source.key] = kept
        for result in group:
            if result.fatal:
                self.fatal.add(source.key)
                self.failures.append((result.source.key, result.reason or "", result.detail))
        if source.required and not kept:
            first = group[0] if group else None
            reason = (first.reason or "") if first else "not_found"
            self.failures.append((source.key, reason, first.detail if first else ""))

    def _glob(self, source: Source, group: list[LoadResult]) -> list[MetaEntry]:
        group = [r for r in group if r.source.parent is None or r.source.key not in self.configured]
        previous = {e["source"]: e for e in self.by_source.get(source.key, [])}
        failed = group[0] if len(group) == 1 and group[0].source is source else None  # the listing itself
        if failed is not None and failed.reason in STALE_REASONS and previous:
            for held in previous.values():
                self.log.append(
                    functools.partial(events.source_stale, failed.source, failed.reason, failed.detail, held["sha256"])
                )
                self.stats["stale"] += 1
            self.reported.append(replace(failed, status="stale"))
            return [{**held, "stale": failed.reason} for held in previous.values()]
        matches = [r.source.key for r in group if r.source.parent == source.key]
        if matches:
            self.skipped.pop(source.key, None)
            if self.work.force or matches != list(previous):
                self.log.append(functools.partial(events.source_expanded, source, matches))
        kept = [entry for result in group for entry in self._file(result)]
        for key in previous.keys() - {r.source.key for r in group}:
            self.contents.pop(key, None)
            gone = replace(source, key=key, name=key, glob=False, parent=source.key)
            self.log.append(
                functools.partial(events.source_skipped, gone, "not_found", "no longer matched by the glob")
            )
            self.stats["skipped"] += 1
        return kept

    def _file(self, result: LoadResult) -> list[MetaEntry]:
        """The entry of one file (none if it is out of the prompt); records its result as reported."""
        entry = self._one(result)
        if entry is None:
            self.reported.append(result)
            return []
        self.reported.append(result if result.ok else replace(result, status="stale"))
        self.skipped.pop(result.source.key, None)
        return [entry]

    def _one(self, result: LoadResult) -> MetaEntry | None:
        source, key = result.source, result.source.key
        old = self.old.get(key)
        # Content held for this source, from this location (not one the source pointed to before).
        held = old if old is not None and key in self.contents and old.get("url") == source.display_url else None
        out = self.skipped.get(key)
        if not self.work.force:
            if held is not None and self._later(held.get("read")):
                return held  # a pass that began after this one already put a newer version here
            if out is not None and self._later(out.get("since")):
                return None  # a pass that began after this one already took the source out
        stamp = [_PROCESS, self.work.started]
        if result.status == "loaded":
            assert result.content is not None and result.sha256 is not None
            latest = self.latest.get(key)
            if latest is None or latest.read[1] <= self.work.started:
                self.latest[key] = _Known(result.fingerprint, result.sha256, result.content, result.bytes, stamp)
            self._take(result, result.content, held)
            return _entry(source, result.sha256, result.fingerprint, result.bytes, stamp)
        if result.status == "unchanged":
            latest = self.latest.get(key)
            # A check found a usable fingerprint for the copy this process holds (its read had none): keep it.
            if (
                latest is not None
                and latest.sha256 == result.sha256
                and result.fingerprint not in (None, latest.fingerprint)
            ):
                self.latest[key] = replace(latest, fingerprint=result.fingerprint)
            if held is not None and held["sha256"] == result.sha256:
                if held.get("stale"):  # back after failing: on record as loaded again
                    self._take(replace(result, bytes=held["bytes"]), self.contents[key], held)
                fingerprint = result.fingerprint or held["fingerprint"]
                return _entry(source, held["sha256"], fingerprint, held["bytes"], held.get("read", []))
            basis = self.work.basis.get(key)
            if basis is not None and basis.sha256 == result.sha256:  # newer in this process than in this state
                self._take(replace(result, bytes=basis.bytes), basis.content, held)
                fingerprint = result.fingerprint or basis.fingerprint
                return _entry(source, basis.sha256, fingerprint, basis.bytes, basis.read)
            if held is None and out is not None and result.fingerprint and out.get("fingerprint") == result.fingerprint:
                return None  # left out for its content, and that content has not changed
            result = replace(result, status="skipped", reason="error", detail="reported unchanged, but no copy is held")
        return self._out(result, held)

    def _later(self, stamp: Stamp | None) -> bool:
        """Whether *stamp* is of a pass of this process that began after this one."""
        return stamp is not None and len(stamp) == 2 and stamp[0] == _PROCESS and stamp[1] > self.work.started

    def _out(self, result: LoadResult, held: MetaEntry | None) -> MetaEntry | None:
        """A source that did not load: stale if a good copy exists and the failure may pass, else out."""
        source, key = result.source, result.source.key
        reason = result.reason or "error"
        latest = self.latest.get(key)
        if reason in STALE_REASONS and not result.fatal and (held or latest):
            if held is not None:
                sha256, fingerprint, size, read = (
                    held["sha256"],
                    held["fingerprint"],
                    held["bytes"],
                    held.get("read", []),
                )
            else:
                assert latest is not None
                self.contents[key] = latest.content
                sha256, fingerprint, size, read = latest.sha256, latest.fingerprint, latest.bytes, latest.read
            self.log.append(functools.partial(events.source_stale, source, reason, result.detail, sha256))
            self.stats["stale"] += 1
            return _entry(source, sha256, fingerprint, size, read, stale=reason)
        if reason not in STALE_REASONS:
            self.latest.pop(key, None)
        self.contents.pop(key, None)
        before = self.skipped.get(key)
        if before is not None and before["reason"] == reason and not self.work.force:
            # Still out for the same reason: logged when it went out.
            self.skipped[key] = {**before, "fingerprint": result.fingerprint}
        else:
            since = [_PROCESS, self.work.started]
            self.skipped[key] = {
                "reason": reason,
                "fingerprint": result.fingerprint,
                "glob": source.parent,
                "fatal": result.fatal,
                "since": since,
            }
            self.stats["skipped"] += 1
            self.log.append(functools.partial(events.source_skipped, source, reason, result.detail, result.duration_ms))
        return None

    def _take(self, result: LoadResult, content: str, held: MetaEntry | None) -> None:
        """Put read content in place and log it as a miss, a refresh, or (read again, same bytes) a hit."""
        if held is None:
            cache = "miss"
            self.stats["loaded"] += 1
        elif held["sha256"] == result.sha256 and not held.get("stale"):
            cache = "hit"
        else:
            cache = "refreshed"
            self.stats["refreshed"] += 1
        self.contents[result.source.key] = content
        self.log.append(functools.partial(events.source_loaded, result, len(content), cache))


def _entry(
    source: Source, sha256: str, fingerprint: str | None, size: int, read: Stamp, stale: str | None = None
) -> MetaEntry:
    """One source's record in the state's meta; *stale*: why its last refresh failed, if it did."""
    return {
        "source": source.key,
        "name": source.name,
        "url": source.display_url,  # where the content came from (masked)
        "sha256": sha256,
        "fingerprint": fingerprint,
        "bytes": size,
        "glob": source.parent,
        "stale": stale,
        "read": read,  # the pass that read this version
    }


def _meta(entries: list[MetaEntry], skipped: dict[str, OutRecord], pending: list[str], sources: str) -> Meta:
    return {
        "v": _META_VERSION,
        "sources": sources,  # digest of the configuration this was made for
        "entries": entries,
        "skipped": skipped,
        "pending": pending,  # sources to try again on the next render, whatever the policy
        "checked_at": time.time(),
        "digest": _digest(entries),
    }


def _group(
    requests: Sequence[LoadRequest], indexes: list[int], outcome: list[LoadResult]
) -> dict[int, list[LoadResult]]:
    """The loader's flat results regrouped per request (it expands a glob into its matches in place)."""
    if len(outcome) == len(indexes) and all(r.source.parent is None for r in outcome):
        return {index: [result] for index, result in zip(indexes, outcome, strict=True)}
    grouped: dict[int, list[LoadResult]] = {}
    position = 0
    for index in indexes:
        key = requests[index].source.key
        group = grouped[index] = []
        while position < len(outcome) and _belongs(outcome[position].source, key):
            group.append(outcome[position])
            position += 1
    return grouped


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _same(new: Sequence[MetaEntry], old: Sequence[MetaEntry]) -> bool:
    """Same sources, names, hashes and fingerprints in the same order."""
    return len(new) == len(old) and all(a == b for a, b in zip(new, old, strict=True))


def _belongs(source: Source, key: str) -> bool:
    return source.parent == key if source.parent is not None else source.key == key


def _flight_key(request: LoadRequest) -> tuple[Any, ...]:
    children = tuple(sorted(request.children.items()))
    return (request.source.key, request.source.url, request.fingerprint, request.sha256, children)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(entries: Iterable[MetaEntry]) -> str:
    """The identity of a prompt's contents: sources, names and hashes, in order."""
    text = "".join([f"{e['source']}\x1f{e['name']}\x1f{e['sha256']}\x1e" for e in entries])
    return hashlib.sha256(text.encode()).hexdigest()
