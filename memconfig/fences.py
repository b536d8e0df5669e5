"""Fenced code blocks, opened and closed as CommonMark reads them: the one reading that imports and comments share.

A fence is a run of three or more backticks or tildes, indented at most three
spaces (after any block-quote markers ``>``); it closes on a line of the same
character, at least as long, with nothing after it but blanks. A backtick
fence whose info string holds a backtick opens nothing.
"""

from __future__ import annotations

import re

__all__ = ["closes", "opens"]

_QUOTED = r"(?: {0,3}> ?)*"  # block-quote markers: a fence inside a quote is a fence too
_OPENING = re.compile(_QUOTED + r" {0,3}(`{3,}|~{3,})(.*)")
_CLOSING = re.compile(_QUOTED + r" {0,3}(`{3,}|~{3,})[ \t]*")


def opens(line: str) -> str | None:
    """The fence *line* (without its line break) opens, or ``None``."""
    opened = _OPENING.match(line)
    if opened is None or (opened[1][0] == "`" and "`" in opened[2]):
        return None
    return opened[1]


def closes(line: str, fence: str) -> bool:
    """Whether *line* (without its line break) closes the code block *fence* opened."""
    closed = _CLOSING.fullmatch(line)
    return closed is not None and closed[1][0] == fence[0] and len(closed[1]) >= len(fence)
