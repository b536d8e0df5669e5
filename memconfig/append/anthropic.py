"""The ``anthropic`` appender: the memory block as its own text block of the Messages API's ``system``.

``system`` becomes a list of text blocks (a ``str`` system prompt is made one
block), with the memory block after them (or before, ``position: prepend``).
Keeping it a block of its own lets ``appender.cache_control`` mark just it
with ``cache_control: {"type": "ephemeral"}`` (and its ``ttl``): the prompt
cache then holds everything up to and including the memory.

``placement: user`` puts the block in the messages instead, as a user message
of its own before the first user turn. Since a system prompt alone has no
messages to put it in, the appender then takes and returns the request's
keyword arguments (``{"system": ..., "messages": [...]}``); it accepts them
under ``placement: system`` too. Blocks and messages are plain dicts, the shape
``client.messages.create`` accepts: no SDK is needed to build them. Nothing the
caller passes is changed; results are new lists and dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from ..exceptions import ConfigError
from .shapes import HasText, before_first_user, one_of

if TYPE_CHECKING:
    from ..config.schema import AppenderConfig

__all__ = ["AnthropicAppender", "Request", "TextBlock"]

TextBlock = Mapping[str, Any]
"""A content block as the SDK takes it: ``{"type": "text", "text": ..., "cache_control"?: ...}``."""
Request = Mapping[str, Any]
"""Keyword arguments of ``client.messages.create``: ``system`` and ``messages`` are read, the rest kept."""
Placement = Literal["system", "user"]


class AnthropicAppender:
    """Adds the block to ``system`` as a text block of its own, or to the messages as a user turn.

    Args:
        position: ``append`` (the block after the existing system blocks) or ``prepend``.
        placement: ``system`` or ``user`` (a user message of its own; *position* does not apply).
        cache_control: what the memory block's ``cache_control`` is (``{"type": "ephemeral"}``,
            optionally with ``"ttl"``), or ``None`` for no prompt caching.

    An empty block adds nothing.
    """

    def __init__(
        self, position: str = "append", *, placement: str = "system", cache_control: Mapping[str, str] | None = None
    ) -> None:
        one_of("position", position, ("append", "prepend"))
        one_of("placement", placement, ("system", "user"))
        self.position = position
        self.placement = cast(Placement, placement)
        self.cache_control = dict(cache_control) if cache_control is not None else None

    @classmethod
    def from_config(cls, options: AppenderConfig) -> AnthropicAppender:
        control = options.cache_control.as_block() if options.cache_control else None
        return cls(options.position, placement=options.placement, cache_control=control)

    def __repr__(self) -> str:
        return (
            f"AnthropicAppender(position={self.position!r}, placement={self.placement!r}, "
            f"cache_control={self.cache_control!r})"
        )

    @overload
    def append(self, system: str | Sequence[TextBlock] | None, render: HasText) -> list[TextBlock]: ...
    @overload
    def append(self, system: Request, render: HasText) -> dict[str, Any]: ...
    def append(
        self, system: str | Sequence[TextBlock] | Request | None, render: HasText
    ) -> list[TextBlock] | dict[str, Any]:
        """The new ``system`` blocks; or, given the request's keyword arguments, new keyword arguments.

        Args:
            system: a system prompt (``None``, a ``str``, or a list of text blocks), or the
                request (a mapping with ``system`` and ``messages``), which ``placement: user`` needs.

        Raises:
            ConfigError: ``placement: user`` and *system* is not a request: there are no messages to add to.
        """
        if isinstance(system, Mapping):
            return self._request(system, render)
        if self.placement == "user":
            raise ConfigError(
                "appender.placement: user puts the memory block in the messages: give the anthropic appender "
                "the request's keyword arguments ({'system': ..., 'messages': [...]}), not a system prompt"
            )
        return self._system(system, render.text)

    def output(self, system: str | None, render: HasText) -> dict[str, Any]:
        """What ``memconfig render --format anthropic`` prints: keyword arguments of ``messages.create``."""
        return self._request({"system": system} if system else {}, render)

    def _request(self, request: Request, render: HasText) -> dict[str, Any]:
        out = dict(request)
        block = render.text
        if self.placement == "user":
            if block:
                turn = {"role": "user", "content": [self._memory(block)]}
                out["messages"] = before_first_user(list(request.get("messages") or ()), turn)
            return out
        blocks = self._system(request.get("system"), block)
        if blocks or "system" in request:
            out["system"] = blocks
        return out

    def _system(self, system: str | Sequence[TextBlock] | None, block: str) -> list[TextBlock]:
        if not system:
            blocks: list[TextBlock] = []
        elif isinstance(system, str):
            blocks = [{"type": "text", "text": system}]
        else:
            blocks = list(system)
        if block:
            memory = self._memory(block)
            blocks = [memory, *blocks] if self.position == "prepend" else [*blocks, memory]
        return blocks

    def _memory(self, block: str) -> dict[str, Any]:
        memory: dict[str, Any] = {"type": "text", "text": block}
        if self.cache_control is not None:
            memory["cache_control"] = dict(self.cache_control)
        return memory
