"""Wrapper safety: content cannot close the elements the layout wraps it in.

A memory file that holds ``</agent_memory>`` would otherwise end the block
early, and whatever follows it would read as if it came from the prompt's
author. :class:`EscapeClosingTags` rewrites every closing tag of a wrapper in
content, in any letter case and with the spacing a model would still read as
closing (``</agent_memory>``, ``</ Agent_Memory >``, ``< /agent_memory``, a
``</agent_memory`` cut short), by putting a backslash after its ``<``:
``</agent_memory>`` becomes ``<\\/agent_memory>``, which no HTML or XML reader
takes for a tag and a model reads as the text it is.

A text's end is treated the same way: when it ends (trailing whitespace aside,
which the formatter strips) with a ``<`` that the text after it could still
turn into a wrapper's closing tag (``<``, ``</``, ``< /``, ``</agent_mem``),
that ``<`` gets its backslash too, so the separator or the next section cannot
finish the tag. The start of a text needs nothing: a layout whose literal text
ends with such a ``<`` right before a slot is refused when it is built
(:func:`memconfig.format.markup.layout_problems`). Nothing else changes, so
ordinary content passes through byte for byte. Each section changed is noted
as ``content_escaped`` (the tags it held, how many times).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..closing import ClosingTags
from ..held import Held
from ..model import Note, Processed, Section

__all__ = ["EscapeClosingTags"]


@dataclass(frozen=True)
class EscapeClosingTags:
    """The processor: neutralises the wrappers' closing tags in each section's text, with a note for each change.

    Attributes:
        tags: the names of the elements content sits in (see
            :func:`memconfig.format.markup.wrappers`).
    """

    tags: tuple[str, ...]
    _closing: ClosingTags = field(init=False, repr=False, compare=False)
    _held: Held[tuple[Section, Section, Note | None]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_closing", ClosingTags(self.tags))
        object.__setattr__(self, "_held", Held())  # each section as escaped, and its note, by the section escaped

    @property
    def token(self) -> str:
        """The rule's version and the tags: what a state made with this processor depends on."""
        return "escape-closing-tags/2:" + ",".join(self.tags)

    def __call__(self, sections: Sequence[Section]) -> Processed:
        closing = self._closing
        last, made = self._held.last, self._held.start()
        out: list[Section] = []
        notes: list[Note] = []
        for section in sections:
            found = last.get(section.source)
            if found is None or found[0] is not section:
                text, count = closing.neutralise(section.text)
                if count:
                    note = Note(section, "content_escaped", {"tags": closing.found(section.text), "count": count})
                    found = (section, section.with_text(text), note)
                else:
                    found = (section, section, None)
            if made is not None:
                made[section.source] = found
            out.append(found[1])
            if found[2] is not None:
                notes.append(found[2])
        self._held.finish(made)
        return Processed(out, notes)
