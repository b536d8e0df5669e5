"""What an exception from fsspec or one of its backends means: a skip reason, and whether it may pass."""

from __future__ import annotations

import asyncio
import errno

from ..failures import SkipReason

__all__ = ["classify"]

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


def classify(exc: BaseException) -> tuple[SkipReason, str, bool]:
    """(reason, detail, transient) for an exception from fsspec or its backends."""
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return SkipReason.TIMEOUT, "timed out", True
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
        return SkipReason.NOT_FOUND, "no such file", False
    if isinstance(exc, KeyError) and type(exc).__name__ == "NotFoundError":  # pygit2: no such ref or commit
        return SkipReason.NOT_FOUND, f"no such git ref {exc}", False
    if isinstance(exc, IsADirectoryError):
        return SkipReason.IS_DIRECTORY, "is a directory", False
    if isinstance(exc, PermissionError):
        return SkipReason.PERMISSION_DENIED, "permission denied", False
    name = type(exc).__name__
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
