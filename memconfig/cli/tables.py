"""Tables on stdout: rows as data, drawn by rich on a terminal, plain aligned text anywhere else.

Plain text is what scripts read (``memconfig sources | awk``): columns
separated by two spaces, each padded to its widest cell but the last, no
trailing blanks. On a terminal with ``rich`` installed (``memconfig[terminal]``)
the same rows become a rich table, fitted to the terminal's width; memconfig
imports rich only then. A heading and a number are never broken: the widest
columns fold first (keeping a word of up to :data:`WHOLE_WORD` characters, a
date say, whole where the width allows), and a table whose headings alone
are wider than the terminal is drawn as wide as they need, its lines left to
the terminal to wrap. Cells are shown
as text, never as rich markup, and control characters are escaped
(:func:`~memconfig.safe_text.escaped`), so a source's name cannot restyle
or take over the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import IO, Any

from ..safe_text import escaped
from .progress import on_terminal

__all__ = ["WHOLE_WORD", "plain_table", "print_table"]

#: On a terminal, a word of a cell up to this long is never folded (``2026-12-01``); a longer one may be.
WHOLE_WORD = 10


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
    return "" if cell is None else escaped(str(cell))


def _column_widths(
    columns: Sequence[str], rows: list[list[str]], right: Collection[str], room: int, length: Callable[[str], int]
) -> list[int]:
    """Each column's width (its cells' characters) in *room*: the widest columns give way first, none
    narrower than its heading or a number of it; a word of up to :data:`WHOLE_WORD` (a date, say) kept
    whole if that fits. More than *room* only when the headings themselves need it."""
    natural = [max([length(name), *(length(row[i]) for row in rows)]) for i, name in enumerate(columns)]
    if sum(natural) <= room:
        return natural
    least = tight = [natural[i] if name in right else length(name) for i, name in enumerate(columns)]
    readable = [
        max(tight[i], min(WHOLE_WORD, max((length(word) for row in rows for word in row[i].split()), default=0)))
        for i in range(len(columns))
    ]
    if sum(readable) <= room:
        least = readable
    low, high = 0, max(natural)  # the widest a column may be: the largest that fits
    while low < high:
        cap = (low + high + 1) // 2
        if sum(max(m, min(n, cap)) for n, m in zip(natural, least, strict=True)) <= room:
            low = cap
        else:
            high = cap - 1
    widths = [max(m, min(n, low)) for n, m in zip(natural, least, strict=True)]
    spare = room - sum(widths)
    for i, n in enumerate(natural):  # what is left, to the first columns cut (the first is the row's key)
        if spare <= 0:
            break
        given = min(spare, n - widths[i])
        widths[i] += given
        spare -= given
    return widths


def _rich_table(
    columns: Sequence[str], rows: list[list[str]], right: Collection[str], title: str | None, out: IO[Any]
) -> bool:
    """Draw the table with rich; ``False`` when rich is not installed (the caller prints it plain)."""
    try:
        from rich import box
        from rich.cells import cell_len
        from rich.console import Console
        from rich.measure import Measurement
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        return False

    def table(widths: Sequence[int], rows: Sequence[Sequence[str]] = ()) -> Table:
        drawn = Table(
            title=title,
            box=box.SIMPLE_HEAD,
            header_style="bold",
            title_justify="left",
            collapse_padding=True,
            pad_edge=False,
        )
        for name, width in zip(columns, widths, strict=True):
            drawn.add_column(
                Text(name, no_wrap=True), justify="right" if name in right else "left", overflow="fold", width=width
            )
        for row in rows:
            drawn.add_row(*(Text(cell) for cell in row))  # Text: no markup (control characters escaped already)
        return drawn

    console = Console(file=out)
    # what the table adds to its cells (padding, rules), measured on one of one-character columns
    extra = Measurement.get(console, console.options, table([1] * len(columns))).maximum - len(columns)
    widths = _column_widths(columns, rows, right, console.width - extra, cell_len)
    if sum(widths) + extra > console.width:
        console.width = sum(widths) + extra  # the headings need more: the terminal wraps the lines, no heading is cut
    console.print(table(widths, rows))
    return True
