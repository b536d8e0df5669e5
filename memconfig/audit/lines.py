"""One log line: a memconfig event (a dict), or the kind of line it is instead.

A line is memconfig's when it is a JSON object whose ``event`` is in
:data:`memconfig.events.EVENTS` and which carries ``render_id`` (every event
does, ``null`` outside a render). Anything else is *foreign* (another program's
text or JSON: counted, never shown, since it may hold anything, a token
included) or *malformed* (cut off, binary, not an object, over the size
limit): counted by kind. Nothing here raises.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..events import EVENTS

__all__ = [
    "BINARY",
    "FOREIGN_JSON",
    "FOREIGN_TEXT",
    "NOT_AN_OBJECT",
    "TOO_LONG",
    "TRUNCATED",
    "UNKNOWN_EVENT",
    "classify_unparsed",
    "parse_line",
]

# Foreign lines: not memconfig's.
FOREIGN_TEXT = "text"
FOREIGN_JSON = "json"
# Malformed lines: meant to be JSON, and not readable as an event.
TRUNCATED = "truncated"
BINARY = "binary"
NOT_AN_OBJECT = "not_an_object"
TOO_LONG = "too_long"
BAD_FIELD = "bad_field"
# memconfig-shaped (a ``render_id``), naming an event this reader does not know: a newer schema's.
UNKNOWN_EVENT = "unknown_event"

_loads = orjson.loads
_JSONError = orjson.JSONDecodeError
KNOWN = frozenset(EVENTS)


def classify_unparsed(line: bytes) -> str:
    """Why *line*, which orjson refused, is not an event: binary, cut-off JSON, or foreign text."""
    if b"\x00" in line:
        return BINARY
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY
    return TRUNCATED if line.lstrip()[:1] in (b"{", b"[") else FOREIGN_TEXT


def parse_line(line: bytes) -> dict[str, Any] | str:
    """The event on *line*, or the kind of line it is (one of this module's constants).

    The aggregating pass inlines this for speed; this is the reference it follows.
    """
    try:
        found = _loads(line)
    except _JSONError:
        return classify_unparsed(line)
    if type(found) is not dict:
        return NOT_AN_OBJECT
    if "render_id" not in found:
        return FOREIGN_JSON
    if found.get("event") not in KNOWN:
        return UNKNOWN_EVENT
    return found
