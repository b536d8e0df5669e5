"""The ``memconfig`` command: one module per command, this one parses and dispatches.

Exit codes: 0 ok, 1 a required source failed, 2 bad config or usage, 74 the
output could not be written (a full disk: ``EX_IOERR``), 141 the reader of
stdout went away (``| head``: 128 + SIGPIPE, as the shell reports a program
killed by it). The prompt (or table) goes to stdout, the
load log to stderr or ``logging.file``. ``-c -`` reads the config from
standard input.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..collector import paused
from ..exceptions import MemconfigError, OutputNotWritten, bounded
from ..safe_text import escaped
from ..suggest import did_you_mean

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["COMMANDS", "LOGGED", "main", "run"]


class _Commands(Mapping[str, ModuleType]):
    """The commands by name: each is the module ``memconfig.cli.<name>``, imported when first asked for.

    A run imports only its own command's module: ``render`` does not pay for
    the packages ``audit`` or ``explain`` bring (start-up, see benchmarks/startup.py).
    """

    def __init__(self, *names: str) -> None:
        self._names = names

    def __getitem__(self, name: str) -> ModuleType:
        if name not in self._names:
            raise KeyError(name)
        return importlib.import_module(f"{__package__}.{name}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


#: The commands, in the order ``--help`` lists them; each module has ``HELP`` and ``run(config, args)``.
COMMANDS: Mapping[str, ModuleType] = _Commands("render", "validate", "sources", "audit", "explain")
LOGGED = ("render", "sources")  # the commands that read sources, and so write a load log
STDIN = "-"
#: The exit code when stdout is a pipe whose reader went away: 128 + SIGPIPE, as a shell shows it.
BROKEN_PIPE = 141
OUTPUT_FAILED = 74  # sysexits.h EX_IOERR


class _Version(argparse.Action):
    """``--version``, as argparse's own prints it, but the version is read from the installed metadata only then."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from .. import __version__

        print(f"memconfig {__version__}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but a choice it does not know (a command, ``--format``, ``--log-format``) is answered
    with the closest ones (:func:`~memconfig.suggest.did_you_mean`); the subcommands' parsers are of this class too."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        listed = ", ".join(map(repr, choices))
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {listed})")


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; of the commands, only the one *argv* runs is set up (all of them for ``--help``, or no command)."""
    chosen = _chosen(sys.argv[1:] if argv is None else argv)
    parser = _Parser(
        prog="memconfig",
        description="Build an agent's memory prompt from the sources a YAML config declares.",
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if chosen is not None and name != chosen:
            continue  # not the one run: no parser (each is a parser to build), its module not imported
        module = COMMANDS[name]
        sub = commands.add_parser(name, help=module.HELP, description=module.HELP)
        sub.add_argument(
            "-c",
            "--config",
            required=not getattr(module, "CONFIG_OPTIONAL", False),
            metavar="FILE",
            help="the YAML config file ('-': standard input)",
        )
        sub.add_argument(
            "-q", "--quiet", action="store_true", help="no progress display on the terminal (the log is unchanged)"
        )
        if hasattr(module, "add_arguments"):
            module.add_arguments(sub)
        if name in LOGGED:
            sub.add_argument("--log-file", metavar="FILE", help="write the load log to FILE (default: stderr)")
            sub.add_argument(
                "--log-format",
                choices=("auto", "json", "console"),
                help="the load log's format (auto: console text when stderr is a terminal, else JSON lines)",
            )
            sub.add_argument(
                "--log-level", choices=("debug", "info", "warning", "error"), help="the lowest level logged"
            )
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    """The command *argv* runs: its first word that is not an option (no option before it takes a value)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = _parser(argv)
    args = parser.parse_args(argv)
    if args.config == STDIN and getattr(args, "system_file", None) == STDIN:
        parser.error("-c - and --system-file - cannot both read standard input")
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    try:
        try:
            module = COMMANDS[args.command]
            load = getattr(module, "load", _load)  # explain reads the config itself: it keeps the YAML's text
            with getattr(module, "loading", _as_written)(args):  # render checks the config for its --format too
                config = load(args.config) if args.config is not None else None  # optional for some commands
            _warn(getattr(config, "config", config))  # explain's is the config and its text
            exit_code: int = module.run(config, args)
            return exit_code
        except OutputNotWritten as exc:  # standard output may be what failed: nothing more is written to it
            with contextlib.suppress(OSError):
                print(f"memconfig: error: {exc.format_message()}", file=sys.stderr)
            _silence()
            return exc.exit_code
        except MemconfigError as exc:
            print(f"memconfig: error: {exc.format_message()}", file=sys.stderr)
            return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``memconfig render ... | head -c1``): stop quietly, as other tools do.
        _silence()
        return BROKEN_PIPE
    except OSError as exc:  # sources never raise (they are skipped with a reason): the system's own words
        with contextlib.suppress(OSError):
            print(bounded(escaped(f"memconfig: error: {_os_error(exc)}")), file=sys.stderr)
        _silence()
        return OUTPUT_FAILED


def _warn(config: Config | None) -> None:
    """What loading the config passed over that is likely a mistake (an unknown ``MEMCONFIG_*`` variable)."""
    for warning in config.warnings if config is not None else ():
        print(bounded(escaped(f"memconfig: warning: {warning}")), file=sys.stderr)


def _os_error(exc: OSError) -> str:
    """An OS error in its own words, with the file it names (``No such file or directory: out.md``)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _as_written(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """How a command without a ``loading`` hook reads its config: as the file says."""
    return contextlib.nullcontext()


def _load(name: str) -> Config:
    """The config named on the command line; ``-`` is standard input (relative paths: the current folder)."""
    from ..config import load_config, load_config_stream  # imported by then (see run); this module imports none of it

    if name == STDIN:
        return load_config_stream(sys.stdin.buffer, file="<stdin>")
    return load_config(name)


def _silence() -> None:
    """Point stdout and stderr at the null device, so flushing them at exit raises nothing more.

    Python's advice for ``BrokenPipeError``: without this, the interpreter
    prints "Exception ignored … BrokenPipeError" as it shuts down.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # not a real file (a test's capture): nothing to do
                os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def run() -> None:
    """Console-script entry point."""
    # What the imports make lives until the process ends. The collector is paused while the command's module
    # is imported (and with it the library and its dependencies), then all of it is frozen: no collection walks
    # it, neither during the imports (a full one came up in them) nor the interpreter's last ones at exit (a
    # tenth of a second of every command together; see benchmarks/startup.py). ``import memconfig`` imports
    # nothing, so the pause comes before all of it.
    with paused():
        chosen = _chosen(sys.argv[1:])
        if chosen is not None:
            COMMANDS[chosen]  # imported here: main() finds it imported
        gc.freeze()
    sys.exit(main())
