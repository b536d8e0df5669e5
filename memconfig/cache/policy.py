"""The state cache stage: contents live in the caller's state; this decides what to read.

The caller's state holds plain JSON: ``state[state_key]`` is ``{source: content}``,
the shape deepagents uses, and ``state[state_key + "_meta"]`` the cache's record of
it (:mod:`memconfig.cache.meta`), a dataclass everywhere in here and JSON only
where the state is read and written (:mod:`memconfig.cache.stored`).

Policies: ``once`` reads a source once per state; ``revalidate`` checks every
source's fingerprint on every render and re-reads only what changed; ``ttl``
revalidates at most every ``ttl`` seconds; ``always`` re-reads everything;
``watch`` checks only what a file watcher reported changed (and so, with
nothing changed, touches no file at all: :mod:`~memconfig.cache.watcher`). Under
every policy, a state made under another configuration — other sources, or
any stage whose token differs (how files are read, processed, laid out) — is
read afresh.

Besides the state, the process keeps the newest good copy of each source
(:mod:`~memconfig.cache.store`), and concurrent reads of one source against
the same known version share one fetch (:mod:`~memconfig.cache.flights`).
The logic is written once, as a flow (:mod:`memconfig.drive`): sync and async
renders run the same code.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, MutableMapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

from .. import events
from ..collector import paused
from ..drive import Flow, LoopBlocked, Shared
from ..held import Held
from ..model import (
    Failure,
    LoadRequest,
    LoadResult,
    LocalCheck,
    Records,
    Section,
    SkipReason,
    Snapshot,
    SourceRecord,
    Status,
)
from ..stages import Loader, LoaderCapabilities
from .flights import Flights
from .merge import STALE_REASONS, Merge, Pass, sha
from .meta import Expansion, Meta, MetaEntry, OutRecord, digest
from .repeats import mark_repeats, repeated_key
from .store import LatestCopies
from .stored import StoredMeta, Unusable

if TYPE_CHECKING:
    from ..config.schema import CacheConfig
    from ..model import ImportSettings
    from ..sources import Source
    from .watcher import Watching

__all__ = ["STALE_REASONS", "PolicyCache"]

_Visit = tuple[str, str, str, str | None, str | None]  # a source to record: key, name, url, parent, via
_MEMO = 8  # distinct blocks kept: enough for states that differ, small enough to stay flat under churn
#: This process, in stamps: passes are ordered only against passes of the same process
#: (a wall clock from another host, or from before a clock step, would order them wrongly).
_PROCESS = uuid.uuid4().hex


class PolicyCache:
    """Keeps contents in state under ``state_key`` and refreshes them by *policy*.

    Args:
        sources: the configured sources, in order.
        policy: ``once``, ``revalidate``, ``ttl``, ``always`` or ``watch``.
        ttl: seconds between checks under ``ttl``.
        state_key: where contents live in a state mapping.
        tokens: the tokens of the other stages (loader, processors, formatter);
            a state made under other tokens is read afresh.
    """

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        policy: str = "once",
        ttl: float = 60.0,
        state_key: str = "memory_contents",
        tokens: Sequence[str] = (),
    ) -> None:
        if policy not in ("once", "revalidate", "ttl", "always", "watch"):
            raise ValueError(f"unknown cache policy {policy!r}")
        self.sources = tuple(sources)
        self.policy = policy
        self.ttl = ttl
        self.state_key = state_key
        self.meta_key = f"{state_key}_meta"
        self._stored = StoredMeta(self.meta_key)  # the state's meta as JSON: each object read once
        self._by_key = {s.key: s for s in self.sources}
        self._own_keys = {s.key: s.key for s in self.sources}
        self._cold = {s.key: LoadRequest(s) for s in self.sources}  # what is asked of a source nothing is known of
        self._lock = threading.Lock()
        self._flights = Flights()
        self._latest = LatestCopies()
        self._views: OrderedDict[str, tuple[tuple[Section, ...], Records]] = OrderedDict()
        self._quiet: OrderedDict[tuple[str, int], Snapshot] = OrderedDict()
        self._sections_held: Held[Section] = Held()  # the last sections made: given again while unchanged
        self._records_held: Held[_Recorded] = Held()
        self._checks: OrderedDict[int, tuple[Meta, tuple[LocalCheck, ...] | None]] = OrderedDict()
        self._watching: Watching | None = None  # made on the first render under ``watch`` (it needs the loader)
        self._served: tuple[Loader, LoaderCapabilities] | None = None  # the loader last served, asked once
        # The configuration a state is made for: what is read, from where, under which name, and every stage's
        # token. Masked URLs: the state must not carry a hash of secrets that could be guessed offline.
        made_for = [*tokens] + [
            f"{s.key}\x1f{s.name}\x1f{s.display_url}\x1f{s.required}\x1f{s.expander}"
            + ("" if s.imports is None else f"\x1f{s.imports.token}")
            for s in self.sources
        ]
        self._imports = {s.key: s.imports for s in self.sources if s.imports is not None}
        self.made_for = hashlib.sha256("\x1e".join(made_for).encode()).hexdigest()
        local = [(s.key, s.local_path) for s in self.sources]
        # When every source is a plain local file, a revalidation can be a loop of os.stat calls.
        self._stat_paths = [(k, p) for k, p in local if p is not None] if all(p for _, p in local) else None

    @classmethod
    def from_config(cls, opts: CacheConfig, sources: Sequence[Source], tokens: Sequence[str] = ()) -> PolicyCache:
        """The cache the config's ``cache`` section describes, for *sources*, under the stages' *tokens*."""
        return cls(sources, policy=opts.policy, ttl=opts.ttl, state_key=opts.state_key, tokens=tokens)

    def __repr__(self) -> str:
        return (
            f"PolicyCache(policy={self.policy!r}, ttl={self.ttl}, state_key={self.state_key!r}, "
            f"sources={len(self.sources)})"
        )

    @property
    def watching(self) -> Watching | None:
        """The watcher of the ``watch`` policy (``None`` under another policy, or before the first render).

        ``memconfig render --watch`` waits on it (:meth:`Watching.wait`) to know when to render again.
        """
        return self._watching

    def close(self) -> None:
        """Stop the ``watch`` policy's watcher (idempotent); the next render starts one and checks every source."""
        with self._lock:
            watching, self._watching = self._watching, None
        if watching is not None:
            watching.close()

    # -- the stage's verb -----------------------------------------------------

    def resolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Flow[Snapshot]:
        """A consistent snapshot for *state*, reading what the policy says must be read."""
        served = self._served
        can = served[1] if served is not None and served[0] is loader else self.serve(loader)
        work = self._plan(state, force, can)
        if isinstance(work, Snapshot):
            return work
        results: dict[int, list[LoadResult]] = {}
        todo = list(range(len(work.requests)))
        share = True
        while todo:  # again only for reads whose owner failed or was cancelled: one of us takes them over
            requests = [work.requests[i] for i in todo]
            claim = self._flights.claim(requests, share=share)
            if claim.mine:
                try:
                    loaded = yield from _load(loader, can, [requests[i] for i in claim.mine])
                except BaseException as exc:
                    self._flights.release(requests, claim, exc)
                    raise
                results.update({todo[i]: group for i, group in self._flights.release(requests, claim, loaded).items()})
            retry = []
            for i, future, slot in claim.theirs:
                try:
                    results[todo[i]] = (yield Shared(future))[slot]
                except LoopBlocked:  # the driver would block the loop that may own it: read alone
                    retry.append(todo[i])
                    share = False
                except BaseException:
                    if not future.done():
                        raise  # this render itself was cancelled
                    retry.append(todo[i])
            todo = retry
        if self._imports:  # the files they import, read in this pass too
            from .imports import expand_imports, without_orphans  # only configs that import pay for it

            load = functools.partial(_load, loader, can)
            results = yield from expand_imports(results, load, self._import_request(work), self._text_of(state, work))
            return self._merge(state, work, without_orphans(mark_repeats(results, self._claimed(work))))
        return self._merge(state, work, mark_repeats(results, self._claimed(work)))

    def _claimed(self, work: Pass) -> Mapping[str, str]:
        """The keys held outside *work*'s results, each with its declared source: a repeat of one is a ``duplicate``.

        Every declared source's own key, and, when only some sources are read,
        the children held of the others (a discovery not due this turn keeps its files).
        """
        if work.held is None or len(work.requests) == len(self.sources):
            return self._own_keys
        asked = {request.source.key for request in work.requests}
        held = {key: entry.root for key, entry in work.held[0].items() if entry.root not in asked}
        return held | self._own_keys

    def serve(self, loader: Loader, can: LoaderCapabilities | None = None) -> LoaderCapabilities:
        """Serve renders read by *loader*, which can do *can* (asked of it now, if not given): asked once."""
        if can is None:
            can = LoaderCapabilities.of(loader)
        self._served = (loader, can)
        return can

    def _import_request(self, work: Pass) -> Callable[[Source], LoadRequest]:
        """How an imported file is asked for: with the version known of it, as a declared source is."""

        def request(source: Source) -> LoadRequest:
            if work.held is None:
                return LoadRequest(source)
            with self._lock:
                fingerprint, sha256 = self._version(source.key, *work.held, work)
            return LoadRequest(source, fingerprint, sha256)

        return request

    def _text_of(self, state: MutableMapping[str, Any], work: Pass) -> Callable[[LoadResult], str | None]:
        """The text of a file a pass read, or found unchanged (from the copy it was found equal to)."""

        def text(result: LoadResult) -> str | None:
            if result.content is not None:
                return result.content
            key = result.source.key
            for copy in (work.basis.get(key), self._latest.copies.get(key)):
                if copy is not None and copy.sha256 == result.sha256:
                    return copy.content
            held = state.get(self.state_key)
            return held.get(key) if isinstance(held, Mapping) else None

        return text

    # -- planning -------------------------------------------------------------

    def _read_state(self, state: MutableMapping[str, Any]) -> tuple[dict[str, str] | None, Meta | None]:
        """The state's contents and meta; meta ``None`` when the contents must be read afresh."""
        with self._lock:
            contents = state.get(self.state_key)
            if contents is None:
                return None, None
            meta = self._stored.read(state)
            if type(meta) is not Meta:
                if meta is Unusable.ADOPT:  # written without meta (deepagents, by hand): taken as it is
                    return contents, self._adopt(state, contents)
                return contents, None  # written by a later memconfig
            if meta.made_for != self.made_for:
                return contents, None  # made under another configuration
            if len(contents) != len(meta.entries):
                contents, meta = self._repair(state, contents, meta)
        return contents, meta

    def _plan(self, state: MutableMapping[str, Any], force: bool, can: LoaderCapabilities) -> Pass | Snapshot:
        contents, meta = self._read_state(state)
        current = meta is not None
        wanted: Sequence[Source] = self.sources
        watching = self._watch(can) if self.policy == "watch" else None  # no call on other policies' turns
        changes: list[str] | None = None  # under ``watch``: the sources to check (None: every one)
        seen = checked = 0  # checked: sources found unchanged by a stat alone, not asked of the loader
        if watching is not None:
            changes, seen = watching.due(meta) if meta is not None else (None, watching.changes)
        if contents is not None and meta is not None and not force and self.policy != "always":
            due = (self.policy in ("revalidate", "watch") and changes is None) or (
                self.policy == "ttl" and time.time() - meta.checked_at >= self.ttl
            )
            if not due:
                keys = meta.pending if changes is None else dict.fromkeys([*meta.pending, *changes])
                wanted = [self._by_key[k] for k in keys if k in self._by_key]
                if not wanted:
                    return self._snapshot(meta, contents, {"revalidated": 0})
            elif not meta.pending and (moved := self._changed_on_disk(meta, can)) is not None:
                if moved:  # read what changed; the rest was just found as it is held
                    wanted = [self._by_key[k] for k in moved]
                    checked = len(self.sources) - len(wanted)
                else:
                    if self.policy == "ttl":
                        meta = self._mark_checked(state, meta)
                    if watching is not None:
                        watching.checked(meta, seen)
                    return self._snapshot(meta, contents, {"revalidated": len(self.sources)})
        work = Pass([], force, _PROCESS, revalidation=contents is not None and current and not force)
        work.seen, work.checked = seen, checked
        if force or (contents is not None and not current):  # read everything as it is now, whatever is held
            work.requests = [LoadRequest(source) for source in wanted]
            return work
        held = contents or {}
        entries = meta.entries if meta is not None else ()
        known = {e.key: e for e in entries if e.key in held}
        out: Mapping[str, OutRecord] = meta.skipped if meta is not None else {}
        work.held = (known, out)
        with self._lock:
            work.requests = [self._request(source, known, out, work) for source in wanted]
        return work

    def _watch(self, can: LoaderCapabilities) -> Watching:
        """The ``watch`` policy's watcher, made on first use."""
        if self._watching is None:
            with self._lock:
                if self._watching is None:
                    from .watcher import Watching  # only the watch policy pays for it

                    self._watching = Watching(self.sources, can.expanders or _expanders())
        return self._watching

    def _request(
        self, source: Source, known: Mapping[str, MetaEntry], out: Mapping[str, OutRecord], work: Pass
    ) -> LoadRequest:
        """Ask for *source*, giving the newest version held (or seen, if it was left out) for "unchanged"."""
        if source.expander is not None:
            keys = {k for k, e in known.items() if e.lineage and e.lineage[0] == source.key}
            outs = [k for k, r in out.items() if r.lineage and r.lineage[0] == source.key]
            keys.update(outs)
            keys |= self._latest.children.get(source.key, frozenset())
            children = {k: self._version(k, known, out, work) for k in keys}
            for key in outs:  # a match held by another source under its key: asked by that key, at its last version
                record = out[key]
                own = repeated_key(key, record.lineage[-1]) if record.reason == SkipReason.DUPLICATE else None
                if own is not None:
                    children.setdefault(own, children[key])
            return LoadRequest(source, children=children)
        fingerprint, sha256 = self._version(source.key, known, out, work)
        if fingerprint is None and sha256 is None:
            return self._cold[source.key]
        return LoadRequest(source, fingerprint, sha256)

    def _version(
        self, key: str, known: Mapping[str, MetaEntry], out: Mapping[str, OutRecord], work: Pass
    ) -> tuple[str | None, str | None]:
        """The fingerprint and hash of the newest version of *key* known, to be told "unchanged" against."""
        latest = self._latest.copies.get(key)
        if latest is not None:
            work.basis[key] = latest
            fingerprint, sha256 = latest.fingerprint, latest.sha256
        elif key in known:
            fingerprint, sha256 = known[key].fingerprint, known[key].sha256
        elif key in out and not out[key].fatal:  # a fatal one is read again, to fail again
            fingerprint, sha256 = out[key].fingerprint, None  # left out for its content
        else:
            return None, None
        return (None if self.policy == "always" else fingerprint), sha256

    def _changed_on_disk(self, meta: Meta, can: LoaderCapabilities) -> list[str] | None:
        """The (local) sources the loader finds changed since *meta* recorded them, in or out of the prompt.

        ``None`` when a stat cannot tell: a source is not a plain local file, the
        loader has no stat-only check, a source is stale, or an imported file changed
        (its importer's text is made again by a whole pass).
        """
        check = can.changed
        if self._stat_paths is None or check is None:
            return None
        with self._lock:
            checks = self._local_checks(meta)
        if checks is None:
            return None
        declared = self._stat_paths
        moved = check(checks)
        if any(index >= len(declared) for index in moved):
            return None
        return [declared[index][0] for index in moved]

    def _mark_checked(self, state: MutableMapping[str, Any], meta: Meta) -> Meta:
        """*meta* checked now, put in *state* unless another render changed it meanwhile (``ttl``)."""
        checked = meta.checked()
        with self._lock:
            if self._stored.read(state) is meta:
                self._stored.write(state, checked)
        return checked

    def _local_checks(self, meta: Meta) -> tuple[LocalCheck, ...] | None:
        """What a stat-only revalidation expects of each file (kept while *meta* is, so its id stays unique).

        The same tuple is handed to the loader every turn, so it can prepare its comparisons once.

        ``None`` if a source is stale: its recovery must be read and logged, which only a full pass does.
        """
        held = self._checks.get(id(meta))
        if held is None or held[0] is not meta:
            entries = meta.entries
            checks = None
            if not any(e.stale for e in entries):
                index = {e.key: e.fingerprint for e in entries}
                out = meta.skipped
                checks = tuple(
                    LocalCheck(
                        path,
                        index.get(key),
                        out[key].reason if key in out else None,
                        out[key].fingerprint if key in out else None,
                    )
                    for key, path in self._stat_paths or ()
                )
                checks += _import_checks(meta)
            held = (meta, checks)
            _remember(self._checks, id(meta), held)
        return held[1]

    def _repair(
        self, state: MutableMapping[str, Any], contents: dict[str, str], meta: Meta
    ) -> tuple[dict[str, str], Meta]:
        """Contents and meta that disagree (a key deleted by hand, deepagents' way to force a reload).

        What both hold stays; a source whose content is gone is read again on this render.
        """
        entries = tuple([e for e in meta.entries if e.key in contents])
        gone = {e.root for e in meta.entries if e.key not in contents}
        pending = tuple(dict.fromkeys([*meta.pending, *(k for k in gone if k in self._by_key)]))
        kept = {e.key for e in entries}
        contents = {k: v for k, v in contents.items() if k in kept}
        meta = Meta(
            meta.made_for,
            entries,
            meta.skipped,
            meta.expansions,
            pending,
            meta.checked_at,
            digest(entries, meta.skipped),
        )
        state[self.state_key] = contents
        self._stored.write(state, meta)
        return contents, meta

    def _adopt(self, state: MutableMapping[str, Any], contents: Mapping[str, str]) -> Meta:
        """Meta for contents written without it (by deepagents, by hand, or by an older memconfig).

        What the state holds is taken as is; the sources it lacks are tried on
        the next render, so each ends up in the prompt or logged as skipped.
        """
        entries = [
            MetaEntry(s.key, s.name, s.display_url, sha(contents[s.key]), None, len(contents[s.key].encode()))
            for s in self.sources
            if s.key in contents
        ]
        missing = [s.key for s in self.sources if s.key not in contents]
        meta = Meta.make(entries, {}, {}, missing, self.made_for)
        self._stored.write(state, meta)
        return meta

    # -- merging a pass into the state ------------------------------------------

    def _merge(self, state: MutableMapping[str, Any], work: Pass, results: Mapping[int, list[LoadResult]]) -> Snapshot:
        """Fold a pass's results into *state*, log what changed, and snapshot the result."""
        with paused():  # one burst: the merge and its log lines (see memconfig.collector)
            with self._lock:
                found = self._stored.read(state)
                held = found if isinstance(found, Meta) else None
                merge = Merge(work, self._latest, dict(state.get(self.state_key) or {}), held)
                for index, request in enumerate(work.requests):
                    merge.source(request.source, results.get(index, []))
                ordered = tuple([e for s in self.sources for e in merge.by_source.get(s.key, [])])
                # Only configured sources (and their children) count as left out: not ones since removed.
                skipped = {k: r for k, r in merge.skipped.items() if r.root(k) in self._by_key}
                keep = {e.key for e in ordered}
                expansions = {
                    k: x for k, x in merge.expansions.items() if k in self._by_key or (x.via == "import" and k in keep)
                }
                fatal, by_source = merge.fatal, merge.by_source
                pending = tuple(
                    [s.key for s in self.sources if s.key in fatal or (s.required and not by_source.get(s.key))]
                )
                if (
                    held is not None
                    and held.made_for == self.made_for
                    and not merge.changed
                    and ordered == held.entries
                    and skipped == held.skipped
                    and expansions == held.expansions
                    and pending == held.pending
                ):  # unchanged
                    meta = held
                    if self.policy == "ttl":
                        meta = meta.checked()
                        self._stored.write(state, meta)
                else:
                    state[self.state_key] = {k: v for k, v in merge.contents.items() if k in keep}
                    meta = Meta.make(ordered, skipped, expansions, pending, self.made_for)
                    self._stored.write(state, meta)
                snapshot = self._snapshot(
                    meta,
                    state[self.state_key],
                    merge.stats,
                    tuple(merge.reported),
                    tuple(merge.failures),
                    frozenset(merge.taken),
                    locked=True,
                )
            with events.one_pass():  # logged outside the lock: other renders need not wait on log I/O
                for emit, arguments in merge.log:
                    emit(*arguments)
        if self._watching is not None:  # where the sources read live now, then: checked up to the pass's start
            read = [request.source for request in work.requests]
            self._watching.saw(read, {r.source.key: results.get(i, []) for i, r in enumerate(work.requests)})
            self._watching.checked(meta, work.seen)
        return snapshot

    # -- snapshots ------------------------------------------------------------

    def _snapshot(
        self,
        meta: Meta,
        contents: Mapping[str, str],
        stats: dict[str, int],
        results: tuple[LoadResult, ...] = (),
        failures: tuple[Failure, ...] = (),
        taken: frozenset[str] = frozenset(),
        *,
        locked: bool = False,
    ) -> Snapshot:
        """The sections and records of *meta*, shared by every state with the same digest.

        A pass that read nothing gets the same snapshot object as the last such
        pass with this digest: what a render makes of it can be memoised by identity.
        """
        key = meta.digest
        quiet = not results and not failures and len(stats) == 1
        if quiet:
            found = self._quiet.get((key, stats.get("revalidated", -1)))  # a dict read needs no lock
            if found is not None:
                return found
        if not locked:
            self._lock.acquire()
        try:
            view = self._views.get(key)
            if view is None:
                sections = _sections(meta, contents, self._imports, self._sections_held.last)
                self._sections_held.last = {s.source: s for s in sections}
                view = (sections, functools.partial(_records, self.sources, meta, self._records_held))
                _remember(self._views, key, view)
        finally:
            if not locked:
                self._lock.release()
        sections, records = view
        # Counted per file, as ``loaded``/``refreshed``/``stale`` are: an imported file is inlined in its
        # importer's section but is an entry (and a hit, when it was held unchanged) of its own.
        fresh = stats.get("loaded", 0) + stats.get("refreshed", 0) + stats.get("stale", 0)
        counts = {
            "cache_hits": max(len(meta.entries) - fresh, 0),
            "refreshed": 0,
            "stale": 0,
            "loaded": 0,
            "skipped": 0,
            **stats,
            "sources_skipped": len(meta.skipped),
        }
        snapshot = Snapshot(sections, key, records, results, counts, failures, taken)
        if quiet:
            with contextlib.nullcontext() if locked else self._lock:
                _remember(self._quiet, (key, stats.get("revalidated", -1)), snapshot)
        return snapshot


def _records(
    sources: Sequence[Source], meta: Meta, held: Held[_Recorded], chars: Mapping[str, int]
) -> tuple[SourceRecord, ...]:
    """Every source of *meta*, declared and expanded, in prompt order, each with its *chars* in the block.

    A function (a view of it holds no cache). A file's record is taken again from *held* while its entry
    is the same one (an unchanged source's) and its size the same. The sources under an expanded one
    follow it (a loop over a stack, not recursion: no cycle to collect).
    """
    entries = {e.key: e for e in meta.entries}
    out, expansions = meta.skipped, meta.expansions
    records: list[SourceRecord] = []
    last, recorded = held.last, held.start()
    todo: list[_Visit] = [(s.key, s.name, s.display_url, None, None) for s in reversed(sources)]
    while todo:
        key, name, url, parent, via = todo.pop()
        e = entries.get(key)
        if e is not None:
            size = chars.get(key, 0)
            made = last.get(key)
            kept = made[1] if made is not None and made[0] is e else None
            if kept is not None and (kept.chars, kept.parent, kept.via) == (size, parent, via):
                record = kept
            else:
                stale = e.stale
                status = Status.LOADED if stale is None else Status.STALE
                record = SourceRecord(e.name, key, e.url, status, stale, "", size, e.sha256, parent, via)
                made = None
            if recorded is not None:
                recorded[key] = made or (e, record)
            records.append(record)
        else:
            records.append(_record_of(key, name, url, parent, via, out, expansions))
        x = expansions.get(key) if expansions else None
        if x is not None and (x.via == "import" or (e is None and key not in out)):  # what it holds follows it
            under: list[_Visit] = [
                (c, f.name, f.url, key, x.via) for c in x.children if (f := entries.get(c) or out.get(c)) is not None
            ]
            todo += reversed(under)
    held.finish(recorded)
    return tuple(records)


_Recorded = tuple[MetaEntry, SourceRecord]  # a file's record, and the meta entry it was made from


def _record_of(
    key: str,
    name: str,
    url: str,
    parent: str | None,
    via: str | None,
    out: Mapping[str, OutRecord],
    expansions: Mapping[str, Expansion],
) -> SourceRecord:
    """The record of a source not in the prompt as a file: left out, expanded (a glob, a discovery), or not read."""
    if key in out:
        r = out[key]
        return SourceRecord(r.name, key, r.url, Status.SKIPPED, r.reason, r.detail, parent=parent, via=via)
    if key in expansions:
        x = expansions[key]
        status = Status.LOADED if x.stale is None else Status.STALE
        listing = hashlib.sha256("\n".join(x.children).encode()).hexdigest()
        return SourceRecord(name, key, url, status, x.stale, sha256=listing, parent=parent, via=via)
    return SourceRecord(name, key, url, Status.SKIPPED, SkipReason.ERROR, "not read yet", parent=parent, via=via)


def _load(
    loader: Loader, can: LoaderCapabilities, requests: list[LoadRequest]
) -> Generator[Any, Any, Sequence[LoadResult]]:
    """Ask *loader* for *requests*: its flow form if it has one, else its one method (sync or async)."""
    if can.read is not None:
        return (yield from can.read(requests))
    outcome = loader.load(requests)
    if isinstance(outcome, Future) or inspect.isawaitable(outcome):
        return cast(Sequence[LoadResult], (yield outcome))
    return outcome


def _expanders() -> Mapping[str, Any]:
    from ..expand import EXPANDERS  # a loader of the caller's own has none: the built-in ones' hooks then

    return EXPANDERS


def _import_checks(meta: Meta) -> tuple[LocalCheck, ...]:
    """What a stat-only revalidation expects of each imported file: in the prompt, or missing (to notice it appear).

    An import out for a reason its importer decides (a cycle, the depth limit, a URL) needs no check of its own.
    """
    checks = [LocalCheck(e.url, e.fingerprint) for e in meta.entries if e.via == "import"]
    for r in meta.skipped.values():
        if r.via == "import" and (r.reason == SkipReason.NOT_FOUND or r.fingerprint is not None):
            checks.append(LocalCheck(r.url, None, r.reason, r.fingerprint))
    return tuple(checks)


def _sections(
    meta: Meta,
    contents: Mapping[str, str],
    imports: Mapping[str, ImportSettings] | None = None,
    held: Mapping[str, Section] | None = None,
) -> tuple[Section, ...]:
    """The sections of *meta*, one per file in the prompt; an imported file is inlined in its importer's.

    A section of *held* whose file is as it was is given again, the same object:
    what later stages made of it is kept by identity (a changed turn redoes what changed).
    """
    inlined = _inliner(meta, contents, imports) if imports else None
    held = held or {}
    sections = []
    for e in meta.entries:
        if e.via == "import":
            continue
        key = e.key
        text = inlined(e) if inlined is not None else None
        if text is None:  # as read: its size as read still tells the text's
            found = held.get(key)
            if found is None or found.text is not contents[key] or found.sha256 != e.sha256 or found.url != e.url:
                parent = e.lineage[-1] if e.lineage else None
                found = Section(key, e.name, e.url, contents[key], e.sha256, parent, e.via, e.bytes)
            sections.append(found)
        else:
            parent = e.lineage[-1] if e.lineage else None
            sections.append(Section(key, e.name, e.url, text, e.sha256, parent, e.via))
    return tuple(sections)


def _inliner(
    meta: Meta, contents: Mapping[str, str], imports: Mapping[str, ImportSettings]
) -> Callable[[MetaEntry], str | None]:
    """An entry's text with its imports inlined (``None``: it imports nothing)."""
    from ..expand.imports import inline

    expansions = meta.expansions
    loaded = {e.key for e in meta.entries}.__contains__
    failed = {k: r.reason for k, r in meta.skipped.items() if r.via == "import"}

    def text(e: MetaEntry) -> str | None:
        key = e.key
        settings = imports.get(e.root)
        if settings is None or key not in expansions or expansions[key].via != "import":
            return None
        return inline(key, contents, loaded, failed, settings)

    return text


def _remember(memo: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    memo[key] = value
    while len(memo) > _MEMO:
        memo.popitem(last=False)
