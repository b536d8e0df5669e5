"""One file under two names goes in once: the first source that reads it keeps it, each later one is a ``duplicate``.

Found after a pass and before the merge, over all of the pass's results in
prompt order (a single flight may have split the reads between renders), so
a repeat is noticed whichever spelling (``a.md``, ``./a.md``, ``sub/../a.md``,
a symlink, a glob's match, ``HTTPS://Host:443/a.md``) reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from fsspec.implementations.local import LocalFileSystem

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

    A local file's is its fingerprint (inode, size and modification time: the
    same for every path to one file, distinct for two files), which no URL looks like.
    """
    source = result.source
    fs_path = source.fs_path
    if result.fingerprint and fs_path is not None and isinstance(fs_path[0], LocalFileSystem):
        return result.fingerprint
    return same_place(source.url)
