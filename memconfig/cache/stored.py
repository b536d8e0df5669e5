"""The meta as a state stores it: JSON in, :class:`~memconfig.cache.meta.Meta` out, and back, once per object.

A render reads its state's meta on every turn, and on an unchanged turn the
object there is the very one this cache wrote: :class:`StoredMeta` keeps the
meta each JSON object stands for, by identity, so reading it again converts
nothing. A state restored from a checkpoint (``json.loads`` of what was written)
holds an equal object: it is compared, not converted, when it is one this cache wrote.

The versions a state may hold:

- :data:`~memconfig.cache.meta.META_VERSION` (3): read as it is.
- 2 (memconfig before its meta was a dataclass: an entry's key under
  ``source``): migrated, and written back as version 3. What it records is kept,
  so a render after an upgrade reads nothing and logs nothing it would not have.
- none, or an older one: not memconfig's (deepagents', a state written by hand,
  memconfig's first version): the contents are :attr:`Unusable.ADOPT`-ed as they are.
- a newer one: written by a later memconfig, whose records may mean something
  else: :attr:`Unusable.AFRESH`, the state is read afresh.

A meta of a known version that does not hold what its version says (edited by
hand) is adopted, as a state without meta is.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Mapping, MutableMapping
from typing import Any

from .meta import JSON, META_VERSION, Meta

__all__ = ["StoredMeta", "Unusable", "from_v2"]

_MEMO = 8  # JSON objects remembered: one per state a cache serves at once, small enough to stay flat under churn


class Unusable(enum.Enum):
    """Why a state's meta is not read: what the cache does with the state's contents instead."""

    ADOPT = "adopt"  # no meta of memconfig's: the contents are taken as they are
    AFRESH = "afresh"  # a later memconfig's: every source is read again


class StoredMeta:
    """Reads and writes the meta under *key* of a state; not thread-safe (the cache calls it under its lock).

    The meta found in a state is what this cache wrote there: a render never
    writes into a meta, it replaces it. A caller should do the same; the one
    edit in place that is noticed is setting ``checked_at`` back (to make a
    ``ttl`` state due).
    """

    __slots__ = ("_decoded", "_last", "key")

    def __init__(self, key: str) -> None:
        self.key = key
        self._last: tuple[Any, Meta | None] = (None, None)  # the JSON object read or written last, and its meta
        # id of a JSON object -> (the object, its top-level values then: to tell an equal one, the meta it stands for)
        self._decoded: OrderedDict[int, tuple[JSON, tuple[Any, ...], Meta]] = OrderedDict()

    def read(self, state: MutableMapping[str, Any]) -> Meta | Unusable:
        """The meta *state* holds; a version 2 meta is migrated and written back."""
        found = state.get(self.key)
        json, meta = self._last
        if json is found and meta is not None and found.get("checked_at") == meta.checked_at:  # an unchanged turn's
            return meta
        return self._read(state, found)

    def _read(self, state: MutableMapping[str, Any], found: Any) -> Meta | Unusable:
        held = self._decoded.get(id(found))
        if held is not None and held[0] is found and found.get("checked_at") == held[2].checked_at:
            self._last = (found, held[2])
            return held[2]
        if not isinstance(found, dict):
            return Unusable.ADOPT
        version = found.get("v")
        if type(version) is not int or version < 2:
            return Unusable.ADOPT
        if version > META_VERSION:
            return Unusable.AFRESH
        try:
            meta = (self._equal(found) or Meta.from_json(found)) if version == META_VERSION else from_v2(found)
        except (KeyError, TypeError, ValueError):
            return Unusable.ADOPT
        if version == META_VERSION:
            self._remember(found, meta)
        else:  # migrated: the state holds this version from now on
            self.write(state, meta)
        return meta

    def write(self, state: MutableMapping[str, Any], meta: Meta) -> None:
        """Put *meta* in *state*, as JSON (only its records not yet written are converted)."""
        made = meta.to_json()
        state[self.key] = made
        self._remember(made, meta)

    def _equal(self, found: JSON) -> Meta | None:
        """The meta of a JSON object this cache wrote that *found* equals (a checkpoint of it, restored)."""
        values = tuple(found.values())
        digest = found.get("digest")
        for _, held, meta in reversed(self._decoded.values()):
            if meta.digest == digest and held == values:
                return meta
        return None

    def _remember(self, made: JSON, meta: Meta) -> None:
        self._last = (made, meta)
        memo = self._decoded
        memo[id(made)] = (made, tuple(made.values()), meta)
        memo.move_to_end(id(made))
        while len(memo) > _MEMO:
            memo.popitem(last=False)


def from_v2(data: Mapping[str, Any]) -> Meta:
    """A version 2 meta as version 3: the same records, each entry's key under ``key`` instead of ``source``.

    Its sources out and its expansions are already in version 3's shape: they keep their JSON.

    Raises:
        KeyError, TypeError, ValueError: *data* is not a version 2 meta.
    """
    entries = data["entries"]
    skipped, expansions = data["skipped"], data["expansions"]
    if type(entries) is not list or type(skipped) is not dict or type(expansions) is not dict:
        raise TypeError("not a version 2 meta")
    v3 = {
        **data,
        "v": META_VERSION,
        "entries": [{"key": e["source"], **{k: v for k, v in e.items() if k != "source"}} for e in entries],
    }
    return Meta.from_json(v3)
