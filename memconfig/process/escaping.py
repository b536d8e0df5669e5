"""Wrapper safety: content cannot close the elements the layout wraps it in.

A memory file that holds ``</agent_memory>`` would otherwise end the block
early, and whatever follows it would read as if it came from the prompt's
author. :class:`EscapeClosingTags` rewrites every closing tag of a wrapper in
content, in any letter case and with the spacing a model would still read as
closing (``</agent_memory>``, ``</ Agent_Memory >``, ``< /agent_memory``, a
``</agent_memory`` cut short), by putting a backslash after its ``<``:
``</agent_memory>`` becomes ``<\\/agent_memory>``, which no HTML or XML reader
takes for a tag and a model reads as the text it is. Nothing else changes, so
ordinary content passes through byte for byte. Each section changed is noted
as ``content_escaped`` (the tags it held, how many times).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..render import Section
from .chain import Note, Processed

__all__ = ["ClosingTags", "EscapeClosingTags"]


class ClosingTags:
    """Finds and neutralises the closing tags of some elements, by name, in any case and spacing."""

    __slots__ = ("_pattern", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names: tuple[str, ...] = tuple(dict.fromkeys(names))
        alternatives = "|".join(re.escape(name) for name in sorted(self.names, key=len, reverse=True))
        # "<", optional space, "/", optional space, the name, and no further name character.
        self._pattern = re.compile(rf"<(?=\s*/\s*({alternatives})(?![\w.:-]))", re.IGNORECASE)

    def __repr__(self) -> str:
        return f"ClosingTags({self.names!r})"

    def neutralise(self, text: str) -> tuple[str, int]:
        """*text* with every closing tag of these elements neutralised, and how many there were."""
        if "<" not in text or not self.names:
            return text, 0
        return self._pattern.subn(r"<\\", text)

    def found(self, text: str) -> list[str]:
        """The names (as declared) whose closing tags *text* holds."""
        by_fold = {name.casefold(): name for name in self.names}
        return sorted({by_fold.get(m[1].casefold(), m[1]) for m in self._pattern.finditer(text)})


@dataclass(frozen=True)
class EscapeClosingTags:
    """The processor: neutralises the wrappers' closing tags in each section's text, with a note for each change.

    Attributes:
        tags: the names of the elements content sits in (see
            :func:`memconfig.format.markup.enclosing`).
    """

    tags: tuple[str, ...]
    _closing: ClosingTags = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_closing", ClosingTags(self.tags))

    @property
    def token(self) -> str:
        return repr(self)

    def __call__(self, sections: Sequence[Section]) -> Processed:
        closing = self._closing
        out: list[Section] = []
        notes: list[Note] = []
        for section in sections:
            text, count = closing.neutralise(section.text)
            if count:
                fields = {"tags": closing.found(section.text), "count": count}
                notes.append(Note(section, "content_escaped", fields))
                section = section.with_text(text)
            out.append(section)
        return Processed(out, notes)
