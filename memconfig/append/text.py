"""The ``text`` appender: the memory block joined to a system prompt string."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .shapes import HasText, one_of

if TYPE_CHECKING:
    from ..config.schema import AppenderConfig

__all__ = ["TextAppender"]


class TextAppender:
    """Joins the block to an existing system prompt, after it or before it.

    An empty or missing system prompt counts as none: the block alone is the
    prompt. An empty block leaves the system prompt as it was. The last prompt
    is kept, so an unchanged turn (same system text, same block) costs the same
    however large the prompt is.
    """

    def __init__(self, separator: str = "\n\n", position: str = "append") -> None:
        one_of("position", position, ("append", "prepend"))
        self.separator = separator
        self.position = position
        self._last: tuple[str | None, str, str] | None = None  # (system, block, prompt)

    @classmethod
    def from_config(cls, options: AppenderConfig) -> TextAppender:
        return cls(options.separator, options.position)

    def __repr__(self) -> str:
        return f"TextAppender(separator={self.separator!r}, position={self.position!r})"

    def append(self, system: str | None, render: HasText) -> str:
        block = render.text
        last = self._last
        if last is not None and last[1] is block and (last[0] is system or last[0] == system):
            return last[2]
        if not system:
            prompt = block
        elif not block:
            prompt = system
        elif self.position == "prepend":
            prompt = block + self.separator + system
        else:
            prompt = system + self.separator + block
        self._last = (system, block, prompt)
        return prompt

    def output(self, system: str | None, render: HasText) -> str:
        """What ``memconfig render --format text`` prints: the prompt, exactly."""
        return self.append(system, render)
