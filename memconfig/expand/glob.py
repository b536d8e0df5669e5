"""The glob expander: one pattern in, its matching files out, in sorted order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sources import Source

__all__ = ["GlobExpander"]


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
        return [source.child(fs, match, self.via) for match in _files(fs.glob(path, detail=True))]


def _files(listing: Any) -> list[str]:
    if isinstance(listing, dict):
        return sorted(p for p, info in listing.items() if info.get("type", "file") != "directory")
    return sorted(listing)
