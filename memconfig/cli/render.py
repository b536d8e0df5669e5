"""``memconfig render``: the system prompt with the memory block added, on stdout, exactly.

``--format`` picks a printable shape from the appender registry: ``text`` prints
the prompt as it is; the others print JSON (keys in a fixed order, UTF-8, a
newline at the end): ``json`` the render itself, ``openai`` and ``anthropic``
the keyword arguments of that SDK's call. ``-o FILE`` writes it to FILE
instead (:mod:`memconfig.cli.output`: atomically, left untouched when it would
not change, refused — exit 2, nothing written — when it is a folder or a file
the run reads or writes); ``--watch`` then keeps FILE current, rendering
again on every change of a source (the ``watch`` cache policy's watcher),
until Ctrl-C or SIGTERM, which exit 0. The config file itself is not watched:
a changed config takes a restart (it may change what is read, and where the
output and the log go).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..append import APPENDERS, appender_for, printable
from ..cache import PolicyCache
from ..config import MAX_CONFIG_BYTES, Config, printed_as
from ..exceptions import ConfigError, MemconfigError, OutputNotWritten, bounded
from ..file_kinds import not_openable
from ..install import install_hint
from ..limits import MAX_ERROR_LINE
from ..model import Render
from ..pipeline import Pipeline
from ..safe_text import escaped
from .logs import cli_logging
from .progress import load_progress

if TYPE_CHECKING:
    from .output import OutputFile

__all__ = ["add_arguments", "run"]

HELP = "print the system prompt with the memory block added"
TEXT = "text"
STDOUT = "-"  # -o -: print, as without -o (a file named '-' is -o ./-)


class _Printable(Protocol):
    def output(self, system: str | None, render: Render) -> str | Mapping[str, Any]: ...


class _PrintableNames(Collection[str]):
    """The ``--format`` choices: the registered appenders that can be printed, a plugin's included.

    A name is looked up when it is given, so a plugin's entry points are read
    only for a name memconfig does not have (or to list the choices).
    """

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and printable(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name in APPENDERS if printable(name))

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: Why a shape the library has cannot be printed, and what to do instead (``--format NAME`` says it, as --help does).
_NOT_PRINTABLE = {
    "langchain": "LangChain messages are Python objects, which a command line cannot print: --format openai prints "
    "the same messages as JSON (in Python: appender format langchain, or memconfig.integrations.langchain)",
}


def _format_name(name: str) -> str:
    """``--format``'s value: a shape that is registered but cannot be printed is refused, saying why."""
    if name in _NOT_PRINTABLE:
        raise argparse.ArgumentTypeError(f"{name!r} cannot be printed: {_NOT_PRINTABLE[name]}")
    return name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        type=_format_name,
        choices=_PrintableNames(),
        metavar="FORMAT",  # not the choices: listing them would read the plugins' entry points at every start
        help="what to print: the prompt (text), the render (json), an SDK call's keyword arguments (openai, "
        "anthropic), or a plugin's printable shape (default: the config's appender.format if it can be printed, "
        f"else text). Not langchain: {_NOT_PRINTABLE['langchain']}",
    )
    parser.add_argument(
        "--path",
        action="append",
        dest="paths",
        metavar="PATH",
        help="a path in play, for sources with rules: frontmatter (repeatable): a rule applies when its globs or "
        "paths match one; relative to the working folder, matched relative to the rule file's project root "
        "(nearest .git; the config's base_dir when there is none)",
    )
    system = parser.add_mutually_exclusive_group()
    system.add_argument("--system", metavar="TEXT", help="the existing system prompt to add the block to")
    system.add_argument(
        "--system-file", metavar="FILE", help="read the existing system prompt from FILE ('-': standard input)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE (atomically; left untouched when its content would not change, with --format json "
        "but for render_id and counts) instead of stdout "
        "('-': stdout; a file named '-' is ./-)",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="with -o: render again on every change of a source and rewrite FILE, until Ctrl-C "
        "(cache policy watch; needs memconfig[watch]; the config file is not watched)",
    )


def loading(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """While the config is read: its ``appender`` settings are checked for the ``--format`` printed too.

    ``--format openai`` with ``placement: user`` in a config of format ``text``
    is no mistake: the format printed uses it.
    """
    return printed_as(args.format)


def run(config: Config, args: argparse.Namespace) -> int:
    name = _format(config, args)
    path = _output_path(args)
    if path is not None:
        from .output import check_output  # only -o pays for the module

        check_output(path, config, args)
    if args.watch:
        config = _watched(config, path)
    with cli_logging(config, args):
        pipeline = Pipeline.from_config(config)
        system = _read_system(args)
        printer = cast(_Printable, appender_for(name, config))
        if path is None:
            with load_progress(args):  # a bar on the terminal, should the sources take a while
                render = pipeline.build(paths=args.paths)
            try:
                _write_all(_text(printer.output(system, render)))
            except BrokenPipeError:
                raise
            except OSError as exc:  # exit 74 (main): the output, not a file of the user's
                raise OutputNotWritten(exc.errno, exc.strerror or str(exc)) from None
            return 0
        from .output import OutputFile

        output = OutputFile(path, name, lambda r: _text(printer.output(system, r)), pipeline)
        if args.watch:
            return _keep_current(pipeline, output, args.paths, config.cache.ttl)
        with load_progress(args):
            render = pipeline.build(paths=args.paths)
        try:
            output.write(render)
        except OSError as exc:  # exit 74 (main), once it is logged
            output.failed(render, exc)
            raise OutputNotWritten(exc.errno, output.reason(exc)) from None
    return 0


def _text(out: str | Mapping[str, Any]) -> str:
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, indent=2) + "\n"


def _output_path(args: argparse.Namespace) -> str | None:
    """The file ``-o`` names, or ``None`` for standard output (no ``-o``, or ``-o -`` as ``-c -`` reads stdin)."""
    if args.output == STDOUT:
        if args.watch:
            raise ConfigError("--watch keeps a file current, and -o - is standard output: give it with -o FILE")
        return None
    return args.output  # type: ignore[no-any-return]


def _watched(config: Config, path: str | None) -> Config:
    """*config* under the ``watch`` cache policy, whatever it says: ``--watch`` renders on the watcher's reports."""
    if path is None:
        raise ConfigError("--watch keeps a file current: give it with -o FILE")
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        raise ConfigError(f"--watch needs the watchfiles package: {install_hint('watch')}") from None
    return config.model_copy(update={"cache": config.cache.model_copy(update={"policy": "watch"})})


def _keep_current(pipeline: Pipeline, output: OutputFile, paths: Sequence[str] | None, every: float) -> int:
    """Render and write *output* now and after every reported change, until SIGINT or SIGTERM (then 0).

    Sources that cannot be watched (remote ones) are revalidated every *every* seconds (``cache.ttl``).
    A write that fails (a full disk, the file replaced by a folder) is printed and logged, and tried again
    every second (printed again only if the reason changes) until it passes or a change renders anew: a
    long-running watch outlives a passing failure, as it outlives a failed render.
    A render that reads FILE (an ``@AGENTS.md`` import added) is printed and not written, the file kept as it
    is, until a change renders without it; on the first render, before any write, it exits 2 as without --watch.
    A signal during a write takes effect once the write and its event are done: the file and the log agree.
    """
    stop = _Stop()
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        seen = 0
        unwritten: Render | None = None  # the latest render, while its write fails
        told: str | None = None  # that write's failure, as printed
        checked = False  # a render has passed the output's check: from then on a refusal is outlived
        cache = pipeline.cache if isinstance(pipeline.cache, PolicyCache) else None  # asked once: one with a watcher
        while True:
            watching = cache.watching if cache is not None else None  # made by the first render, remade after close
            retry = unwritten is not None and watching is not None and watching.changes == seen
            if not retry:
                if watching is not None:
                    seen = watching.changes  # taken before the render: a change during it renders again
                told = None
                try:
                    unwritten = pipeline.build(paths=paths)
                except MemconfigError as exc:  # a source failed, a budget is exceeded: the file keeps its content
                    unwritten = None
                    print(f"memconfig: error: {exc.format_message()}", file=sys.stderr, flush=True)
            if unwritten is not None:
                with stop.deferred():
                    try:
                        told = _try_write(output, unwritten, told)
                    except ConfigError as exc:  # the render reads FILE now: writing it would feed it to the next
                        if not checked:
                            raise  # as without --watch: nothing is written, exit 2
                        told = None  # not tried again: only a change (the import undone) can make it writable
                        message = exc.format_message()
                        print(f"memconfig: error: {message} (not written; still watching)", file=sys.stderr, flush=True)
                    else:
                        checked = True
                if told is None:
                    unwritten = None
            watching = cache.watching if cache is not None else None
            if watching is None:
                continue
            # Watched whole: wait for a report. Sources revalidated instead (remote ones, a watcher that
            # failed or is starting): render again after a while too; a failed write: try it again soon.
            timeout = None if watching.complete else _POLL if not watching.armed else max(_POLL, every)
            watching.wait(seen, _POLL if unwritten is not None else timeout)
    except KeyboardInterrupt:
        return 0
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


_POLL = 1.0  # seconds between renders while the watcher is not reporting (starting, or failed), and between writes


def _try_write(output: OutputFile, render: Render, told: str | None) -> str | None:
    """Write *render* to *output*: ``None`` if it was written, else the failure, printed and logged unless it is
    *told* (the same write failing the same way as last time)."""
    try:
        output.write(render)
    except OSError as exc:
        reason = output.reason(exc)
        if reason != told:
            output.failed(render, exc)
            shown = bounded(escaped(reason), MAX_ERROR_LINE // 2)  # the -o path as given, within one bounded line
            print(
                f"memconfig: error: cannot write the output: {shown} (still watching: tried again every second)",
                file=sys.stderr,
                flush=True,
            )
        return reason
    return None


class _Stop:
    """The SIGINT and SIGTERM handler of ``--watch``: ends the loop, at once or, during a write, after it."""

    def __init__(self) -> None:
        self._busy = False
        self._asked = False

    def __call__(self, signum: int, frame: object) -> None:
        if self._busy:
            self._asked = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self._busy = True
        try:
            yield
        finally:
            self._busy = False
        if self._asked:
            raise KeyboardInterrupt


def _format(config: Config, args: argparse.Namespace) -> str:
    """The shape to print: ``--format``, else the config's if it can be printed, else text."""
    name: str | None = args.format
    if name is None:
        name = config.appender.format if printable(config.appender.format) else TEXT
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
            refused = not_openable(args.system_file, handed=True)
            if refused is not None:
                raise ValueError(refused)
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
