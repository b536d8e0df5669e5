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
            if result.status == "skipped":
                continue
            place = place_of(result)
            key = result.source.key
            owner = first.setdefault(place, key)
            if owner == key:
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


def place_of(result: LoadResult) -> str:
    """Where a result that read its source has its content, in a form equal for all the source's spellings.

    The place its loader gave it (the fsspec loader: a local file's device,
    inode and version, the same for every path to one file, distinct for two
    files, and unlike any URL), else the source's URL normalised. A fingerprint is never
    taken for a place: another loader's (a content hash) is the same for two files.
    """
    return result.place if result.place is not None else same_place(result.source.url)
