"""The processor chain: the built-in cleaning, then the user's processors, in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..failures import SkipReason
from ..render import Section
from ..stages import Processor

__all__ = ["Drop", "ProcessorChain"]


class Drop(NamedTuple):
    """A section a processor took out of the prompt (or left with no text)."""

    section: Section
    reason: SkipReason
    processor: str


class ProcessorChain:
    """Runs each processor on the previous one's output; says which sections each one took out."""

    def __init__(self, processors: Sequence[Processor]) -> None:
        self.processors = tuple(processors)
        self.token = "|".join(p.token for p in self.processors)

    def __repr__(self) -> str:
        return f"ProcessorChain({', '.join(p.token for p in self.processors)})"

    def __call__(self, sections: Sequence[Section]) -> tuple[list[Section], list[Drop]]:
        """The sections that go into the block, and the ones taken out, with why and by which processor."""
        current = list(sections)
        drops: list[Drop] = []
        for processor in self.processors:
            out = list(processor(current))
            if len(out) != len(current) or any(not s.text for s in out):
                kept = {s.source for s in out if s.text}
                present = {s.source for s in out}
                for section in current:
                    if section.source not in kept:
                        reason = SkipReason.EMPTY if section.source in present else SkipReason.DROPPED
                        drops.append(Drop(section, reason, processor.token))
                out = [s for s in out if s.text]
            current = out
        return current, drops
