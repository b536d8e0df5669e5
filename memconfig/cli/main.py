"""The ``memconfig`` command: one module per command, this one parses and dispatches.

Exit codes: 0 ok, 1 a required source failed, 2 bad config or usage. The
prompt (or table) goes to stdout, the load log to stderr or ``logging.file``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..config import load_config
from ..exceptions import MemconfigError
from . import render, sources, validate

__all__ = ["main", "run"]

#: The commands, in the order ``--help`` lists them; each module has ``HELP`` and ``run(config, args)``.
COMMANDS = {"render": render, "validate": validate, "sources": sources}
_LOGGED = ("render", "sources")  # the commands that read sources, and so write a load log


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memconfig",
        description="Build an agent's memory prompt from the sources a YAML config declares.",
    )
    parser.add_argument("--version", action="version", version=f"memconfig {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
        sub = commands.add_parser(name, help=module.HELP, description=module.HELP)
        sub.add_argument("-c", "--config", required=True, metavar="FILE", help="the YAML config file")
        if hasattr(module, "add_arguments"):
            module.add_arguments(sub)
        if name in _LOGGED:
            sub.add_argument("--log-file", metavar="FILE", help="write the load log to FILE (default: stderr)")
            sub.add_argument("--log-format", choices=("json", "console"), help="the load log's format")
            sub.add_argument(
                "--log-level", choices=("debug", "info", "warning", "error"), help="the lowest level logged"
            )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    try:
        config = load_config(args.config)
        exit_code: int = COMMANDS[args.command].run(config, args)
        return exit_code
    except MemconfigError as exc:
        print(f"memconfig: error: {exc.format_message()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``memconfig render ... | head``): stop quietly, like other tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
