"""Times on the command line and in events, as one sortable text: ``2026-12-01T08:11:45.123456Z`` (UTC).

The CLI's events carry that exact form, so an event's time is compared as it
is read, with no parsing (:func:`is_canonical` checks its shape, cheaply);
other forms (an offset, fewer digits) are normalised first. The year is
always four digits, so text order is time order from year 1 to 9999. A user
gives ISO 8601 (a date, a date and time, with or without an offset: none
means UTC) or a time ago: ``30m``, ``6h``, ``2d``, ``1w``. A date alone is
its first moment, except for ``--until``, where it is its last: "until
Tuesday" includes Tuesday.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from ..exceptions import ConfigError

__all__ = ["canonical_time", "is_canonical", "parse_user_time"]

_CANONICAL_LENGTH = 27
_AGO = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])(?:\s*ago)?", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_FORMS = "give ISO 8601, as 2026-12-01 or 2026-12-01T09:30, or a time ago, as 2d"
_FORMS = "give ISO 8601, as 2026-12-01 or 2026-12-01T09:30, or a time ago, as 2d"
_SHOWN = 60  # characters of a refused value quoted in the message


def is_canonical(value: str) -> bool:
    """Whether *value* has the sortable form's shape (its length, ``Z`` and separators; not each digit).

    The pass inlines this same test on every event, so it stays a few
    character comparisons; a value failing it goes through :func:`canonical_time`.
    """
    return (
        len(value) == _CANONICAL_LENGTH
        and value[26] == "Z"
        and value[4] == "-"
        and value[10] == "T"
        and value[19] == "."
    )


def _text(moment: datetime) -> str:
    """*moment* in the sortable form (no offset: UTC). Raises OverflowError past year 1 or 9999 in UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    m = moment.astimezone(UTC)
    # strftime's %Y is not zero-padded before year 1000 on every platform: "999-…" would sort after "2026-…"
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{m.microsecond:06d}Z"


def canonical_time(value: object) -> str | None:
    """An event's ``timestamp`` in the sortable form, or None if it has none that reads as a time. Never raises."""
    if type(value) is not str:
        return None
    if is_canonical(value):
        return value
    try:
        return _text(datetime.fromisoformat(value))
    except (ValueError, OverflowError):  # not a time; or one whose UTC form is outside years 1..9999
        return None


def parse_user_time(text: str, option: str, now: datetime | None = None) -> str:
    """``--since`` / ``--until`` / ``--at``: ISO 8601 or a time ago, in the sortable form; exit 2 otherwise.

    A date alone is midnight (UTC) at its start, or, for ``--until``, the
    last microsecond of that day.
    """
    given = text.strip()
    try:
        ago = _AGO.fullmatch(given)
        if ago:
            return _text((now or datetime.now(UTC)) - timedelta(**{_UNITS[ago[2].lower()]: float(ago[1])}))
        try:
            day = date.fromisoformat(given)
        except ValueError:
            return _text(datetime.fromisoformat(given))
        return _text(datetime.combine(day, time.max if option == "--until" else time.min))
    except OverflowError:
        raise ConfigError(f"{option} {_shown(text)}: out of range (give a time in the years 1 to 9999, UTC)") from None
    except ValueError:
        raise ConfigError(f"{option} {_shown(text)}: not a time ({_FORMS})") from None


def _shown(text: str) -> str:
    """*text* quoted for a message, cut if long (a message is one line)."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")
