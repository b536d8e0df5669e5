"""``memconfig render``: the system prompt with the memory block added, on stdout, exactly."""

from __future__ import annotations

import argparse
import io
import sys

from ..config import MAX_CONFIG_BYTES, Config
from ..exceptions import ConfigError
from ..pipeline import Pipeline
from .logs import cli_logging

__all__ = ["add_arguments", "run"]

HELP = "print the system prompt with the memory block added"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    system = parser.add_mutually_exclusive_group()
    system.add_argument("--system", metavar="TEXT", help="the existing system prompt to add the block to")
    system.add_argument(
        "--system-file", metavar="FILE", help="read the existing system prompt from FILE ('-': standard input)"
    )


def run(config: Config, args: argparse.Namespace) -> int:
    with cli_logging(config, args):
        pipeline = Pipeline.from_config(config)
        system = _read_system(args)
        _write_all(pipeline.render(system=system))
    return 0


def _write_all(text: str) -> None:
    """Write *text* to stdout, all of it or a ``BrokenPipeError``.

    ``sys.stdout.write`` can drop the rest of a large text unseen: when the
    reader of a pipe goes away mid-write, the buffered layer reports a short
    write that the text layer ignores, and the command would exit 0.
    """
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # replaced by a text-only stream (an application's or a test's)
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    data = memoryview(text.encode("utf-8"))
    while data:
        written = out.write(data)
        if written is None:  # a non-blocking stream that took nothing: the rest would be lost
            raise BlockingIOError("standard output would block")
        data = data[written:]
    out.flush()


def _read_system(args: argparse.Namespace) -> str | None:
    if args.system_file is None:
        return args.system  # type: ignore[no-any-return]
    try:
        if args.system_file == "-":
            stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")  # newlines read as a file's are
            try:
                text = stdin.read(MAX_CONFIG_BYTES + 1)
            finally:
                stdin.detach()
        else:
            with open(args.system_file, encoding="utf-8") as file:
                text = file.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            raise ValueError(
                f"larger than the limit of {MAX_CONFIG_BYTES} characters (memconfig.config.MAX_CONFIG_BYTES)"
            )
        return text
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        shown = "<stdin>" if args.system_file == "-" else args.system_file
        raise ConfigError(f"--system-file {shown}: {reason}") from None
