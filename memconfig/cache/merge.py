"""Folding one pass's results into copies of a state's contents and meta."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .. import events
from ..model import Failure, LoadRequest, LoadResult, SkipReason, Status
from .meta import Expansion, Meta, MetaEntry, OutRecord, Stamp
from .store import Known, LatestCopies

if TYPE_CHECKING:
    from ..sources import Source

__all__ = ["STALE_REASONS", "Merge", "Pass"]

#: Failures after which a source keeps its last good content (they may pass).
STALE_REASONS = frozenset({SkipReason.TIMEOUT, SkipReason.REMOTE_ERROR, SkipReason.PERMISSION_DENIED, SkipReason.ERROR})


@dataclass(slots=True)
class Pass:
    """One render's work: what to read, and what was known when it was asked."""

    requests: list[LoadRequest]
    force: bool
    process: str
    started: float = field(default_factory=time.perf_counter)  # the clock of LoadResult.read_at
    revalidation: bool = False  # checking a state that holds contents, not filling an empty one
    basis: dict[str, Known] = field(default_factory=dict)  # process copies the requests were made against
    held: tuple[Mapping[str, MetaEntry], Mapping[str, OutRecord]] | None = None  # what imports are asked against
    seen: int = 0  # under ``watch``: the watcher's change number when the pass was planned
    checked: int = 0  # sources a stat found as held: revalidated, and not asked of the loader

    @property
    def stamp(self) -> Stamp:
        return (self.process, self.started)


class Merge:
    """One pass's results folded into copies of a state's contents and meta.

    Holds what the pass changes (contents, sources left out, expansions,
    counts), what it reports (results, failures) and the events to log once
    the cache's lock is released; the cache writes the outcome back under its lock.
    """

    def __init__(
        self,
        work: Pass,
        latest: LatestCopies,
        contents: dict[str, str],
        meta: Meta | None,
    ) -> None:
        self.work = work
        self.stamp = work.stamp  # of the version being folded in: its read's, else this pass's
        self.latest = latest
        self.contents = contents
        self.skipped: dict[str, OutRecord] = dict(meta.skipped) if meta is not None else {}
        self.expansions: dict[str, Expansion] = dict(meta.expansions) if meta is not None else {}
        old = meta.entries if meta is not None else ()
        self.old: dict[str, MetaEntry] = {e.key: e for e in old}
        self.by_source: dict[str, list[MetaEntry]] = {}
        for e in old:
            self.by_source.setdefault(e.lineage[0] if e.lineage else e.key, []).append(e)  # its root, inline: per entry
        self.stats = {"revalidated": work.checked, "refreshed": 0, "stale": 0, "loaded": 0, "skipped": 0}
        self.reported: list[LoadResult] = []
        self.failures: list[Failure] = []
        self.fatal: set[str] = set()  # configured sources whose failure fails every render until fixed
        self.taken: set[str] = set()  # sources put in the state by this pass (and logged as loaded)
        self.log: list[tuple[Callable[..., None], tuple[Any, ...]]] = []  # events to log: (emitter, arguments)

    @property
    def changed(self) -> bool:
        stats = self.stats
        return bool(stats["loaded"] or stats["refreshed"] or stats["stale"] or stats["skipped"] or self.work.force)

    def source(self, source: Source, group: list[LoadResult]) -> None:
        """Fold the results of one configured source (an expanded one: all its children)."""
        if self.work.revalidation:
            self.stats["revalidated"] += len(group)
        if source.expander is not None:
            kept = self._expanded(source, group)
        elif len(group) == 1:
            only = group[0]
            detail = only.detail if only.reason is None else only.source.skip_detail(only.reason, only.detail)
            if detail != only.detail:  # a url: like a glob says so, as explain does (Source.skip_detail decides)
                group = [replace(only, detail=detail)]
            kept = self._file(group[0])
        else:  # a file and the files it imports
            kept = [e for result in group for e in self._file(result)]
            self._imported(group)
        self.by_source[source.key] = kept
        for result in group:
            if result.fatal:
                self.fatal.add(source.key)
                self.failures.append(
                    Failure(
                        result.source.key,
                        result.reason or SkipReason.ERROR,
                        result.detail,
                        result.source.name,
                        result.source.display_url,
                    )
                )
        if source.required and not kept and source.key not in self.fatal and not _repeats(group):  # fatal: listed
            first = group[0] if group else None
            reason = (first.reason or SkipReason.ERROR) if first else SkipReason.NOT_FOUND
            detail = first.detail if first else ""
            self.failures.append(Failure(source.key, reason, detail, source.name, source.display_url))

    def _expanded(self, source: Source, group: list[LoadResult]) -> list[MetaEntry]:
        previous = {e.key: e for e in self.by_source.get(source.key, [])}
        failed = group[0] if len(group) == 1 and group[0].source is source else None  # the expansion itself
        if failed is not None and failed.reason in STALE_REASONS and previous:
            for held in previous.values():
                self.log.append((events.source_stale, (failed.source, failed.reason, failed.detail, held.sha256)))
                self.stats["stale"] += 1
            self.reported.append(replace(failed, status=Status.STALE))
            if source.key in self.expansions:
                self.expansions[source.key] = self.expansions[source.key].with_stale(failed.reason)
            return [held.with_stale(failed.reason) for held in previous.values()]
        children = [r.source.key for r in group if r.source.lineage and r.source.via != "import"]
        before = self.expansions.get(source.key)
        if children:
            self.skipped.pop(source.key, None)
            if self.work.force or before is None or tuple(children) != before.children:
                via = group[0].source.via or "glob"
                self.log.append((events.source_expanded, (source, via, children)))
                self.expansions[source.key] = Expansion(via, tuple(children))
            elif before.stale:
                self.expansions[source.key] = before.with_stale(None)
        else:
            self.expansions.pop(source.key, None)
        self.latest.expanded(source.key, children)
        kept = [e for result in group for e in self._file(result)]
        self._imported(group)
        now = {r.source.key for r in group}
        for key in previous.keys() - now:
            self.contents.pop(key, None)
            held = previous[key]
            if held.via == "import":
                continue  # no longer imported: its importer changed, and says so
            gone = source.derived(key, held.name, held.url, held.via or "", None)  # a child: via is set
            self.log.append((events.source_skipped, (gone, SkipReason.NOT_FOUND, "no longer matched by the glob")))
            self.stats["skipped"] += 1
        for key in [k for k, r in self.skipped.items() if r.lineage[:1] == (source.key,) and k not in now]:
            del self.skipped[key]  # a child that was out, and is gone for good
        return kept

    def _imported(self, group: list[LoadResult]) -> None:
        """Record what each file of *group* imports (its children, in token order); forget imports no longer made."""
        if not group:
            return
        made: dict[str, list[str]] = {}
        importers: dict[str, Source] = {}
        for result in group:
            source = result.source
            if source.imports is not None:
                importers[source.key] = source
            if source.via == "import" and source.parent is not None:
                made.setdefault(source.parent, []).append(source.key)
        for key, importer in importers.items():
            children = made.get(key, [])
            before = self.expansions.get(key)
            if children:
                if self.work.force or before is None or before.children != tuple(children):
                    self.log.append((events.source_expanded, (importer, "import", children)))
                self.expansions[key] = Expansion("import", tuple(children))
            else:
                self.expansions.pop(key, None)
            self.latest.expanded(key, children)
        keys = {r.source.key for r in group}
        root = group[0].source.root
        for key in [k for k, r in self.skipped.items() if r.via == "import" and r.lineage[:1] == (root,)]:
            if key not in keys:
                del self.skipped[key]

    def _file(self, result: LoadResult) -> list[MetaEntry]:
        """The entry of one file (none if it is out of the prompt); records its result as reported."""
        found = self._one(result)
        if found is None:
            self.reported.append(result)
            return []
        self.reported.append(result if result.ok else replace(result, status=Status.STALE))
        self.skipped.pop(result.source.key, None)
        return [found]

    def _one(self, result: LoadResult) -> MetaEntry | None:
        source, key = result.source, result.source.key
        # When this version was read: a result shared from another pass's read, or a retry, is of its own time.
        read_at = result.read_at
        self.stamp = self.work.stamp if read_at is None else (self.work.process, read_at)
        old = self.old.get(key)
        # Content held for this source, from this location (not one the source pointed to before).
        held = old if old is not None and key in self.contents and old.url == source.display_url else None
        out = self.skipped.get(key)
        if not self.work.force:
            if held is not None and self._later(held.read):
                return held  # a pass that began after this one already put a newer version here
            if out is not None and self._later(out.since):
                return None  # a pass that began after this one already took the source out
        stamp = self.stamp
        if result.status == Status.LOADED:
            assert result.content is not None and result.sha256 is not None
            copies = self.latest.copies
            latest = copies.get(key)
            if latest is None or latest.read[1] <= stamp[1]:
                copies[key] = Known(result.fingerprint, result.sha256, result.content, result.bytes, stamp)
            self._take(result, result.content, held)
            return _entry(source, result.sha256, result.fingerprint, result.bytes, stamp)
        if result.status == Status.UNCHANGED:
            latest = self.latest.copies.get(key)
            # A check found a usable fingerprint for the copy this process holds (its read had none): keep it.
            if (
                latest is not None
                and latest.sha256 == result.sha256
                and result.fingerprint not in (None, latest.fingerprint)
            ):
                self.latest.copies[key] = latest._replace(fingerprint=result.fingerprint)
            if held is not None and held.sha256 == result.sha256:
                if held.stale:  # back after failing: on record as loaded again
                    self._take(replace(result, bytes=held.bytes), self.contents[key], held)
                fingerprint = result.fingerprint or held.fingerprint
                if held.fingerprint == fingerprint and not held.stale and _as_held(held, source):
                    return held  # the same entry: what was made of it is taken again
                return _entry(source, held.sha256, fingerprint, held.bytes, held.read)
            basis = self.work.basis.get(key)
            if basis is not None and basis.sha256 == result.sha256:  # newer in this process than in this state
                self._take(replace(result, bytes=basis.bytes), basis.content, held)
                fingerprint = result.fingerprint or basis.fingerprint
                return _entry(source, basis.sha256, fingerprint, basis.bytes, basis.read)
            if held is None and out is not None and result.fingerprint and out.fingerprint == result.fingerprint:
                return None  # left out for its content, and that content has not changed
            result = replace(
                result, status=Status.SKIPPED, reason=SkipReason.ERROR, detail="reported unchanged, but no copy is held"
            )
        return self._out(result, held)

    def _later(self, stamp: Stamp | None) -> bool:
        """Whether *stamp* is of a read (or a pass) of this process begun after the one being folded in."""
        return stamp is not None and stamp[0] == self.work.process and stamp[1] > self.stamp[1]

    def _out(self, result: LoadResult, held: MetaEntry | None) -> MetaEntry | None:
        """A source that did not load: stale if a good copy exists and the failure may pass, else out."""
        source, key = result.source, result.source.key
        reason = result.reason or SkipReason.ERROR
        latest = self.latest.copies.get(key)
        if reason in STALE_REASONS and not result.fatal and (held or latest):
            read: Stamp | None
            if held is not None:
                sha256, fingerprint, size, read = held.sha256, held.fingerprint, held.bytes, held.read
            else:
                assert latest is not None
                self.contents[key] = latest.content
                sha256, fingerprint, size, read = latest.sha256, latest.fingerprint, latest.bytes, latest.read
            self.log.append((events.source_stale, (source, reason, result.detail, sha256)))
            self.stats["stale"] += 1
            return _entry(source, sha256, fingerprint, size, read, stale=reason)
        if reason not in STALE_REASONS:
            self.latest.copies.pop(key, None)
        self.contents.pop(key, None)
        before = self.skipped.get(key)
        if before is not None and before.reason == reason and not self.work.force:
            # Still out for the same reason: logged when it went out.
            if before.fingerprint != result.fingerprint:
                self.skipped[key] = before.with_fingerprint(result.fingerprint)
        else:
            self.skipped[key] = OutRecord(
                source.name,
                source.display_url,
                reason,
                result.detail,
                result.fingerprint,
                source.lineage,
                source.via,
                result.fatal,
                self.stamp,
            )
            self.stats["skipped"] += 1
            self.log.append((events.source_skipped, (source, reason, result.detail, result.duration_ms)))
        return None

    def _take(self, result: LoadResult, content: str, held: MetaEntry | None) -> None:
        """Put read content in place and log it as a miss, a refresh, or (read again, same bytes) a hit."""
        if held is None:
            cache = "miss"
            self.stats["loaded"] += 1
        elif held.sha256 == result.sha256 and not held.stale:
            cache = "hit"
        else:
            cache = "refreshed"
            self.stats["refreshed"] += 1
        self.contents[result.source.key] = content
        self.taken.add(result.source.key)
        self.log.append((events.source_loaded, (result, len(content), cache)))


def _repeats(group: list[LoadResult]) -> bool:
    """Whether each result is a repeat of a file already in: a required source's file is in, once."""
    return bool(group) and all(r.reason == SkipReason.DUPLICATE for r in group)


def _entry(
    source: Source,
    sha256: str,
    fingerprint: str | None,
    size: int,
    read: Stamp | None,
    stale: SkipReason | None = None,
) -> MetaEntry:
    """One source's record in the state's meta; *stale*: why its last refresh failed, if it did."""
    return MetaEntry(
        source.key, source.name, source.display_url, sha256, fingerprint, size, source.lineage, source.via, stale, read
    )


def _as_held(held: MetaEntry, source: Source) -> bool:
    """Whether *held* names *source* as it is now (its URL is checked before)."""
    return held.name == source.name and held.lineage == source.lineage and held.via == source.via


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
