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

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..render import Section
from ..xmlnames import NAME_CHAR_CLASS, NAME_CONTINUES_CLASS
from .chain import Note, Processed

__all__ = ["ClosingTags", "EscapeClosingTags", "begins_closing"]

# What may follow a "<" and still be the start of a closing tag: spaces, "/", spaces, part of a name.
_CLOSING_START = re.compile(rf"\s*(?:/\s*({NAME_CHAR_CLASS}*))?")


@functools.cache
def _closing_start_at_end() -> re.Pattern[str]:
    """The same at a text's end, where the formatter strips trailing whitespace.

    Compiled when first needed (a value with a ``<``): a class of every XML
    name character takes milliseconds to compile, paid at every command's start.
    """
    return re.compile(rf"\s*(?:/\s*({NAME_CHAR_CLASS}*)\s*)?")


def _begun(match: re.Match[str] | None, names: Iterable[str]) -> list[str] | None:
    """The names whose closing tag *match* (a closing start) has begun; ``None`` when it is no such start."""
    if match is None:
        return None
    begun = (match[1] or "").casefold()
    found = [name for name in names if name.casefold().startswith(begun)]
    return found or None


def begins_closing(tail: str, names: Iterable[str]) -> bool:
    """Whether *tail*, the text after a ``<``, could still grow into the closing tag of one of *names*.

    ``""``, spaces, ``/``, ``/ ag``, ``/AGENT_MEMORY``: yes for ``agent_memory``;
    ``/x``, ``/ag ``, ``b``: no.
    """
    return _begun(_CLOSING_START.fullmatch(tail), names) is not None


class ClosingTags:
    """Finds and neutralises the closing tags of some elements, by name, in any case and spacing."""

    __slots__ = ("_pattern", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names: tuple[str, ...] = tuple(dict.fromkeys(names))
        alternatives = "|".join(re.escape(name) for name in sorted(self.names, key=len, reverse=True))
        # "<", optional space, "/", optional space, the name in any case, and no further name character. Only the
        # names ignore case: the class ignoring it too took three times as long to compile (at every start), and
        # would only have counted a few more characters (the micro sign, by its Greek fold) as the name going on.
        self._pattern = re.compile(rf"<(?=\s*/\s*((?i:{alternatives}))(?!{NAME_CONTINUES_CLASS}))")

    def __repr__(self) -> str:
        return f"ClosingTags({self.names!r})"

    def neutralise(self, text: str) -> tuple[str, int]:
        """*text* with every closing tag of these elements neutralised, its end too, and how many there were."""
        if "<" not in text or not self.names:
            return text, 0
        text, count = self._pattern.subn(r"<\\", text)
        ended = self.neutralise_end(text)
        return ended, count + (ended is not text)

    def neutralise_end(self, text: str) -> str:
        """*text* with a ``<`` neutralised if, trailing whitespace aside, the rest could finish a closing tag.

        Only the text after the last ``<`` is read: the formatter calls it on
        every value it lays out, for what processors after the escaping one
        (a budget's cut) leave at a section's end.
        """
        if self._begun_at_end(text) is None:
            return text
        start = text.rfind("<")
        return f"{text[: start + 1]}\\{text[start + 1 :]}"

    def found(self, text: str) -> list[str]:
        """The names (as declared) whose closing tags *text* holds, begun at its end included."""
        by_fold = {name.casefold(): name for name in self.names}
        names = {by_fold.get(m[1].casefold(), m[1]) for m in self._pattern.finditer(text)}
        names.update(self._begun_at_end(text) or ())
        return sorted(names)

    def _begun_at_end(self, text: str) -> list[str] | None:
        """The names whose closing tag *text*'s end (whitespace aside) has begun, if it has begun one."""
        start = text.rfind("<")
        if start < 0:
            return None
        return _begun(_closing_start_at_end().fullmatch(text, start + 1), self.names)


@dataclass(frozen=True)
class EscapeClosingTags:
    """The processor: neutralises the wrappers' closing tags in each section's text, with a note for each change.

    Attributes:
        tags: the names of the elements content sits in (see
            :func:`memconfig.format.markup.wrappers`).
    """

    tags: tuple[str, ...]
    _closing: ClosingTags = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_closing", ClosingTags(self.tags))

    @property
    def token(self) -> str:
        """The rule's version and the tags: what a state made with this processor depends on."""
        return "escape-closing-tags/2:" + ",".join(self.tags)

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
