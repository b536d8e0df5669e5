"""Reading bytes: a stream that stops at a limit, for async filesystems and for local file descriptors."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from ..sources.hosts import HTTP

__all__ = ["call_s3", "is_http", "is_s3", "read_async", "read_fd", "s3_info"]


async def read_async(fs: Any, path: str, limit: int, *, for_fingerprint: bool) -> tuple[bytes, dict[str, Any] | None]:
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
    if is_http(fs):
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
    if is_s3(fs):
        # The GET s3fs's streamed file sends (plus a pinned version), keeping the response's
        # ETag and LastModified, which the streamed file drops. s3fs adds its request options.
        bucket, key, version = fs.split_path(path)
        pinned = {"VersionId": version} if version else {}
        response = await call_s3(fs, "get_object", Bucket=bucket, Key=key, **pinned)
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


async def call_s3(fs: Any, method: str, **kwargs: Any) -> Any:
    """One S3 request, sent as s3fs's ``_call_s3`` sends it but tried once.

    s3fs tries a request up to five times (throttling, a dropped connection),
    with sleeps and no trace in memconfig's log; the loader retries instead,
    and logs each retry (``source_retried``).
    """
    await fs.set_session()
    client = await fs.get_s3(kwargs.get("Bucket"))
    call = getattr(client, method)
    return await call(**fs._get_s3_method_kwargs(call, **kwargs))


async def s3_info(fs: Any, path: str) -> dict[str, Any]:
    """What s3fs's ``info()`` gives for an object (ETag, LastModified, size), from one ``HEAD`` tried once."""
    bucket, key, version = fs.split_path(path)
    pinned = {"VersionId": version} if version else {}
    head = await call_s3(fs, "head_object", Bucket=bucket, Key=key, **pinned)
    return {"ETag": head.get("ETag"), "LastModified": head.get("LastModified"), "size": head.get("ContentLength")}


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


def read_fd(fd: int, want: int, limit: int, offset: int = 0) -> bytes:
    """Read up to *limit* bytes from *offset* on, asking for *want* first; stops at end of file."""
    chunks = []
    got = 0
    while got < limit:
        asked = want - got if got < want else limit - got
        chunk = os.pread(fd, asked, offset + got)
        chunks.append(chunk)
        got += len(chunk)
        if len(chunk) < asked:  # a short read of a regular file is its end
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def is_http(fs: Any) -> bool:
    return bool(HTTP & _protocols(fs))


def is_s3(fs: Any) -> bool:
    return bool({"s3", "s3a"} & _protocols(fs)) and callable(getattr(fs, "_call_s3", None))


def answers_with_info(fs: Any) -> bool:
    """Whether :func:`read_async` brings back the fingerprint's info with the bytes."""
    return is_http(fs) or is_s3(fs)


def _protocols(fs: Any) -> set[str]:
    return {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
