"""The loader stage: reads sources through fsspec, concurrently, never raising.

Every request ends in results, never in an exception: a source that cannot be
read becomes a ``skipped`` result with a reason from
:data:`~memconfig.stages.SKIP_REASONS`. Local and in-memory files are read
inline in the caller's thread (a thread hop costs more than the read); every
other source runs as one coroutine on fsspec's I/O loop — async filesystems
(HTTP, S3) natively, sync ones (zip, git) on a bounded thread pool — so one
pass costs about one round trip however many sources there are. Async
filesystems are read as a stream, so an empty object reads as empty
bytes and a server that ignores ``Range`` still sends no more than is read.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import errno
import hashlib
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import fsspec.asyn
from fsspec.implementations.local import LocalFileSystem

from .stages import LoadRequest, LoadResult

if TYPE_CHECKING:
    from .config import Config
    from .sources import Source

__all__ = ["FsspecLoader", "local_fingerprint"]

_TRANSIENT_ERRNOS = frozenset(
    {
        errno.ECONNRESET,
        errno.ECONNREFUSED,
        errno.ECONNABORTED,
        errno.ETIMEDOUT,
        errno.EAGAIN,
        errno.EBUSY,
        errno.EPIPE,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.EIO,
    }
)
_S3_NOT_FOUND = frozenset({"NoSuchKey", "NoSuchBucket", "404", "NotFound"})
_S3_DENIED = frozenset(
    {"AccessDenied", "403", "401", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled"}
)
_S3_TRANSIENT = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "500",
        "502",
        "503",
        "504",
    }
)
# A body that ended before its length (aiohttp, botocore, urllib3): the connection broke mid-read.
_CUT_SHORT = frozenset({"ClientPayloadError", "ResponseStreamingError", "IncompleteRead"})
# Fingerprint fields of fsspec info() dicts, strongest first.
_VALIDATORS = ("ETag", "etag", "Content-MD5", "Digest", "hex", "md5", "checksum", "crc", "CRC")
_TIMES = ("mtime", "LastModified", "Last-Modified", "last_modified", "updated", "created", "date_time")
# How close to a whole-second modification time a read must not be for that time to stand as a fingerprint.
_RACY_SECONDS = 2.0


class _Skip(Exception):
    """A source that is readable but must not go in (too large, undecodable, empty)."""

    def __init__(self, reason: str, detail: str, *, fatal: bool = False) -> None:
        super().__init__(detail)
        self.reason, self.detail, self.fatal = reason, detail, fatal


class FsspecLoader:
    """Reads sources through ``fsspec.core.url_to_fs``.

    Args:
        encoding: the text encoding of every source.
        on_decode_error: ``skip`` the source, ``replace`` bad bytes, or ``fail``
            (a skip marked fatal: the render fails).
        max_bytes: larger sources are skipped as ``too_large``; no more than
            ``max_bytes + 1`` bytes are ever read.
        concurrency: how many remote reads are in flight at once, across all the
            passes that share this loader.
        backoff: base delay in seconds of the exponential backoff between retries.
        is_blank: the formatter's test for text with nothing to show; such a source is ``empty``.
        fingerprints: also fingerprint remote sources on a cold read, for policies
            that revalidate.
    """

    def __init__(
        self,
        *,
        encoding: str = "utf-8",
        on_decode_error: str = "skip",
        max_bytes: int = 1 << 20,
        concurrency: int = 64,
        backoff: float = 0.2,
        is_blank: Callable[[str], bool] = lambda text: not text.strip(),
        fingerprints: bool = False,
    ) -> None:
        self.encoding = encoding
        self.on_decode_error = on_decode_error
        self.max_bytes = max_bytes
        self.concurrency = concurrency
        self.backoff = backoff
        self.is_blank = is_blank
        self.fingerprints = fingerprints
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._limit: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    @classmethod
    def from_config(cls, config: Config, is_blank: Callable[[str], bool]) -> FsspecLoader:
        opts = config.loader
        return cls(
            encoding=opts.encoding,
            on_decode_error=opts.on_decode_error,
            max_bytes=opts.max_bytes,
            concurrency=opts.concurrency,
            backoff=opts.backoff,
            is_blank=is_blank,
            fingerprints=config.cache.policy != "once",
        )

    def __repr__(self) -> str:
        return (
            f"FsspecLoader(encoding={self.encoding!r}, on_decode_error={self.on_decode_error!r}, "
            f"max_bytes={self.max_bytes}, concurrency={self.concurrency})"
        )

    # -- the stage's verbs --------------------------------------------------

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        """Read every request; results come back in request order (globs expanded in place)."""
        slots, remote = self._start(requests)
        future = asyncio.run_coroutine_threadsafe(self._load_remote(remote), fsspec.asyn.get_loop()) if remote else None
        self._load_inline(requests, slots)
        if future is not None:
            for index, results in future.result():
                slots[index] = results
        return [result for results in slots if results for result in results]

    async def aload(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        """:meth:`load` for asyncio callers; remote reads never block the caller's loop."""
        slots, remote = self._start(requests)
        future = (
            asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._load_remote(remote), fsspec.asyn.get_loop()))
            if remote
            else None
        )
        self._load_inline(requests, slots)
        if future is not None:
            for index, results in await future:
                slots[index] = results
        return [result for results in slots if results for result in results]

    # -- inline (local and memory) ------------------------------------------

    def _start(
        self, requests: Sequence[LoadRequest]
    ) -> tuple[list[list[LoadResult] | None], list[tuple[int, LoadRequest]]]:
        slots: list[list[LoadResult] | None] = [None] * len(requests)
        remote = [(i, r) for i, r in enumerate(requests) if not r.source.in_process]
        return slots, remote

    def _load_inline(self, requests: Sequence[LoadRequest], slots: list[list[LoadResult] | None]) -> None:
        for index, request in enumerate(requests):
            if slots[index] is None and request.source.in_process:
                slots[index] = self._read_inline(request)

    def _read_inline(self, request: LoadRequest) -> list[LoadResult]:
        source = request.source
        started = time.perf_counter()
        try:
            fs, path = source.open_fs()
            if source.glob:
                matches = _files(fs.glob(path, detail=True))
                results = [self._read_inline(_child(request, fs, m))[0] for m in matches]
                return self._expanded(request, started, matches, results)
            if isinstance(fs, LocalFileSystem):
                return [self._read_local(request, path, started)]
            fingerprint = _fingerprint(fs.info(path)) if self.fingerprints or request.fingerprint else None
            if fingerprint is not None and fingerprint == request.fingerprint:
                return [_unchanged(request, fingerprint, started)]
            data = fs.cat_file(path, start=0, end=self.max_bytes + 1)
            return [self._finish(request, data, fingerprint, started)]
        except Exception as exc:  # every failure becomes a skip with a reason
            return [self._failure(source, exc, started, _is_directory(source, exc))]

    def _read_local(self, request: LoadRequest, path: str, started: float) -> LoadResult:
        # os-level calls: for small files the Python file object costs more than the read.
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                stat = os.fstat(fd)
                fingerprint = local_fingerprint(stat)
                if fingerprint == request.fingerprint:
                    return _unchanged(request, fingerprint, started)
                # What the file holds (not a max_bytes buffer), and more if it grew meanwhile.
                data = _read_fd(fd, min(stat.st_size, self.max_bytes) + 1, self.max_bytes + 1)
            finally:
                os.close(fd)
        except Exception as exc:
            return self._failure(request.source, exc, started)
        return self._finish(request, data, fingerprint, started)

    # -- remote (everything else), on fsspec's I/O loop -----------------------

    async def _load_remote(self, items: list[tuple[int, LoadRequest]]) -> list[tuple[int, list[LoadResult]]]:
        limit = self._in_flight()
        done = await asyncio.gather(*(self._read_remote(request, limit) for _, request in items))
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

    async def _read_remote(self, request: LoadRequest, limit: asyncio.Semaphore) -> list[LoadResult]:
        source = request.source
        started = time.perf_counter()
        try:
            fs, path = await self._retrying(source, lambda: self._in_thread(source.open_fs))
            if source.glob:
                fs.invalidate_cache()  # a listing cached on an earlier pass would hide new files
                if fs.async_impl and not fs.asynchronous and not source.chained:
                    listing = await self._retrying(source, lambda: fs._glob(path, detail=True))
                else:
                    listing = await self._retrying(source, lambda: self._in_thread(fs.glob, path, detail=True))
                matches = _files(listing)
                children = await asyncio.gather(*(self._read_remote(_child(request, fs, m), limit) for m in matches))
                return self._expanded(request, started, matches, [c[0] for c in children])
            async with limit:
                return [await self._retrying(source, lambda: self._read_one(request, fs, path, started))]
        except Exception as exc:
            is_dir = await self._in_thread(_is_directory, source, exc) if _classify(exc)[0] == "not_found" else False
            return [self._failure(source, exc, started, is_dir)]

    async def _read_one(self, request: LoadRequest, fs: Any, path: str, started: float) -> LoadResult:
        native = fs.async_impl and not request.source.chained
        wanted = self.fingerprints or request.fingerprint is not None
        fingerprint = None
        # A fingerprint is taken before the read or from the read's own response, never after:
        # one newer than the text it is stored with would hide the change in between for good.
        if request.fingerprint is not None or (wanted and not (native and _answers_with_info(fs))):
            fingerprint = await self._info(request, fs, path, native)
            if fingerprint is not None and fingerprint == request.fingerprint:
                return _unchanged(request, fingerprint, started)
        if native:
            data, info = await _read_async(fs, path, self.max_bytes + 1, for_fingerprint=wanted)
            if wanted and info is not None:
                fingerprint = _fingerprint(info)
        else:
            data = bytes(await self._in_thread(fs.cat_file, path, start=0, end=self.max_bytes + 1))
        return self._finish(request, data, fingerprint, started)

    async def _info(self, request: LoadRequest, fs: Any, path: str, native: bool) -> str | None:
        """The fingerprint fsspec's ``info()`` gives *path*, or ``None`` (the read then reports any real error)."""
        try:
            if request.source.parent is None:  # a glob's match is in the listing made this pass
                fs.invalidate_cache(path)  # s3fs answers info() from cached listings
            return _fingerprint(await fs._info(path) if native else await self._in_thread(fs.info, path))
        except Exception:
            return None

    async def _retrying(self, source: Source, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """Run *attempt* under the source's timeout, retrying transient failures with backoff and jitter."""
        for tries in range(source.retries + 1):
            try:
                return await asyncio.wait_for(attempt(), source.timeout)
            except (TimeoutError, _Skip):
                raise
            except Exception as exc:
                if tries >= source.retries or not _classify(exc)[2]:
                    raise
                await asyncio.sleep(self.backoff * 2**tries * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    async def _in_thread(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="memconfig-load")
        return await asyncio.get_running_loop().run_in_executor(self._pool, lambda: func(*args, **kwargs))

    # -- shared: bytes to result, exceptions to reasons ------------------------

    def _finish(self, request: LoadRequest, data: bytes, fingerprint: str | None, started: float) -> LoadResult:
        source = request.source
        try:
            if len(data) > self.max_bytes:
                raise _Skip("too_large", f"larger than loader.max_bytes ({self.max_bytes} bytes)")
            sha256 = hashlib.sha256(data).hexdigest()
            if sha256 == request.sha256:
                return _unchanged(request, fingerprint, started, sha256)
            try:
                text = data.decode(self.encoding)
            except UnicodeDecodeError as exc:
                detail = f"not valid {self.encoding} at byte {exc.start}"
                if self.on_decode_error != "replace":
                    raise _Skip("decode_error", detail, fatal=self.on_decode_error == "fail") from None
                text = data.decode(self.encoding, errors="replace")
            if self.is_blank(text):
                raise _Skip("empty", "nothing left once comments and whitespace are removed")
        except _Skip as skip:  # the fingerprint lets a cache see next time that the file has not changed
            return _skipped(source, skip.reason, skip.detail, started, fatal=skip.fatal, fingerprint=fingerprint)
        return LoadResult(
            source=source,
            status="loaded",
            content=text,
            bytes=len(data),
            sha256=sha256,
            fingerprint=fingerprint,
            duration_ms=_ms(started),
        )

    def _failure(self, source: Source, exc: BaseException, started: float, is_dir: bool = False) -> LoadResult:
        if isinstance(exc, _Skip):
            return _skipped(source, exc.reason, exc.detail, started, fatal=exc.fatal)
        reason, detail, _ = _classify(exc)
        if is_dir:
            reason, detail = "is_directory", "is a directory"
        elif reason == "timeout":
            detail = f"no answer within {source.timeout:g} s"
        return _skipped(source, reason, source.redact(detail), started)

    def _expanded(
        self, request: LoadRequest, started: float, matches: list[str], results: list[LoadResult]
    ) -> list[LoadResult]:
        source = request.source
        if not matches:
            return [_skipped(source, "not_found", "the glob matched no file", started)]
        return results


async def _read_async(fs: Any, path: str, limit: int, *, for_fingerprint: bool) -> tuple[bytes, dict[str, Any] | None]:
    """Read at most *limit* bytes of *path* on an async filesystem, as a stream.

    A byte range would not do: for an empty object it is "not satisfiable"
    (HTTP 416, S3 InvalidRange), and a server that ignores ``Range`` sends the
    whole body, which ``_cat_file`` reads whole. A stream stops after *limit*.

    Returns the bytes and, for HTTP and S3, an ``info()``-like dict made from the
    same response (``None`` elsewhere), so a fingerprint belongs to exactly the
    bytes read. With *for_fingerprint*, an HTTP read asks for the body as
    fsspec's ``info()`` does (``Accept-Encoding: identity``): a compressed answer
    may carry another ETag (nginx weakens it, Apache suffixes it), which the next
    ``info()`` would never match.
    """
    if _is_http(fs):
        # The GET that fsspec's _cat_file makes, without the Range. (Its open_async drops the
        # filesystem's request options, such as headers, and asks for the size with a HEAD first.)
        session = await fs.set_session()
        kwargs = fs.kwargs
        if for_fingerprint:
            kwargs = {**kwargs, "headers": {**kwargs.get("headers", {}), "Accept-Encoding": "identity"}}
        async with session.get(fs.encode_url(path), **kwargs) as response:
            fs._raise_not_found_for_status(response, path)  # 404 → FileNotFoundError, as _cat_file
            data = await _read_upto(response.content.read, limit)  # cut short, the connection is closed
            return data, _http_info(response.headers)
    if _is_s3(fs):
        # The GET s3fs's streamed file sends (plus a pinned version), keeping the response's
        # ETag and LastModified, which the streamed file drops. s3fs adds its request options.
        bucket, key, version = fs.split_path(path)
        pinned = {"VersionId": version} if version else {}
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key, **pinned)
        body = response["Body"]
        try:
            data = await _read_upto(body.read, limit)
        finally:
            body.close()  # ends the response if cut short
        info = {"ETag": response.get("ETag"), "LastModified": response.get("LastModified")}
        date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        return data, {**info, "size": response.get("ContentLength"), "Date": date}
    try:
        stream = await fs.open_async(path, "rb")
    except NotImplementedError:
        return bytes(await fs._cat_file(path, start=0, end=limit)), None
    try:
        return await _read_upto(stream.read, limit), None
    finally:
        await stream.close()


def _http_info(headers: Any) -> dict[str, Any]:
    """What fsspec's HTTP ``info()`` would make of these response headers, and the server's ``Date``."""
    info: dict[str, Any] = {
        k: headers[k] for k in ("ETag", "Content-MD5", "Digest", "Last-Modified", "Date") if headers.get(k)
    }
    if "Content-Length" in headers and headers.get("Content-Encoding", "identity") in ("identity", ""):
        info["size"] = int(headers["Content-Length"])
    return info


async def _read_upto(read: Callable[[int], Awaitable[bytes]], limit: int) -> bytes:
    """Read from a stream until its end or *limit* bytes; each ``read(n)`` gives what has arrived, up to n."""
    chunks: list[bytes] = []
    got = 0
    while got < limit:
        chunk = await read(limit - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_fd(fd: int, want: int, limit: int) -> bytes:
    """Read up to *limit* bytes, asking for *want* first; stops at end of file."""
    chunks = []
    got = 0
    while got < limit:
        asked = want - got if got < want else limit - got
        chunk = os.read(fd, asked)
        chunks.append(chunk)
        got += len(chunk)
        if len(chunk) < asked:  # a short read of a regular file is its end
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def local_fingerprint(stat: os.stat_result) -> str:
    """A local file's change token: inode, size and modification time in nanoseconds."""
    return f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


def _is_directory(source: Source, exc: BaseException) -> bool:
    """Whether a "not found" source is in fact a directory (object stores and memory have no real ones).

    Blocking: call it from a worker thread for remote filesystems. Not asked of
    HTTP, where a directory is just another URL.
    """
    if source.glob or source.fs_path is None or _classify(exc)[0] != "not_found":
        return False
    fs, path = source.fs_path
    if _is_http(fs):
        return False
    try:
        return bool(fs.isdir(path))
    except Exception:
        return False


def _is_http(fs: Any) -> bool:
    return bool({"http", "https"} & _protocols(fs))


def _is_s3(fs: Any) -> bool:
    return bool({"s3", "s3a"} & _protocols(fs)) and callable(getattr(fs, "_call_s3", None))


def _answers_with_info(fs: Any) -> bool:
    """Whether :func:`_read_async` brings back the fingerprint's info with the bytes."""
    return _is_http(fs) or _is_s3(fs)


def _protocols(fs: Any) -> set[str]:
    return {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)


def _child(request: LoadRequest, fs: Any, path: str) -> LoadRequest:
    child = request.source.match(fs, path)
    fingerprint, sha256 = request.children.get(child.key, (None, None))
    return LoadRequest(child, fingerprint, sha256)


def _files(listing: Any) -> list[str]:
    if isinstance(listing, dict):
        return sorted(p for p, info in listing.items() if info.get("type", "file") != "directory")
    return sorted(listing)


def _fingerprint(info: dict[str, Any]) -> str | None:
    """A change token from an fsspec ``info()`` dict, or ``None`` if it has none worth trusting.

    A time of whole seconds (HTTP ``Last-Modified``, S3 ``LastModified``) cannot
    tell this version from an edit later in the same second: within
    :data:`_RACY_SECONDS` of the read it is no token, and the next check compares
    content hashes instead (git's "racy" files). ``Date``, where the info comes
    from the read's own response, is the server's clock at the read.
    """
    for key in _VALIDATORS:
        if info.get(key):
            return f"{key}:{info[key]}"
    for key in _TIMES:
        if info.get(key):
            if _racy(info[key], info.get("Date")):
                return None
            return f"{key}:{info[key]}:{info.get('size')}:{info.get('ino', '')}"
    return None


def _racy(value: Any, date: Any) -> bool:
    """Whether modification time *value* is too coarse and too recent to tell a same-second edit apart."""
    when = _seconds(value)
    if when is None:
        return True  # a time that cannot be read cannot be shown to be old enough
    at, whole = when
    if not whole:
        return False
    server = _seconds(date) if date else None
    now = server[0] if server is not None else time.time()
    return abs(now - at) < _RACY_SECONDS


def _seconds(value: Any) -> tuple[float, bool] | None:
    """(POSIX time, whether it is whole seconds) of a number, datetime or HTTP or ISO 8601 date, else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value), float(value).is_integer()
    if isinstance(value, str):
        try:
            value = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            try:
                value = datetime.datetime.fromisoformat(value)
            except ValueError:
                return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.timestamp(), value.microsecond == 0
    return None


def _classify(exc: BaseException) -> tuple[str, str, bool]:
    """(reason, detail, transient) for an exception from fsspec or its backends."""
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "timeout", "timed out", True
    status = getattr(exc, "status", None)
    if isinstance(status, int):  # aiohttp.ClientResponseError
        text = f"HTTP {status} {getattr(exc, 'message', '')}".strip()
        if status == 404 or status == 410:
            return "not_found", text, False
        if status in (401, 403):
            return "permission_denied", text, False
        return "remote_error", text, status == 429 or status >= 500
    code = _s3_code(exc)
    if code is not None:
        if code in _S3_NOT_FOUND:
            return "not_found", f"S3 {code}", False
        if code in _S3_DENIED:
            return "permission_denied", f"S3 {code}", False
        return "remote_error", f"S3 {code}", code in _S3_TRANSIENT
    if isinstance(exc, FileNotFoundError):
        return "not_found", "no such file", False
    if isinstance(exc, KeyError) and type(exc).__name__ == "NotFoundError":  # pygit2: no such ref or commit
        return "not_found", f"no such git ref {exc}", False
    if isinstance(exc, IsADirectoryError):
        return "is_directory", "is a directory", False
    if isinstance(exc, PermissionError):
        return "permission_denied", "permission denied", False
    name = type(exc).__name__
    if isinstance(exc, ConnectionError) or "Connect" in name or "ServerDisconnected" in name or name in _CUT_SHORT:
        return "remote_error", f"{name}: {exc}", True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return "remote_error", f"{name}: {exc.strerror or exc}", True
    return "error", f"{name}: {exc}", False


def _s3_code(exc: BaseException) -> str | None:
    for candidate in (exc, exc.__cause__, exc.__context__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if code:
                return str(code)
    return None


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _unchanged(request: LoadRequest, fingerprint: str | None, started: float, sha256: str | None = None) -> LoadResult:
    return LoadResult(
        source=request.source,
        status="unchanged",
        sha256=sha256 or request.sha256,
        fingerprint=fingerprint,
        duration_ms=_ms(started),
    )


def _skipped(
    source: Source, reason: str, detail: str, started: float, *, fatal: bool = False, fingerprint: str | None = None
) -> LoadResult:
    return LoadResult(
        source=source,
        status="skipped",
        reason=reason,
        detail=detail,
        fingerprint=fingerprint,
        duration_ms=_ms(started),
        fatal=fatal,
    )
