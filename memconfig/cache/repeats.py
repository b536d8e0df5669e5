"""One file under two names goes in once: the first source that reads it keeps it, each later one is a ``duplicate``.

Found after a pass and before the merge, over all of the pass's results in
prompt order (a single flight may have split the reads between renders), so
a repeat is noticed whichever spelling (``a.md``, ``./a.md``, ``sub/../a.md``,
a symlink, a glob's match, ``HTTPS://Host:443/a.md``) reads it.

A file two expansions both reach (two discoveries walking one folder, a glob
matching a declared file) comes out of each under the same key, its path.
Keys name a render's records and the state's entries, one each: the child
whose key another source already holds (a declared source of that key
wherever it stands, else the first to reach it) is the ``duplicate``, under
a key of its own (:func:`repeat_key`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..model import LoadResult, SkipReason, Status
from ..sources.places import same_place

__all__ = ["Claims", "mark_repeats", "place_of", "repeat_key", "repeated_key"]


class Claims:
    """Who holds each key and each file of one render, in prompt order: the one test of a repeat.

    A render's pass (:func:`mark_repeats`) and ``explain``'s plan ask it the
    same way, so both name the same ``duplicate`` with the same owner.
    """

    __slots__ = ("_claimed", "_keys", "_places")

    def __init__(self, claimed: Mapping[str, str] | None = None) -> None:
        self._claimed = claimed or {}  # keys held outside what is asked about: key -> its declared source
        self._keys: dict[str, str] = {}  # key -> the declared source of the first to take it
        self._places: dict[str, str] = {}  # place -> the key of the first source in the prompt from it

    def taken_key(self, key: str, root: str) -> bool:
        """Whether *key*, of a child of declared source *root*, is another source's key (a file reached twice).

        A declared source's own key is always its own (it is among the keys claimed).
        """
        return (self._claimed.get(key) or self._keys.setdefault(key, root)) != root

    def by_place(self, key: str, place: str) -> str | None:
        """The key of the source in the prompt from *place* before *key*, or ``None``: *key* is the first."""
        owner = self._places.setdefault(place, key)
        return owner if owner != key else None


def mark_repeats(
    groups: Mapping[int, list[LoadResult]], claimed: Mapping[str, str] | None = None
) -> Mapping[int, list[LoadResult]]:
    """*groups* (by request index) with every repeat of an earlier source's file turned into a ``duplicate`` skip.

    *claimed*: keys held outside this pass's results, each with the declared
    source that holds it (a declared source holds its own key): see :class:`Claims`.

    A file several files import (a diamond of imports) is named with how many
    import it: each repeat is a source of its own, with its own event, and its
    detail tells the audit that the file is in the prompt once.
    """
    claims = Claims(claimed)
    repeats: list[tuple[int, int, str, str]] = []  # (group, position, place, owner)
    imported: dict[str, int] = {}  # by place: how many imports of it stay in the render's account
    out: set[str] = set()  # the keys of results out of the prompt
    for index in sorted(groups):
        for position, result in enumerate(groups[index]):
            source = result.source
            key = source.key
            if source.lineage and claims.taken_key(key, source.root):  # reached twice: another source's key
                repeats.append((index, position, "", key))
                out.add(repeat_key(key, source.parent))
                continue
            if result.status == Status.SKIPPED or (source.via == "import" and source.parent in out):
                out.add(key)  # an import under a file that is out is dropped with it (without_orphans)
                continue
            place = place_of(result)
            if source.import_of is not None:
                imported[place] = imported.get(place, 0) + 1
            owner = claims.by_place(key, place)
            if owner is not None:
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
        if result.source.import_of is not None and imported.get(place, 0) > 1:
            detail += f"; {imported[place]} imports of it, in the prompt once"
        source = (
            result.source
            if owner != result.source.key
            else replace(result.source, key=repeat_key(result.source.key, result.source.parent))
        )
        marked[index][position] = replace(
            result,
            source=source,
            status=Status.SKIPPED,
            content=None,
            reason=SkipReason.DUPLICATE,
            detail=detail,
            fatal=False,
        )
    return marked


def repeat_key(key: str, parent: str | None) -> str:
    """The key of a child that reached a file another source holds under its *key*: its own, naming its *parent*."""
    return f"{key} (via {parent})"


def repeated_key(key: str, parent: str | None) -> str | None:
    """The key of the file a :func:`repeat_key` *key* names (a child of *parent*), or ``None``: *key* is no such key.

    A later pass asks for that child by its file's key (as its expander makes it) with the
    version its repeat was last seen at, so the file is not read again for a repeat.
    """
    suffix = f" (via {parent})"
    return key[: -len(suffix)] if parent is not None and key.endswith(suffix) else None


def place_of(result: LoadResult) -> str:
    """Where a result that read its source has its content, in a form equal for all the source's spellings.

    The place its loader gave it (the fsspec loader: a local file's device,
    inode and version, the same for every path to one file, distinct for two
    files, and unlike any URL), else the source's URL normalised. A fingerprint is never
    taken for a place: another loader's (a content hash) is the same for two files.
    """
    return result.place if result.place is not None else same_place(result.source.url)
