"""Tables on stdout: rows as data, drawn by rich on a terminal, plain aligned text anywhere else.

Plain text is what scripts read (``memconfig sources | awk``): columns
separated by two spaces, each padded to its widest cell but the last, no
trailing blanks, every cell whole. On a terminal the table is fitted to its
width first (:func:`fit_table`, as :class:`~memconfig.columns.Column` says
of each column): times compact, paths shortened in the middle, the file
name kept, other text cut at its end with ``…``, numbers and ids never cut,
and the columns that matter least left out when even that does not fit; no
cell is wrapped onto a second line. With ``rich`` installed
(``memconfig[terminal]``) the fitted rows are drawn as a rich table (memconfig
imports rich only then), else as the plain text. Cells are shown as text,
never as rich markup, and control characters are escaped
(:func:`~memconfig.safe_text.escaped`), so a source's name cannot restyle
or take over the terminal.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, date, datetime
from typing import IO, Any

from ..columns import Column
from ..safe_text import escaped
from .progress import on_terminal

__all__ = [
    "WHOLE_WORD",
    "compact_time",
    "fit_table",
    "plain_table",
    "print_table",
    "shorten_middle",
    "terminal_width",
    "wrap",
]

#: On a terminal, a text column is not cut narrower than this (``not_found…``), unless its heading is wider.
WHOLE_WORD = 10
#: A path column is not cut narrower than this, unless its heading is wider (or no cell is as wide).
PATH_LEAST = 16
#: ... nor narrower than its longest file name (and ``…/``), up to this many characters.
PATH_MOST = 40
#: What a terminal is taken to be without a size.
DEFAULT_WIDTH = 80
_ELLIPSIS = "…"
_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.\d+)?Z")

Length = Callable[[str], int]


def print_table(
    columns: Sequence[Column | str],
    rows: Iterable[Sequence[object]],
    *,
    right: Collection[str] = (),
    title: str | None = None,
    file: IO[str] | None = None,
) -> None:
    """Print *rows* under *columns* to *file* (stdout); *right*: headings of columns aligned right (numbers).

    A column given as a heading alone is text (numbers if in *right*). A cell is
    shown as ``str(cell)``; ``None`` as nothing. On a terminal the table is
    fitted to its width (:func:`fit_table`); anywhere else every cell is whole.
    """
    out = file if file is not None else sys.stdout
    described = [c if isinstance(c, Column) else Column(c, numeric=c in right) for c in columns]
    cells = [[_text(cell) for cell in row] for row in rows]
    if on_terminal(out):
        if _rich_table(described, cells, title, out):
            return
        width = terminal_width(out)
        described, cells, _ = fit_table(described, cells, width, lambda n: 2 * (n - 1), len)
        title = title and "\n".join(wrap(title, width))
    if title:
        out.write(f"{title}\n")
    out.write(plain_table([c.name for c in described], cells, right={c.name for c in described if c.numeric}))


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


def terminal_width(out: IO[Any]) -> int:
    """The width of the terminal *out* is on: ``COLUMNS`` if set (as rich and the shell read it), else its size."""
    with_env = os.environ.get("COLUMNS", "")
    if with_env.isdigit() and int(with_env) > 0:
        return int(with_env)
    try:
        return os.get_terminal_size(out.fileno()).columns or DEFAULT_WIDTH
    except (AttributeError, OSError, ValueError):
        return DEFAULT_WIDTH


def fit_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    overhead: Callable[[int], int],
    length: Length = len,
) -> tuple[list[Column], list[list[str]], list[int]]:
    """The columns kept, their cells and their widths for a terminal *width* wide.

    *overhead*: what the drawing adds to the cells of *n* columns (gaps, edges).
    Times are written compactly first; then, while the columns cannot all be
    shown at their least (a number, time or id whole; a path as ``…/`` and its
    file name; text :data:`WHOLE_WORD` wide; no heading cut), the one with the
    highest :attr:`~memconfig.columns.Column.drop` is left out. The room left is
    shared as the widest columns give way first. Wider than *width* only when
    the headings of the columns never left out need it.
    """
    today = datetime.now(UTC).date()
    cells = [
        [compact_time(cell, today) if c.kind == "time" else cell for c, cell in zip(columns, row, strict=True)]
        for row in rows
    ]
    kept = list(range(len(columns)))
    natural = [max([length(c.name), *(length(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    least = [_least(c, [row[i] for row in cells], natural[i], length) for i, c in enumerate(columns)]
    while sum(least[i] for i in kept) > width - overhead(len(kept)):
        droppable = [i for i in kept if columns[i].drop > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    widths = _shared([natural[i] for i in kept], [least[i] for i in kept], width - overhead(len(kept)))
    fitted = [[_cut(columns[i], row[i], w, length) for i, w in zip(kept, widths, strict=True)] for row in cells]
    return [columns[i] for i in kept], fitted, widths


def compact_time(text: str, today: date) -> str:
    """An ISO 8601 UTC time as a terminal shows it: ``14:03:07Z`` on *today*, ``12-06 14:03Z`` this year,
    ``2025-12-06`` before; any other text as it is."""
    match = _TIME.fullmatch(text)
    if match is None:
        return text
    year, month, day, hour, minute, second = match.groups()
    if (int(year), int(month), int(day)) == (today.year, today.month, today.day):
        return f"{hour}:{minute}:{second}Z"
    if int(year) == today.year:
        return f"{month}-{day} {hour}:{minute}Z"
    return f"{year}-{month}-{day}"


def shorten_middle(text: str, width: int, length: Length = len) -> str:
    """*text* in at most *width* characters, cut in the middle: ``example/…/AGENTS.md``, the file name kept.

    The part after the last ``/`` (a file name, a label's closing bracket) is
    kept whole when it fits, and the part before it ends at a folder's end
    when that keeps at least a third of it; else the end is kept, as the part
    that tells one file from another.
    """
    if length(text) <= width:
        return text
    if width <= 1:
        return _ELLIPSIS[:width]
    slash = text.rfind("/")
    tail = text[slash:] if slash > 0 else ""
    if tail and length(tail) + 2 <= width:
        room = width - length(tail) - 1
        head = text[:room]
        folder_end = head.rfind("/") + 1
        if folder_end >= max(1, room // 3):
            head = head[:folder_end]
        return f"{head}{_ELLIPSIS}{tail}"
    if slash > 0:
        return _ELLIPSIS + text[len(text) - (width - 1) :]
    half = (width - 1) // 2
    return f"{text[:half]}{_ELLIPSIS}{text[len(text) - (width - 1 - half) :]}"


def _least(column: Column, cells: Sequence[str], natural: int, length: Length) -> int:
    """The narrowest *column* is drawn before it is left out instead."""
    if column.numeric or column.kind in ("time", "id"):
        return natural
    heading = length(column.name)
    if column.kind == "path":
        name = max((length(cell[cell.rfind("/") :]) + 1 for cell in cells if "/" in cell), default=0)
        return min(natural, max(heading, PATH_LEAST, min(name, PATH_MOST)))
    return min(natural, max(heading, WHOLE_WORD))


def _shared(natural: Sequence[int], least: Sequence[int], room: int) -> list[int]:
    """Each column's width in *room*: the widest give way first, none narrower than its *least*."""
    if sum(natural) <= room:
        return list(natural)
    low, high = 0, max(natural, default=0)  # the widest a column may be: the largest that fits
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


def _cut(column: Column, cell: str, width: int, length: Length) -> str:
    """*cell* in *width*: a path shortened in the middle, text cut at its end; a number, time or id whole."""
    if length(cell) <= width or column.numeric or column.kind in ("time", "id"):
        return cell
    if column.kind == "path":
        return shorten_middle(cell, width, length)
    return cell[: width - 1] + _ELLIPSIS


def wrap(text: str, width: int) -> list[str]:
    """*text* as lines at most *width* wide (words kept whole where they fit), the later ones indented."""
    import textwrap  # only on a terminal

    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False) or [text]


def _text(cell: object) -> str:
    return "" if cell is None else escaped(str(cell))


def _rich_table(columns: Sequence[Column], rows: list[list[str]], title: str | None, out: IO[Any]) -> bool:
    """Draw the table with rich, fitted to the terminal; ``False`` when rich is not installed (drawn plain)."""
    try:
        from rich import box
        from rich.console import Console
        from rich.measure import Measurement
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        return False
    from rich.cells import cell_len

    def table(columns: Sequence[Column], widths: Sequence[int], rows: Sequence[Sequence[str]] = ()) -> Table:
        drawn = Table(
            title=title,
            box=box.SIMPLE_HEAD,
            header_style="bold",
            title_justify="left",
            collapse_padding=True,
            pad_edge=False,
        )
        for column, width in zip(columns, widths, strict=True):
            drawn.add_column(
                Text(column.name, no_wrap=True),
                justify="right" if column.numeric else "left",
                no_wrap=True,
                overflow="ellipsis",
                width=width,
            )
        for row in rows:
            drawn.add_row(*(Text(cell) for cell in row))  # Text: no markup (control characters escaped already)
        return drawn

    console = Console(file=out, width=terminal_width(out))

    def overhead(n: int) -> int:
        """What the table adds to the cells of *n* columns (padding, rules), measured on one-character columns."""
        ones = [Column("x")] * n
        return Measurement.get(console, console.options, table(ones, [1] * n)).maximum - n

    kept, cells, widths = fit_table(columns, rows, console.width, overhead, cell_len)
    console.width = max(console.width, sum(widths) + overhead(len(kept)))  # headings never cut: the terminal wraps
    console.print(table(kept, widths, cells))
    return True
