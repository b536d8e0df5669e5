"""What the appenders share: the part of a render they read, their checked settings, where a user turn goes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

__all__ = ["HasText", "before_first_user", "one_of"]

M = TypeVar("M", bound=Mapping[str, Any])


class HasText(Protocol):
    """What an appender reads of a render: its block (a :class:`~memconfig.Render` or a :class:`~memconfig.Block`)."""

    @property
    def text(self) -> str: ...


def one_of(name: str, value: str, choices: tuple[str, ...]) -> str:
    """*value*, if it is one of *choices*; else a ``ValueError`` naming the setting and the choices."""
    if value not in choices:
        raise ValueError(f"{name} must be {' or '.join(repr(c) for c in choices)}, not {value!r}")
    return value


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
