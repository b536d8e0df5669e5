"""Text bound for a terminal, made safe: control characters written as escapes.

A source's name, a file name, an import token, a log line or a config's value
in an error may hold ESC or BEL sequences that would move the cursor, retitle
the window or hide what follows. A leaf module, so that the exceptions (whose
messages the CLI prints) and the CLI's own output escape them the same way.
"""

from __future__ import annotations

import re

__all__ = ["escaped"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def escaped(text: str) -> str:
    """*text* with each C0 or C1 control character (newlines and tabs too) written as ``\\xNN``."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match[0]):02x}"
