"""The glob expander: one pattern in, its matching files out, in sorted order.

A pattern whose magic is in its last part only (``https://host/dir/*.md``)
over HTTP is matched against one listing of its folder: fsspec's HTTP glob
fetches the folder's index page three times (to ask whether it is a folder,
for its details, then to walk it), and the index page is the whole cost of
a remote listing. Every other pattern is listed by fsspec's own glob.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fsspec.utils import glob_translate

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
