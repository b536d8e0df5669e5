"""What an expander can answer besides expanding, asked once of it: the record the watcher, the loader and
``render -o`` keep instead of asking again on every call (as :class:`~memconfig.stages.LoaderCapabilities` is
for a loader).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..stages import NoMatchExpander, TakingExpander, WatchableExpander, provides

if TYPE_CHECKING:
    from ..model import Spot
    from ..sources import Source

__all__ = ["NO_MATCH", "ExpanderCapabilities", "ExpanderTable"]

NO_MATCH = "the glob matched no file"
"""Why a source with no child is skipped, when its expander does not say (its ``no_match``)."""


class ExpanderCapabilities(NamedTuple):
    """An expander's optional hooks, found once.

    Attributes:
        watched: where a source's children can change (:class:`~memconfig.stages.WatchableExpander`), if it says.
        would_take: whether a file would be a child (:class:`~memconfig.stages.TakingExpander`), if it says.
        no_match: why a source with no child is skipped.
    """

    watched: Callable[[Source], Sequence[Spot] | None] | None
    would_take: Callable[[Source, str], bool] | None
    no_match: str

    @classmethod
    def of(cls, expander: object) -> ExpanderCapabilities:
        """Ask *expander* (``None``: none by that name) what it can answer."""
        watched = expander.watched if provides(expander, WatchableExpander) else None
        would_take = expander.would_take if provides(expander, TakingExpander) else None
        said = expander.no_match if provides(expander, NoMatchExpander) else None
        return cls(watched, would_take, said if isinstance(said, str) else NO_MATCH)


class ExpanderTable:
    """The capabilities of a mapping's expanders by name, each asked once, when first needed.

    Not before: an expander is taken from the registry when it is first used,
    as the loader takes it (so a plugin's that cannot be imported fails where
    it is used, as it did), and never asked again.
    """

    def __init__(self, expanders: Mapping[str, Any]) -> None:
        self._expanders = expanders
        self._found: dict[str, ExpanderCapabilities] = {}

    def __repr__(self) -> str:
        return f"ExpanderTable({sorted(self._found)!r})"

    def of(self, name: str | None) -> ExpanderCapabilities:
        """The capabilities of the expander called *name* (none: no hook, the default ``no_match``)."""
        found = self._found.get(name or "")
        if found is None:
            found = self._found[name or ""] = ExpanderCapabilities.of(self._expanders.get(name) if name else None)
        return found
