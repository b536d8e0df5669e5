"""What memconfig's two agent middlewares share: the handler types and how the state's memory keys are carried.

A load writes new values into a copy of the state's memory keys (never into
the agent's own state); the keys whose value it replaced are the state update.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from langchain.agents.middleware.types import ModelRequest, ModelResponse

__all__ = ["AsyncHandler", "Handler", "changes", "held"]

Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


def held(state: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """A copy of *state*'s *keys* (those it has): the load writes to it, never to the agent's state."""
    return {key: state[key] for key in keys if key in state}


def changes(state: Mapping[str, Any], copy: Mapping[str, Any]) -> dict[str, Any] | None:
    """The keys of *copy* the load replaced (the cache writes new values, never into old ones), or ``None``."""
    changed = {key: value for key, value in copy.items() if value is not state.get(key)}
    return changed or None
