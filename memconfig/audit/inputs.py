"""The logs named on the command line: files, globs, fsspec URLs or ``-``, each streamed as lines in bounded memory.

Compression comes from the name (``.gz``, ``.bz2``, ``.xz``, ``.zst``), as
fsspec infers it; standard input is sniffed for gzip's magic number instead.
A line is never held past :data:`MAX_LINE_BYTES`: a longer one is skipped to
its end (counted as ``too_long``), so a 50 MB line costs what a 1 MiB one does.

A log that is not there, or a glob matching nothing, is a usage error (exit
2, naming it), and so is a FIFO, a socket or a device (``/dev/zero``), which is
never opened: it could block, or never end. Standard input and the pipes the
process was handed (``audit <(cmd)``, named on the command line: never a
config's ``logging.file``) can be read once. Alone, such a pipe is read as it
comes; beside other logs, it is first read to its end into a temporary file,
so that its first lines (to order logs by time) and then all of them are read
from there: nothing is lost to the first look. A log that cannot be read (no
permission, a corrupt archive, a server hanging up) is reported by the audit,
which goes on with the others. Names and errors are shown with credentials
masked.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from ..exceptions import ConfigError
from ..file_kinds import inherited, not_openable
from ..sources.redact import Redactor, redact_url

__all__ = [
    "CHUNK_BYTES",
    "HEAD_BLOCK_BYTES",
    "MAX_LINE_BYTES",
    "STDIN",
    "LogInput",
    "error_text",
    "line_pieces",
    "log_inputs",
]

STDIN = "-"
#: The longest line read as a line; a longer one is counted as ``too_long`` and skipped. A block's
#: manifest lists every source (10,000 take about 3 MiB): the bound leaves room for it.
MAX_LINE_BYTES = 8 << 20
#: The read buffer's size.
CHUNK_BYTES = 1 << 18
#: The block a remote log's first lines are read in (to order logs by time): not the store's default 50 MB.
HEAD_BLOCK_BYTES = 1 << 16
_GLOB_CHARS = frozenset("*?[")
_NO_GLOB = frozenset({"http", "https"})  # a URL's "?" begins its query (a signed URL's), not a pattern
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class LogInput:
    """One log to read: its name as shown, and how to open it (as a binary stream, decompressed)."""

    name: str
    open: Callable[[], contextlib.AbstractContextManager[IO[bytes]]]
    redact: Callable[[str], str] = redact_url
    """Masks the secrets its storage options hold (and credentials in URLs) in a text about it: an error."""
    head: Callable[[], contextlib.AbstractContextManager[IO[bytes]]] | None = None
    """Opens it to read its first lines only (small reads from a remote store); None when it can be read once."""


def log_inputs(
    names: Sequence[str],
    storage: Mapping[str, Mapping[str, Any]] | None = None,
    secrets: Sequence[str] = (),
    *,
    handed: bool = True,
) -> list[LogInput]:
    """Every log *names* stand for, globs expanded in sorted order; exit 2 naming one that is not there.

    *storage* is the config's ``storage`` section (options by protocol: an S3
    endpoint, keys), so a bucket of logs is reached as the config's sources are.
    *handed*: the caller named them (the command line), so ``/dev/fd/N`` and
    ``/dev/stdin`` may be its own pipes; not so for a config's ``logging.file``.
    """
    storage = storage or {}
    found: list[LogInput | _Pipe] = []
    for name in names:
        if name == STDIN:
            found.append(_Pipe("<stdin>", lambda: contextlib.nullcontext(sys.stdin.buffer), Redactor(None, secrets)))
            continue
        found += _expand(name, storage, secrets, handed)
    alone = len(found) == 1  # no order to find: no first look to keep its lines from
    return [item.log(alone=alone) if isinstance(item, _Pipe) else item for item in found]


def _expand(
    name: str, storage: Mapping[str, Mapping[str, Any]], secrets: Sequence[str], handed: bool
) -> list[LogInput | _Pipe]:
    from fsspec.core import split_protocol, url_to_fs

    protocol = split_protocol(name)[0] or "file"
    options = dict(storage.get(protocol, {}))
    shown = Redactor(options, secrets)
    label = shown(name)
    try:
        fs, path = url_to_fs(name, **options)
        if protocol not in _NO_GLOB and any(c in _GLOB_CHARS for c in path):
            paths = sorted(p for p in fs.glob(path) if not fs.isdir(p))
            if not paths:
                raise ConfigError(f"no log matches {label}")
        elif not fs.exists(path):
            raise ConfigError(f"no such log: {label}")
        elif fs.isdir(path):
            raise ConfigError(
                f"{label} is a folder, not a log (a glob such as {label.rstrip('/')}/*.jsonl reads its logs)"
            )
        else:
            paths = [path]
    except ConfigError:
        raise
    except ImportError as exc:
        raise ConfigError(f"cannot read {label}: {shown(str(exc))}") from None
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot read {label}: {shown(error_text(exc))}") from None
    except Exception as exc:  # a remote filesystem's own error (credentials, a bucket that is not there)
        raise ConfigError(f"cannot read {label}: {shown(error_text(exc))}") from None
    single = len(paths) == 1 and paths[0] == path
    local = split_protocol(name)[0] is None  # a plain path: its matches shown as paths, not file:// URLs
    found: list[LogInput | _Pipe] = []
    for p in paths:
        named = label if single else shown(p if local else fs.unstrip_protocol(p))
        here = _on_this_machine(fs)
        refused = not_openable(p, handed=handed) if here else None
        if refused is not None:
            raise ConfigError(f"{named} {refused}")
        if here and inherited(p):
            found.append(_Pipe(named, _opener(fs, p), shown))
            continue
        found.append(LogInput(named, _opener(fs, p), shown, _opener(fs, p, HEAD_BLOCK_BYTES)))
    return found


def _on_this_machine(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def _opener(
    fs: Any, path: str, block_size: int | None = None
) -> Callable[[], contextlib.AbstractContextManager[IO[bytes]]]:
    from fsspec.compression import compr
    from fsspec.implementations.local import LocalFileSystem
    from fsspec.utils import infer_compression

    local = isinstance(fs, LocalFileSystem)

    @contextlib.contextmanager
    def open_log() -> Iterator[IO[bytes]]:
        compression = infer_compression(path)
        sized = {} if block_size is None else {"block_size": block_size}
        with open(path, "rb") if local else fs.open(path, "rb", **sized) as raw:  # local: Python's own, buffered in C
            if compression is None:
                yield raw
                return
            with compr[compression](raw, mode="rb") as unpacked:
                yield unpacked

    return open_log


@dataclass(frozen=True, slots=True)
class _Pipe:
    """A pipe (standard input, ``<(cmd)``): its lines can be read once; gzip is sniffed by its magic number
    (a pipe has no name to tell)."""

    name: str
    read: Callable[[], contextlib.AbstractContextManager[IO[bytes]]]
    redact: Callable[[str], str]

    def log(self, *, alone: bool) -> LogInput:
        """As a log: *alone*, read as it comes (no first look, so no head); else through a :class:`_Buffered` copy."""
        if alone:
            return LogInput(self.name, functools.partial(_streamed, self.read), self.redact)
        copy = _Buffered(self.read)
        return LogInput(self.name, copy.open, self.redact, copy.open)


@contextlib.contextmanager
def _streamed(read: Callable[[], contextlib.AbstractContextManager[IO[bytes]]]) -> Iterator[IO[bytes]]:
    with read() as raw, _unpacked(raw) as stream:
        yield stream


@contextlib.contextmanager
def _unpacked(stream: IO[bytes]) -> Iterator[IO[bytes]]:
    """*stream*, or what it holds if it is gzip (its magic number peeked at, nothing consumed)."""
    peekable = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[type-var]
    if peekable.peek(2)[:2] != _GZIP_MAGIC:
        yield peekable
        return
    import gzip

    with gzip.GzipFile(fileobj=peekable, mode="rb") as unpacked:
        yield unpacked  # type: ignore[misc]


class _Buffered:
    """A pipe read once, to its end, into a temporary file; each open reads that.

    Its first lines are read to order the logs by time, then all of it: a
    pipe read twice would give its lines to the first read only. The copy is
    on disk, so a long pipe costs no memory.
    """

    def __init__(self, read: Callable[[], contextlib.AbstractContextManager[IO[bytes]]]) -> None:
        self._read = read
        self._copy: IO[bytes] | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        with self._lock:
            if self._copy is None:
                copy = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the reads that follow
                with self._read() as stream:
                    shutil.copyfileobj(stream, copy, CHUNK_BYTES)
                copy.flush()  # each open reads the descriptor, not this buffer
                self._copy = copy
            stream = os.fdopen(os.dup(self._copy.fileno()), "rb")
        with stream:
            stream.seek(0)
            with _unpacked(stream) as unpacked:
                yield unpacked


def error_text(exc: BaseException) -> str:
    """An error as one line: the system's words for an OS error, else its type and message."""
    strerror = getattr(exc, "strerror", None)
    text = str(strerror) if strerror else f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


def line_pieces(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """*stream*'s lines, each with its ``\\n`` (the last may have none), read by C code with no line over *limit*.

    A line of more than *limit* bytes comes as several pieces, each but the
    last exactly ``limit + 1`` bytes long with no ``\\n`` at the end: the reader
    counts the first as ``too_long`` and skips the others, so no line is ever
    held whole. (``readline`` with a size, called by ``iter``: no Python frame
    per line, which is most of what a line costs besides parsing it.)
    """
    reader = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream, CHUNK_BYTES)  # type: ignore[type-var]
    return iter(functools.partial(reader.readline, limit + 1), b"")
