"""Closing tags of the elements a layout wraps content in: found, neutralised, or begun at a text's end.

Shared by the layout reader (:mod:`memconfig.format.markup`), the formatter
and the escaping processor (:mod:`memconfig.process.escaping`), so it depends
on nothing but :mod:`memconfig.xmlnames` (and :mod:`memconfig.lazy`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .lazy import compiled_when_used
from .xmlnames import NAME_CHAR_CLASS, NAME_CONTINUES_CLASS

__all__ = ["ClosingTags", "begins_closing"]

# Both compiled when first needed: a class of every XML name character takes most of a millisecond to compile,
# which every command's start would pay. What may follow a "<" and still be the start of a closing tag: spaces,
# "/", spaces, part of a name; then the same at a text's end, where the formatter strips trailing whitespace.
_closing_start = compiled_when_used(rf"\s*(?:/\s*({NAME_CHAR_CLASS}*))?")
_closing_start_at_end = compiled_when_used(rf"\s*(?:/\s*({NAME_CHAR_CLASS}*)\s*)?")


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
    if ">" in tail:  # a tag ended after the "<" (a layout's usual text): no start of one, nothing to compile
        return False
    return _begun(_closing_start().fullmatch(tail), names) is not None


class ClosingTags:
    """Finds and neutralises the closing tags of some elements, by name, in any case and spacing."""

    __slots__ = ("_compiled", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names: tuple[str, ...] = tuple(dict.fromkeys(names))
        self._compiled: re.Pattern[str] | None = None

    @property
    def _pattern(self) -> re.Pattern[str]:
        # Compiled when a text first holds a "<": about a millisecond at a process's first render, which most
        # memory files, holding none, never need.
        if self._compiled is None:
            alternatives = "|".join(re.escape(name) for name in sorted(self.names, key=len, reverse=True))
            # "<", optional space, "/", optional space, the name in any case, and no further name character. Only
            # the names ignore case: the class ignoring it too took three times as long to compile, and would only
            # have counted a few more characters (the micro sign, by its Greek fold) as the name going on.
            self._compiled = re.compile(rf"<(?=\s*/\s*((?i:{alternatives}))(?!{NAME_CONTINUES_CLASS}))")
        return self._compiled

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
