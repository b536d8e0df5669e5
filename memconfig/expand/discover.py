"""Discovery: instruction files found by name in each folder from the project root down to a working folder.

The convention of Codex (``AGENTS.override.md``, else ``AGENTS.md``, else its
fallback names, one file a folder) and of Gemini CLI (every name, every folder),
as configuration. The project root is the nearest ancestor of the start folder
(``from``, default: the process's working directory at render time) that holds
one of ``root_markers`` (a file or a folder: a git worktree or submodule has a
``.git`` *file*); with no marker found, or ``root_markers: []``, only the start
folder is searched. Folders are walked root first; optionally, the folders below
the start folder too, breadth-first (``down``).

Nothing is opened but regular files: a candidate is ``os.stat``-ed first, and a
directory, FIFO, socket or device by that name (or a symlink loop) is passed
over. Every folder looked at is a ``folder_searched`` event and every candidate
passed over a ``candidate_passed`` event, both at ``debug``; every file found is
a child source (``via: discover``), whose ``source_loaded`` says it was taken.

Besides names, ``patterns`` are globs relative to each folder walked (Claude
Code's ``.claude/rules/**/*.md``): the regular files they match are candidates
too, in sorted order, found by a walk of the pattern's literal folder that
enters only the folders the pattern can reach (as deep as its segments go,
any depth below a ``**``; never ``.git``), follows no symlinked folder and
stops at ``loader.max_matches`` files. A file
two folders' patterns both match is taken once, by the folder nearer the root.
:func:`found_in` tells, from a file's path alone, which folder a pattern matched
it from: the folder its ``paths`` frontmatter is relative to.
"""

from __future__ import annotations

import codecs
import errno
import functools
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import events
from ..file_kinds import irregular_kind
from ..model import ROOT_MARKERS, DiscoverSpec, Spot
from ..sources.urls import first_magic, literal_folder
from . import gitignore
from .trees import Reach, holds_a_file, spot_kind

if TYPE_CHECKING:
    from ..sources import Source

__all__ = [
    "DiscoverExpander",
    "Filled",
    "Walk",
    "candidates",
    "found_in",
    "project_root",
    "walk",
]

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1 << 16
_SKIPPED_BELOW = frozenset({".git"})  # never searched by the downward scan
_PATTERN_FLAGS = 0  # set on first use: wcmatch is imported only by a discovery with patterns


@dataclass(frozen=True, slots=True)
class Walk:
    """What one discovery found: the folders it looked at, in order, and the files it took.

    Attributes:
        start: the folder walked down to (resolved: symlinks followed, as Codex canonicalises its cwd).
        root: the project root found, or ``None``.
        folders: every folder looked at, root first (then those below *start*, breadth-first).
        files: the files taken, in prompt order, each with its folder.
        cwd: the working directory it started from, as ``os.getcwd()`` gave it; ``None``: from a given folder.
    """

    start: str
    root: str | None
    folders: tuple[str, ...]
    files: tuple[tuple[str, str], ...]
    cwd: str | None = None


def project_root(start: str, markers: tuple[str, ...] = ROOT_MARKERS) -> str | None:
    """The nearest of *start* and its ancestors that holds one of *markers* (any kind of entry), or ``None``."""
    if not markers:
        return None
    folder = start
    while True:
        for marker in markers:
            try:
                os.stat(os.path.join(folder, marker))
            except OSError:
                continue
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def walk(spec: DiscoverSpec, source: Source | None = None) -> Walk:
    """Discover now: the folders from the project root down to the start folder (and below), and the files taken.

    Blocking: local ``stat`` calls, a bounded read of candidates to tell blank ones,
    and, for a downward search that respects ``.gitignore``, ``git check-ignore``.
    With *source*, each folder and each candidate passed over is logged for it.
    """
    cwd = os.getcwd() if spec.start is None else None
    start = os.path.realpath(cwd if cwd is not None else spec.start or "")
    root = project_root(start, spec.root_markers)
    chain = [start]
    if root is not None:
        folder = start
        while folder != root:
            folder = os.path.dirname(folder)
            chain.append(folder)
        chain.reverse()
    folders = list(chain)
    if spec.max_dirs:
        below, cut = _below(start, spec.max_dirs, spec.respect_gitignore)
        folders += below
        if cut and source is not None:  # a file deeper down is not found: say the search was cut, and where
            events.search_limited(source, start, spec.max_dirs, len(below))
    files: list[tuple[str, str]] = []
    seen: set[str] = set()
    for folder in folders:
        taken = [path for path in _pick(folder, spec, source) if path not in seen]
        seen.update(taken)
        if source is not None:
            events.folder_searched(source, folder, root, taken)
        files += [(folder, path) for path in taken]
    return Walk(start, root, tuple(folders), tuple(files), cwd)


def found_in(path: str, patterns: tuple[str, ...]) -> str | None:
    """The folder a pattern of *patterns* matched *path* from: its nearest ancestor it matches relative to.

    For a pattern that starts with a literal folder (``.claude/rules/**/*.md``),
    the folder holding that one; ``None`` when no pattern matches from any ancestor.
    """
    folder = os.path.dirname(path)
    while True:
        relative = os.path.relpath(path, folder).replace(os.sep, "/")
        if any(_matches(relative, pattern) for pattern in patterns):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


class DiscoverExpander:
    """Expands a ``discover:`` source into one child per file found, root first (see :mod:`memconfig.expand.discover`).

    The last walk of each source is kept (:meth:`last_walk`): the folders it
    looked at are what a watcher must watch for a new file to be seen.
    """

    via = "discover"
    no_match = "discovery found no file"

    def __init__(self) -> None:
        self._walks: dict[tuple[str, DiscoverSpec], Walk] = {}

    def __repr__(self) -> str:
        return "DiscoverExpander()"

    def expand(self, source: Source) -> list[Source]:
        """The files *source*'s discovery finds now, as child sources. Blocking: local calls only."""
        assert source.discover is not None
        found = walk(source.discover, source)
        self._walks[(source.key, source.discover)] = found
        return [source.found(path, self.via) for _, path in found.files]

    def last_walk(self, source: Source) -> Walk | None:
        """The walk of *source*'s last expansion in this process, or ``None`` if it has not been expanded."""
        assert source.discover is not None
        return self._walks.get((source.key, source.discover))

    def would_take(self, source: Source, path: str) -> bool:
        """Whether a file at *path*, there or not yet, is one *source*'s discovery looks for (its last walk's).

        A candidate name in a folder it looked in (a stand-in: where no file was
        taken for its name), or a pattern's match below one: ``render -o`` asks
        it before writing, so that its output never becomes a source of the next
        render (``CLAUDE.local.md`` beside ``CLAUDE.md``).
        Walked now if it has not been yet.
        """
        assert source.discover is not None
        spec = source.discover
        found = self._walks.get((source.key, spec)) or walk(spec)
        real = os.path.realpath(path)
        folder, name = os.path.split(real)
        if name in spec.names and folder in found.folders:
            filled = Filled(spec, folder)
            for where, taken in found.files:
                if where == folder:
                    filled.took(taken)
            return filled.needed(real)
        for top in found.folders if spec.patterns else ():
            if real.startswith(top.rstrip(os.sep) + os.sep):
                relative = os.path.relpath(real, top).replace(os.sep, "/")
                if any(_matches(relative, pattern) for pattern in spec.patterns):
                    return True
        return False

    def watched(self, source: Source) -> list[Spot]:
        """Where a change makes *source* due again: what its discovery looks for in every folder it looks at.

        Each candidate name in each folder (an ``AGENTS.override.md`` added
        between renders), each root marker on the way from the start folder up
        to the root (a new ``.git`` moves the root), what the patterns match
        below each folder, and, searching downward, a new folder below the start
        folder (and the ``.gitignore`` files that hide folders). Nothing else
        written in those folders counts: not the ``--log-file``, not the output
        of ``render -o``. A discovery from the working directory is due again
        when that changes (a ``"cwd"`` spot). Walked now if it has not been yet.
        """
        assert source.discover is not None
        spec = source.discover
        found = self._walks.get((source.key, spec)) or walk(spec)
        below_start = found.start.rstrip(os.sep) + os.sep
        names = set(spec.names)
        spots = [] if found.cwd is None else [Spot(found.cwd, "cwd")]
        for folder in found.folders:
            up = not folder.startswith(below_start)  # the start folder or one of its ancestors
            wanted = names | set(spec.root_markers) if up else names
            if spec.max_dirs and spec.respect_gitignore:
                wanted.add(".gitignore")
            spots += [Spot(os.path.join(folder, name), "file") for name in sorted(wanted)]
            if spec.max_dirs and (folder == found.start or not up):
                spots.append(Spot(folder, "folder", _is_folder))
            for pattern in spec.patterns:  # a rule file added deep in .claude/rules/ is a change too
                parts = pattern.split("/")
                if first_magic(parts, braces=True) is None:
                    spots.append(Spot(os.path.join(folder, pattern), "file"))  # a plain path: a name
                    continue
                below = literal_folder(pattern, braces=True)
                top = os.path.join(folder, below) if below else folder
                kind = spot_kind(parts[len(below.split("/")) if below else 0 :], braces=True)
                spots.append(Spot(top, kind, _PatternMatch(folder, pattern)))
        return spots


def _is_folder(path: str) -> bool:
    """A downward discovery's watched folder takes a new (or renamed) folder among its entries."""
    return os.path.isdir(path)


@dataclass(frozen=True, slots=True)
class _PatternMatch:
    """Which changed paths below a folder a discovery's pattern takes (see ``Spot``).

    Its matches, and a folder with a file below it where the pattern can
    still reach (one moved in may hold matches). Not a new folder of empty ones: what
    is made in it later is seen as it comes (the tree's watch takes the new
    folder in). Never a folder under ``.git``, so a ``git commit``'s new
    object folders do not make the discovery due.
    """

    folder: str
    pattern: str

    def __call__(self, path: str) -> bool:
        relative = os.path.relpath(path, self.folder).replace(os.sep, "/")
        if _matches(relative, self.pattern):
            return True
        return _reach(self.pattern).reaches(relative.split("/")) and holds_a_file(path)


@functools.lru_cache(maxsize=256)
def _reach(pattern: str) -> Reach:
    """The folders *pattern* can reach below the folder it is relative to (braces: how deep only)."""
    return Reach.of(pattern.split("/"), _matches, braces=True)


def _pick(folder: str, spec: DiscoverSpec, source: Source | None) -> list[str]:
    """The candidates of *folder* that are taken: the first that counts under ``pick: first``, else all present."""
    taken = []
    filled = Filled(spec, folder)
    for path in candidates(folder, spec, source):
        if not filled.needed(path):
            continue
        why = _passed_over(path, spec)
        if why is not None:
            if source is not None:
                events.candidate_passed(source, folder, path, *why)
            continue
        taken.append(path)
        if spec.pick == "first":
            break
        filled.took(path)
    return taken


class Filled:
    """The names one folder's files were taken for: a stand-in (``fallbacks``) is needed only while its name has none.

    The one test of a stand-in, asked by the walk, by ``explain`` and by
    ``render -o`` (:meth:`DiscoverExpander.would_take`).
    """

    __slots__ = ("_folder", "_names", "_spec")

    def __init__(self, spec: DiscoverSpec, folder: str) -> None:
        self._spec, self._folder = spec, folder
        self._names: set[str] = set()

    def _name(self, path: str) -> str | None:
        """The name *path* is a candidate for: its own, or the one it stands in for; ``None``: a pattern's match."""
        folder, name = os.path.split(path)
        return self._spec.stands_for(name) if folder == self._folder and name in self._spec.names else None

    def needed(self, path: str) -> bool:
        """Whether the candidate *path* is still looked at: not a stand-in for a name a file was taken for."""
        return self._name(path) not in self._names

    def took(self, path: str) -> None:
        """*path* was taken: the stand-ins for its name are not needed any more."""
        name = self._name(path)
        if name is not None:
            self._names.add(name)

    def for_name(self, path: str) -> str | None:
        """The name the stand-in *path* is not needed for (a file was taken for it), or ``None``."""
        name = self._name(path)
        return name if name in self._names else None


def candidates(folder: str, spec: DiscoverSpec, source: Source | None = None) -> list[str]:
    """What *spec* looks for in *folder*, in order: its names, then each pattern's matches (listed, none opened)."""
    paths = [os.path.join(folder, name) for name in spec.names]
    for pattern in spec.patterns:
        paths += _matched(folder, pattern, spec, source)
    return paths


def _matches(relative: str, pattern: str) -> bool:
    global _PATTERN_FLAGS
    from wcmatch import glob  # only a discovery with patterns pays for the import

    if not _PATTERN_FLAGS:
        _PATTERN_FLAGS = glob.GLOBSTAR | glob.BRACE | glob.FORCEUNIX
    return bool(glob.globmatch(relative, pattern, flags=_PATTERN_FLAGS))


def _matched(folder: str, pattern: str, spec: DiscoverSpec, source: Source | None) -> list[str]:
    """The files below *folder* that *pattern* matches, sorted, at most ``max_matches``.

    Walks only the pattern's literal folder, and in it only the folders the
    pattern can reach (``*.md`` lists *folder* alone; ``src/*/rules/*.md``
    enters no ``node_modules``), never ``.git`` nor a symlinked folder (a loop
    cannot make it endless); entries are listed, not opened. A folder the walk
    cannot list is passed over, as a missing one is.
    """
    if first_magic(pattern.split("/"), braces=True) is None:
        return [os.path.join(folder, pattern)]  # a plain relative path: one candidate, checked like a name
    below = literal_folder(pattern, braces=True)
    reach = _reach(pattern)
    found: list[str] = []
    over = False
    stack = [below.split("/") if below else []]
    while stack and not over:
        relative = stack.pop()
        current = os.path.join(folder, *relative)
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        holds = reach.holds_matches(len(relative))
        deeper = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:  # a link to a folder is neither entered nor a match, as os.walk leaves it
                if not entry.is_symlink() and reach.reaches([*relative, entry.name]):
                    deeper.append([*relative, entry.name])
            elif holds and _matches("/".join([*relative, entry.name]), pattern):
                found.append(entry.path)
        over = len(found) > spec.max_matches
        stack += reversed(deeper)  # depth first, in name order
    found.sort()
    if over:
        if source is not None:
            detail = f"more than loader.max_matches ({spec.max_matches}) files match {pattern!r}; the first taken"
            events.candidate_passed(source, folder, os.path.join(folder, pattern), "too_many", detail)
        found = found[: spec.max_matches]
    return found


def _passed_over(path: str, spec: DiscoverSpec) -> tuple[str, str] | None:
    """Why the candidate *path* is not taken (reason, detail), or ``None`` if it is.

    A path that cannot be stat-ed for another reason (a folder without the
    right to search it) is taken: the loader then reports it, loudly.
    """
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing", "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "not_regular_file", "a symlink loop"
        return None
    if not stat.S_ISREG(info.st_mode):
        return "not_regular_file", f"is {irregular_kind(info.st_mode)}, not a regular file"
    if spec.pick == "first" and spec.skip_blank and _blank(path, spec):
        return "blank", "holds nothing but whitespace"
    return None


def _blank(path: str, spec: DiscoverSpec) -> bool:
    """Whether the regular file *path* holds only whitespace, read no further than its first other character.

    At most ``max_bytes + 1`` bytes are read; a larger file is not blank (the
    loader leaves it out as ``too_large``). One that cannot be read is not blank
    either: the loader reports why. Opened without blocking, and checked to
    still be a regular file once open (it could have been swapped for a FIFO).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        decoder = codecs.getincrementaldecoder(spec.encoding)(errors="replace")
        read = 0
        while read <= spec.max_bytes:
            chunk = os.read(fd, min(_CHUNK, spec.max_bytes + 1 - read))
            if not chunk:
                return not decoder.decode(b"", final=True).strip()
            read += len(chunk)
            if decoder.decode(chunk).strip():
                return False
        return False
    except OSError:
        return False
    finally:
        os.close(fd)


def _below(start: str, max_dirs: int, respect_gitignore: bool) -> tuple[list[str], bool]:
    """Up to *max_dirs* folders below *start*, breadth-first, in name order; ``.git`` and symlinked folders left out.

    With *respect_gitignore*, folders git ignores are left out with what is below
    them (``git check-ignore``, asked once per level, its answer kept while it holds:
    :mod:`memconfig.expand.gitignore`); when git cannot say (not a repository, git
    missing), nothing is left out. Also whether the limit left
    folders out: at an exact fit the next level is listed to tell.
    """
    found: list[str] = []
    level = [start]
    while level:
        below: list[str] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
            except OSError:
                continue
            below += [os.path.join(folder, n) for n in names if n not in _SKIPPED_BELOW]
        if respect_gitignore and below:
            ignored = gitignore.ignored(start, below)
            below = [folder for folder in below if folder not in ignored]
        room = max_dirs - len(found)
        if len(below) > room:
            return found + below[:room], True
        found += below
        level = below
    return found, False
