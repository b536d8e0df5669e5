"""Secrets masked in what an audit shows: a log from elsewhere (or an older memconfig) may not have masked them.

memconfig masks credentials before it logs, but an audit also reads logs it
did not write: a foreign program's memconfig-shaped lines, a hand-edited
file. Every string the audit's outputs (table, JSON, HTML) show passes
through here once, after the pass, so no output needs to think about it.

The model is walked whole, so a field added to it is masked too. A field
with a shape memconfig always gives it (a reason or an event name is a code
such as ``not_found``; a host, a hash, a time) is shown only in that shape,
else as ``***``: there a bare token could hide, which no rule would see.
Every other string (a source's key, name and URL, a detail, a render id, a
log's name) has its credential forms masked (:func:`redact_text`) and each
secret the config knows (``-c``), wherever it appears.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from ..sources.redact import MASK, Redactor, redact_text
from .model import Audit, SourceState

__all__ = ["mask_audit"]

# memconfig's codes: lower-case words joined by "_" (``remote_error``, ``source_loaded``), a newer memconfig's
# too, or the audit's own bucket for the rest of a count (``(other)``).
_CODE = re.compile(r"[a-z]{1,24}(?:_[a-z]{1,24}){0,7}|\([a-z]{1,24}(?: [a-z]{1,24}){0,3}\)")
_HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_TIME = re.compile(r"\d{1,4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")

# The fields (and counters, by their keys) whose strings must have a shape, by name, wherever in the model.
_SHAPES: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(("reason", "last_reason", "status", "last_status"), _CODE),
    **dict.fromkeys(("skips", "drops", "cache", "foreign", "malformed", "unknown_events"), _CODE),
    "host": _HOST,
    "sha256": _SHA256,
    **dict.fromkeys(("time", "started", "last_seen", "status_since", "sha256_changed", "since"), _TIME),
    **dict.fromkeys(("first_time", "last_time", "at"), _TIME),
}


def mask_audit(audit: Audit, secrets: Sequence[str] = ()) -> Audit:
    """Mask every string *audit* shows (credential forms, and each of *secrets* where it appears), in place; returns it.

    ``Audit.filters`` is masked too: it echoes the user's own arguments, but a
    ``--source`` copied from a config may hold the URL's signature, and a report is shared.
    """
    _Masker(secrets).walk(audit)
    return audit


class _Masker:
    """One audit's masking: each distinct string masked once (keys, times and render ids repeat)."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self._known = Redactor(None, secrets)
        self._done: dict[str, dict[str, str]] = {}  # by field, then by string
        self._seen: set[int] = set()  # an object the model holds twice (the ``--at`` render) is walked once

    def text(self, value: str, field: str = "") -> str:
        """*value* as shown in *field*: in its shape or ``***``, and with its secrets masked."""
        done = self._done.get(field)
        if done is None:
            done = self._done[field] = {}
        found = done.get(value)
        if found is None:
            shape = _SHAPES.get(field)
            if shape is None:
                found = redact_text(self._known(value))
            elif shape.fullmatch(value) is None:
                found = MASK
            else:  # a code, host, hash or time holds no URL, header or "name=value"
                found = self._known.mask_known(value)
            done[value] = found
        return found

    def walk(self, thing: Any) -> None:
        """Mask each string in *thing*'s fields, in place, and walk each object they hold."""
        if id(thing) in self._seen:
            return
        self._seen.add(id(thing))
        for name in _field_names(type(thing)):
            value = getattr(thing, name)
            if type(value) in _SCALARS:
                continue
            masked = self.text(value, name) if type(value) is str else self._value(value, name)
            if masked is not value:
                setattr(thing, name, masked)

    def _value(self, value: Any, field: str) -> Any:
        """*value* masked: a new string or counter, else *value* itself (a list or deque masked in place)."""
        if type(value) in _SCALARS:
            return value
        if isinstance(value, str):
            return self.text(value, field)
        if isinstance(value, Counter):
            counts: Counter[str] = Counter()
            for key, n in value.items():
                counts[self.text(str(key), field)] += n
            return counts
        if isinstance(value, dict):  # the filters: the user's arguments
            return {self.text(str(key)): self._value(item, "") for key, item in value.items()}
        if isinstance(value, tuple):
            return tuple(self._value(item, field) for item in value)
        if isinstance(value, list | deque):
            for index, item in enumerate(list(value)):
                masked = self._value(item, field)
                if masked is not item:
                    value[index] = masked
        elif is_dataclass(value) and not isinstance(value, type):
            self.walk(value)
        return value


# Nothing to mask, skipped without a look: numbers, and a source's state (the audit's own word, never a secret).
_SCALARS = frozenset({int, float, bool, type(None), SourceState})


_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(spec.name for spec in fields(kind))
    return names
