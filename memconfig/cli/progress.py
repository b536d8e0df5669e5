"""Progress on a terminal: a bar on stderr for work that lasts longer than about half a second.

Nothing is shown, and ``rich`` is not imported for it, unless stderr is a
terminal, ``--quiet`` is not given and the work is still going after
:data:`DELAY` seconds: a fast render, a pipe or a file see no byte of it, and
start-up pays nothing. Without ``rich`` (``memconfig[terminal]``), nothing is
shown either. (That is memconfig's own imports: structlog imports
``rich.console`` and ``rich.traceback`` itself whenever rich is installed, in
``structlog/dev.py``, so they are in the start-up floor anyway.)

Commands use it in two ways:

* :func:`progress` — ``with progress(len(files), "reading logs", quiet=args.quiet) as bar:``
  then ``bar.advance()`` per item (``bar.expect(n)`` when more turn up);
* :func:`load_progress` — around a load pass: the loader tells it of each
  source it reads (:mod:`memconfig.load.watch`), so the library needs no
  notion of terminals.

The load log may go to the same terminal. Its lines must stay whole, so
:func:`log_stream` wraps the log's stream when it is the terminal's stderr: a
line logged while the bar is up is written *above* the bar by rich's console
(one ``Console.out`` per line, never wrapped or cropped), and straight through
otherwise. When stderr is not a terminal the stream is not wrapped at all, and
the log is exactly the JSON lines it always was.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

from ..safe_text import escaped

__all__ = ["DELAY", "Progress", "load_progress", "log_stream", "on_terminal", "progress"]

#: Seconds of work before a bar appears: a faster render shows none.
DELAY = 0.5

_shown: Any = None  # the rich display on the terminal now (one at a time), for log_stream
_shown_lock = threading.Lock()


def on_terminal(stream: IO[Any] | None) -> bool:
    """Whether *stream* is a terminal (a replaced stream without a file descriptor is not)."""
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False


class Progress:
    """A count of work done out of a total, shown as a bar on the terminal once :data:`DELAY` has passed.

    Thread-safe: the loader calls :meth:`finished` from fsspec's I/O thread.
    Also a :class:`~memconfig.load.watch.ReadWatcher`.
    """

    def __init__(self, total: int | None, label: str, *, shown: bool) -> None:
        self.total = total or 0
        self.done = 0
        self.label = escaped(label)
        self._lock = threading.Lock()
        self._closed = not shown
        self._display: Any = None
        self._task: Any = None
        self._timer: threading.Timer | None = None
        if shown:
            self._timer = threading.Timer(DELAY, self._show)
            self._timer.daemon = True
            self._timer.start()

    def advance(self, count: int = 1) -> None:
        """*count* more items are done."""
        with self._lock:
            self.done += count
            self._update()

    def expect(self, count: int) -> None:
        """*count* more items are to be done than the total said."""
        with self._lock:
            self.total += count
            self._update()

    def describe(self, label: str) -> None:
        """Say what is being done now (a long log's lines read so far, say)."""
        with self._lock:
            self.label = label = escaped(label)
            if self._display is not None:
                self._display.update(self._task, description=label)

    def finished(self, name: str) -> None:
        """:class:`~memconfig.load.watch.ReadWatcher`: a source was read."""
        self.advance()

    def close(self) -> None:
        """Take the bar off the terminal (it leaves no line behind), or make sure it never appears."""
        timer = self._timer
        if timer is not None:
            timer.cancel()
        with self._lock:
            self._closed = True
            self._hide()
        if timer is not None and timer is not threading.current_thread():
            timer.join()  # it may be importing rich: let it finish and see that it is closed

    # -- the display (called with the lock held, except _show) -------------------

    def _show(self) -> None:
        """The timer's thread: the work outlasted :data:`DELAY`, so put a bar on the terminal."""
        global _shown
        if self._closed:
            return
        try:  # imported here, not under the lock: importing takes a while, and the loader must not wait
            import rich.progress  # noqa: F401
        except ImportError:  # memconfig[terminal] not installed: no bar
            return
        with self._lock, _shown_lock:
            if self._closed or _shown is not None:  # over meanwhile, or another bar is up
                return
            display = _make_display()
            self._task = display.add_task(self.label, total=self.total or None, completed=self.done)
            display.start()
            self._display = _shown = display

    def _update(self) -> None:
        display = self._display
        if display is None:
            return
        if self.total and self.done >= self.total:  # all done: off the terminal before the log and the output
            self._hide()
            return
        display.update(self._task, total=self.total or None, completed=self.done)

    def _hide(self) -> None:
        global _shown
        display, self._display = self._display, None
        if display is None:
            return
        with _shown_lock:
            _shown = None
        display.update(self._task, total=self.total or None, completed=self.done)
        display.stop()


def _make_display() -> Any:
    """rich's progress display on stderr: spinner, label, bar, done/total, time elapsed."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    return RichProgress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr, stderr=True),
        transient=True,  # erased when done: what stays on the terminal is the log and the output
        redirect_stdout=False,  # the prompt on stdout is written untouched
        redirect_stderr=False,
    )


@contextlib.contextmanager
def progress(total: int | None, label: str, *, quiet: bool = False) -> Iterator[Progress]:
    """A :class:`Progress` for the work in this block; shown only on a terminal, unless *quiet*.

    *total* ``None`` or 0: not known yet (an indeterminate bar until :meth:`Progress.expect`).
    """
    bar = Progress(total, label, shown=not quiet and on_terminal(sys.stderr))
    try:
        yield bar
    finally:
        bar.close()


@contextlib.contextmanager
def load_progress(args: argparse.Namespace, label: str = "reading sources") -> Iterator[Progress]:
    """A bar for the load passes run in this block, fed by the loader as each source is read."""
    from ..load.watch import watching  # here: the audit's bar needs no loader (nor structlog, which it imports)

    with progress(0, label, quiet=getattr(args, "quiet", False)) as bar, watching(bar):
        yield bar


class _AboveDisplay:
    """The load log's stream on a terminal: while a bar is up, each line goes above it, whole."""

    __slots__ = ("__weakref__", "_stream")  # structlog keeps a lock per stream, by weak reference

    def __init__(self, stream: IO[Any]) -> None:
        self._stream = stream

    def write(self, data: bytes | str) -> int:
        display = _shown
        if display is None:
            return self._stream.write(data)
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        display.console.out(text, end="", highlight=False)
        return len(data)

    def flush(self) -> None:
        self._stream.flush()


def log_stream(stream: IO[Any], args: argparse.Namespace) -> IO[Any]:
    """*stream* (stderr, or its buffer) as the load log should write to it while a bar may be shown.

    Unchanged unless stderr is a terminal and ``--quiet`` is not given.
    """
    if getattr(args, "quiet", False) or not on_terminal(sys.stderr):
        return stream
    return _AboveDisplay(stream)  # type: ignore[return-value]
