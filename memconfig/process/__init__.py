"""Processors: the steps between the cache and the formatter, sections in, sections out."""

from .chain import Drop, Note, Processed, ProcessorChain
from .cleaning import Cleaning, StripBOM, StripHTMLComments, TextStep
from .escaping import EscapeClosingTags
from .frontmatter import StripFrontmatter, StripFrontmatterOf

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
