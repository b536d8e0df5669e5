"""The ``memconfig`` command: render, validate, sources.

Exit codes: 0 ok, 1 a required source failed, 2 bad config or usage. The
prompt (or table) goes to stdout, the load log to stderr or ``logging.file``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any

from .. import __version__
from ..config import Config, load_config
from ..exceptions import ConfigError, MemconfigError, SourceError
from ..failures import Failure, SkipReason
from ..pipeline import Pipeline
from .logs import configure_cli_logging

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memconfig",
        description="Build an agent's memory prompt from the sources a YAML config declares.",
    )
    parser.add_argument("--version", action="version", version=f"memconfig {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.add_argument("-c", "--config", required=True, metavar="FILE", help="the YAML config file")
        return sub

    render = command("render", "print the system prompt with the memory block added")
    system = render.add_mutually_exclusive_group()
    system.add_argument("--system", metavar="TEXT", help="the existing system prompt to add the block to")
    system.add_argument("--system-file", metavar="FILE", help="read the existing system prompt from FILE")
    for sub in (render, command("sources", "load every source and print a table of what happened")):
        sub.add_argument("--log-file", metavar="FILE", help="write the load log to FILE (default: stderr)")
        sub.add_argument("--log-format", choices=("json", "console"), help="the load log's format")
        sub.add_argument("--log-level", choices=("debug", "info", "warning", "error"), help="the lowest level logged")
    command("validate", "check the config; list every problem")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    try:
        config = load_config(args.config)
        if args.command == "validate":
            print(f"{args.config}: ok ({len(config.sources)} sources)")
            return 0
        with _logging(config, args):
            pipeline = Pipeline.from_config(config)
            if args.command == "sources":
                failed = _print_sources(pipeline)
                if failed:
                    raise SourceError(failed)
                return 0
            system = _read_system(args)
            sys.stdout.write(pipeline.render(system=system))
            sys.stdout.flush()
        return 0
    except MemconfigError as exc:
        print(f"memconfig: error: {exc.format_message()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``memconfig render ... | head``): stop quietly, like other tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _read_system(args: argparse.Namespace) -> str | None:
    if args.system_file is None:
        return args.system  # type: ignore[no-any-return]
    try:
        with open(args.system_file, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"--system-file {args.system_file}: {reason}") from None


@contextlib.contextmanager
def _logging(config: Config, args: argparse.Namespace) -> Iterator[None]:
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


def _print_sources(pipeline: Pipeline) -> list[Failure]:
    """Print the table; return the sources that would fail a render."""
    rows = [("NAME", "URL", "STATUS", "BYTES", "REASON")]
    failed = []
    for result in pipeline.load():
        if not result.ok and (result.source.required or result.fatal):
            failed.append(Failure(result.source.key, result.reason or SkipReason.ERROR, result.detail))
        reason = f"{result.reason}: {result.detail}" if result.reason else ""
        rows.append((result.source.name, result.source.display_url, result.status, str(result.bytes), reason))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[4]).rstrip())
    return failed


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
