"""The ``watch`` policy's watcher: which declared sources changed on disk, without asking the disk on a render.

A render under ``watch`` asks :meth:`Watching.due` which sources to look at
again; with nothing changed the answer is "none" from memory, so the render
makes no file-system call at all and its cost does not grow with the number
of sources. What to watch comes from the passes' results (:meth:`Watching.saw`),
so it is the state's own children — glob matches, discovered files, imported
files, whatever an expander makes — plus, for an expander, the folders where
new children could appear (its optional ``watched(source)`` hook).

The watching itself is ``watchfiles`` (the ``memconfig[watch]`` extra) on a
daemon thread, one per recursion mode; it never configures logging. Its
events come after a small delay (the kernel's, then ``watchfiles``' grouping
of a burst, tens of milliseconds): a render started inside that window sees
the previous version. Two things narrow the window: a source reported
changed is checked with a ``stat`` on every render for :data:`RECENT` seconds
after (a file being edited is usually edited again), and until a (re)started
watcher is armed, and once when it is, every source is revalidated. Sources
that cannot be watched — remote ones, an expander without the hook, a
discovery whose working directory was removed — are revalidated on every
render; a watcher that cannot start (``watchfiles`` missing, no inotify, too
many watches) turns the whole cache to ``revalidate``. Each is one
``source_unwatched`` warning per source.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fsspec.implementations.local import LocalFileSystem

from .. import events
from ..expand.capabilities import ExpanderTable
from ..install import install_hint
from ..model import Spot

if TYPE_CHECKING:
    from ..model import LoadResult
    from ..sources import Source
    from .meta import Meta

__all__ = ["RECENT", "Watching"]

#: Seconds a source reported changed is still checked with a ``stat`` on every render.
RECENT = 1.0
_HISTORY = 1024  # change batches remembered; a state checked before the oldest one is revalidated whole
_DIGESTS = 4096  # what states hold (their digests) remembered as checked at a change number
_DEBOUNCE_MS, _STEP_MS = 200, 20  # watchfiles: a burst grouped for at most 200 ms, yielded 20 ms after it ends
_ARM_MS = 250  # watchfiles' timeout: its first (empty) yield tells the watcher is armed
_ALL = "\x00all"  # a batch that marks every source changed (a watcher armed: what happened before is unknown)


class Watching:
    """Which declared sources are due for a check, from a watcher's reports; shared by every state of a cache.

    Args:
        sources: the cache's declared sources.
        expanders: the loader's expanders by name (their optional ``watched(source)`` hook).
    """

    def __init__(self, sources: Sequence[Source], expanders: Mapping[str, Any]) -> None:
        self._sources = {s.key: s for s in sources}
        self._order = {key: i for i, key in enumerate(self._sources)}
        self._expanders = ExpanderTable(expanders)  # each expander's watched hook, asked once (when first needed)
        self._lock = threading.Condition()
        self._spots: dict[str, frozenset[Spot]] = {}
        self._unwatched: set[str] = set()  # revalidated on every render
        self._unreported: list[tuple[Source, str, str]] = []  # source_unwatched events for the next render
        self._index = _Index({})
        self._folders: dict[bool, frozenset[str]] = {False: frozenset(), True: frozenset()}
        self._threads: dict[bool, _Thread] = {}
        self._armed: dict[bool, bool] = {}
        self._failed: str | None = None
        self._seq = 0  # change batches so far
        self._log: list[frozenset[str]] = []  # the latest batches: _log[i] is batch _seq - len(_log) + 1 + i
        self._recent: dict[str, float] = {}  # source: monotonic time until which it is checked anyway
        self._cwd: dict[str, str] = {}  # source: the working directory it was last expanded in ("cwd" spots)
        # By digest, not by object: states holding the same entries (a checkpointer's copy of a thread, another
        # thread that read the same files) share one answer, so a restored state is as quiet as a live one.
        self._checked: OrderedDict[str, int] = OrderedDict()
        self._stale: OrderedDict[str, frozenset[str]] = OrderedDict()  # by digest: the sources it holds stale
        weakref.finalize(self, _stop_all, self._threads)

    def close(self) -> None:
        """Stop the watcher's threads and wait for them to end (idempotent); nothing is watched from now on."""
        with self._lock:
            threads = list(self._threads.values())
            self._threads.clear()
            self._armed.clear()
            self._folders = {False: frozenset(), True: frozenset()}
        for thread in threads:
            thread.stop.set()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()

    def __repr__(self) -> str:
        state = f"failed: {self._failed}" if self._failed else "armed" if self.armed else "starting"
        return f"Watching(sources={len(self._spots)}, unwatched={len(self._unwatched)}, {state})"

    # -- asked by a render ------------------------------------------------------------------

    @property
    def armed(self) -> bool:
        """Whether every watcher needed is running and reporting (never, after a failure)."""
        return self._failed is None and bool(self._spots) and all(self._armed.get(r, False) for r in self._threads)

    @property
    def complete(self) -> bool:
        """Whether a change of any source is reported (no source revalidated on every render instead)."""
        return self.armed and not self._unwatched

    @property
    def changes(self) -> int:
        """The number of change batches reported so far."""
        return self._seq

    def due(self, meta: Meta) -> tuple[list[str] | None, int]:
        """The declared sources to check for a state holding *meta*, and the change number it is checked at.

        ``None``: every source (the watcher is not armed, has failed, or no state holding what this one
        holds — the same digest — was checked since the oldest change remembered). Makes no file-system call.
        """
        with self._lock:
            self._report()
            if self._cwd:
                self._follow_cwd()
            seq = self._seq
            since = self._checked.get(meta.digest)
            if not self.armed or since is None:
                return None, seq
            first = seq - len(self._log)  # the batch number before the oldest one kept
            if since < first:
                return None, seq
            due: set[str] = self._unwatched | self._stale_of(meta)
            for batch in self._log[since - first :]:
                if _ALL in batch:
                    return None, seq
                due |= batch
            if self._recent:
                now = time.monotonic()
                for key, until in list(self._recent.items()):
                    if until > now:
                        due.add(key)
                    else:
                        del self._recent[key]
            if not due:
                return [], seq
            order = self._order  # in declared order, without walking every source (an unchanged turn's cost)
            return sorted((key for key in due if key in order), key=order.__getitem__), seq

    def _follow_cwd(self) -> None:
        """A working directory other than the one a source was expanded in is a change of it (under the lock).

        A change batch, not a per-render check: every state checked before it
        (a copy, another thread's) must look again too, as after an edit.
        """
        try:
            cwd = os.getcwd()
        except OSError:  # the folder was removed: the expansion says so
            cwd = ""
        moved = frozenset(key for key, was in self._cwd.items() if was != cwd)
        if moved:
            for key in moved:
                self._cwd[key] = cwd
            self._add(moved)

    def checked(self, meta: Meta, seq: int) -> None:
        """A state holding *meta* was checked against every change up to number *seq*.

        What holds for it holds for every state with the same digest: the same
        files, read at the same versions, checked up to *seq*.
        """
        key = meta.digest
        with self._lock:
            if self._checked.get(key, -1) < seq:
                self._checked[key] = seq
            self._checked.move_to_end(key)
            while len(self._checked) > _DIGESTS:
                self._checked.popitem(last=False)
            self._stale_of(meta)

    def _stale_of(self, meta: Meta) -> frozenset[str]:
        """The declared sources of *meta* whose last refresh failed: revalidated on every render (under the lock).

        Remembered by digest, as checks are: the digest covers each entry's
        staleness (a failed listing marks its children stale), so a copy of a
        state (a checkpointed thread) costs a lookup, not a pass over its entries.
        """
        key = meta.digest
        found = self._stale.get(key)
        if found is not None:
            self._stale.move_to_end(key)
            return found
        stale = {e.root for e in meta.entries if e.stale}
        stale.update(k for k, x in meta.expansions.items() if x.stale)
        found = self._stale[key] = frozenset(stale)
        while len(self._stale) > _DIGESTS:
            self._stale.popitem(last=False)
        return found

    def wait(self, seen: int, timeout: float | None) -> int:
        """Block until a change batch after number *seen* is reported (or *timeout* seconds pass); the number now."""
        with self._lock:
            self._lock.wait_for(lambda: self._seq > seen, timeout)
            return self._seq

    # -- told after a pass -----------------------------------------------------------------

    def saw(self, sources: Iterable[Source], results: Mapping[str, list[LoadResult]]) -> None:
        """Note where each declared source of a pass (and its children, in *results*) lives; (re)start watching."""
        found = [(source, self._spots_of(source, results.get(source.key, []))) for source in sources]
        with self._lock:  # renders on other threads may be telling theirs
            spots = dict(self._spots)
            for source, where in found:
                if not isinstance(where, tuple):
                    spots[source.key] = where
                    self._unwatched.discard(source.key)  # watchable again (a working directory back)
                    continue
                spots.pop(source.key, None)
                if source.key not in self._unwatched:
                    self._unwatched.add(source.key)
                    self._unreported.append((source, *where))
            if spots != self._spots:
                self._spots = spots
                self._index = _Index(spots)
                self._cwd = {key: s.path for key, found in spots.items() for s in found if s.kind == "cwd"}
            # Folders again even with the same spots: a folder that was missing may be there now, watched itself.
            folders = _folders(spots.values())
            if self._failed is None and folders != self._folders:
                self._restart(folders)
            self._report()

    def _spots_of(self, source: Source, group: list[LoadResult]) -> frozenset[Spot] | _Unwatchable:
        """Where *source* (declared) can change, or why it cannot be watched (its ``source_unwatched`` reason)."""
        try:
            base = _local(source)
        except OSError:  # a path relative to a working directory that was removed (a temp checkout deleted)
            return _CWD_GONE
        if base is None:
            return _REMOTE
        if source.expander is None:
            spots = {Spot(base, "file")}
        else:
            hook = self._expanders.of(source.expander).watched
            places = hook(source) if hook is not None else None
            if places is None:
                return _REMOTE
            spots = set(places)
        for result in group:  # children of any kind (glob matches, discovered or imported files)
            try:
                path = _local(result.source)
            except OSError:
                return _CWD_GONE
            if path is not None:
                spots.add(Spot(path, "file"))
        for spot in list(spots):  # a link's target changes without an event in the link's folder
            if spot.kind == "file" and os.path.islink(spot.path):
                spots.add(Spot(os.path.realpath(spot.path), "file"))
        return frozenset(spots)

    # -- the watcher threads ------------------------------------------------------------------

    def _restart(self, folders: dict[bool, frozenset[str]]) -> None:
        """Stop the watchers whose folders changed and start new ones (called under the lock)."""
        try:
            import watchfiles
        except ImportError:
            self._fail("watchfiles_missing", f"watchfiles is not installed ({install_hint('watch')})")
            return
        for recursive in (False, True):
            if folders[recursive] == self._folders[recursive] and recursive in self._threads:
                continue
            old = self._threads.pop(recursive, None)
            if old is not None:
                old.stop.set()
            self._armed.pop(recursive, None)
            if folders[recursive]:
                thread = _Thread(weakref.ref(self), watchfiles, sorted(folders[recursive]), recursive)
                self._threads[recursive] = thread
                self._armed[recursive] = False
                thread.start()
        self._folders = folders

    def _arrived(self, thread: _Thread, paths: set[str] | None) -> None:
        """A watcher thread's report: armed (``None``) or changed *paths*."""
        with self._lock:
            if self._threads.get(thread.recursive) is not thread:
                return  # stopped meanwhile
            if paths is None:
                if self._armed.get(thread.recursive):
                    return
                self._armed[thread.recursive] = True
                batch = frozenset({_ALL})  # what changed before it was armed is unknown: check everything once
            else:
                batch = self._index.sources(paths)
                if not batch:
                    return  # nothing a source depends on (the output file written beside a source, …)
                until = time.monotonic() + RECENT
                for key in batch:
                    self._recent[key] = until
            self._add(batch)

    def _add(self, batch: frozenset[str]) -> None:
        """One more change batch (called under the lock)."""
        self._seq += 1
        self._log.append(batch)
        if len(self._log) > _HISTORY:
            del self._log[: len(self._log) - _HISTORY]
        self._lock.notify_all()

    def _broke(self, thread: _Thread, exc: BaseException) -> None:
        with self._lock:
            if self._threads.get(thread.recursive) is thread:
                self._fail("watch_failed", f"the watcher stopped: {type(exc).__name__}: {exc}")

    def _fail(self, reason: str, detail: str) -> None:
        """No watching from now on: every source is revalidated on every render (called under the lock)."""
        self._failed = reason
        for thread in self._threads.values():
            thread.stop.set()
        self._threads.clear()
        detail += "; revalidated on every render instead"
        self._unreported += [(self._sources[k], reason, detail) for k in self._spots if k in self._sources]
        self._add(frozenset({_ALL}))

    def _report(self) -> None:
        """Log the sources that became unwatched since the last render (in a render: its id on each)."""
        if self._unreported:
            for source, reason, detail in self._unreported:
                events.source_unwatched(source, reason, detail)
            self._unreported.clear()


class _Thread(threading.Thread):
    """One ``watchfiles.watch`` over folders, reporting to its :class:`Watching` (held weakly: it may go away)."""

    def __init__(self, owner: weakref.ref[Watching], watchfiles: Any, folders: list[str], recursive: bool) -> None:
        super().__init__(name=f"memconfig-watch{'-tree' if recursive else ''}", daemon=True)
        self.owner, self.watchfiles, self.folders, self.recursive = owner, watchfiles, folders, recursive
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            for changes in self.watchfiles.watch(
                *self.folders,
                watch_filter=None,  # every name counts: the default filter ignores names a source may have
                debounce=_DEBOUNCE_MS,
                step=_STEP_MS,
                stop_event=self.stop,
                rust_timeout=_ARM_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                recursive=self.recursive,
            ):
                owner = self.owner()
                if owner is None or self.stop.is_set():
                    return
                owner._arrived(self, None)  # the first yield, empty or not: armed
                if changes:
                    owner._arrived(self, {os.path.normpath(path) for _, path in changes})
                del owner
        except BaseException as exc:  # no inotify, too many watches, a folder gone: revalidate instead
            owner = self.owner()
            if owner is not None and not self.stop.is_set():
                owner._broke(self, exc)


_Unwatchable = tuple[str, str]  # why a source is not watched: a source_unwatched reason and detail
_REMOTE: _Unwatchable = ("remote", "not a local file or folder: revalidated on every render")
_CWD_GONE: _Unwatchable = (
    "cwd_missing",
    "the working directory was removed: revalidated on every render until the process is in a folder again",
)

_Wanted = tuple[str, Callable[[str], bool] | None]  # a declared source, and which changed paths it takes


class _Index:
    """Changed paths → the declared sources they make due."""

    def __init__(self, spots: Mapping[str, frozenset[Spot]]) -> None:
        self.exact: dict[str, set[str]] = {}  # a path itself
        self.entries: dict[str, set[_Wanted]] = {}  # a direct entry of a folder (that the spot accepts)
        self.trees: dict[str, set[_Wanted]] = {}  # anything below a folder (that the spot accepts)
        self.above: dict[str, set[str]] = {}  # a folder on the way to a spot (created, removed or renamed)
        for key, found in spots.items():
            for spot in found:
                if spot.kind == "cwd":
                    continue  # not on disk: asked of os.getcwd() by a render
                self.exact.setdefault(spot.path, set()).add(key)
                if spot.kind != "file":
                    where = self.trees if spot.kind == "tree" else self.entries
                    where.setdefault(spot.path, set()).add((key, spot.accepts))
                for folder in _ancestors(spot.path):
                    self.above.setdefault(folder, set()).add(key)

    def sources(self, paths: Iterable[str]) -> frozenset[str]:
        found: set[str] = set()
        for path in paths:
            found.update(self.exact.get(path, ()))
            found.update(self.above.get(path, ()))
            _accepted(self.entries.get(os.path.dirname(path), ()), path, found)
            if self.trees:
                for folder in _ancestors(path):
                    _accepted(self.trees.get(folder, ()), path, found)
        return frozenset(found)


def _accepted(wanted: Iterable[_Wanted], path: str, found: set[str]) -> None:
    """Add to *found* the sources of *wanted* that take a change of *path*."""
    for key, accepts in wanted:
        if key not in found and (accepts is None or accepts(path)):
            found.add(key)


def _ancestors(path: str) -> Iterable[str]:
    parent = os.path.dirname(path)
    while parent and parent != path:
        yield parent
        path, parent = parent, os.path.dirname(parent)


def _folders(spots: Iterable[frozenset[Spot]]) -> dict[bool, frozenset[str]]:
    """The folders to hand the watchers, without and with recursion: each spot's nearest existing folder."""
    wanted = {
        (os.path.dirname(s.path) if s.kind == "file" else s.path, s.kind == "tree")
        for f in spots
        for s in f
        if s.kind != "cwd"
    }
    plain: set[str] = set()
    trees: set[str] = set()
    for folder, tree in wanted:  # one isdir per distinct folder, however many files are in it
        existing = _existing(folder)
        if tree and existing == folder:
            trees.add(folder)
        else:
            plain.add(existing)  # a folder not there yet: its creation shows in the nearest one that is
    plain = {f for f in plain if not any(f == t or f.startswith(t.rstrip(os.sep) + os.sep) for t in trees)}
    return {False: frozenset(plain), True: frozenset(trees)}


def _existing(folder: str) -> str:
    while not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def _local(source: Source) -> str | None:
    """*source*'s path on this machine's filesystem, or ``None`` (remote, in memory, chained).

    Raises ``OSError`` for a relative path while the working directory is gone.
    """
    if source.chained:
        return None
    try:
        fs, path = source.open_fs()
    except Exception:  # an unknown protocol: read (and skipped) by the loader, not watchable
        return None
    return os.path.normpath(os.path.abspath(path)) if isinstance(fs, LocalFileSystem) else None


def _stop_all(threads: dict[bool, _Thread]) -> None:
    for thread in threads.values():
        thread.stop.set()
