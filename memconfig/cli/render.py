"""``memconfig render``: the system prompt with the memory block added, on stdout, exactly.

``--format`` picks a printable shape from the appender table: ``text`` prints
the prompt as it is; the others print JSON (keys in a fixed order, UTF-8, a
newline at the end): ``json`` the render itself, ``openai`` and ``anthropic``
the keyword arguments of that SDK's call. ``-o FILE`` writes it to FILE
instead, atomically, leaving FILE untouched when it would not change
(:mod:`memconfig.cli.output`), and refuses (exit 2, nothing written) a FILE
that is a folder or a file the run reads or writes — a source however reached
(a link, a hard link, a glob, a discovery, an import; or a file a glob or a
discovery would take once written), the config, its
credentials or template file, the log; ``--watch`` then keeps FILE current, rendering
again on every change of a source (the ``watch`` cache policy's watcher),
until Ctrl-C or SIGTERM, which exit 0. The config file itself is not watched:
a changed config takes a restart (it may change what is read, and where the
output and the log go).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast

from .. import events
from ..append import APPENDERS, appender_for
from ..config import MAX_CONFIG_BYTES, Config
from ..exceptions import ConfigError, MemconfigError
from ..expand import EXPANDERS
from ..pipeline import Pipeline
from ..render import Render
from ..sources import build_sources
from ..sources.redact import mask
from ..sources.urls import local_path
from .logs import cli_logging
from .progress import load_progress

__all__ = ["add_arguments", "run"]

HELP = "print the system prompt with the memory block added"
TEXT = "text"
STDOUT = "-"  # -o -: print, as without -o (a file named '-' is -o ./-)
PER_RUN: Mapping[str, tuple[str, ...]] = {"json": ("render_id", "counts")}
"""A format's top-level keys that differ on every run (its id, what the cache did) with the same prompt and
sources: ``-o`` leaves a file that differs from the new output only in them untouched."""


class _Printable(Protocol):
    def output(self, system: str | None, render: Render) -> str | Mapping[str, Any]: ...


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=[name for name, entry in APPENDERS.items() if entry.printable],
        help="what to print: the prompt (text), the render (json), or an SDK call's keyword arguments "
        "(default: the config's appender.format if it can be printed, else text)",
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


def run(config: Config, args: argparse.Namespace) -> int:
    name = _format(config, args)
    path = _output_path(args)
    if path is not None:
        _check_output(path, config, args)
    if args.watch:
        config = _watched(config, path)
    with cli_logging(config, args):
        pipeline = Pipeline.from_config(config)
        system = _read_system(args)
        printer = cast(_Printable, appender_for(name, config))
        output = (
            None
            if path is None
            else _OutputFile(path, name, lambda r: printer.output(system, r), _taker(pipeline, config))
        )
        if output is not None and args.watch:
            return _keep_current(pipeline, output, args.paths, config.cache.ttl)
        with load_progress(args):  # a bar on the terminal, should the sources take a while
            render = pipeline.build(paths=args.paths)
        if output is None:
            _write_all(_text(printer.output(system, render)))
            return 0
        try:
            output.write(render)
        except OSError as exc:  # exit 74 (main), once it is logged
            output.failed(render, exc)
            raise
    return 0


def _text(out: str | Mapping[str, Any]) -> str:
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, indent=2) + "\n"


class _OutputFile:
    """``-o FILE``: a render's output written to FILE, and each write logged (written, unchanged, or failed)."""

    def __init__(
        self,
        path: str,
        name: str,
        output: Callable[[Render], str | Mapping[str, Any]],
        taker: Callable[[str], str | None] = lambda path: None,
    ) -> None:
        self.path = path
        self.name = name
        self._output = output
        self._taker = taker  # the declared source that would read a file at a path, if one would

    def write(self, render: Render) -> None:
        """Write *render*'s output to FILE (``output_written`` or ``output_unchanged``).

        Raises:
            OSError: FILE could not be written; it is as it was (log it with :meth:`failed`).
        """
        _not_a_source(self.path, render, self._taker)
        from .output import write_output  # only -o pays for it

        done = write_output(self.path, self._data(render), PER_RUN.get(self.name, ()))
        held = done.held  # the file's bytes: the new ones, or those it kept
        events.output_file(
            done.written, self.path, self.name, len(held), hashlib.sha256(held).hexdigest(), render.render_id
        )

    def failed(self, render: Render, exc: OSError) -> None:
        """``output_failed``: *render*'s output could not be written, for the reason *exc* gives."""
        data = self._data(render)
        digest = hashlib.sha256(data).hexdigest()
        events.output_failed(self.path, self.name, len(data), digest, _reason(exc), render.render_id)

    def _data(self, render: Render) -> bytes:
        return _text(self._output(render)).encode("utf-8")


def _reason(exc: OSError) -> str:
    """What :func:`write_output`'s error says: the file and why (``out/AGENTS.md: No space left on device``)."""
    return exc.strerror or str(exc)


def _not_a_source(path: str, render: Render, taker: Callable[[str], str | None]) -> None:
    """Refuse to write a file the render read (declared, a glob's match, discovered, imported), or one a glob or a
    discovery would take once it is there: each write would put the prompt into the next render (under --watch,
    without end). A link or a hard link to one is caught too."""
    output = _File(path)
    for record in render.sources:
        local = local_path(record.url)  # a glob's or a discovery's matches are file:// URLs
        if local is not None and output.is_(local):
            raise ConfigError(
                f"-o {path} is a source of this config ({record.source}): writing it would put the prompt into "
                "the next render; write the output elsewhere, or leave it out of the sources"
            )
    taken_by = taker(path)
    if taken_by is not None:
        raise ConfigError(
            f"-o {path} is a file this config's source {taken_by} looks for: once written it would be read, putting "
            "the prompt into the next render; write the output elsewhere"
        )


def _taker(pipeline: Pipeline, config: Config) -> Callable[[str], str | None]:
    """Which declared source's expander would take a file at a path (its ``would_take``), as of its last expansion."""
    expanders = getattr(pipeline.loader, "expanders", None) or EXPANDERS
    expanded = [(s, expanders.get(s.expander)) for s in build_sources(config) if s.expander is not None]

    def taker(path: str) -> str | None:
        for source, expander in expanded:
            would_take = getattr(expander, "would_take", None)
            try:
                taken = would_take is not None and would_take(source, path)
            except Exception:  # it cannot say: its source cannot expand either, so reads nothing
                taken = False  # (not a failed write: the output itself is fine)
            if taken:
                return source.key
        return None

    return taker


def _check_output(path: str, config: Config, args: argparse.Namespace) -> None:
    """Refuse, before anything is read or written, an output that is no file name, a folder, or a file this run
    itself reads or writes: the config, its credentials or template, the log (each would be replaced)."""
    if not path:
        raise ConfigError("-o needs a file name")
    if os.path.isdir(path):
        raise ConfigError(
            f"-o {path} is a folder: give the file to write in it, e.g. -o {os.path.join(path, 'AGENTS.md')}"
        )
    output = _File(path)
    for what, other in _own_files(config, args):
        if output.is_(other):
            shown = mask(other, config.secret_values)  # a path from ${VAR}s is shown as the log's is
            raise ConfigError(f"-o {path} is {what} ({shown}): writing it would replace it; write the output elsewhere")


def _own_files(config: Config, args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """The local files this run reads or writes besides the sources, each with what it is."""
    if config.file is not None and config.file != "<stdin>":
        yield "the config file", config.file
    named = {
        "credentials_file": config.credentials_file,
        "formatter.template_file": config.formatter.template_file,
        "formatter.tokens.encoding_file": config.formatter.tokens.encoding_file,
        "logging.file": config.logging.file,
    }
    for key, value in named.items():
        if value:
            yield key, str(config.resolve_path(value))
    if args.log_file:
        yield "the --log-file", args.log_file
    if args.system_file not in (None, "-"):
        yield "the --system-file", args.system_file


class _File:
    """A file given on the command line, compared with others as the file itself: links followed, hard links seen."""

    def __init__(self, path: str) -> None:
        self.real = os.path.realpath(path)
        try:
            info = os.stat(self.real)
        except OSError:
            self.id: tuple[int, int] | None = None  # not there yet: only a path can name it
        else:
            self.id = (info.st_dev, info.st_ino)

    def is_(self, other: str) -> bool:
        """Whether *other* names this file (or, if it is not there yet, the same path once links are followed)."""
        if os.path.realpath(other) == self.real:
            return True
        if self.id is None:
            return False
        try:
            info = os.stat(other)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self.id


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
        raise ConfigError("--watch needs the watchfiles package: pip install 'memconfig[watch]'") from None
    return config.model_copy(update={"cache": config.cache.model_copy(update={"policy": "watch"})})


def _keep_current(pipeline: Pipeline, output: _OutputFile, paths: Sequence[str] | None, every: float) -> int:
    """Render and write *output* now and after every reported change, until SIGINT or SIGTERM (then 0).

    Sources that cannot be watched (remote ones) are revalidated every *every* seconds (``cache.ttl``).
    A write that fails (a full disk, the file replaced by a folder) is printed and logged, and tried again
    every second (printed again only if the reason changes) until it passes or a change renders anew: a
    long-running watch outlives a passing failure, as it outlives a failed render.
    A signal during a write takes effect once the write and its event are done: the file and the log agree.
    """
    stop = _Stop()
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        seen = 0
        unwritten: Render | None = None  # the latest render, while its write fails
        told: str | None = None  # that write's failure, as printed
        while True:
            watching = getattr(pipeline.cache, "watching", None)
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
                    told = _try_write(output, unwritten, told)
                if told is None:
                    unwritten = None
            watching = getattr(pipeline.cache, "watching", None)
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


def _try_write(output: _OutputFile, render: Render, told: str | None) -> str | None:
    """Write *render* to *output*: ``None`` if it was written, else the failure, printed and logged unless it is
    *told* (the same write failing the same way as last time)."""
    try:
        output.write(render)
    except OSError as exc:
        reason = _reason(exc)
        if reason != told:
            output.failed(render, exc)
            print(
                f"memconfig: error: cannot write the output: {reason} (still watching: tried again every second)",
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
