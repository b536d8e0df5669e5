"""One file under two names goes in once: the first source that reads it keeps it, each later one is a ``duplicate``.

Found after a pass and before the merge, over all of the pass's results in
prompt order (a single flight may have split the reads between renders), so
a repeat is noticed whichever spelling (``a.md``, ``./a.md``, ``sub/../a.md``,
a symlink, a glob's match, ``HTTPS://Host:443/a.md``) reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..failures import SkipReason
from ..sources.places import same_place
from ..stages import LoadResult

__all__ = ["mark_repeats", "place_of"]


def mark_repeats(groups: Mapping[int, list[LoadResult]]) -> Mapping[int, list[LoadResult]]:
    """*groups* (by request index) with every repeat of an earlier source's file turned into a ``duplicate`` skip."""
    first: dict[str, str] = {}
    marked: dict[int, list[LoadResult]] | None = None
    for index in sorted(groups):
        group = groups[index]
        for position, result in enumerate(group):
            place = place_of(result)
            if place is None:
                continue
            owner = first.setdefault(place, result.source.key)
            if owner == result.source.key:
                continue
            if marked is None:
                marked = dict(groups)
            if marked[index] is group:
                marked[index] = group = list(group)
            group[position] = replace(
                result,
                status="skipped",
                content=None,
                reason=SkipReason.DUPLICATE,
                detail=f"the same file as {owner!r}",
                fatal=False,
            )
    return groups if marked is None else marked


def place_of(result: LoadResult) -> str | None:
    """Where a result's content is, in a form equal for all its spellings; ``None`` if nothing was read."""
    if result.status == "skipped":
        return None
    source = result.source
    if source.local_path is not None:
        # Inode, size and modification time: the same for every path to one file, distinct for two files.
        return f"local:{result.fingerprint}" if result.fingerprint else same_place(source.url)
    return same_place(source.url)
