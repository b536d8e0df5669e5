"""What a layout's literal text declares as markup: the elements around a slot, slots inside a tag, unsafe slots.

Read from the template, section and separator as written, never from a list
of known tag names: a layout's wrappers are the elements open where its text
slots go (``<agent_memory>`` in deepagents' template, ``<source …>`` in the
``xml`` preset, any element a user's template opens around ``{agent_memory}``),
and a slot sits inside a tag when it is between a ``<name`` and its ``>``.
Tag names follow XML's rules (``NameStartChar``, ``NameChar``), so ``<ébauche>``
is an element as ``<notes>`` is.

:func:`layout_problems` says where a layout would let a value end a wrapper
however the value is escaped: a slot where a tag's name is written
(``<{name}>``), a slot in a tag without quotes (``<source name={title}>``),
and a slot right after literal text that begins a wrapper's closing tag
(``</mem`` then ``{content}``, in the section, the separator or the template).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from ..closing import begins_closing
from ..lazy import compiled_when_used
from ..xmlnames import NAME_CHAR_CLASS, NAME_START_CLASS

__all__ = ["LayoutError", "LayoutProblem", "enclosing", "layout_problems", "slot_contexts", "wrappers"]

_TAG = re.compile(rf"""<(/?)({NAME_START_CLASS}{NAME_CHAR_CLASS}*)((?:"[^"]*"|'[^']*'|[^'">])*)>""")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SLOT = "\x00"  # where a slot stands in the joined text
# A slot where a tag's name is written: right after "<" or "</" and any part of a name. Compiled when a section
# first has a "<" before a slot (see memconfig.closing: a class of every name character is slow to compile).
_name_position = compiled_when_used(rf"</?{NAME_CHAR_CLASS}*\Z")

Parts = Sequence[tuple[bool, str]]  # hashable (a tuple, as Template.parts is) for the memoised functions


class LayoutProblem(NamedTuple):
    """Why a layout is refused, and which of its fields (``template``, ``section``, ``separator``) holds the cause."""

    field: str
    message: str


class LayoutError(ValueError):
    """A layout :func:`layout_problems` refuses; *problems* says why, field by field."""

    def __init__(self, problems: Sequence[LayoutProblem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = tuple(problems)


def _joined(parts: Parts) -> tuple[str, list[int]]:
    """The literal text with one placeholder per slot (comments blanked), and each slot's offset."""
    text = ""
    offsets = []
    for is_slot, part in parts:
        if is_slot:
            offsets.append(len(text))
            text += _SLOT
        else:
            text += part.replace(_SLOT, " ")
    return _COMMENT.sub(lambda m: " " * len(m[0]), text), offsets


def _open_at(text: str, at: int) -> list[str]:
    stack: list[str] = []
    for tag in _TAG.finditer(text, 0, at):
        closing, name, rest = tag[1], tag[2], tag[3]
        if closing:
            folded = [n.casefold() for n in stack]
            if name.casefold() in folded:
                del stack[len(folded) - 1 - folded[::-1].index(name.casefold()) :]
        elif not rest.rstrip().endswith("/"):
            stack.append(name)
    return stack


def enclosing(parts: Parts, slot: str) -> tuple[str, ...]:
    """The names of the elements open where *slot* first appears, outermost first (as written)."""
    slots = [part for is_slot, part in parts if is_slot]
    if slot not in slots:
        return ()
    text, offsets = _joined(parts)
    return tuple(_open_at(text, offsets[slots.index(slot)]))


def _block(template: Parts, section: Parts, separator: str, count: int) -> list[tuple[bool, str, str]]:
    """The parts of a block of *count* sections: ``(is_slot, text, field)``, the field the text comes from."""
    body: list[tuple[bool, str, str]] = []
    for index in range(count):
        if index:
            body.append((False, separator, "separator"))
        body += [(is_slot, text, "section") for is_slot, text in section]
    out: list[tuple[bool, str, str]] = []
    for is_slot, text in template:
        out += body if is_slot else [(False, text, "template")]
    return out


@functools.lru_cache(maxsize=64)
def wrappers(template: Parts, section: Parts, separator: str) -> tuple[str, ...]:
    """The elements open where any of the section's text slots stands, in a block of one or two sections.

    The block is read whole, so an element opened in the template and closed in
    the section (or the other way round) counts as written; names are kept in
    the order first seen, outermost first.
    """
    found: dict[str, None] = {}
    attributes = slot_contexts(section)
    for count in (1, 2):
        parts = _block(template, section, separator, count)
        text, offsets = _joined([(is_slot, text) for is_slot, text, _ in parts])
        in_tag = [context is not None for (is_slot, _), context in zip(section, attributes, strict=True) if is_slot]
        for index, at in enumerate(offsets):
            if not in_tag[index % len(in_tag)]:
                found.update(dict.fromkeys(_open_at(text, at)))
    return tuple(found)


def slot_contexts(parts: Parts) -> tuple[str | None, ...]:
    """For each part: ``None`` (literal text, or a slot in text), or for a slot inside a tag, its quote.

    The quote is ``'"'`` or ``"'"`` for a slot inside a quoted attribute value,
    ``""`` for one elsewhere in a tag.
    """
    text, offsets = _joined(parts)
    tags = [(m.start(), m.end()) for m in _TAG.finditer(text)]
    found: list[str | None] = []
    slot = 0
    for is_slot, _ in parts:
        if not is_slot:
            found.append(None)
            continue
        at = offsets[slot]
        slot += 1
        inside = next(((start, end) for start, end in tags if start < at < end), None)
        if inside is None:
            found.append(None)
            continue
        quote = ""
        for char in text[inside[0] : at]:
            if quote and char == quote:
                quote = ""
            elif not quote and char in "\"'":
                quote = char
        found.append(quote)
    return tuple(found)


@functools.lru_cache(maxsize=64)  # a config is checked when loaded and again when its formatter is made
def layout_problems(template: Parts, section: Parts, separator: str) -> tuple[LayoutProblem, ...]:
    """Where the layout lets a slot's value end a wrapper or name an element, however the value is escaped.

    Args:
        template, section: the parsed parts (:attr:`~memconfig.templates.Template.parts`).

    Returns:
        One problem per cause, in the order found; none for a safe layout. A
        slot is refused (1) where a tag's name is written in the section
        (``<{name}>``, ``</{name}>``, ``<x{name}``); (2) in a tag without quotes
        (``<source name={title}>``: ``x/`` would close the tag, a space add an
        attribute); (3) when the literal text right before it in the block (the
        section's, the separator's, the template's, across slots that may be
        empty) ends with ``<``, ``</`` or ``</`` and part of a wrapper's name:
        whatever the value starts with would finish that closing tag.
    """
    problems: list[LayoutProblem] = []
    before = ""
    for (is_slot, text), context in zip(section, slot_contexts(section), strict=True):
        if not is_slot:
            before = text
            continue
        shown = "{" + text + "}"
        if "<" in before and _name_position().search(before):
            problems.append(LayoutProblem("section", f"slot {shown} stands in a tag's name; write the name itself"))
        elif context == "":
            problems.append(
                LayoutProblem("section", f'slot {shown} is in a tag without quotes; put it in quotes: a="{shown}"')
            )
        before = ""
    names = wrappers(template, section, separator)
    if names:
        problems += _completions(template, section, separator, names)
    return tuple(dict.fromkeys(problems))


def _completions(template: Parts, section: Parts, separator: str, names: Sequence[str]) -> Iterator[LayoutProblem]:
    """Problems of kind (3) of :func:`layout_problems`: each slot preceded by the start of a closing tag."""
    seen: set[LayoutProblem] = set()
    for count in (1, 2, 3):
        tail = ""  # the literal text since the last "<" (slots skipped), and the field that "<" is in
        field = ""
        for is_slot, text, origin in _block(template, section, separator, count):
            if not is_slot:
                start = text.rfind("<")
                tail, field = (text[start:], origin) if start >= 0 else (tail + text if tail else "", field)
                continue
            if tail and begins_closing(tail[1:], names):
                message = (
                    f"slot {{{text}}} follows {tail.strip()!r}, the start of a closing tag of "
                    f"{', '.join(names)}: its value would finish it; put text between them"
                )
                problem = LayoutProblem(field, message)
                if problem not in seen:
                    seen.add(problem)
                    yield problem
