"""One file under two names goes in once: the first source that reads it keeps it, each later one is a ``duplicate``.

Found after a pass and before the merge, over all of the pass's results in
prompt order (a single flight may have split the reads between renders), so
a repeat is noticed whichever spelling (``a.md``, ``./a.md``, ``sub/../a.md``,
a symlink, a glob's match, ``HTTPS://Host:443/a.md``) reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..model import LoadResult, SkipReason, Status
from ..sources.places import same_place

__all__ = ["mark_repeats", "place_of"]


def mark_repeats(groups: Mapping[int, list[LoadResult]]) -> Mapping[int, list[LoadResult]]:
    """*groups* (by request index) with every repeat of an earlier source's file turned into a ``duplicate`` skip.

    A file several files import (a diamond of imports) is named with how many
    import it: each repeat is a source of its own, with its own event, and its
    detail tells the audit that the file is in the prompt once.
    """
    first: dict[str, str] = {}
    repeats: list[tuple[int, int, str, str]] = []  # (group, position, place, owner)
    imported: dict[str, int] = {}  # by place: how many imports of it stay in the render's account
    out: set[str] = set()  # the keys of results out of the prompt
    for index in sorted(groups):
        for position, result in enumerate(groups[index]):
            source = result.source
            key = source.key
            if result.status == Status.SKIPPED or (source.via == "import" and source.parent in out):
                out.add(key)  # an import under a file that is out is dropped with it (without_orphans)
                continue
            place = place_of(result)
            if source.import_of is not None:
                imported[place] = imported.get(place, 0) + 1
            owner = first.setdefault(place, key)
            if owner != key:
                repeats.append((index, position, place, owner))
                out.add(key)
    if not repeats:
        return groups
    marked = dict(groups)
    for index, position, place, owner in repeats:
        if marked[index] is groups[index]:
            marked[index] = list(groups[index])
        result = marked[index][position]
        detail = f"the same file as {owner!r}"
        if result.source.import_of is not None and imported[place] > 1:
            detail += f"; {imported[place]} imports of it, in the prompt once"
        marked[index][position] = replace(
            result, status=Status.SKIPPED, content=None, reason=SkipReason.DUPLICATE, detail=detail, fatal=False
        )
    return marked


def place_of(result: LoadResult) -> str:
    """Where a result that read its source has its content, in a form equal for all the source's spellings.

    The place its loader gave it (the fsspec loader: a local file's device,
    inode and version, the same for every path to one file, distinct for two
    files, and unlike any URL), else the source's URL normalised. A fingerprint is never
    taken for a place: another loader's (a content hash) is the same for two files.
    """
    return result.place if result.place is not None else same_place(result.source.url)
