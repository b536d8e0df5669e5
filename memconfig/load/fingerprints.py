"""Change tokens: what tells a source's version apart without reading it.

Locally, inode + size + modification time in nanoseconds; remotely the
strongest validator the filesystem's ``info()`` gives (ETag, Content-MD5 …),
else a modification time that is fine-grained or old enough to be trusted.
"""

from __future__ import annotations

import datetime
import email.utils
import os
import time
from typing import Any

__all__ = ["fingerprint", "local_fingerprint", "local_version"]

# Fingerprint fields of fsspec info() dicts, strongest first.
_VALIDATORS = ("ETag", "etag", "Content-MD5", "Digest", "hex", "md5", "checksum", "crc", "CRC")
_TIMES = ("mtime", "LastModified", "Last-Modified", "last_modified", "updated", "created", "date_time")
# How close to a whole-second modification time a read must not be for that time to stand as a fingerprint.
_RACY_SECONDS = 2.0


def local_fingerprint(stat: os.stat_result) -> str:
    """A local file's change token: inode, size and modification time in nanoseconds."""
    return f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


def local_version(fingerprint: str | None) -> tuple[int, int, int] | None:
    """The ``(inode, size, mtime_ns)`` a :func:`local_fingerprint` was made of; ``None`` for any other token."""
    if fingerprint is None:
        return None
    parts = fingerprint.split(":")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def fingerprint(info: dict[str, Any]) -> str | None:
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
