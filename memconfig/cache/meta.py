"""The cache's record in the caller's state: a typed, versioned schema, kept as plain JSON.

``state[state_key]`` holds ``{source: content}`` (deepagents' shape);
``state[state_key + "_meta"]`` holds a :class:`Meta`. A meta of another
version, or made for another configuration, is not trusted: the state is
read afresh. A state written without meta (by deepagents, or by hand) is
adopted: what it holds is taken as is.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

__all__ = [
    "META_VERSION",
    "Expansion",
    "Meta",
    "MetaEntry",
    "OutRecord",
    "Stamp",
    "digest",
    "entry",
    "make_meta",
    "root_of",
]

#: Bumped whenever the shape below changes; a state with another version is read afresh.
META_VERSION = 2

Stamp = list[Any]
"""``[process, monotonic time]`` of the pass that read a version or took a source out."""


class MetaEntry(TypedDict):
    """A source whose content is in the prompt."""

    source: str
    name: str
    url: str  # where the content came from (masked)
    sha256: str
    fingerprint: str | None
    bytes: int
    lineage: list[str]  # the keys it was expanded from, the declared source first
    via: str | None
    stale: str | None  # why its last refresh failed, if it did
    read: Stamp  # the pass that read this version


class OutRecord(TypedDict):
    """A source out of the prompt, and why."""

    name: str
    url: str
    reason: str
    detail: str
    fingerprint: str | None  # its fingerprint when it went out for its content
    lineage: list[str]
    via: str | None
    fatal: bool
    since: Stamp


class Expansion(TypedDict):
    """What an expander made of a source on its last pass: its children, in order."""

    via: str
    children: list[str]
    stale: str | None  # why the last expansion failed, if it did and the old children stay


class Meta(TypedDict):
    v: int
    made_for: str  # the tokens of the configuration this state was made under
    entries: list[MetaEntry]  # in prompt order
    skipped: dict[str, OutRecord]
    expansions: dict[str, Expansion]
    pending: list[str]  # sources to try again on the next render, whatever the policy
    checked_at: float
    digest: str


def root_of(record: MetaEntry | OutRecord, key: str) -> str:
    """The declared source an entry or record belongs to."""
    return record["lineage"][0] if record["lineage"] else key


def entry(
    key: str,
    name: str,
    url: str,
    sha256: str,
    fingerprint: str | None,
    size: int,
    read: Stamp,
    lineage: Iterable[str] = (),
    via: str | None = None,
    stale: str | None = None,
) -> MetaEntry:
    """A :class:`MetaEntry` (positional arguments: one is made per source read)."""
    return {
        "source": key,
        "name": name,
        "url": url,
        "sha256": sha256,
        "fingerprint": fingerprint,
        "bytes": size,
        "lineage": list(lineage) if lineage else [],
        "via": via,
        "stale": stale,
        "read": read,
    }


def make_meta(
    entries: list[MetaEntry],
    skipped: dict[str, OutRecord],
    expansions: dict[str, Expansion],
    pending: list[str],
    made_for: str,
) -> Meta:
    return {
        "v": META_VERSION,
        "made_for": made_for,
        "entries": entries,
        "skipped": skipped,
        "expansions": expansions,
        "pending": pending,
        "checked_at": time.time(),
        "digest": digest(entries, skipped),
    }


def digest(entries: Iterable[MetaEntry], skipped: Mapping[str, OutRecord] | None = None) -> str:
    """The identity of what a state shows: the sources in the prompt (names, hashes, staleness), and those out."""
    text = "".join([f"{e['source']}\x1f{e['name']}\x1f{e['sha256']}\x1f{e['stale']}\x1e" for e in entries])
    if skipped:
        text += "".join([f"{k}\x1f{r['reason']}\x1d" for k, r in sorted(skipped.items())])
    return hashlib.sha256(text.encode()).hexdigest()


def is_current(meta: Any, made_for: str) -> bool:
    """Whether *meta* is of this schema version and was made under this configuration."""
    return isinstance(meta, dict) and meta.get("v") == META_VERSION and meta.get("made_for") == made_for
