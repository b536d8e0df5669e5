"""``memconfig render``: the system prompt with the memory block added, on stdout, exactly.

``--format`` picks a printable shape from the appender table: ``text`` prints
the prompt as it is; the others print JSON (keys in a fixed order, UTF-8, a
newline at the end): ``json`` the render itself, ``openai`` and ``anthropic``
the keyword arguments of that SDK's call.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Mapping
from typing import Any, Protocol, cast

from ..append import APPENDERS, appender_for
from ..config import MAX_CONFIG_BYTES, Config
from ..exceptions import ConfigError
from ..pipeline import Pipeline
from ..render import Render
from .logs import cli_logging
from .progress import load_progress

__all__ = ["add_arguments", "run"]

HELP = "print the system prompt with the memory block added"
TEXT = "text"


class _Printable(Protocol):
    def output(self, system: str | None, render: Render) -> str | Mapping[str, Any]: ...


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=[name for name, entry in APPENDERS.items() if entry.printable],
        help="what to print: the prompt (text), the render (json), or an SDK call's keyword arguments "
        "(default: the config's appender.format if it can be printed, else text)",
    )
    system = parser.add_mutually_exclusive_group()
    system.add_argument("--system", metavar="TEXT", help="the existing system prompt to add the block to")
    system.add_argument(
        "--system-file", metavar="FILE", help="read the existing system prompt from FILE ('-': standard input)"
    )


def run(config: Config, args: argparse.Namespace) -> int:
    name = _format(config, args)
    with cli_logging(config, args):
        pipeline = Pipeline.from_config(config)
        system = _read_system(args)
        printer = cast(_Printable, appender_for(name, config))
        with load_progress(args):  # a bar on the terminal, should the sources take a while
            render = pipeline.build()
        out = printer.output(system, render)
        _write_all(out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    return 0


def _format(config: Config, args: argparse.Namespace) -> str:
    """The shape to print: ``--format``, else the config's if it can be printed, else text."""
    name: str | None = args.format
    if name is None:
        entry = APPENDERS.get(config.appender.format)
        name = config.appender.format if entry is not None and entry.printable else TEXT
    if name == "json" and (args.system is not None or args.system_file is not None):
        raise ConfigError(
            "--format json prints the render (block, sha256, sources), which holds no system prompt: "
            "leave out --system / --system-file"
        )
    return name


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
