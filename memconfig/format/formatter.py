"""The formatter stage: sections in, one memory block out.

Each section's text, right-stripped, is laid out by the layout's *section*
template (slots ``{path}``, ``{name}``, ``{content}``), sections are joined by
the *separator*, and the result fills the template's ``{agent_memory}`` slot
(or the *empty* text does, when no section is left). Cleaning (BOM, comments)
is not done here: it is the processors' job, before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import astuple
from typing import TYPE_CHECKING

from ..render import Section
from ..stages import Block
from .presets import MEMORY_SLOT, PRESETS, SECTION_SLOTS, Preset
from .templates import Template

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["TemplateFormatter"]


class TemplateFormatter:
    """Formats sections with a :class:`~memconfig.format.presets.Preset` layout."""

    def __init__(self, layout: Preset = PRESETS["deepagents"]) -> None:
        self.layout = layout
        self._template = Template(layout.template, {MEMORY_SLOT}, [MEMORY_SLOT])
        self._section = Template(layout.section, SECTION_SLOTS)
        self.token = "template:" + hashlib.sha256(repr(astuple(layout)).encode()).hexdigest()

    @classmethod
    def from_config(cls, config: Config) -> TemplateFormatter:
        return cls(config.formatter.layout(config.template_text))

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self.layout).items() if k != "template"}
        return f"TemplateFormatter(template={self.layout.template[:40]!r}..., {shown})"

    def format(self, sections: Sequence[Section]) -> Block:
        """The block for *sections*, in their order."""
        # Every piece of every section goes in one list, joined once with the template around it.
        body: list[str] = []
        section = self._section.parts
        separator = self.layout.separator
        for item in sections:
            if body:
                body.append(separator)
            values = {"path": item.source, "name": item.name, "content": item.text.rstrip()}
            body += [values[part] if is_slot else part for is_slot, part in section]
        pieces: list[str] = []
        for is_slot, part in self._template.parts:
            if is_slot:
                pieces += body or [self.layout.empty]
            else:
                pieces.append(part)
        digest = hashlib.sha256()
        for (
            piece
        ) in pieces:  # piece by piece: a copy of the whole block, encoded, is slower once it outgrows the caches
            digest.update(piece.encode())
        return Block("".join(pieces), digest.hexdigest())
