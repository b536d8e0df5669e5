"""The command line's logging: structlog configured globally, which only the CLI may do."""

from __future__ import annotations

import io
import logging
import sys
from typing import IO, Any, BinaryIO, TextIO, cast

import structlog

from ..events import LEVELS

__all__ = ["configure_cli_logging"]


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
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS.get(level, logging.INFO)),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
