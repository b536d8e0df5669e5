"""The loader stage: reads sources through fsspec, concurrently, never raising.

Every request ends in results, never in an exception: a source that cannot be
read becomes a ``skipped`` result with a :class:`~memconfig.model.SkipReason`.
Local and in-memory files are read inline in the caller's thread (a thread hop
costs more than the read); every other source runs as one coroutine on
fsspec's I/O loop — async filesystems (HTTP, S3) natively, sync ones (zip,
git) on a bounded thread pool — so one pass costs about one round trip however
many sources there are. An expandable source (a glob) is turned into its
children by its expander, and each child is read as a source of its own.
Within one pass, a file several sources reach (a ``url:`` and a glob's match,
two spellings of one URL, a link) is read once (:meth:`FsspecLoader.read`). A
local expansion lists folders (a discovery's downward search may start
``git check-ignore``): under the async driver it runs on the loader's thread
pool, so the caller's event loop is never blocked by a walk; under the sync
one it stays inline.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import os
import random
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from fsspec.implementations.local import LocalFileSystem
from fsspec.utils import tokenize

from .. import events
from ..collector import paused
from ..drive import Blocking, Flow, io_loop, run
from ..expand import EXPANDERS, Expander
from ..expand.capabilities import ExpanderTable
from ..file_kinds import file_place, irregular_kind
from ..model import LoadRequest, LoadResult, LocalCheck, SkipReason, Status
from ..sources.places import same_place
from ..sources.urls import chain, local_path_in
from ..stages import token_of
from ..timing import ms_since
from .confinement import Confinement, resolved_path
from .errors import classify, over_max_bytes, over_max_matches, retry_after
from .fingerprints import fingerprint, local_fingerprint, local_version
from .local import look_at
from .reads import answers_with_info, is_http, is_s3, read_async, read_fd, s3_info
from .watch import expect, finished

if TYPE_CHECKING:
    from pathlib import Path

    from ..config.schema import LoaderConfig
    from ..sources import Source
    from ..stages import Loader

__all__ = ["FsspecLoader", "ReadSettings", "local_fingerprint"]


_NO_LOADERS: Mapping[str, Loader] = MappingProxyType({})
_NO_ROUTES: Mapping[int, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """Everything that decides what text a source reads as; the loader's cache token is made of it.

    Attributes:
        encoding: the text encoding of every source.
        on_decode_error: ``skip`` the source, ``replace`` bad bytes, or ``fail``
            (a skip marked fatal: the render fails).
        max_bytes: larger sources are skipped as ``too_large``; no more than
            ``max_bytes + 1`` bytes are ever read.
        blank: the token of the test for text with nothing to show (such a source is ``empty``).
    """

    encoding: str = "utf-8"
    on_decode_error: str = "skip"
    max_bytes: int = 1 << 20
    blank: str = "strip-whitespace"
    allowed: str = ""
    """What confinement allows (:attr:`Confinement.token`)."""
    max_matches: int = 1000
    """A glob that matches more files is skipped whole as ``too_large``: no prompt (or memory) grows without bound."""


class _Skip(Exception):
    """A source that is readable but must not go in (too large, undecodable, empty)."""

    def __init__(self, reason: SkipReason, detail: str, *, fatal: bool = False) -> None:
        super().__init__(detail)
        self.reason, self.detail, self.fatal = reason, detail, fatal


def _no_text(text: str) -> bool:
    return not text.strip()


class FsspecLoader:
    """Reads sources through ``fsspec.core.url_to_fs``.

    Args:
        encoding, on_decode_error, max_bytes: see :class:`ReadSettings`.
        concurrency: how many remote reads are in flight at once, across all the
            passes that share this loader.
        backoff: base delay in seconds of the exponential backoff between retries.
        is_blank: the test for text with nothing to show; such a source is ``empty``.
        blank_token: what *is_blank* tests, for the cache token.
        fingerprints: also fingerprint remote sources on a cold read, for policies
            that revalidate.
        expanders: the expanders by name, for sources that have one.
        confinement: the folders, protocols and hosts sources may reach (``None``: anything).
        max_matches: see :class:`ReadSettings`.
        by_protocol: loaders of URL protocols of their own (a plugin's ``mydb://``, see
            :func:`memconfig.load.protocols.protocol_loaders`): the sources with such a URL are
            handed to that loader, once confinement allows them; every other one is read here.
    """

    def __init__(
        self,
        *,
        encoding: str = "utf-8",
        on_decode_error: str = "skip",
        max_bytes: int = 1 << 20,
        concurrency: int = 64,
        backoff: float = 0.2,
        is_blank: Callable[[str], bool] = _no_text,
        blank_token: str = "strip-whitespace",
        fingerprints: bool = False,
        expanders: Mapping[str, Expander] = EXPANDERS,
        confinement: Confinement | None = None,
        max_matches: int = 1000,
        by_protocol: Mapping[str, Loader] = _NO_LOADERS,
    ) -> None:
        allowed = confinement.token if confinement is not None else ""
        self.settings = ReadSettings(encoding, on_decode_error, max_bytes, blank_token, allowed, max_matches)
        self.confinement = confinement
        self.roots = confinement.roots if confinement is not None else None
        self.concurrency = concurrency
        self.backoff = backoff
        self.is_blank = is_blank
        self.fingerprints = fingerprints
        self.expanders = expanders
        self._expander_hooks = ExpanderTable(expanders)  # each expander's no_match, asked once
        self.by_protocol = by_protocol
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._limit: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._prepared: _Prepared | None = None  # see changed()
        self._share_local = on_decode_error != "replace"  # see _LocalReads

    @classmethod
    def from_config(
        cls,
        opts: LoaderConfig,
        base: Path,
        *,
        fingerprints: bool,
        is_blank: Callable[[str], bool],
        blank_token: str,
        by_protocol: Mapping[str, Loader] = _NO_LOADERS,
    ) -> FsspecLoader:
        """The loader the ``loader`` settings describe (``allowed_roots`` against *base*, ``base_dir``).

        Args:
            fingerprints: fingerprint remote sources on a cold read (a cache policy that revalidates).
            is_blank, blank_token: the cleaning's blank test, and what it tests.
            by_protocol: the registered loaders of the sources' own protocols.
        """
        return cls(
            encoding=opts.encoding,
            on_decode_error=opts.on_decode_error,
            max_bytes=opts.max_bytes,
            concurrency=opts.concurrency,
            backoff=opts.backoff,
            is_blank=is_blank,
            blank_token=blank_token,
            fingerprints=fingerprints,
            confinement=Confinement.from_config(opts, base),
            max_matches=opts.max_matches,
            by_protocol=by_protocol,
        )

    @property
    def token(self) -> str:
        """What decides the text a source reads as: a state read under another token is read afresh."""
        if not self.by_protocol:
            return repr(self.settings)
        others = ",".join(f"{p}={token_of(own)}" for p, own in self.by_protocol.items())
        return f"{self.settings!r}|{others}"

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"FsspecLoader(encoding={s.encoding!r}, on_decode_error={s.on_decode_error!r}, "
            f"max_bytes={s.max_bytes}, concurrency={self.concurrency})"
        )

    # -- the stage's verbs --------------------------------------------------

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        """Read every request; results come back in request order (expanded sources' children in place)."""
        return run(self.read(requests))

    def read(self, requests: Sequence[LoadRequest]) -> Flow[list[LoadResult]]:
        """:meth:`load` as a flow: local reads inline, remote ones awaited on fsspec's I/O loop.

        A local expansion (a folder's walk) is yielded as a blocking call: a sync
        driver makes it inline, an async one on the loader's pool, off its loop.

        A file that several requests reach (a ``url:`` and a glob's match, two
        spellings of one URL, a link) is read once; each request still gets a
        result of its own (the cache then keeps the first in the prompt and makes
        the others ``duplicate`` skips). A remote read is shared by the requests
        with the same :func:`_read_key`: the same place, on a filesystem made with
        the same options, with the same timeout, retries and known fingerprint
        (the loader's own settings, ``encoding`` and ``max_bytes``, are the same
        for every request); a request asking differently reads for itself. A
        local file read into the prompt is taken again by the paths that stat to the
        same version of it (a link, a glob's match); each path is still checked
        (confinement, its kind) on its own.
        """
        slots: list[list[LoadResult] | None] = [None] * len(requests)
        local: _LocalReads = {}
        expect(len(requests))  # a watcher (the CLI's progress display) is told; nothing happens if none is
        routed = self._routed(requests) if self.by_protocol else _NO_ROUTES
        remote = [(i, r) for i, r in enumerate(requests) if not r.source.in_process and i not in routed]
        future = asyncio.run_coroutine_threadsafe(self._load_remote(remote), io_loop()) if remote else None
        walks: list[int] = []
        with paused():
            for index, request in enumerate(requests):
                if request.source.in_process:
                    if request.source.expander is not None:
                        walks.append(index)
                        continue
                    slots[index] = self._read_inline(request, local)
                    finished(request.source.name)
        if walks:
            calls = [functools.partial(self._read_finished, requests[index], local) for index in walks]
            try:
                walked = yield Blocking(calls, self._executor)
            except BaseException:
                if future is not None:
                    future.cancel()
                raise
            for index, results in zip(walks, walked, strict=True):
                slots[index] = results
        if routed:
            try:
                yield from self._read_routed(requests, routed, slots)
            except BaseException:
                if future is not None:
                    future.cancel()
                raise
        if future is not None:
            try:
                done = yield future
            except BaseException:
                future.cancel()
                raise
            for index, results in done:
                slots[index] = results
        return [result for results in slots if results for result in results]

    def _routed(self, requests: Sequence[LoadRequest]) -> dict[int, str]:
        """The requests whose URL's protocol has a loader of its own: their index, and that protocol."""
        found = {}
        for index, request in enumerate(requests):
            url = request.source.url
            protocol, _, rest = url.partition("://")
            if protocol in self.by_protocol and "::" not in rest:
                found[index] = protocol
        return found

    def _read_routed(
        self, requests: Sequence[LoadRequest], routed: Mapping[int, str], slots: list[list[LoadResult] | None]
    ) -> Flow[None]:
        """Hand each routed request to its protocol's loader (sync or async), once confinement allows it."""
        by_loader: dict[str, list[int]] = {}
        for index, protocol in routed.items():
            source = requests[index].source
            refused = self.confinement.refusal(source) if self.confinement is not None else None
            if refused is not None:
                slots[index] = [_skipped(source, *refused, time.perf_counter())]
                finished(source.name)
            else:
                by_loader.setdefault(protocol, []).append(index)
        for protocol, indexes in by_loader.items():
            outcome = self.by_protocol[protocol].load([requests[i] for i in indexes])
            if isinstance(outcome, Future) or inspect.isawaitable(outcome):
                outcome = yield outcome
            for index, result in zip(indexes, outcome, strict=True):
                slots[index] = [result]
                finished(result.source.name)

    def changed(self, checks: Sequence[LocalCheck]) -> list[int]:
        """The positions in *checks* of the local files not as they were last seen: one ``os.stat`` each, nothing read.

        The fingerprints are compared as ``(inode, size, mtime_ns)`` tuples,
        parsed once per *checks* (a cache hands the same one every turn).
        """
        prepared = self._prepared
        if prepared is None or prepared[0] is not checks:
            parsed = prepared[2] if prepared is not None else {}
            versions = [parsed.get(c) or _parsed(c) for c in checks]  # what changed since the last checks, parsed
            prepared = self._prepared = (checks, versions, dict(zip(checks, versions, strict=True)))
        moved: list[int] = []
        for index, (path, known, out, out_version) in enumerate(prepared[1]):
            try:
                info = os.stat(path)
            except FileNotFoundError:
                if out != SkipReason.NOT_FOUND:
                    moved.append(index)
                continue
            except OSError:
                moved.append(index)
                continue
            found = (info.st_ino, info.st_size, info.st_mtime_ns)
            if found == known or (
                out is not None
                and (out_version == found or (stat.S_ISDIR(info.st_mode) and out == SkipReason.IS_DIRECTORY))
            ):
                continue
            moved.append(index)
        return moved

    # -- inline (local and memory) ------------------------------------------

    def _read_finished(self, request: LoadRequest, local: _LocalReads) -> list[LoadResult]:
        """:meth:`_read_inline`, and the watcher told when it is done."""
        results = self._read_inline(request, local)
        finished(request.source.name)
        return results

    def _read_inline(self, request: LoadRequest, local: _LocalReads) -> list[LoadResult]:
        source = request.source
        started = time.perf_counter()
        try:
            refused = self.confinement.refusal(source) if self.confinement is not None else None
            if refused is not None:
                return [_skipped(source, *refused, started)]
            if source.expander is not None:
                children = self._matches(source, self.expanders[source.expander].expand(source))
                results = [self._read_inline(_child(request, c), local)[0] for c in children]
                return self._expanded(request, started, results)
            fs, path = source.open_fs()
            if isinstance(fs, LocalFileSystem):
                return [self._read_local(request, path, started, local)]
            known = fingerprint(fs.info(path)) if self.fingerprints or request.fingerprint else None
            if known is not None and known == request.fingerprint:
                return [_unchanged(request, known, started)]
            data = fs.cat_file(path, start=0, end=self.settings.max_bytes + 1)
            return [self._finish(request, data, known, started)]
        except Exception as exc:  # every failure becomes a skip with a reason
            return [self._failure(source, exc, started, _is_directory(source, exc))]

    def _read_local(self, request: LoadRequest, path: str, started: float, local: _LocalReads) -> LoadResult:
        """Read a local file, or take what this pass read of the same version of it by another path."""
        # os-level calls: for small files the Python file object costs more than the read.
        source, roots = request.source, self.roots
        try:
            if roots is not None and not roots.holds(resolved_path(path)):
                return self._outside(source, path, started)
            info, reason, detail = look_at(path)  # a FIFO or a device is never opened: it could block, or never end
            if info is None or reason is not None:
                # the fingerprint of a FIFO or a device lets a revalidation see it is still the same
                kept = local_fingerprint(info) if info is not None and reason == SkipReason.NOT_REGULAR_FILE else None
                return _skipped(source, reason or SkipReason.ERROR, source.redact(detail), started, fingerprint=kept)
            known = local_fingerprint(info)
            place = file_place(info)
            if known == request.fingerprint:
                result = _unchanged(request, known, started)
                result.place = place
                return result
            first = local.get(place)
            if first is not None:  # this version of the file, read by another path this pass
                if first.sha256 == request.sha256:
                    result = _unchanged(request, known, started, first.sha256)
                else:
                    result = replace(
                        first, source=source, fingerprint=known, duration_ms=ms_since(started), read_at=started
                    )
                result.place = place
                return result
            # O_NONBLOCK: should the path have become a FIFO since, opening it does not wait for a writer
            # (and the read that follows sees another inode, below).
            fd = os.open(path, _OPEN_FLAGS)
            steady = True
            try:
                if roots is not None and not roots.holds(_opened_path(fd, path)):
                    return self._outside(source, path, started)  # swapped for a link outside meanwhile
                size = info.st_size
                data = os.pread(fd, (size if size < self.settings.max_bytes else self.settings.max_bytes) + 1, 0)
                if len(data) != size:  # not the size stat'ed: changed meanwhile, too large, or /proc's size 0
                    data, read = self._read_steady(fd, info, data)
                    if read is not info:  # read again after a change: the version read is the later one
                        known = local_fingerprint(read)
                        steady = False
            finally:
                os.close(fd)
        except _Skip as skip:
            return _skipped(source, skip.reason, skip.detail, started)
        except Exception as exc:
            return self._failure(source, exc, started)
        result = self._finish(request, data, known, started)
        result.place = place
        if steady and result.content is not None and self._share_local:  # in the prompt as read
            local[place] = result  # held by the pass anyway (not its bytes: keeping those costs every render)
        return result

    def _outside(self, source: Source, path: str, started: float) -> LoadResult:
        assert self.confinement is not None
        try:
            known = local_fingerprint(os.stat(path))  # lets a revalidation see it is still the same file
        except OSError:
            known = None
        detail = source.redact(self.confinement.outside(path))
        return _skipped(source, SkipReason.OUTSIDE_ROOT, detail, started, fingerprint=known)

    def _read_steady(self, fd: int, info: os.stat_result, data: bytes) -> tuple[bytes, os.stat_result]:
        """*data*, the first read of the open file *info* describes, or a later read if it changed meanwhile.

        Called when the first read did not come out at the size stat'ed. A read
        counts only if the open file is the one *info* describes (the path was
        not swapped between the ``stat`` and the ``open``), its size and
        modification time are the same after the read as before, and the read
        gave that size: a file truncated and rewritten mid-read would give a
        mix of two versions, or a cut one.
        """
        limit = self.settings.max_bytes
        for _ in range(_STEADY_ATTEMPTS):
            want = (info.st_size if info.st_size < limit else limit) + 1
            if len(data) == want <= limit:  # it grew while being read: read on, up to the limit
                data += read_fd(fd, limit + 1 - want, limit + 1 - want, offset=want)
            after = os.fstat(fd)
            if not stat.S_ISREG(after.st_mode):
                raise _Skip(SkipReason.NOT_REGULAR_FILE, "became a FIFO or a device while being opened")
            # (A file of size 0 may still hold text: /proc and /sys give their size as 0.)
            if (after.st_ino, after.st_size, after.st_mtime_ns) == (info.st_ino, info.st_size, info.st_mtime_ns) and (
                len(data) == info.st_size or len(data) > limit or info.st_size == 0
            ):
                return data, info
            info = after
            want = (info.st_size if info.st_size < limit else limit) + 1
            data = os.pread(fd, want, 0)
        raise _Skip(SkipReason.CHANGED_DURING_READ, f"still changing after {_STEADY_ATTEMPTS} reads")

    # -- remote (everything else), on fsspec's I/O loop -----------------------

    async def _load_remote(self, items: list[tuple[int, LoadRequest]]) -> list[tuple[int, list[LoadResult]]]:
        limit = self._in_flight()
        reads: _RemoteReads = {}  # this pass's reads, one per read key: on this loop alone, no lock needed
        done = await asyncio.gather(*(self._read_watched(request, limit, reads) for _, request in items))
        return [(index, results) for (index, _), results in zip(items, done, strict=True)]

    def _in_flight(self) -> asyncio.Semaphore:
        """The loader's one cap on remote reads, shared by concurrent passes.

        Made on first use on fsspec's I/O loop, where every remote read runs (so
        no lock is needed), and made again if fsspec starts a new loop (after a fork).
        """
        loop = asyncio.get_running_loop()
        if self._limit is None or self._limit[0] is not loop:
            self._limit = (loop, asyncio.Semaphore(self.concurrency))
        return self._limit[1]

    async def _read_watched(
        self, request: LoadRequest, limit: asyncio.Semaphore, reads: _RemoteReads
    ) -> list[LoadResult]:
        """:meth:`_read_remote`, and the watcher told when it is done (see :mod:`memconfig.load.watch`)."""
        try:
            return await self._read_remote(request, limit, reads)
        finally:
            finished(request.source.name)

    async def _read_remote(
        self, request: LoadRequest, limit: asyncio.Semaphore, reads: _RemoteReads
    ) -> list[LoadResult]:
        source = request.source
        started = time.perf_counter()
        try:
            refused = self.confinement.refusal(source) if self.confinement is not None else None
            if refused is None and source.chained:
                refused = _irregular_link(source)
            if refused is not None:
                return [_skipped(source, *refused, started)]
            if source.expander is not None:
                expander = self.expanders[source.expander]
                children = await self._retrying(source, lambda: self._in_thread(expander.expand, source))
                children = self._matches(source, children)
                expect(len(children))
                reading = (self._read_watched(_child(request, c), limit, reads) for c in children)
                results = await asyncio.gather(*reading)
                return self._expanded(request, started, [r[0] for r in results])
            fs, path = await self._retrying(source, lambda: self._in_thread(source.open_fs))
            key = _read_key(request, fs)
            shared = reads.get(key)
            if shared is None:  # the first to ask reads; the others wait for its read (or its failure)
                shared = reads[key] = asyncio.ensure_future(self._fetch(request, fs, path, limit))
            fetched = await shared
            if fetched.data is None:
                return [_unchanged(request, fetched.known, started)]
            return [self._finish(request, fetched.data, fetched.known, started, fetched.read_at)]
        except Exception as exc:
            found = classify(exc)[0] == SkipReason.NOT_FOUND
            is_dir = await self._in_thread(_is_directory, source, exc) if found else False
            return [self._failure(source, exc, started, is_dir)]

    async def _fetch(self, request: LoadRequest, fs: Any, path: str, limit: asyncio.Semaphore) -> _Fetched:
        """Read *path* for *request* (and every request of the pass with its read key), retried, under the cap."""
        async with limit:
            fetched: _Fetched = await self._retrying(request.source, lambda: self._fetch_once(request, fs, path))
        return fetched

    async def _fetch_once(self, request: LoadRequest, fs: Any, path: str) -> _Fetched:
        """One attempt: the bytes (none if the fingerprint known is still the file's), and the fingerprint found."""
        attempt = time.perf_counter()  # this attempt's version is the one read: a retry's is later than the first's
        native = fs.async_impl and not request.source.chained
        wanted = self.fingerprints or request.fingerprint is not None
        known = None
        # A fingerprint is taken before the read or from the read's own response, never after:
        # one newer than the text it is stored with would hide the change in between for good.
        if request.fingerprint is not None or (wanted and not (native and answers_with_info(fs))):
            known = await self._info(request, fs, path, native)
            if known is not None and known == request.fingerprint:
                return _Fetched(None, known, attempt)
        limit = self.settings.max_bytes + 1
        if native:
            data, info = await read_async(fs, path, limit, for_fingerprint=wanted)
            if wanted and info is not None:
                known = fingerprint(info)
        else:
            data = bytes(await self._in_thread(fs.cat_file, path, start=0, end=limit))
        return _Fetched(data, known, attempt)

    async def _info(self, request: LoadRequest, fs: Any, path: str, native: bool) -> str | None:
        """The fingerprint fsspec's ``info()`` gives *path*, or ``None`` (the read then reports any real error).

        A declared S3 source asks with one ``HEAD`` tried once (:func:`s3_info`):
        s3fs's ``info()`` would retry it, unlogged. A child of a glob is in the
        listing made this pass, which s3fs's ``info()`` answers from.
        """
        try:
            if request.source.parent is None:
                if native and is_s3(fs):
                    return fingerprint(await s3_info(fs, path))
                fs.invalidate_cache(path)  # s3fs answers info() from cached listings
            return fingerprint(await fs._info(path) if native else await self._in_thread(fs.info, path))
        except Exception:
            return None

    async def _retrying(self, source: Source, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """Run *attempt* under the source's timeout, retrying transient failures with backoff and jitter.

        Each retry is logged (``source_retried``). A server's ``Retry-After``
        is the delay, capped at the source's timeout (the event's detail says
        so), so a source costs at most about its timeout times its attempts.
        """
        for tries in range(source.retries + 1):
            try:
                return await asyncio.wait_for(attempt(), source.timeout)
            except (TimeoutError, _Skip):
                raise
            except Exception as exc:
                reason, detail, transient = classify(exc)
                if tries >= source.retries or not transient:
                    raise
                # Each wait is at most the source's timeout: a dead source costs at most twice that per attempt.
                delay = min(self.backoff * 2**tries * random.uniform(0.5, 1.0), source.timeout)
                asked = retry_after(exc)
                if asked is not None:
                    delay = min(asked, source.timeout)
                    capped = f", capped at the source's timeout ({source.timeout:g} s)" if asked > delay else ""
                    detail = f"{detail}; Retry-After {round(asked, 1):g} s{capped}"
                events.source_retried(source, tries + 1, reason, source.redact(detail), delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _in_thread(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        pool = self._executor()
        return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(func, *args, **kwargs))

    def close(self) -> None:
        """Shut the thread pool down, waiting for its threads; a later read that needs one makes a new one."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        """The loader's thread pool (*concurrency* threads), made on first use."""
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="memconfig-load")
        return self._pool

    # -- shared: bytes to result, exceptions to reasons ------------------------

    def _finish(
        self, request: LoadRequest, data: bytes, known: str | None, started: float, read_at: float | None = None
    ) -> LoadResult:
        """The result of *data* read for *request*; *read_at*: when the read began, if not at *started*."""
        source, settings = request.source, self.settings
        read_at = started if read_at is None else read_at
        try:
            if len(data) > settings.max_bytes:
                raise _Skip(SkipReason.TOO_LARGE, over_max_bytes(settings.max_bytes))
            sha256 = hashlib.sha256(data).hexdigest()
            if sha256 == request.sha256:
                return _unchanged(request, known, started, sha256)
            try:
                text = data.decode(settings.encoding)
            except UnicodeDecodeError as exc:
                detail = f"not valid {settings.encoding} at byte {exc.start}"
                if settings.on_decode_error != "replace":
                    raise _Skip(SkipReason.DECODE_ERROR, detail, fatal=settings.on_decode_error == "fail") from None
                text = data.decode(settings.encoding, errors="replace")
                events.bytes_replaced(source, settings.encoding, detail)
            nul = text.find("\0")
            if nul >= 0:  # decoded first: in UTF-16 text, NUL bytes are just high bytes
                raise _Skip(SkipReason.BINARY, f"holds a NUL character (at character {nul}): not text")
            if self.is_blank(text):
                raise _Skip(SkipReason.EMPTY, "nothing left once comments and whitespace are removed")
        except _Skip as skip:  # the fingerprint lets a cache see next time that the file has not changed
            return _skipped(source, skip.reason, skip.detail, started, fatal=skip.fatal, fingerprint=known)
        return LoadResult(
            source, Status.LOADED, text, None, "", len(data), sha256, known, ms_since(started), read_at=read_at
        )

    def _failure(self, source: Source, exc: BaseException, started: float, is_dir: bool = False) -> LoadResult:
        if isinstance(exc, _Skip):
            return _skipped(source, exc.reason, exc.detail, started, fatal=exc.fatal)
        reason, detail, _ = classify(exc)
        if is_dir:
            reason, detail = SkipReason.IS_DIRECTORY, "is a directory"
        elif reason == SkipReason.TIMEOUT:
            detail = f"no answer within {source.timeout:g} s"
        return _skipped(source, reason, source.redact(detail), started)

    def _matches(self, source: Source, children: list[Source]) -> list[Source]:
        limit = self.settings.max_matches
        if len(children) > limit:
            raise _Skip(SkipReason.TOO_LARGE, over_max_matches(len(children), limit))
        return children

    def _expanded(self, request: LoadRequest, started: float, results: list[LoadResult]) -> list[LoadResult]:
        if not results:
            detail = self._expander_hooks.of(request.source.expander).no_match
            return [_skipped(request.source, SkipReason.NOT_FOUND, detail, started)]
        return results


_LocalReads = dict[str, LoadResult]
"""The local files one pass read into the prompt, by :func:`~memconfig.file_kinds.file_place` (its version too).

Not under ``on_decode_error: replace``: each source whose bytes are replaced is told so (``bytes_replaced``).
"""


class _Fetched(NamedTuple):
    """What one remote read found, before any request's own checks (its hash known, decoding)."""

    data: bytes | None
    """The bytes read (at most ``max_bytes + 1``); ``None``: the fingerprint asked about is still the file's."""
    known: str | None
    """The fingerprint of the version read (or found unchanged), if the filesystem gives one."""
    read_at: float
    """When the attempt that read it began (``time.perf_counter()``)."""


_RemoteReads = dict[Hashable, "asyncio.Future[_Fetched]"]
"""The remote reads of one pass, by :func:`_read_key`."""


def _read_key(request: LoadRequest, fs: Any) -> Hashable:
    """What makes two remote reads one: the same file, reached and asked for the same way.

    The place is the one repeats are found by (:func:`~memconfig.sources.places.same_place`:
    ``HTTPS://Host:443/a.md`` is ``https://host/a.md``); the filesystem must be made with the
    same options (credentials, headers, endpoint: an async one's fsspec token, another's
    arguments, as its token holds the thread that made it); and the request must ask the
    same way: its known fingerprint (whether a check may answer "unchanged"), the source's
    timeout and retries. The hash known of a version is not part of it: each request compares its own.
    """
    source = request.source
    identity = fs._fs_token if fs.async_impl else tokenize(type(fs), fs.storage_args, fs.storage_options)
    return (type(fs), identity, same_place(source.url), request.fingerprint, source.timeout, source.retries)


def _is_directory(source: Source, exc: BaseException) -> bool:
    """Whether a "not found" source is in fact a directory (object stores and memory have no real ones).

    Blocking: call it from a worker thread for remote filesystems. Not asked of
    HTTP, where a directory is just another URL.
    """
    if source.expander is not None or source.fs_path is None or classify(exc)[0] != SkipReason.NOT_FOUND:
        return False
    fs, path = source.fs_path
    if is_http(fs):
        return False
    try:
        return bool(fs.isdir(path))
    except Exception:
        return False


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_STEADY_ATTEMPTS = 3


def _irregular_link(source: Source) -> tuple[SkipReason, str] | None:
    """Why a local file inside a chained URL (the archive of ``zip://a.md::/srv/x.zip``) may not be opened.

    A FIFO there would block the thread that opens it past any timeout, and
    the process could not exit; so it is never opened, as for a plain path.
    """
    for part in chain(source.url):
        path = local_path_in(part) if part.protocol != "git" else None  # a repository is a folder
        if path is None:
            continue
        try:
            info = os.stat(path)
        except OSError:
            continue  # the read reports it
        if not stat.S_ISREG(info.st_mode):
            kind = irregular_kind(info.st_mode)
            return SkipReason.NOT_REGULAR_FILE, f"{source.redact(path)} is {kind}, not a regular file"
    return None


def _opened_path(fd: int, path: str) -> str:
    """The resolved path of the file open as *fd* (Linux: from ``/proc``, immune to a swapped symlink)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def _child(request: LoadRequest, child: Source) -> LoadRequest:
    known, sha256 = request.children.get(child.key, (None, None))
    return LoadRequest(child, known, sha256)


_Version = tuple[str, Any, SkipReason | None, Any]  # a check's path, its versions parsed, why it is out
_Prepared = tuple[Sequence[LocalCheck], list[_Version], dict[LocalCheck, _Version]]  # checks, parsed, by check


def _parsed(check: LocalCheck) -> _Version:
    return check.path, local_version(check.fingerprint), check.out, local_version(check.out_fingerprint)


def _unchanged(request: LoadRequest, known: str | None, started: float, sha256: str | None = None) -> LoadResult:
    return LoadResult(
        source=request.source,
        status=Status.UNCHANGED,
        sha256=sha256 or request.sha256,
        fingerprint=known,
        duration_ms=ms_since(started),
        read_at=started,
    )


def _skipped(
    source: Source,
    reason: SkipReason,
    detail: str,
    started: float,
    *,
    fatal: bool = False,
    fingerprint: str | None = None,
) -> LoadResult:
    return LoadResult(
        source=source,
        status=Status.SKIPPED,
        reason=reason,
        detail=detail,
        fingerprint=fingerprint,
        duration_ms=ms_since(started),
        fatal=fatal,
        read_at=started,
    )
