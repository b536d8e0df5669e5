"""The processor chain: the built-in cleaning, then the user's processors, in order."""

from __future__ import annotations

from collections.abc import Sequence

from ..failures import SkipReason
from ..render import Section
from ..stages import Processor
from .records import NO_REASONS, Drop, Note, Processed
from .text import TextStep

__all__ = ["ProcessorChain"]


class ProcessorChain:
    """Runs each processor on the previous one's output; says which sections each one took out.

    Consecutive text steps (:class:`~memconfig.process.TextStep`) run as one
    pass, each section copied once however many of them change it.
    """

    def __init__(self, processors: Sequence[Processor]) -> None:
        self.processors = tuple(processors)
        self.token = "|".join(p.token for p in self.processors)
        self.takes_paths = any(getattr(p, "takes_paths", False) for p in self.processors)
        """A processor decides by the render's paths in play (``rules: frontmatter``): blocks differ by paths."""
        self._steps: list[Processor] = []
        for processor in self.processors:
            last = self._steps[-1] if self._steps else None
            if isinstance(processor, TextStep) and isinstance(last, _TextSteps):
                last.steps.append(processor)
            else:
                self._steps.append(_TextSteps([processor]) if isinstance(processor, TextStep) else processor)

    def __repr__(self) -> str:
        return f"ProcessorChain({', '.join(p.token for p in self.processors)})"

    def __call__(
        self, sections: Sequence[Section], paths: tuple[str, ...] = ()
    ) -> tuple[list[Section], list[Drop], list[Note]]:
        """The sections that go into the block, the ones taken out (why, by which processor), and the notes.

        *paths*: the render's paths in play, handed to the processors that take
        them (``takes_paths``, as :class:`~memconfig.process.rules.ApplyRules`).
        """
        current = list(sections)
        drops: list[Drop] = []
        notes: list[Note] = []
        for processor in self._steps:
            returned = processor(current, paths) if getattr(processor, "takes_paths", False) else processor(current)  # type: ignore[call-arg]
            reasons = NO_REASONS
            if isinstance(returned, Processed):
                notes += [note._replace(processor=note.processor or processor.token) for note in returned.notes]
                reasons = returned.reasons
                returned = returned.sections
            out = list(returned)
            if len(out) != len(current) or any(_blank(s.text) for s in out):
                kept = {s.source for s in out if not _blank(s.text)}
                present = {s.source for s in out}
                for section in current:
                    if section.source not in kept:
                        if section.source in present:
                            reason, detail = SkipReason.EMPTY, ""
                        else:
                            reason, detail = reasons.get(section.source, (SkipReason.DROPPED, ""))
                        drops.append(Drop(section, reason, processor.token, detail))
                out = [s for s in out if not _blank(s.text)]
            current = out
        return current, drops, notes


def _blank(text: str) -> bool:
    """Nothing, or only whitespace (which the formatter strips): no section to show."""
    return not text or text.isspace()


class _TextSteps:
    """Text steps run in one pass; a section they empty is reported under their joined tokens."""

    def __init__(self, steps: list[TextStep]) -> None:
        self.steps = steps

    @property
    def token(self) -> str:
        return "|".join(step.token for step in self.steps)

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        cleans = [step.clean for step in self.steps]
        out = []
        for section in sections:
            text = section.text
            for clean in cleans:
                text = clean(text)
            out.append(section if text is section.text else section.with_text(text))
        return out
