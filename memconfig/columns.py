"""A table's columns as data: a heading, and what a renderer may do to its cells on a narrow screen.

The audit builds its tables with them (:mod:`memconfig.audit.output`), ``memconfig sources`` its own;
the CLI lays them out (:mod:`memconfig.cli.tables`). Off a terminal every cell is printed whole. On a
terminal the table is fitted to its width: a ``path`` cell is shortened in the middle (its file name
kept), a ``time`` cell written compactly, a ``text`` cell cut at its end; a number or an ``id`` is never
cut; and when even that is too wide, the columns with the highest ``drop`` are left out first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Column", "ColumnKind"]

ColumnKind = Literal["text", "path", "time", "id"]


@dataclass(frozen=True, slots=True)
class Column:
    """A column's heading, whether its cells are numbers (aligned right), their kind, and when it gives way."""

    name: str
    numeric: bool = False
    kind: ColumnKind = "text"
    """``path``: a file or URL (or a label ending in one), shortened in the middle; ``time``: an ISO 8601 UTC
    time (``2026-12-01 08:11:45Z``); ``id``: never cut (a render id, a short hash); ``text``: cut at its end."""
    drop: int = 0
    """On a terminal too narrow for every column, the highest is left out first; 0: never left out."""
