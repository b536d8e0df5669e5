"""Processors: the steps between the cache and the formatter, sections in, sections out."""

from .chain import ProcessorChain
from .cleaning import Cleaning, StripBOM, StripHTMLComments
from .escaping import EscapeClosingTags
from .frontmatter import StripFrontmatter, StripFrontmatterOf
from .records import Drop, Note, Processed
from .text import TextStep

__all__ = [
    "Cleaning",
    "Drop",
    "EscapeClosingTags",
    "Note",
    "Processed",
    "ProcessorChain",
    "StripBOM",
    "StripFrontmatter",
    "StripFrontmatterOf",
    "StripHTMLComments",
    "TextStep",
]
