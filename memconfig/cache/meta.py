"""The cache's record of what a state holds: frozen dataclasses inside the cache, plain JSON in the state.

``state[state_key]`` holds ``{key: content}`` (deepagents' shape);
``state[state_key + "_meta"]`` holds a :class:`Meta` as JSON (``to_json()``:
dicts, lists, strings, numbers, what ``json.dumps`` takes), so the state stays
checkpointable. Reading and writing that JSON, versions included, is
:mod:`~memconfig.cache.stored`'s; everything else in the cache sees the dataclasses.

Each record keeps the JSON it was read from or first written as, so a state
written again after a one-file edit converts that file's entry alone: the other
entries hand their JSON over as it is. That JSON is the cache's: a caller who
edits it in place (rather than replacing it) may not be seen.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import SkipReason

__all__ = [
    "JSON",
    "META_VERSION",
    "Expansion",
    "Meta",
    "MetaEntry",
    "OutRecord",
    "Stamp",
    "digest",
]

#: Bumped whenever the JSON below changes shape; :mod:`~memconfig.cache.stored` reads the versions before it.
META_VERSION = 3

Stamp = tuple[str, float]
"""``(process, monotonic time)`` of the pass that read a version or took a source out."""

JSON = dict[str, Any]
"""A record as the state holds it."""


class _KeepsJSON:
    """A record that keeps its JSON: the object it was read from, or the one made when it was first written."""

    __slots__ = ()
    _json: JSON | None

    def to_json(self) -> JSON:
        """The record as the state holds it (made once, then handed over as it is)."""
        made = self._json
        if made is None:
            made = self._made_json()
            object.__setattr__(self, "_json", made)  # a cache of a frozen record, not one of its fields
        return made

    def _made_json(self) -> JSON:
        raise NotImplementedError


@dataclass(frozen=True, slots=True, init=False)
class MetaEntry:
    """A source whose content is in the prompt.

    One is made per source read, so its ``__init__`` is written out: it sets
    each slot through the slot's own descriptor (a frozen dataclass's does it
    through ``object.__setattr__``, at twice the cost) and makes the entry's
    JSON with it. Its defaults are its ``__init__``'s.
    """

    key: str
    name: str
    url: str  # where the content came from (masked)
    sha256: str
    fingerprint: str | None
    bytes: int
    lineage: tuple[str, ...]  # the keys it was expanded from, the declared source first
    via: str | None
    stale: SkipReason | None  # why its last refresh failed, if it did
    read: Stamp | None  # the pass that read this version (``None``: not known, as for an adopted state)
    _json: JSON = field(init=False, compare=False, repr=False)

    def __init__(
        self,
        key: str,
        name: str,
        url: str,
        sha256: str,
        fingerprint: str | None,
        bytes: int,
        lineage: tuple[str, ...] = (),
        via: str | None = None,
        stale: SkipReason | None = None,
        read: Stamp | None = None,
        _json: JSON | None = None,
    ) -> None:
        _set_key(self, key)
        _set_name(self, name)
        _set_url(self, url)
        _set_sha256(self, sha256)
        _set_fingerprint(self, fingerprint)
        _set_bytes(self, bytes)
        _set_lineage(self, lineage)
        _set_via(self, via)
        _set_stale(self, stale)
        _set_read(self, read)
        if _json is None:
            _json = {
                "key": key,
                "name": name,
                "url": url,
                "sha256": sha256,
                "fingerprint": fingerprint,
                "bytes": bytes,
                "lineage": list(lineage),
                "via": via,
                "stale": None if stale is None else stale.value,
                "read": [] if read is None else [read[0], read[1]],
            }
        _set_json(self, _json)

    @property
    def root(self) -> str:
        """The declared source this entry belongs to."""
        return self.lineage[0] if self.lineage else self.key

    def with_stale(self, reason: SkipReason | None) -> MetaEntry:
        """This entry, its last refresh failed for *reason* (``None``: it did not)."""
        return MetaEntry(
            self.key,
            self.name,
            self.url,
            self.sha256,
            self.fingerprint,
            self.bytes,
            self.lineage,
            self.via,
            reason,
            self.read,
        )

    def to_json(self) -> JSON:
        """The entry as the state holds it (the object it was read from, or the one made with it)."""
        return self._json

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetaEntry:
        """The entry *data* holds; it keeps *data* as its JSON.

        Raises:
            KeyError, TypeError, ValueError: *data* is not an entry (so are the other records' ``from_json``).
        """
        return cls(*_read(data, _ENTRY))


def _slot_setter(name: str) -> Callable[[MetaEntry, Any], None]:
    setter: Callable[[MetaEntry, Any], None] = MetaEntry.__dict__[name].__set__
    return setter


_set_key, _set_name, _set_url, _set_sha256, _set_fingerprint, _set_bytes = [
    _slot_setter(name) for name in ("key", "name", "url", "sha256", "fingerprint", "bytes")
]
_set_lineage, _set_via, _set_stale, _set_read, _set_json = [
    _slot_setter(name) for name in ("lineage", "via", "stale", "read", "_json")
]


@dataclass(frozen=True, slots=True)
class OutRecord(_KeepsJSON):
    """A source out of the prompt, and why."""

    name: str
    url: str
    reason: SkipReason
    detail: str
    fingerprint: str | None  # its fingerprint when it went out for its content
    lineage: tuple[str, ...] = ()
    via: str | None = None
    fatal: bool = False
    since: Stamp | None = None
    _json: JSON | None = field(default=None, compare=False, repr=False)

    def root(self, key: str) -> str:
        """The declared source the record of *key* belongs to."""
        return self.lineage[0] if self.lineage else key

    def with_fingerprint(self, fingerprint: str | None) -> OutRecord:
        """This record, its source now at *fingerprint*."""
        return OutRecord(
            self.name, self.url, self.reason, self.detail, fingerprint, self.lineage, self.via, self.fatal, self.since
        )

    def _made_json(self) -> JSON:
        return {
            "name": self.name,
            "url": self.url,
            "reason": self.reason.value,
            "detail": self.detail,
            "fingerprint": self.fingerprint,
            "lineage": list(self.lineage),
            "via": self.via,
            "fatal": self.fatal,
            "since": _stamp_json(self.since),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OutRecord:
        """The record *data* holds; it keeps *data* as its JSON."""
        return cls(*_read(data, _OUT))


@dataclass(frozen=True, slots=True)
class Expansion(_KeepsJSON):
    """What an expander made of a source on its last pass: its children, in order."""

    via: str
    children: tuple[str, ...]
    stale: SkipReason | None = None  # why the last expansion failed, if it did and the old children stay
    _json: JSON | None = field(default=None, compare=False, repr=False)

    def with_stale(self, reason: SkipReason | None) -> Expansion:
        """This expansion, its last pass failed for *reason* (``None``: it did not)."""
        return Expansion(self.via, self.children, reason)

    def _made_json(self) -> JSON:
        return {"via": self.via, "children": list(self.children), "stale": _text(self.stale)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Expansion:
        """The expansion *data* holds; it keeps *data* as its JSON."""
        return cls(*_read(data, _EXPANSION))


@dataclass(frozen=True, slots=True)
class Meta(_KeepsJSON):
    """What a state holds, as the cache made it: the entries in prompt order, the sources out, the expansions."""

    made_for: str  # the tokens of the configuration this state was made under
    entries: tuple[MetaEntry, ...]  # in prompt order
    skipped: Mapping[str, OutRecord]
    expansions: Mapping[str, Expansion]
    pending: tuple[str, ...]  # sources to try again on the next render, whatever the policy
    checked_at: float
    digest: str
    _json: JSON | None = field(default=None, compare=False, repr=False)

    @classmethod
    def make(
        cls,
        entries: Iterable[MetaEntry],
        skipped: Mapping[str, OutRecord],
        expansions: Mapping[str, Expansion],
        pending: Iterable[str],
        made_for: str,
    ) -> Meta:
        """The meta of a state now, its digest computed."""
        entries = tuple(entries)
        return cls(made_for, entries, skipped, expansions, tuple(pending), time.time(), digest(entries, skipped))

    def checked(self) -> Meta:
        """This meta, checked now (a copy: the one in a state may be shared with a render still reading it)."""
        now = time.time()
        made = None if self._json is None else {**self._json, "checked_at": now}  # the rest handed over as it is
        return Meta(self.made_for, self.entries, self.skipped, self.expansions, self.pending, now, self.digest, made)

    def _made_json(self) -> JSON:
        """Each record's JSON handed over as it is: only records new since the last write are converted."""
        return {
            "v": META_VERSION,
            "made_for": self.made_for,
            "entries": [e._json for e in self.entries],
            "skipped": {k: r.to_json() for k, r in self.skipped.items()},
            "expansions": {k: x.to_json() for k, x in self.expansions.items()},
            "pending": list(self.pending),
            "checked_at": self.checked_at,
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Meta:
        """The meta a version :data:`META_VERSION` *data* holds; it and its records keep their JSON.

        Raises:
            KeyError, TypeError, ValueError: *data* is not such a meta.
        """
        if data["v"] != META_VERSION:
            raise ValueError(f"a meta of version {data['v']!r}, not {META_VERSION}")
        return cls(
            _str(data["made_for"]),
            tuple([MetaEntry.from_json(e) for e in _list(data["entries"])]),
            {_str(k): OutRecord.from_json(r) for k, r in _dict(data["skipped"]).items()},
            {_str(k): Expansion.from_json(x) for k, x in _dict(data["expansions"]).items()},
            _keys(data["pending"]),
            _float(data["checked_at"]),
            _str(data["digest"]),
            _kept(data),
        )


def digest(entries: Iterable[MetaEntry], skipped: Mapping[str, OutRecord] | None = None) -> str:
    """The identity of what a state shows: the sources in the prompt (names, hashes, staleness), and those out."""
    text = "".join([f"{e.key}\x1f{e.name}\x1f{e.sha256}\x1f{e.stale}\x1e" for e in entries])  # a reason as its value
    if skipped:
        text += "".join([f"{k}\x1f{r.reason.value}\x1d" for k, r in sorted(skipped.items())])
    return hashlib.sha256(text.encode()).hexdigest()


# -- JSON values, checked as they are read ------------------------------------------


def _read(data: Mapping[str, Any], fields: tuple[tuple[str, Callable[[Any], Any]], ...]) -> list[Any]:
    """The arguments of a record's dataclass: its *fields* (JSON name, converter) in order, then *data* as its JSON."""
    return [*[convert(data[name]) for name, convert in fields], _kept(data)]


def _kept(data: Mapping[str, Any]) -> JSON | None:
    """*data* as a record's JSON: only a plain dict is (a mapping of another kind would not be what is written)."""
    return data if type(data) is dict else None


def _text(reason: SkipReason | None) -> str | None:
    return None if reason is None else reason.value


def _stamp_json(stamp: Stamp | None) -> list[Any]:
    return [] if stamp is None else [stamp[0], stamp[1]]


def _stamp(value: Any) -> Stamp | None:
    """A stamp as written (``[process, time]``); anything else (``[]``, ``null``) is no stamp."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and _is_number(value[1]):
        return (value[0], float(value[1]))
    return None


def _str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _str_or_none(value: Any) -> str | None:
    return None if value is None else _str(value)


def _reason_or_none(value: Any) -> SkipReason | None:
    return None if value is None else _reason(value)


def _int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _float(value: Any) -> float:
    if not _is_number(value):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _is_number(value: Any) -> bool:
    return type(value) is float or type(value) is int


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def _dict(value: Any) -> dict[Any, Any]:
    if type(value) is not dict:
        raise TypeError(f"expected a mapping, got {type(value).__name__}")
    return value


def _keys(value: Any) -> tuple[str, ...]:
    return tuple([_str(k) for k in _list(value)])


def _reason(value: Any) -> SkipReason:
    return SkipReason(_str(value))


# Each record's JSON fields, in the order of its dataclass fields, with what reads them.
_ENTRY = (
    ("key", _str),
    ("name", _str),
    ("url", _str),
    ("sha256", _str),
    ("fingerprint", _str_or_none),
    ("bytes", _int),
    ("lineage", _keys),
    ("via", _str_or_none),
    ("stale", _reason_or_none),
    ("read", _stamp),
)
_OUT = (
    ("name", _str),
    ("url", _str),
    ("reason", _reason),
    ("detail", _str),
    ("fingerprint", _str_or_none),
    ("lineage", _keys),
    ("via", _str_or_none),
    ("fatal", _bool),
    ("since", _stamp),
)
_EXPANSION = (("via", _str), ("children", _keys), ("stale", _reason_or_none))
