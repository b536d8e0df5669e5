"""A template engine that substitutes named slots and nothing else.

``str.format`` would also evaluate ``{x.attr}``, ``{x[0]}``, conversions and
format specs; a config file must not be able to reach into Python objects, so
templates are parsed once, checked against a closed set of slot names, and
rendered by plain concatenation. Values are inserted verbatim: text coming
from a memory file is never parsed as a template.
"""

from __future__ import annotations

import string
from collections.abc import Collection, Mapping

__all__ = ["MARKER_SLOTS", "Template", "TemplateError"]

#: A marker's slots: the source's ``{name}`` and ``{path}``, how much was ``{cut}`` and ``{kept}``, in ``{unit}``.
MARKER_SLOTS = frozenset({"name", "path", "cut", "kept", "unit"})

_parser = string.Formatter()


class TemplateError(ValueError):
    """A template uses something other than its allowed ``{slot}`` names."""


class Template:
    """A parsed template with literal text and named slots.

    ``{{`` and ``}}`` stand for literal braces, exactly as in ``str.format``,
    so templates written for ``str.format`` render the same here.
    """

    __slots__ = ("parts", "slots", "text")

    def __init__(self, text: str, allowed: Collection[str], required: Collection[str] = ()) -> None:
        self.text = text
        parts: list[tuple[bool, str]] = []
        used: set[str] = set()
        try:
            parsed = list(_parser.parse(text))
        except ValueError as exc:
            raise TemplateError(f"{exc} (write '{{{{' or '}}}}' for a literal brace)") from None
        for literal, field, spec, conversion in parsed:
            if literal:
                parts.append((False, literal))
            if field is None:
                continue
            shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            if field == "" or field.isdigit():
                raise TemplateError(f"positional slot {shown} is not allowed; use a named slot")
            if not field.isidentifier():
                if "." in field or "[" in field:
                    raise TemplateError(f"slot {shown} uses attribute or index access; only plain names are allowed")
                raise TemplateError(f"slot {shown} is not a plain name (letters, digits and '_', no spaces)")
            if conversion or spec:
                raise TemplateError(f"slot {shown} has a conversion or format spec; only plain names are allowed")
            if field not in allowed:
                names = ", ".join("{" + a + "}" for a in sorted(allowed))
                raise TemplateError(f"unknown slot {shown}; allowed: {names}")
            used.add(field)
            parts.append((True, field))
        missing = [r for r in required if r not in used]
        if missing:
            raise TemplateError("template must contain the " + ", ".join("{" + m + "}" for m in missing) + " slot")
        self.parts: tuple[tuple[bool, str], ...] = tuple(parts)
        """``(is_slot, text)`` pairs: literal text, or the name of a slot."""
        self.slots = frozenset(used)

    def render(self, values: Mapping[str, str]) -> str:
        """Join the literal text with each slot's value, inserted as-is."""
        return "".join([values[text] if is_slot else text for is_slot, text in self.parts])

    def __repr__(self) -> str:
        return f"Template({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Template) and other.parts == self.parts

    def __hash__(self) -> int:
        return hash(self.parts)
