"""Times on the command line and in events, as one sortable text: ``2026-12-01T08:11:45.123456Z`` (UTC).

The CLI's events carry that exact form, so an event's time is compared as it
is read, with no parsing; other forms (an offset, fewer digits) are
normalised first. A user gives ISO 8601 (a date, a date and time, with or
without an offset: none means UTC) or a time ago: ``30m``, ``6h``, ``2d``, ``1w``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ..exceptions import ConfigError

__all__ = ["canonical_time", "parse_user_time"]

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_CANONICAL_LENGTH = 27
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*(?:ago)?\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _text(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(_FORMAT)


def canonical_time(value: object) -> str | None:
    """An event's ``timestamp`` in the sortable form, or None if it has none that reads as a time."""
    if type(value) is not str:
        return None
    if len(value) == _CANONICAL_LENGTH and value[-1] == "Z":
        return value
    try:
        return _text(datetime.fromisoformat(value))
    except ValueError:
        return None


def parse_user_time(text: str, option: str, now: datetime | None = None) -> str:
    """``--since`` / ``--until`` / ``--at``: ISO 8601 or a time ago, in the sortable form; exit 2 otherwise."""
    found = _AGO.match(text)
    if found:
        moment = (now or datetime.now(UTC)) - timedelta(**{_UNITS[found[2].lower()]: float(found[1])})
        return _text(moment)
    try:
        return _text(datetime.fromisoformat(text.strip()))
    except ValueError:
        raise ConfigError(
            f"{option} {text!r}: not a time (give ISO 8601, as 2026-12-01 or 2026-12-01T09:30, or a time ago, as 2d)"
        ) from None
