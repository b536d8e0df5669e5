"""The command line's logging: structlog configured globally, which only the CLI may do."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator, MutableMapping
from typing import IO, TYPE_CHECKING, Any, BinaryIO, TextIO, cast

import structlog

from ..events import LEVELS
from ..exceptions import ConfigError
from ..file_kinds import not_openable
from ..sources.redact import mask
from . import progress
from .escapes import EscapeControls
from .progress import on_terminal

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["ForReading", "ProcessFields", "UTCTimeStamper", "cli_logging", "configure_cli_logging", "json_lines_logger"]


class UTCTimeStamper:
    """Adds ``timestamp`` as ``TimeStamper(fmt="iso", utc=True)`` writes it (``2026-12-01T08:11:45.123456Z``).

    The date and time of day are formatted once a second, not once a line: a
    render logs a line per source, and formatting a datetime was a third of a
    line's cost. Integer nanoseconds, so no rounding can carry into the seconds.
    """

    __slots__ = ("_second",)

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        second, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
        cached = self._second  # one tuple, so a thread never pairs one second with another's text
        if cached[0] != second:
            cached = self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        event_dict["timestamp"] = f"{cached[1]}.{nanoseconds // 1000:06d}Z"
        return event_dict


_pid = [os.getpid()]  # read by every line; a forked worker is another process, with its own
os.register_at_fork(after_in_child=lambda: _pid.__setitem__(0, os.getpid()))


class ProcessFields:
    """Adds ``host`` and ``pid``: so ``memconfig audit`` tells apart the renders of many hosts and runs in one log."""

    __slots__ = ("host",)

    def __init__(self) -> None:
        self.host = socket.gethostname()

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event_dict["host"] = self.host
        event_dict["pid"] = _pid[0]
        return event_dict


class JSONLinesFile:
    """Where the CLI's JSON lines go: each line (its newline included) one write, whole.

    One ``write`` call per line keeps lines whole across threads (a buffered
    file writes each call under its own lock), so no lock of ours is taken. A
    buffered file is flushed after each line; an unbuffered one (the CLI opens
    its log file so) is written once, straight to the file, with no flush to
    make (a short write, which a regular file does not make, writes the rest).
    """

    __slots__ = ("msg",)

    def __init__(self, file: BinaryIO) -> None:
        write = file.write
        if isinstance(file, io.RawIOBase):

            def msg(line: bytes) -> None:
                written = write(line)
                while written and written < len(line):  # 0 or None (nothing taken): given up, never a spin
                    line = line[written:]
                    written = write(line)

        else:
            flush = file.flush

            def msg(line: bytes) -> None:
                write(line)
                flush()

        self.msg = msg


def json_lines_logger(minimum: int) -> type[structlog.BoundLoggerBase]:
    """A structlog bound-logger class that writes each event as one orjson line, dropping those below *minimum*.

    The same lines as the chain ``add_log_level`` → :class:`UTCTimeStamper` →
    :class:`ProcessFields` → ``JSONRenderer(orjson.dumps)`` (keys in the same order), made in one step:
    the CLI's chain is fixed, and running it as a loop of processors was half
    of each line's cost, on a path that logs a line per source and per render.
    """
    import orjson  # the CLI's dependency; the library itself renders nothing

    stamp = UTCTimeStamper()
    host = ProcessFields().host
    pid = _pid
    dumps = orjson.dumps
    newline = orjson.OPT_APPEND_NEWLINE

    def method(name: str, number: int) -> Any:
        if number < minimum:

            def dropped(self: Any, event: Any = None, *args: Any, **kw: Any) -> None:
                return None

            return dropped

        def emit(self: Any, event: Any = None, *args: Any, **kw: Any) -> None:
            event_dict = {**self._context, **kw} if self._context else kw  # kw: this call's own dict
            event_dict["event"] = event % args if args else event
            event_dict["level"] = name
            stamp(None, name, event_dict)
            event_dict["host"] = host  # ProcessFields, in line
            event_dict["pid"] = pid[0]
            self._logger.msg(dumps(event_dict, default=str, option=newline))

        return emit

    names = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
    methods = {name: method(name, number) for name, number in names.items()}
    methods |= {"warn": methods["warning"], "critical": method("critical", logging.CRITICAL)}
    return type("JSONLinesLogger", (structlog.BoundLoggerBase,), methods)


def configure_cli_logging(
    format: str = "json", level: str = "info", stream: IO[Any] | None = None, *, terminal: bool = False
) -> None:
    """Configure structlog globally for the command line: JSON lines or console text to *stream*.

    Given a binary stream, JSON lines are rendered by orjson and written as
    bytes (structlog's ``BytesLogger``), by :func:`json_lines_logger`: a render
    logs a line per source. Console text needs a text stream. *terminal*: the
    stream is a terminal's, so console lines are made for reading there
    (:class:`ForReading`, the time of day), in colour unless ``NO_COLOR`` is set.
    """
    stream = stream if stream is not None else sys.stderr
    minimum = LEVELS.get(level, logging.INFO)
    if format == "json" and not isinstance(stream, io.TextIOBase):
        lines = JSONLinesFile(cast(BinaryIO, stream))
        structlog.configure(
            processors=[],  # the logger class renders the line itself
            wrapper_class=json_lines_logger(minimum),
            logger_factory=lambda *args: lines,
            cache_logger_on_first_use=False,
        )
        return
    chain: list[Any]
    if format == "json":
        chain = [UTCTimeStamper(), ProcessFields(), structlog.processors.JSONRenderer()]
    elif terminal:
        colors = not os.environ.get("NO_COLOR")  # https://no-color.org: set and not empty
        chain = [structlog.processors.TimeStamper(fmt="%H:%M:%SZ", utc=True), ForReading(), *_console(colors)]
    else:
        chain = [UTCTimeStamper(), ProcessFields(), *_console(False)]
    structlog.configure(
        processors=[structlog.processors.add_log_level, *chain],
        wrapper_class=structlog.make_filtering_bound_logger(minimum),
        logger_factory=structlog.WriteLoggerFactory(file=cast(TextIO, stream)),
        cache_logger_on_first_use=False,
    )


def _console(colors: bool) -> list[Any]:
    """The console form's last two steps: a terminal's escapes removed from the values (no ESC, BEL, newline), then
    structlog's ``ConsoleRenderer``, whose own colours (*colors*) come after."""
    return [EscapeControls(), structlog.dev.ConsoleRenderer(colors=colors)]


class ForReading:
    """The console log on a terminal keeps what a person reads there.

    Left out: what is the same on every line of a run (``host``, ``pid``,
    ``render_id``), fields without a value, and a ``name`` that is the
    source's key again; a hash is shown by its first
    :data:`HASH_SHOWN` characters and a list or a mapping by its length (the
    ``prompt_manifest``'s sources: each has a line of its own). A log file, or
    ``--log-format json``, keeps every field whole.
    """

    __slots__ = ()
    LEFT_OUT = frozenset({"host", "pid", "render_id"})
    HASH_SHOWN = 12

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        for key, value in list(event_dict.items()):
            if value is None or key in self.LEFT_OUT or (key == "name" and value == event_dict.get("source")):
                del event_dict[key]
            elif isinstance(value, list | tuple | dict):
                event_dict[key] = f"[{len(value)}]"
            elif key.endswith("sha256") and isinstance(value, str):
                event_dict[key] = value[: self.HASH_SHOWN]
        return event_dict


@contextlib.contextmanager
def cli_logging(config: Config, args: argparse.Namespace) -> Iterator[None]:
    """Configure structlog for this run: CLI flags over the config's ``logging`` section."""
    options = config.logging
    target = args.log_file or (str(config.resolve_path(options.file)) if options.file else None)
    terminal = target is None and on_terminal(sys.stderr)
    log_format = args.log_format or options.format
    if log_format == "auto":  # console text for a person at a terminal, JSON lines for a program or a file
        log_format = "console" if terminal else "json"
    binary = log_format == "json"  # JSON lines are written as bytes; console text as text
    stream: IO[Any]
    if target is None:
        sys.stderr.flush()
        stream = sys.stderr.buffer if binary else sys.stderr
    else:
        refused = not_openable(target, writing=True, handed=bool(args.log_file))
        if refused is not None:
            named = "--log-file" if args.log_file else "logging.file"
            raise ConfigError(f"{named}: {mask(str(target), config.secret_values)} {refused}")
        try:
            # JSON lines unbuffered: each one a single write to the file, no flush after it
            stream = open(target, "ab", buffering=0) if binary else open(target, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            shown = mask(str(target), config.secret_values)
            raise ConfigError(f"cannot open log file {shown}: {exc.strerror or exc}") from None
    try:
        # On a terminal, lines logged while a progress bar is up are written above it, whole.
        log_to = progress.log_stream(stream, args) if target is None else stream
        configure_cli_logging(log_format, args.log_level or options.level, log_to, terminal=terminal)
        yield
    finally:
        if stream not in (sys.stderr, sys.stderr.buffer):
            stream.close()
