"""Text bound for a terminal, made safe: control characters written as escapes.

A source's name, a file name, an import token or a log line may hold ESC or
BEL sequences that would move the cursor, retitle the window or hide what
follows. Everything the CLI writes for people to read (the console log, the
tables, ``explain``, the progress line) goes through :func:`escaped` (kept in
:mod:`memconfig.safe_text`, which error messages use too); JSON output escapes
them by itself.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ..safe_text import escaped

__all__ = ["EscapeControls", "escaped"]


class EscapeControls:
    """structlog processor for the console log: every string value escaped (one event stays one line)."""

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        for key, value in event_dict.items():
            if isinstance(value, str):
                event_dict[key] = escaped(value)
        return event_dict
