"""``render -o FILE``: the output written to a file, never onto one the run reads, atomically, and logged.

A file the run reads or writes is refused (exit 2, nothing written): the
config, its credentials or template file, the log (:func:`check_output`,
before anything is read), and a source of the render however reached (a
link, a hard link, a glob, a discovery, an import) or a file a glob or a
discovery would take once written (:meth:`OutputFile.check`, on every
write): each write would put the prompt into the next render.

Generated files (``AGENTS.md``, ``CLAUDE.md``) are read by other tools at any
moment: a reader must see the old file or the new one, never half of one. So
the text goes to a temporary file in the same folder (a rename never crosses
filesystems), is flushed to disk, given the mode of the file it replaces, and
renamed over it. A file that already holds the text is not written at all,
not even its modification time changes: a tool that watches it is not woken
for nothing. For a JSON output whose top-level keys include some that differ
on every run (``--format json``'s ``render_id`` and cache ``counts``), "holds
the text" means "holds the same JSON but for those keys": else every run
would rewrite a file whose prompt did not change.

FILE is never written through a symbolic link: a link there (live or
dangling) is refused, before anything is read and again at every write
(:func:`link_at`), and the link and what it points to stay as they were. A
planted ``AGENTS.md -> ~/.bashrc`` would otherwise have the prompt written into
the user's shell start-up file. Links in the folders above FILE are followed.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import events
from ..cache import PolicyCache
from ..exceptions import ConfigError
from ..expand import EXPANDERS
from ..expand.capabilities import ExpanderTable
from ..file_kinds import not_openable
from ..sources.redact import mask
from ..sources.urls import local_path

if TYPE_CHECKING:
    from ..config import Config
    from ..model import Render
    from ..pipeline import Pipeline

__all__ = [
    "PER_RUN",
    "Outcome",
    "OutputFile",
    "check_output",
    "check_target",
    "link_at",
    "write_output",
    "write_pieces",
]

PER_RUN: Mapping[str, tuple[str, ...]] = {"json": ("render_id", "counts")}
"""A format's top-level keys that differ on every run (its id, what the cache did) with the same prompt and
sources: ``-o`` leaves a file that differs from the new output only in them untouched."""
PER_RUN_SLACK = 4096
"""How many bytes larger than the new output a file may be and still hold it but for per-run keys (an id, counts)."""


class OutputFile:
    """``-o FILE``: a render's output (*output*: its text in format *name*) written to FILE unless a source reads
    it, each write logged (written, unchanged, or failed).

    The sources are the pipeline's own (those its renders read, as they were built), and so are its expanders.
    """

    def __init__(self, path: str, name: str, output: Callable[[Render], str], pipeline: Pipeline) -> None:
        self.path = path
        self.name = name
        self._output = output
        cache = pipeline.cache
        assert isinstance(cache, PolicyCache)  # Pipeline.from_config's
        sources = cache.sources
        expanders = pipeline.capabilities.expanders or EXPANDERS
        table = ExpanderTable(expanders)
        self._takers = [
            (s, take) for s in sources if s.expander is not None and (take := table.of(s.expander).would_take)
        ]
        # What the declared files are, unmasked (a record's URL is the logged one, with a ${API_TOKEN}'s value
        # masked): held here for the comparison only, never shown.
        self._declared = {s.key: p for s in sources if s.expander is None and (p := local_path(s.url)) is not None}
        self._redactors = list({id(s.redact): s.redact for s in sources}.values())
        secrets = pipeline.config.secret_values if pipeline.config is not None else ()
        self.shown = self._masked(path, secrets)
        """FILE as messages and the log show it: a secret in its path (a ``${VAR}``'s value) masked."""
        self._secrets = secrets

    def check(self, render: Render) -> None:
        """Refuse to write a file *render* read (declared, a glob's match, discovered, imported), or one a glob or
        a discovery would take once it is there: each write would put the prompt into the next render (under
        --watch, without end). A link or a hard link to one is caught too.

        Raises:
            ConfigError: FILE is one of those (it is left as it is).
        """
        output = _File(self.path)
        masked = self._masked_forms()
        for record in render.sources:
            declared = self._declared.get(record.source) if record.parent is None else None
            local = declared or local_path(record.url)  # a glob's or a discovery's matches are file:// URLs
            # A found or imported file is known by its logged URL only: under a secret, compared masked as it is.
            if local is not None and (output.is_(local) or (declared is None and local in masked)):
                raise ConfigError(
                    f"-o {self.shown} is a source of this config ({record.source}): writing it would put the prompt "
                    "into the next render; write the output elsewhere, or leave it out of the sources"
                )
        taken_by = self._taker(self.path)
        if taken_by is not None:
            raise ConfigError(
                f"-o {self.shown} is a file this config's source {taken_by} looks for: once written it would be read, "
                "putting the prompt into the next render; write the output elsewhere"
            )

    def write(self, render: Render) -> None:
        """Write *render*'s output to FILE (``output_written`` or ``output_unchanged``), once :meth:`check` passes.

        Raises:
            ConfigError: FILE is a source (see :meth:`check`); nothing is written.
            OSError: FILE could not be written; it is as it was (log it with :meth:`failed`).
        """
        self.check(render)
        try:
            done = write_output(self.path, self._data(render), PER_RUN.get(self.name, ()))
        except OSError as exc:  # its reason names the file: as shown
            raise OSError(exc.errno, self._masked(self.reason(exc), self._secrets)) from None
        held = done.held  # the file's bytes: the new ones, or those it kept
        events.output_file(
            done.written, self.shown, self.name, len(held), hashlib.sha256(held).hexdigest(), render.render_id
        )

    def failed(self, render: Render, exc: OSError) -> None:
        """``output_failed``: *render*'s output could not be written, for the reason *exc* gives."""
        data = self._data(render)
        digest = hashlib.sha256(data).hexdigest()
        events.output_failed(self.shown, self.name, len(data), digest, self.reason(exc), render.render_id)

    @staticmethod
    def reason(exc: OSError) -> str:
        """What a failed write's error says: the file and why (``out/AGENTS.md: No space left on device``)."""
        return exc.strerror or str(exc)

    def _data(self, render: Render) -> bytes:
        return self._output(render).encode("utf-8")

    def _masked(self, text: str, secrets: Sequence[str]) -> str:
        """*text* with the config's secrets and every source's masked."""
        for redactor in self._redactors:
            text = redactor.mask_known(text)
        return mask(text, secrets)

    def _masked_forms(self) -> set[str]:
        """FILE's path as each source's URLs are logged, where that masks something (a ``${VAR}``'s secret)."""
        paths = {os.path.abspath(self.path), os.path.realpath(self.path)}
        return {shown for p in paths for r in self._redactors if (shown := r(p)) != p}

    def _taker(self, path: str) -> str | None:
        """The declared source whose expander would take a file at *path* (its ``would_take``), as of its last
        expansion; ``None`` if none would."""
        for source, would_take in self._takers:
            try:
                taken = would_take(source, path)
            except Exception:  # it cannot say: its source cannot expand either, so reads nothing
                taken = False  # (not a failed write: the output itself is fine)
            if taken:
                return source.key
        return None


def check_output(path: str, config: Config, args: argparse.Namespace) -> None:
    """Refuse, before anything is read or written, an output that is no file name, a folder, or a file this run
    itself reads or writes: the config, its credentials or template, the log (each would be replaced).

    Raises:
        ConfigError: it is one of those.
    """
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
    check_target(path)


def check_target(path: str, option: str = "-o") -> None:
    """Refuse a file to write that is a link (live or dangling), or no regular file (a FIFO would wait for a
    reader): what ``-o`` and ``audit --html`` check before anything is read; each write checks again.

    Raises:
        ConfigError: it is one of those; the message names *option*.
    """
    link = link_at(path)
    if link is not None:
        raise ConfigError(f"{option} {path} is {link}; write to the file itself, or remove the link")
    refused = not_openable(path, writing=True, handed=True)
    if refused is not None:
        raise ConfigError(f"{option} {path} {refused}")


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


class Outcome(NamedTuple):
    """What :func:`write_output` did: *written*, and the bytes the file holds now (*data*, or what it kept)."""

    written: bool
    held: bytes


def write_output(path: str, data: bytes, per_run: Collection[str] = ()) -> Outcome:
    """Put *data* in the file *path*, unless it holds that already.

    *per_run*: *data* is a JSON object, and these of its top-level keys differ on every run (``render_id``):
    a file holding the same object but for them is left as it is.

    Raises:
        OSError: it could not be written (a full disk, no permission, not a
            regular file); the file is as it was, and no temporary file is left.
            Its ``strerror`` names the file.
    """
    target = os.path.abspath(path)
    try:
        info = _replaceable(target)
        if info is not None:
            held = _held(target, data, per_run, info.st_size)
            if held is not None:
                return Outcome(False, held)
        _replace(target, (data,), info)
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: {exc.strerror or exc}") from None
    return Outcome(True, data)


def write_pieces(path: str, pieces: Iterable[bytes]) -> None:
    """Put *pieces*, one after another, in the file *path*, as :func:`write_output` does but a piece at a time.

    A large output (an audit's HTML page) is never whole in memory; the file is
    replaced at the end, so a reader sees the old one or the new one.

    Raises:
        OSError: as :func:`write_output`, or what making the pieces raised; the file is as it was.
    """
    target = os.path.abspath(path)
    try:
        _replace(target, pieces, _replaceable(target))
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: {exc.strerror or exc}") from None


def _replaceable(target: str) -> os.stat_result | None:
    """*target*'s stat if it is a regular file, ``None`` if it is not there; OSError if it is a link or another kind."""
    link = link_at(target)
    if link is not None:
        raise OSError(errno.ELOOP, link)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):  # a folder, or a FIFO: never opened
        raise OSError(0, "not a regular file")
    return info


def link_at(path: str) -> str | None:
    """What *path* is if it is a symbolic link (``a symbolic link (to ~/.bashrc): …``), else ``None``.

    The one check both the command line's (before anything is read) and each write make.
    """
    try:
        pointed = os.readlink(path)
    except OSError:  # not a link, or not there
        return None
    return f"a symbolic link (to {pointed}): memconfig does not write through links"


def _held(target: str, data: bytes, per_run: Collection[str], size: int) -> bytes | None:
    """What *target* holds if it holds *data* (but for *per_run* keys), else ``None``; bounded reads."""
    if not per_run:
        return data if size == len(data) and _read(target, len(data) + 1) == data else None
    if size > len(data) + PER_RUN_SLACK:
        return None
    held = _read(target, len(data) + PER_RUN_SLACK + 1)
    if held == data:
        return held
    kept = _without(held, per_run)
    return held if kept is not None and kept == _without(data, per_run) else None


def _without(data: bytes, keys: Collection[str]) -> dict[str, Any] | None:
    """The JSON object *data* less *keys*; ``None`` if it is not one."""
    try:
        value = json.loads(data)
    except ValueError:  # not UTF-8 or not JSON: a file to replace
        return None
    if not isinstance(value, dict):
        return None
    return {key: item for key, item in value.items() if key not in keys}


def _read(target: str, limit: int) -> bytes:
    """Up to *limit* bytes of *target* (a FIFO put there since the stat is not waited on)."""
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        held = b""
        while len(held) < limit:
            chunk = os.read(fd, limit - len(held))
            if not chunk:
                break
            held += chunk
        return held
    finally:
        os.close(fd)


def _replace(target: str, pieces: Iterable[bytes], info: os.stat_result | None) -> None:
    folder, name = os.path.split(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) if info is not None else _new_file_mode())
            for piece in pieces:
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable, where the platform allows it
        dir_fd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _new_file_mode() -> int:
    """The mode ``open(path, "w")`` would give a new file: 0o666 less the umask (mkstemp's is 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
