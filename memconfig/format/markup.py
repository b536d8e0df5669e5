"""What a layout's literal text declares as markup: the elements around a slot, and slots inside a tag.

Read from the template and the section as written, never from a list of known
tag names: a layout's wrappers are the elements open where its content goes
(``<agent_memory>`` in deepagents' template, ``<source …>`` in the ``xml``
preset, any element a user's template opens around ``{agent_memory}``), and a
slot sits inside a tag when it is between a ``<name`` and its ``>`` (an
attribute's value, quoted or not).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["enclosing", "slot_contexts"]

_TAG = re.compile(r"""<(/?)([A-Za-z_][\w.:-]*)((?:"[^"]*"|'[^']*'|[^'">])*)>""")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SLOT = "\x00"  # where a slot stands in the joined text


def _joined(parts: Sequence[tuple[bool, str]]) -> tuple[str, list[int]]:
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


def enclosing(parts: Sequence[tuple[bool, str]], slot: str) -> tuple[str, ...]:
    """The names of the elements open where *slot* first appears, outermost first (as written)."""
    slots = [part for is_slot, part in parts if is_slot]
    if slot not in slots:
        return ()
    text, offsets = _joined(parts)
    at = offsets[slots.index(slot)]
    stack: list[str] = []
    for tag in _TAG.finditer(text, 0, at):
        closing, name, rest = tag[1], tag[2], tag[3]
        if closing:
            folded = [n.casefold() for n in stack]
            if name.casefold() in folded:
                del stack[len(folded) - 1 - folded[::-1].index(name.casefold()) :]
        elif not rest.rstrip().endswith("/"):
            stack.append(name)
    return tuple(stack)


def slot_contexts(parts: Sequence[tuple[bool, str]]) -> tuple[str | None, ...]:
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
