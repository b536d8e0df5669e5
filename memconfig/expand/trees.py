"""Where a pattern's matches can be below a folder: the folders it reaches, and what its watch spot is.

Read the same way for a glob (fsspec's wildcards) and a discovery's patterns
(wcmatch's, with braces); they differ only in how one folder name is matched
against one segment. A ``**`` segment matches any folder at any depth, so a
pattern with one (``notes/**``, ``docs/**/*.md``) is watched as a tree, and one
with a single wildcard part (``rules/*.md``) as its folder's entries.

A watched tree takes a new folder only where the pattern reaches and once a
file is already below it: a folder made empty (``mkdir -p build/x``) cannot hold
a match yet, and what is made in it later is seen as it comes (a recursive
watch takes a new folder in); a folder moved in whole can. So an empty
``mkdir`` re-renders nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Reach", "holds_a_file", "spot_kind"]

_NEVER = frozenset({".git", "", ".", ".."})  # never entered: a git commit's object folders, no way up


def spot_kind(parts: Sequence[str], *, braces: bool = False) -> Literal["folder", "tree"]:
    """How a pattern's folder is watched, from its *parts* below that folder: its entries, or all below it.

    ``"folder"`` for one part that is not ``**`` (``*.md``); a ``**`` anywhere, more
    parts, or (with *braces*) a brace, which may hold a ``/``, make it ``"tree"``.
    """
    if len(parts) != 1 or parts[0] == "**" or (braces and "{" in parts[0]):
        return "tree"
    return "folder"


@dataclass(frozen=True, slots=True)
class Reach:
    """Which folders below the one a pattern is relative to can hold one of its matches, or lead to one.

    Attributes:
        parts: the pattern's ``/``-separated segments from that folder.
        name_matches: whether a folder name matches a segment; ``None``: names are not checked,
            only how deep the pattern goes (a discovery's brace pattern, cut by its slashes only roughly).
        globstar: the first ``**`` segment: any folder, at any depth, from there on.
    """

    parts: tuple[str, ...]
    name_matches: Callable[[str, str], bool] | None
    globstar: int | None

    @staticmethod
    def of(parts: Sequence[str], name_matches: Callable[[str, str], bool], *, braces: bool = False) -> Reach:
        """The reach of a pattern's *parts*; with *braces* (``{a,b/c}`` seen), folder names are not checked."""
        found = tuple(parts)
        if braces and any("{" in part for part in found):
            star = 0 if any("**" in part for part in found) else None
            return Reach(found, None, star)
        return Reach(found, name_matches, next((i for i, part in enumerate(found) if part == "**"), None))

    def reaches(self, relative: Sequence[str]) -> bool:
        """Whether the folder at *relative* (its names below the pattern's folder) can hold a match, or lead to one.

        Never ``.git`` (nor ``..``, ``.``, an empty name); below a ``**`` any folder;
        else one segment per level, no deeper than the pattern's folders.
        """
        for i, name in enumerate(relative):
            if name in _NEVER:
                return False
            if self.globstar is not None and i >= self.globstar:
                continue
            if i >= len(self.parts) - 1:
                return False  # deeper than the pattern's folders
            if self.name_matches is not None and not self.name_matches(name, self.parts[i]):
                return False
        return True

    def holds_matches(self, depth: int) -> bool:
        """Whether a folder *depth* segments below the pattern's folder can hold a matching file directly."""
        if self.name_matches is None or (self.globstar is not None and depth >= self.globstar):
            return True
        return depth == len(self.parts) - 1


_LOOK = 256  # entries listed at most; a folder with more below it counts (it may hold a match)


def holds_a_file(path: str) -> bool:
    """Whether the folder *path* (not a link to one) has anything but folders below it, ``.git`` left out.

    Lists at most a few hundred entries, opens nothing; answers yes past that.
    """
    if os.path.islink(path):
        return False
    pending, seen = [path], 0
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > _LOOK:
                        return True
                    if not entry.is_dir(follow_symlinks=False):
                        return True
                    if entry.name != ".git":
                        pending.append(entry.path)
        except OSError:  # not a folder, or gone already
            continue
    return False
