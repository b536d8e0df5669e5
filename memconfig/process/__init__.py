"""Processors: the steps between the cache and the formatter, sections in, sections out."""

from .chain import Drop, ProcessorChain
from .cleaning import Cleaning, StripBOM, StripHTMLComments, TextStep

__all__ = ["Cleaning", "Drop", "ProcessorChain", "StripBOM", "StripHTMLComments", "TextStep"]
