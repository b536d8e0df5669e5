"""The records a render is made of, from a source as declared to the block shown: one home, frozen and typed.

Every part that reports a render — its events, ``explain``, ``audit``, the
errors — reads these records; none keeps a picture of its own. One concept a
module: :mod:`~memconfig.model.status` (the vocabulary: ``Status``,
``SkipReason``, ``Failure``), :mod:`~memconfig.model.sources` (a source as
declared), :mod:`~memconfig.model.load` (a read asked and found),
:mod:`~memconfig.model.sections` (a section, and what processors did to it),
:mod:`~memconfig.model.render` (snapshot, block, records, render).

The model imports nothing else of memconfig at run time. ``load`` names a
:class:`~memconfig.sources.Source` for the type checker, and a source is made
from the config: the modules a source reaches (``sources``, ``exceptions``,
the imports expander) import the leaf they need (``model.status``,
``model.sources``), not this package.
"""

from .load import LoadRequest, LoadResult, LocalCheck
from .render import Block, Lazy, Records, Render, RenderCounts, Snapshot, SourceRecord
from .sections import NO_REASONS, Drop, Note, Processed, Section
from .sources import ROOT_MARKERS, DiscoverSpec, ImportRef, ImportSettings, Markers, Spot
from .status import Failure, SkipReason, Status, source_label

__all__ = [
    "NO_REASONS",
    "ROOT_MARKERS",
    "Block",
    "DiscoverSpec",
    "Drop",
    "Failure",
    "ImportRef",
    "ImportSettings",
    "Lazy",
    "LoadRequest",
    "LoadResult",
    "LocalCheck",
    "Markers",
    "Note",
    "Processed",
    "Records",
    "Render",
    "RenderCounts",
    "Section",
    "SkipReason",
    "Snapshot",
    "SourceRecord",
    "Spot",
    "Status",
    "source_label",
]
