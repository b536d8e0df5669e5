"""Tables on stdout: rows as data, drawn by rich on a terminal, plain aligned text anywhere else.

Plain text is what scripts read (``memconfig sources | awk``): columns
separated by two spaces, each padded to its widest cell but the last, no
trailing blanks. On a terminal with ``rich`` installed (``memconfig[terminal]``)
the same rows become a rich table, fitted to the terminal's width; rich is
imported only then. Cells are shown as text, never as rich markup, and
control characters are removed, so a source's name cannot restyle or
take over the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Sequence
from typing import IO, Any

from .progress import on_terminal

__all__ = ["plain_table", "print_table"]


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    right: Collection[str] = (),
    title: str | None = None,
    file: IO[str] | None = None,
) -> None:
    """Print *rows* under the headings *columns* to *file* (stdout); *right*: columns aligned right (numbers).

    A cell is shown as ``str(cell)``; ``None`` as nothing.
    """
    out = file if file is not None else sys.stdout
    cells = [[_text(cell) for cell in row] for row in rows]
    if on_terminal(out) and _rich_table(columns, cells, right, title, out):
        return
    if title:
        out.write(f"{title}\n")
    out.write(plain_table(columns, cells, right=right))


def plain_table(columns: Sequence[str], rows: Iterable[Sequence[str]], *, right: Collection[str] = ()) -> str:
    """The plain form: one line per row after the headings, each ending in a newline."""
    table = [list(columns), *([*row] for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    flush_right = [name in right for name in columns]
    lines = []
    for row in table:
        padded = [
            cell.rjust(width) if is_right else (cell.ljust(width) if i < len(row) - 1 else cell)
            for i, (cell, width, is_right) in enumerate(zip(row, widths, flush_right, strict=True))
        ]
        lines.append("  ".join(padded).rstrip() + "\n")
    return "".join(lines)


def _text(cell: object) -> str:
    return "" if cell is None else str(cell)


def _rich_table(
    columns: Sequence[str], rows: list[list[str]], right: Collection[str], title: str | None, out: IO[Any]
) -> bool:
    """Draw the table with rich; ``False`` when rich is not installed (the caller prints it plain)."""
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        return False
    table = Table(title=title, box=box.SIMPLE_HEAD, header_style="bold", title_justify="left")
    for name in columns:
        table.add_column(Text(name), justify="right" if name in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # Text: no markup; control characters are stripped
    Console(file=out).print(table)
    return True
