"""The glob expander: one pattern in, its matching files out, in sorted order.

A pattern whose magic is in its last part only (``https://host/dir/*.md``)
over HTTP is matched against one listing of its folder: fsspec's HTTP glob
fetches the folder's index page three times (to ask whether it is a folder,
for its details, then to walk it), and the index page is the whole cost of
a remote listing. Every other pattern is listed by fsspec's own glob.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fsspec.implementations.local import LocalFileSystem
from fsspec.utils import glob_translate

from ..model import Spot
from ..sources.urls import first_magic, local_path
from .trees import Reach, holds_a_file, spot_kind

if TYPE_CHECKING:
    from ..sources import Source

__all__ = ["GlobExpander"]

_HTTP = frozenset({"http", "https"})


class GlobExpander:
    """Expands a glob source into one child per matching file (directories are not matches)."""

    via = "glob"
    token = "glob"

    def __repr__(self) -> str:
        return "GlobExpander()"

    def expand(self, source: Source) -> list[Source]:
        """The matches of *source*'s pattern now, sorted. Blocking: may list a remote store."""
        fs, path = source.open_fs()
        fs.invalidate_cache()  # a listing cached on an earlier pass would hide new files
        return [source.child(fs, match, self.via) for match in _files(_listing(fs, path))]

    def would_take(self, source: Source, path: str) -> bool:
        """Whether a local file at *path*, there or not yet, would be one of *source*'s matches.

        ``render -o`` asks it before writing, so that its output never becomes a source of the next render.
        Only a plain local pattern can: any other is answered without opening its filesystem (a chained
        one's would read its archive anew, over the network for ``zip://…::https://…``, on every write).
        """
        if source.chained or local_path(source.url) is None:
            return False
        fs, pattern = source.open_fs()
        if not isinstance(fs, LocalFileSystem):
            return False
        matching = _compiled(glob_translate(pattern))
        return any(matching.match(p) for p in {os.path.abspath(path), os.path.realpath(path)})

    def watched(self, source: Source) -> list[Spot]:
        """Where new matches of a local pattern can appear (the ``watch`` cache policy watches them).

        The folder before the first part with magic: its direct entries when
        the magic is in the last part only and is not ``**`` (``rules/*.md``), else
        everything below it (``docs/**/*.md``, ``docs/**``: a file at any depth);
        in either, only a path the pattern matches counts (and, below a tree, a new
        folder with a file below it where the pattern can reach: one moved in may
        hold matches; never one under ``.git``), not a log or an output written there.
        """
        path = source.open_fs()[1]
        parts = path.split("/")
        magic = first_magic(parts)
        if magic is None:
            return [Spot(path, "file")]
        folder = "/".join(parts[:magic]) or "/"
        kind = spot_kind(parts[magic:])
        reach = Reach.of(parts[magic:], _name_matches) if kind == "tree" else None
        return [Spot(folder, kind, _Matching(glob_translate(path), folder, reach))]


@dataclass(frozen=True, slots=True)
class _Matching:
    """Which changed paths a glob's watched folder takes (see ``Spot``).

    Its matches, and in a tree a new folder the pattern can reach with a
    file below it (an empty one's later entries are seen as they come: the tree's
    watch takes it in); never a folder under ``.git`` (a ``git commit`` makes
    object folders there).
    """

    regex: str  # the pattern's, as fsspec's glob matches it
    folder: str  # the watched folder
    reach: Reach | None  # a tree's: the folders below it the pattern's parts after it reach

    def __call__(self, path: str) -> bool:
        if _compiled(self.regex).match(path) is not None:
            return True
        if self.reach is None:
            return False
        return self.reach.reaches(os.path.relpath(path, self.folder).split(os.sep)) and holds_a_file(path)


def _name_matches(name: str, part: str) -> bool:
    """Whether a folder *name* matches one part of a glob, as fsspec reads it (``{`` a plain character)."""
    return _compiled(glob_translate(part)).match(name) is not None


@functools.lru_cache(maxsize=256)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _listing(fs: Any, path: str) -> Any:
    """``fs.glob(path, detail=True)``; over HTTP, from one request for the folder when the magic is in the last part."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    magic = [i for i in (path.find("*"), path.find("[")) if i >= 0]  # HTTP's glob: '?' begins the query
    if not _HTTP.intersection(protocols) or not magic or "**" in path:
        return fs.glob(path, detail=True)
    folder_end = path.rfind("/", 0, min(magic))
    if folder_end < 0 or "/" in path[min(magic) :]:
        return fs.glob(path, detail=True)
    try:
        entries = fs.ls(path[: folder_end + 1], detail=True)
    except FileNotFoundError:  # as fsspec's glob: no folder, no match
        return {}
    pattern = re.compile(glob_translate(path))
    return {e["name"]: e for e in entries if pattern.match(e["name"].rstrip("/"))}


def _files(listing: Any) -> list[str]:
    if isinstance(listing, dict):
        return sorted(p for p, info in listing.items() if info.get("type", "file") != "directory")
    return sorted(listing)
