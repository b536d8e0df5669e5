"""What XML 1.0 calls a name, as regular-expression character classes: what the layout reader and escaper agree on.

A tag's name starts with a ``NameStartChar`` (a letter of any script, ``_``,
``:``) and goes on with ``NameChar`` (those, digits, ``-``, ``.``, combining
marks), so ``<ébauche>`` is an element as ``<notes>`` is. The escaper uses
:data:`NAME_CONTINUES` to tell ``</agent_memory>`` from ``</agent_memory_x>``;
it leaves out the invisible joiners XML allows in names (U+200C, U+200D), so a
name followed by one still reads, and is escaped, as the closing tag it looks like.

The ``*_CLASS`` forms are the same sets, bracketed, written as the negation of
every other character: the other characters are a fifth as many in the Basic
Multilingual Plane, and Python's ``re`` compiles a class in time proportional
to the characters it lists there (a few milliseconds each for these, paid by
every command at start; see benchmarks/startup.py).
"""

from __future__ import annotations

__all__ = ["NAME_CHAR", "NAME_CHAR_CLASS", "NAME_CONTINUES", "NAME_CONTINUES_CLASS", "NAME_START", "NAME_START_CLASS"]

_LAST = 0x10FFFF

NAME_START = (
    ":A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
NAME_CHAR = NAME_START + r"\-.0-9\u00b7\u0300-\u036f\u203f-\u2040"
NAME_CONTINUES = NAME_CHAR.replace("\u200c-\u200d", "")


def _points(body: str) -> list[int | None]:
    """A class body's characters as code points (escapes read); ``None`` for the ``-`` of a range."""
    points: list[int | None] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and body[i + 1] in "uU":
            digits = 4 if body[i + 1] == "u" else 8
            points.append(int(body[i + 2 : i + 2 + digits], 16))
            i += 2 + digits
        elif body[i] == "\\":
            points.append(ord(body[i + 1]))
            i += 2
        else:
            points.append(None if body[i] == "-" else ord(body[i]))
            i += 1
    return points


def _spans(body: str) -> list[tuple[int, int]]:
    """The code-point spans a class body lists, sorted and merged."""
    points = _points(body)
    spans: list[tuple[int, int]] = []
    j = 0
    while j < len(points):
        low = points[j]
        low = ord("-") if low is None else low
        high = points[j + 2] if j + 2 < len(points) and points[j + 1] is None else None
        if high is not None:
            spans.append((low, high))
            j += 3
        else:
            spans.append((low, low))
            j += 1
    merged: list[tuple[int, int]] = []
    for low, high in sorted(spans):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return merged


def _negated(body: str) -> str:
    """``[^…]``: the class of the characters *body* lists, as every character but the others."""
    others, start = [], 0
    for low, high in _spans(body):
        if low > start:
            others.append((start, low - 1))
        start = high + 1
    if start <= _LAST:
        others.append((start, _LAST))
    return "[^" + "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in others) + "]"


NAME_START_CLASS = _negated(NAME_START)
NAME_CHAR_CLASS = _negated(NAME_CHAR)
NAME_CONTINUES_CLASS = _negated(NAME_CONTINUES)
