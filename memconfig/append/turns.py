"""Where a memory block given as a user message goes: before the first user turn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = ["before_first_user"]

M = TypeVar("M", bound=Mapping[str, Any])


def before_first_user(messages: list[M], message: M) -> list[M]:
    """*messages* with *message* inserted before the first ``user`` turn (at the end when there is none yet).

    Codex and Claude Code place their instruction files this way: the system
    prompt stays the same for every project, the memory is the first thing the user says.
    """
    for index, existing in enumerate(messages):
        if existing.get("role") == "user":
            messages.insert(index, message)
            return messages
    messages.append(message)
    return messages
