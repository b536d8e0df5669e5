"""The appender stage: puts the memory block next to the caller's system prompt."""

from __future__ import annotations

from .config import Config
from .stages import Block

__all__ = ["SystemPromptAppender"]


class SystemPromptAppender:
    """Joins the block to an existing system prompt, after it or before it.

    An empty or missing system prompt counts as none: the block alone is the
    prompt. An empty block leaves the system prompt as it was.
    """

    def __init__(self, separator: str = "\n\n", position: str = "append") -> None:
        if position not in ("append", "prepend"):
            raise ValueError(f"position must be 'append' or 'prepend', not {position!r}")
        self.separator = separator
        self.position = position

    @classmethod
    def from_config(cls, config: Config) -> SystemPromptAppender:
        return cls(config.appender.separator, config.appender.position)

    def __repr__(self) -> str:
        return f"SystemPromptAppender(separator={self.separator!r}, position={self.position!r})"

    def append(self, system: str | None, block: Block) -> str:
        if not system:
            return block.text
        if not block.text:
            return system
        if self.position == "prepend":
            return block.text + self.separator + system
        return system + self.separator + block.text
