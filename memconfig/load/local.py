"""The loader's first look at a local file: one ``stat``, and why a render would skip it, before anything is read.

A render asks it before it opens a local source; ``explain`` and ``validate``
ask it instead of reading, so the three give the same reason in the same
words (``not_found``: ``no such file``; ``is_directory``: ``is a directory``).
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from ..file_kinds import irregular_kind
from ..model import SkipReason
from .errors import classify

__all__ = ["Look", "look_at"]


class Look(NamedTuple):
    """What a ``stat`` of a local path found.

    Attributes:
        info: its ``stat`` (``None``: it could not be had).
        reason: why a render skips it (``None``: a regular file, to be read).
        detail: the reason in words, as a skip records it once masked (``Source.redact``: an error's own
            text may quote the path).
    """

    info: os.stat_result | None
    reason: SkipReason | None
    detail: str


_REGULAR = ""


def look_at(path: str) -> Look:
    """The ``stat`` of *path*, and why a render would skip it: missing, unreadable, a folder, a FIFO or a device.

    Nothing is opened: a FIFO would block, a device might never end.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        reason, detail, _ = classify(exc)
        return Look(None, reason, detail)
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return Look(info, None, _REGULAR)
    if stat.S_ISDIR(mode):
        return Look(info, SkipReason.IS_DIRECTORY, "is a directory")
    return Look(info, SkipReason.NOT_REGULAR_FILE, f"is {irregular_kind(mode)}, not a regular file")
