"""``memconfig render``: the system prompt with the memory block added, on stdout, exactly."""

from __future__ import annotations

import argparse
import sys

from ..config import Config
from ..exceptions import ConfigError
from ..pipeline import Pipeline
from .logs import cli_logging

__all__ = ["add_arguments", "run"]

HELP = "print the system prompt with the memory block added"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    system = parser.add_mutually_exclusive_group()
    system.add_argument("--system", metavar="TEXT", help="the existing system prompt to add the block to")
    system.add_argument("--system-file", metavar="FILE", help="read the existing system prompt from FILE")


def run(config: Config, args: argparse.Namespace) -> int:
    with cli_logging(config, args):
        pipeline = Pipeline.from_config(config)
        system = _read_system(args)
        sys.stdout.write(pipeline.render(system=system))
        sys.stdout.flush()
    return 0


def _read_system(args: argparse.Namespace) -> str | None:
    if args.system_file is None:
        return args.system  # type: ignore[no-any-return]
    try:
        with open(args.system_file, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"--system-file {args.system_file}: {reason}") from None
