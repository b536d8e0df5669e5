"""Expanders: one declared source in, child sources out (glob, discovery).

:data:`EXPANDERS` is a read-only view of the open expander registry
(:mod:`memconfig.registry`), from a source's ``expander`` name to the object
that expands it. Children carry their parent's key in ``lineage`` and the
expander's name in ``via``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..lazy import lazy_names
from ..registry import EXPANDERS as _EXPANDERS

if TYPE_CHECKING:
    from ..sources import Source
    from .discover import DiscoverExpander
    from .glob import GlobExpander

__all__ = ["EXPANDERS", "DiscoverExpander", "Expander", "GlobExpander"]


@runtime_checkable
class Expander(Protocol):
    """Turns one source into the sources it stands for, now. Blocking; the loader runs it off the loop."""

    via: str

    def expand(self, source: Source) -> list[Source]: ...


EXPANDERS: Mapping[str, Expander] = _EXPANDERS
"""The expanders by name, each made when first asked for: memconfig's own and a plugin's alike."""

#: The expanders' classes, imported when first asked for: the registry imports each when a config first uses it.
_MODULES = {"DiscoverExpander": "discover", "GlobExpander": "glob"}

if not TYPE_CHECKING:  # the type checker reads the imports above
    __getattr__, __dir__ = lazy_names(__name__, _MODULES)
