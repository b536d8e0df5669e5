"""What an exception from fsspec or one of its backends means: a skip reason, and whether it may pass."""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import errno

from ..model import SkipReason
from ..sources.hosts import HostNotAllowed
from ..words import counted

__all__ = ["classify", "over_max_bytes", "over_max_matches", "retry_after"]

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
# botocore's own timeouts (connect_timeout, read_timeout), which are not TimeoutErrors.
_TIMEOUTS = frozenset({"ConnectTimeoutError", "ReadTimeoutError"})


def over_max_bytes(limit: int) -> str:
    """The detail of a ``too_large`` skip for a file over ``loader.max_bytes`` (a render's and explain's alike).

    The limit is shown as the config writes it (no thousands separator).
    """
    return f"larger than loader.max_bytes ({limit} bytes)"


def over_max_matches(count: int, limit: int) -> str:
    """The detail of a ``too_large`` skip for a glob that matched more files than ``loader.max_matches``."""
    return f"matched {counted(count, 'file')}, more than loader.max_matches ({limit})"


def classify(exc: BaseException) -> tuple[SkipReason, str, bool]:
    """(reason, detail, transient) for an exception from fsspec or its backends.

    A timeout is not transient: it has already cost the source its whole
    ``timeout``, and trying again would cost as much again.
    """
    if isinstance(exc, asyncio.TimeoutError | TimeoutError) or type(exc).__name__ in _TIMEOUTS:
        return SkipReason.TIMEOUT, "timed out", False
    if isinstance(exc, HostNotAllowed):  # the source's own host was allowed: a redirect led here
        return SkipReason.HOST_NOT_ALLOWED, f"redirected to host {exc.host!r}, not in loader.allowed_hosts", False
    name = type(exc).__name__
    if name == "TooManyRedirects":  # aiohttp, after max_redirects (10) hops
        return SkipReason.REMOTE_ERROR, f"too many redirects ({len(getattr(exc, 'history', ()))})", False
    if "Redirect" in name:  # to a URL that is not one, or not HTTP(S); never shown: it may hold a token
        return SkipReason.REMOTE_ERROR, "redirected to a location that is not an HTTP(S) URL", False
    status = getattr(exc, "status", None)
    if isinstance(status, int):  # aiohttp.ClientResponseError
        text = f"HTTP {status} {getattr(exc, 'message', '')}".strip()
        if status == 404 or status == 410:
            return SkipReason.NOT_FOUND, text, False
        if status in (401, 403):
            return SkipReason.PERMISSION_DENIED, text, False
        return SkipReason.REMOTE_ERROR, text, status == 429 or status >= 500
    code = _s3_code(exc)
    if code is not None:
        if code in _S3_NOT_FOUND:
            return SkipReason.NOT_FOUND, f"S3 {code}", False
        if code in _S3_DENIED:
            return SkipReason.PERMISSION_DENIED, f"S3 {code}", False
        return SkipReason.REMOTE_ERROR, f"S3 {code}", code in _S3_TRANSIENT
    if isinstance(exc, FileNotFoundError):
        # fsspec's HTTP info() raises FileNotFoundError *from* whatever went wrong, a refused
        # connection included (a zip over HTTP opens its file that way): the cause says what.
        cause = exc.__cause__
        if cause is not None and cause is not exc:
            found = classify(cause)
            if found[0] != SkipReason.ERROR:
                return found
        return SkipReason.NOT_FOUND, "no such file", False
    if isinstance(exc, KeyError) and type(exc).__name__ == "NotFoundError":  # pygit2: no such ref or commit
        return SkipReason.NOT_FOUND, f"no such git ref {exc}", False
    if isinstance(exc, IsADirectoryError):
        return SkipReason.IS_DIRECTORY, "is a directory", False
    if isinstance(exc, PermissionError):
        return SkipReason.PERMISSION_DENIED, "permission denied", False
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return SkipReason.SYMLINK_LOOP, "too many levels of symbolic links", False
    if isinstance(exc, OSError) and exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
        return SkipReason.NOT_REGULAR_FILE, "no such device or address: not a regular file", False
    if isinstance(exc, ConnectionError) or "Connect" in name or "ServerDisconnected" in name or name in _CUT_SHORT:
        return SkipReason.REMOTE_ERROR, f"{name}: {exc}", True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return SkipReason.REMOTE_ERROR, f"{name}: {exc.strerror or exc}", True
    return SkipReason.ERROR, f"{name}: {exc}", False


def _s3_code(exc: BaseException) -> str | None:
    for candidate in (exc, exc.__cause__, exc.__context__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if code:
                return str(code)
    return None


def retry_after(exc: BaseException) -> float | None:
    """The seconds a ``Retry-After`` answer asks to wait (delta-seconds or an HTTP-date), or ``None``.

    From an aiohttp ``ClientResponseError``'s headers, or from the HTTP headers
    botocore keeps in a ``ClientError``'s response. A date in the past is 0.
    """
    headers = getattr(exc, "headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            headers = response.get("ResponseMetadata", {}).get("HTTPHeaders")
    if not headers:
        return None
    value = headers.get("Retry-After") or headers.get("retry-after")
    if not value:
        return None
    value = str(value).strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
