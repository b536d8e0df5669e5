"""Processors: the steps between the cache and the formatter, sections in, sections out."""

from .chain import BUILT_IN, Drop, Note, Placed, Processed, ProcessorChain, Rule
from .cleaning import Cleaning, StripBOM, StripHTMLComments, TextStep
from .escaping import EscapeClosingTags
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
