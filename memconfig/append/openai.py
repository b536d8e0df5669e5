"""The ``openai`` appender: the memory block in a Chat Completions ``messages`` list.

The messages are plain dicts, the shape ``client.chat.completions.create(messages=...)``
accepts: no SDK is needed to build them. The caller's list and messages are
never changed; the result is a new list (the messages it does not touch are the
caller's own objects).

``placement: system`` (the default) extends the first ``system`` or
``developer`` message, or inserts one with ``appender.role`` at the front (models
of the o1 family and newer want ``developer``). ``placement: user`` leaves the
instructions alone and puts the block in a user message of its own before the
first user turn, as Codex and Claude Code place theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from .shapes import HasText, before_first_user, one_of
from .text import TextAppender

if TYPE_CHECKING:
    from ..config.schema import AppenderConfig

__all__ = ["Message", "OpenAIAppender"]

Message = Mapping[str, Any]
"""One chat message as the SDK takes it: ``{"role": ..., "content": ...}``."""
Placement = Literal["system", "user"]
Role = Literal["system", "developer"]
_INSTRUCTIONS = ("system", "developer")


class OpenAIAppender:
    """Adds the block to a chat ``messages`` list: to its instructions, or as a user message before the first turn.

    Args:
        separator: between a message's string content and the block (as the ``text`` appender joins them).
        position: ``append`` (the block after the existing instructions) or ``prepend``.
        placement: ``system`` or ``user`` (a user message of its own; *position* does not apply).
        role: the role of the instructions message inserted when there is none: ``system`` or ``developer``.

    A message whose content is a list of parts gets the block as one more
    ``{"type": "text"}`` part. An empty block leaves the messages as they were.
    """

    def __init__(
        self, separator: str = "\n\n", position: str = "append", *, placement: str = "system", role: str = "system"
    ) -> None:
        one_of("placement", placement, ("system", "user"))
        one_of("role", role, _INSTRUCTIONS)
        self._text = TextAppender(separator, position)  # joins string content, and keeps the last join
        self.placement = cast(Placement, placement)
        self.role = cast(Role, role)

    @classmethod
    def from_config(cls, options: AppenderConfig) -> OpenAIAppender:
        return cls(options.separator, options.position, placement=options.placement, role=options.role)

    @property
    def separator(self) -> str:
        return self._text.separator

    @property
    def position(self) -> str:
        return self._text.position

    def __repr__(self) -> str:
        return (
            f"OpenAIAppender(separator={self.separator!r}, position={self.position!r}, "
            f"placement={self.placement!r}, role={self.role!r})"
        )

    def append(self, messages: str | Sequence[Message] | None, render: HasText) -> list[Message]:
        """A new message list with the block in it.

        Args:
            messages: the conversation so far, or only a system prompt (a ``str``,
                made a message with :attr:`role`), or ``None``.
        """
        if messages is None or isinstance(messages, str):
            listed: list[Message] = [{"role": self.role, "content": messages}] if messages else []
        else:
            listed = list(messages)
        block = render.text
        if not block:
            return listed
        if self.placement == "user":
            return before_first_user(listed, {"role": "user", "content": block})
        for index, message in enumerate(listed):
            if message.get("role") in _INSTRUCTIONS:
                listed[index] = {**message, "content": self._extended(message.get("content"), render)}
                return listed
        listed.insert(0, {"role": self.role, "content": block})
        return listed

    def output(self, system: str | None, render: HasText) -> dict[str, Any]:
        """What ``memconfig render --format openai`` prints: the keyword arguments of ``chat.completions.create``."""
        return {"messages": self.append(system, render)}

    def _extended(self, content: object, render: HasText) -> str | list[Any]:
        if content is None or isinstance(content, str):
            return self._text.append(content, render)
        if isinstance(content, Sequence):
            part = {"type": "text", "text": render.text}
            return [part, *content] if self.position == "prepend" else [*content, part]
        raise TypeError(f"a message's content must be a string or a list of parts, not {type(content).__name__}")
