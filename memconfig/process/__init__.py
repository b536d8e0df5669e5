"""Processors: the steps between the cache and the formatter, sections in, sections out.

What a processor says it did (:class:`Drop`, :class:`Note`, :class:`Processed`)
lives in :mod:`memconfig.model`; it is exported here too, beside the processors.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_names
from ..model import Drop, Note, Processed
from .chain import BUILT_IN, Placed, ProcessorChain, Rule
from .cleaning import Cleaning, StripBOM, StripHTMLComments
from .escaping import EscapeClosingTags
from .text import TextStep

if TYPE_CHECKING:
    from .frontmatter import StripFrontmatter, StripFrontmatterOf

__all__ = [
    "BUILT_IN",
    "Cleaning",
    "Drop",
    "EscapeClosingTags",
    "Note",
    "Placed",
    "Processed",
    "ProcessorChain",
    "Rule",
    "StripBOM",
    "StripFrontmatter",
    "StripFrontmatterOf",
    "StripHTMLComments",
    "TextStep",
]

#: The frontmatter steps, imported when first asked for: only a layout or source that strips frontmatter uses them.
_MODULES = {"StripFrontmatter": "frontmatter", "StripFrontmatterOf": "frontmatter"}

if not TYPE_CHECKING:  # the type checker reads the imports above
    __getattr__, __dir__ = lazy_names(__name__, _MODULES)
