"""The ``langchain`` appender: the memory block as its own text block of a LangChain ``SystemMessage``.

The system message keeps every content block it had; the block is one more
``{"type": "text"}`` block after them (or before them, ``position: prepend``),
the same shape deepagents gives its memory. Keeping it separate lets a
provider cache the static prompt and the memory apart: with
``appender.cache_control`` set, the memory block carries
``cache_control: {"type": "ephemeral"}`` (and its ``ttl``), which
``langchain-anthropic`` passes on to Anthropic.

With ``placement: user`` the system message stays as it is and the block goes
in a ``HumanMessage`` of its own before the first user turn
(:meth:`LangchainAppender.insert`), as Codex and Claude Code place theirs.
Given a whole conversation instead of a system message, the appender puts the
block where the placement says (:meth:`LangchainAppender.place`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

try:
    from langchain_core.messages import BaseMessage, ContentBlock, HumanMessage, SystemMessage
except ImportError:  # pragma: no cover - exercised by the appender registry's install hint
    from ..install import install_hint

    raise ImportError(f"the langchain appender needs langchain: {install_hint('langchain')}") from None

from .shapes import HasText, one_of

if TYPE_CHECKING:
    from ..config.schema import AppenderConfig

__all__ = ["LangchainAppender"]

Placement = Literal["system", "user"]


class LangchainAppender:
    """Adds the block to a ``SystemMessage`` as a text block of its own, or to the turns as a user message.

    Args:
        separator: put between the existing blocks and the memory block, inside
            the memory block's text (nothing when the message has no blocks).
        position: ``append`` (after the existing blocks) or ``prepend``.
        placement: ``system`` (:meth:`append` adds the block) or ``user``
            (:meth:`insert` does; :meth:`append` leaves the system message as it is).
        cache_control: the ``cache_control`` value the memory block carries, or ``None``.

    An empty block changes nothing. The last system message made is kept, so an
    unchanged turn (the same system message, the same block) costs one comparison.
    """

    def __init__(
        self,
        separator: str = "\n\n",
        position: str = "append",
        placement: str = "system",
        cache_control: Mapping[str, str] | None = None,
    ) -> None:
        one_of("position", position, ("append", "prepend"))
        one_of("placement", placement, ("system", "user"))
        self.separator = separator
        self.position = position
        self.placement: Placement = cast(Placement, placement)
        self.cache_control = dict(cache_control) if cache_control is not None else None
        self._last: tuple[Any, str, SystemMessage | None] | None = None

    @classmethod
    def from_config(cls, options: AppenderConfig) -> LangchainAppender:
        control = options.cache_control.as_block() if options.cache_control else None
        return cls(options.separator, options.position, options.placement, control)

    def __repr__(self) -> str:
        return (
            f"LangchainAppender(separator={self.separator!r}, position={self.position!r}, "
            f"placement={self.placement!r}, cache_control={self.cache_control!r})"
        )

    @overload
    def append(self, system: SystemMessage | str, render: HasText) -> SystemMessage: ...
    @overload
    def append(self, system: None, render: HasText) -> SystemMessage | None: ...
    @overload
    def append(self, system: Sequence[BaseMessage], render: HasText) -> list[BaseMessage]: ...

    def append(
        self, system: SystemMessage | str | Sequence[BaseMessage] | None, render: HasText
    ) -> SystemMessage | list[BaseMessage] | None:
        """The system message with the block as one more text block (``placement: system``).

        A ``str`` is taken as a system message's content. Under ``placement:
        user``, or with an empty block, the system message is returned as it
        is (``None`` stays ``None``). Given a whole conversation (a list of
        messages), the block goes where :attr:`placement` says: see :meth:`place`.
        """
        if not isinstance(system, (SystemMessage, str)) and system is not None:
            return self.place(system, render)
        block = render.text
        last = self._last
        if last is not None and last[0] is system and last[1] is block:
            return last[2]
        message = SystemMessage(content=system) if isinstance(system, str) else system
        if block and self.placement == "system":
            existing: list[ContentBlock] = list(message.content_blocks) if message is not None else []
            if not existing:
                blocks = [self._text_block(block)]
            elif self.position == "prepend":
                blocks = [self._text_block(block + self.separator), *existing]
            else:
                blocks = [*existing, self._text_block(self.separator + block)]
            message = SystemMessage(content_blocks=blocks)
        self._last = (system, block, message)
        return message

    def place(self, messages: Sequence[BaseMessage], render: HasText) -> list[BaseMessage]:
        """A whole conversation with the block where :attr:`placement` says.

        ``system``: in the first system message (one is put first if there is
        none); ``user``: in a user message before the first user turn (:meth:`insert`).
        """
        if self.placement == "user":
            return self.insert(messages, render)
        listed = list(messages)
        first = next((i for i, m in enumerate(listed) if isinstance(m, SystemMessage)), None)
        if first is not None:
            listed[first] = self.append(cast(SystemMessage, listed[first]), render)
        else:
            system = self.append(None, render)  # None for an empty block
            if system is not None:
                listed.insert(0, system)
        return listed

    def insert(self, messages: Sequence[BaseMessage], render: HasText) -> list[BaseMessage]:
        """The turns with the block in a user message before the first user turn (``placement: user``).

        With no user turn yet, the block's message comes last. Under
        ``placement: system``, or with an empty block, the turns are returned
        as they are (as a list).
        """
        block = render.text
        turns = list(messages)
        if block and self.placement == "user":
            first = next((i for i, m in enumerate(turns) if isinstance(m, HumanMessage)), len(turns))
            turns.insert(first, HumanMessage(content_blocks=[self._text_block(block)]))
        return turns

    def _text_block(self, text: str) -> ContentBlock:
        block: dict[str, Any] = {"type": "text", "text": text}
        if self.cache_control is not None:
            block["cache_control"] = dict(self.cache_control)
        return cast(ContentBlock, block)
