"""Processors: the steps between the cache and the formatter, sections in, sections out.

What a processor says it did (:class:`Drop`, :class:`Note`, :class:`Processed`)
lives in :mod:`memconfig.model`; it is exported here too, beside the processors.
"""

from ..model import Drop, Note, Processed
from .chain import BUILT_IN, Placed, ProcessorChain, Rule
from .cleaning import Cleaning, StripBOM, StripHTMLComments
from .escaping import EscapeClosingTags
from .frontmatter import StripFrontmatter, StripFrontmatterOf
from .text import TextStep

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
