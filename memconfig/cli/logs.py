"""The command line's logging: structlog configured globally, which only the CLI may do."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import time
from collections.abc import Iterator, MutableMapping
from typing import IO, TYPE_CHECKING, Any, BinaryIO, TextIO, cast

import structlog

from ..events import LEVELS
from ..exceptions import ConfigError

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["UTCTimeStamper", "cli_logging", "configure_cli_logging"]


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


def configure_cli_logging(format: str = "json", level: str = "info", stream: IO[Any] | None = None) -> None:
    """Configure structlog globally for the command line: JSON lines or console text to *stream*.

    Given a binary stream, JSON lines are rendered by orjson and written as
    bytes: the configuration structlog's performance notes recommend, since a
    render logs a line per source. Console text needs a text stream.
    """
    import orjson  # the CLI's dependency; the library itself renders nothing

    stream = stream if stream is not None else sys.stderr
    renderer: Any
    factory: Any
    if format == "json" and not isinstance(stream, io.TextIOBase):
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory(file=cast(BinaryIO, stream))
    else:
        renderer = (
            structlog.processors.JSONRenderer() if format == "json" else structlog.dev.ConsoleRenderer(colors=False)
        )
        factory = structlog.WriteLoggerFactory(file=cast(TextIO, stream))
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            UTCTimeStamper(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS.get(level, logging.INFO)),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )


@contextlib.contextmanager
def cli_logging(config: Config, args: argparse.Namespace) -> Iterator[None]:
    """Configure structlog for this run: CLI flags over the config's ``logging`` section."""
    options = config.logging
    target = args.log_file or (str(config.resolve_path(options.file)) if options.file else None)
    log_format = args.log_format or options.format
    binary = log_format == "json"  # JSON lines are written as bytes; console text as text
    stream: IO[Any]
    if target is None:
        sys.stderr.flush()
        stream = sys.stderr.buffer if binary else sys.stderr
    else:
        try:
            stream = open(target, "ab") if binary else open(target, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise ConfigError(f"cannot open log file {target}: {exc.strerror or exc}") from None
    try:
        configure_cli_logging(log_format, args.log_level or options.level, stream)
        yield
    finally:
        if stream not in (sys.stderr, sys.stderr.buffer):
            stream.close()
