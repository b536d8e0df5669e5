"""The kinds of log line that are not a memconfig event, and how to tell an unparsed line's kind.

A line is memconfig's when it is a JSON object whose ``event`` is in
:data:`memconfig.events.EVENTS` and which carries ``render_id`` (every event
does, ``null`` outside a render). Anything else is *foreign* (another program's
text or JSON: counted, never shown, since it may hold anything, a token
included) or *malformed* (cut off, binary, not an object, over the size
limit, a field of the wrong type): counted by kind. The pass in
:mod:`~memconfig.audit.aggregate` applies these rules inline, for speed; this
module names the kinds and classifies what orjson refused. Nothing here raises.
"""

from __future__ import annotations

__all__ = [
    "BAD_FIELD",
    "BINARY",
    "FOREIGN_JSON",
    "FOREIGN_TEXT",
    "NOT_AN_OBJECT",
    "TOO_LONG",
    "TRUNCATED",
    "classify_unparsed",
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


def classify_unparsed(line: bytes) -> str:
    """Why *line*, which orjson refused, is not an event: binary, cut-off JSON, or foreign text."""
    if b"\x00" in line:
        return BINARY
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY
    return TRUNCATED if line.lstrip()[:1] in (b"{", b"[") else FOREIGN_TEXT
