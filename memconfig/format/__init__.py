"""The formatter stage: templates, presets (a read-only table) and the formatter that joins sections."""

from ..templates import Template, TemplateError
from .formatter import TemplateFormatter
from .presets import DEFAULT_TEMPLATE, MEMORY_SLOT, PRESETS, SECTION_SLOTS, Preset

__all__ = [
    "DEFAULT_TEMPLATE",
    "MEMORY_SLOT",
    "PRESETS",
    "SECTION_SLOTS",
    "Preset",
    "Template",
    "TemplateError",
    "TemplateFormatter",
]
