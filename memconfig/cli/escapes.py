"""The console log made safe for a terminal: every string value escaped as :mod:`memconfig.safe_text` does.

Everything else the CLI writes for people to read (the tables, ``explain``, the
progress line, error lines) calls :func:`memconfig.safe_text.escaped` itself;
JSON output escapes control characters by itself.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ..safe_text import escaped

__all__ = ["EscapeControls"]


class EscapeControls:
    """structlog processor for the console log: every string value escaped (one event stays one line)."""

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        for key, value in event_dict.items():
            if isinstance(value, str):
                event_dict[key] = escaped(value)
        return event_dict
