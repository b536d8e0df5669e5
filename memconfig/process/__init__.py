"""Processors: the steps between the cache and the formatter, sections in, sections out."""

from .chain import Drop, Note, Processed, ProcessorChain
from .cleaning import Cleaning, StripBOM, StripHTMLComments, TextStep

__all__ = ["Cleaning", "Drop", "Note", "Processed", "ProcessorChain", "StripBOM", "StripHTMLComments", "TextStep"]
