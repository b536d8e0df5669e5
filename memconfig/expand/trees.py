"""What an expander's watched tree takes as a new folder: one that already holds a file.

A folder made empty (``mkdir -p build/x``) cannot hold a match yet, and what
is made in it later is seen as it comes (a recursive watch takes a new folder
in); a folder moved in whole can. So a watched tree counts a new folder only
when a file is already below it: an empty ``mkdir`` re-renders nothing.
"""

from __future__ import annotations

import os

__all__ = ["holds_a_file"]

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
