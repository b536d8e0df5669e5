"""A source as declared: what it asks of its expansion, what makes a child an import, where its changes show.

Records made from the config when the sources are built
(:func:`~memconfig.sources.build_sources`) and read by the expanders
(:mod:`memconfig.expand.discover`, :mod:`memconfig.expand.imports`) and the
watcher; a leaf, so a :class:`~memconfig.sources.Source` can carry them
without importing an expander.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

__all__ = ["ROOT_MARKERS", "DiscoverSpec", "ImportRef", "ImportSettings", "Markers", "Spot"]

#: What makes a folder a project root when nothing says otherwise: discoveries, imports and rules alike.
ROOT_MARKERS: tuple[str, ...] = (".git",)


@dataclass(frozen=True, slots=True)
class DiscoverSpec:
    """What a ``discover:`` source looks for, and where; made from the config when the pipeline is built.

    Attributes:
        names: the candidates in each folder, in order (each stand-in right after the name it stands in for).
        stand_ins: ``(stand-in, name)`` pairs: a stand-in is taken only in a folder where no file was
            taken for its name (Claude Code's ``AGENTS.md`` where there is no ``CLAUDE.md``).
        pick: ``first`` (one file a folder: the first candidate that counts) or ``all``.
        start: the folder to walk down to, absolute; ``None``: the working directory at render time.
        root_markers: names whose presence makes a folder the project root.
        skip_blank: under ``pick: first``, a blank candidate is passed over (``False``: it
            still ends the folder's search, and is then left out as ``empty`` by the loader).
        max_dirs: how many folders below *start* to search too (``None``: none).
        respect_gitignore: the downward search leaves out what git ignores.
        patterns: globs relative to each folder; the files they match are candidates after *names*.
        encoding, max_bytes: how a candidate is read to tell whether it is blank (the loader's).
        max_matches: at most this many files a pattern takes in one folder (the loader's ``max_matches``).
    """

    names: tuple[str, ...]
    patterns: tuple[str, ...] = ()
    stand_ins: tuple[tuple[str, str], ...] = ()
    pick: str = "first"
    start: str | None = None
    root_markers: tuple[str, ...] = ROOT_MARKERS
    skip_blank: bool = True
    max_dirs: int | None = None
    respect_gitignore: bool = True
    encoding: str = "utf-8"
    max_bytes: int = 1 << 20
    max_matches: int = 1000

    def stands_for(self, name: str) -> str:
        """The name a file called *name* is taken for: the one it stands in for, else *name* itself."""
        for stand_in, principal in self.stand_ins:
            if stand_in == name:
                return principal
        return name


Markers = Literal["none", "comments"]


@dataclass(frozen=True, slots=True)
class ImportSettings:
    """How a source's imports are followed (a source without imports has none of these).

    Attributes:
        max_depth: the top file is depth 0; files down to this depth are inlined,
            and a token in a file at this depth stays text (``import_depth``).
        markers: ``comments`` wraps what is inlined in Gemini CLI's begin/end
            comments and leaves a comment where an import failed; ``none`` inlines bare.
        allow_home: ``@~/…`` imports from the home folder (which is then allowed too).
        root_markers: what makes a folder the project root imports stay in: a discovery's
            ``root_markers`` for the files it finds (a Mercurial project's ``.hg``), else ``.git``.
    """

    max_depth: int = 5
    markers: Markers = "none"
    allow_home: bool = False
    root_markers: tuple[str, ...] = ROOT_MARKERS

    @property
    def token(self) -> str:
        roots = "" if self.root_markers == ROOT_MARKERS else f",root_markers={','.join(self.root_markers)}"
        return f"imports(max_depth={self.max_depth},markers={self.markers},allow_home={self.allow_home}{roots})"


@dataclass(frozen=True, slots=True)
class ImportRef:
    """What makes a child source an import: the token that named it, and where it sits in its import tree.

    Attributes:
        written: the path as written after ``@`` (no ``?``, no trailing punctuation).
        optional: the token ended in ``?``: missing is ``info``, not a warning.
        depth: the top file is 0, a file it imports 1 …
        chain: the resolved paths of the files from the top one down to this one (cycles are found in it).
        root: the project root every file of the tree must lie in (resolved).
    """

    written: str
    optional: bool
    depth: int
    chain: tuple[str, ...]
    root: str


class Spot(NamedTuple):
    """A place whose change makes a declared source due: a file, a folder's entries, a whole tree, or the cwd.

    A ``"cwd"`` spot is not watched on disk: the source is due when
    ``os.getcwd()`` is no longer *path* (a discovery from the working
    directory), asked once per render.

    *accepts*, for a folder or a tree, tells which of the changed paths in it
    count (``None``: every one). Without it, anything written there — the
    ``--log-file``, the output of ``render -o``, an editor's swap file — would
    make the source due, and a render that writes there would render again
    without end. It is called on the watcher's thread with a changed path
    (normalised, absolute), never on a render, and may ``stat`` it: a removed
    path is gone. Give a value with equality (a frozen dataclass), not a fresh
    ``lambda``: spots are compared to tell whether the watching changed.
    """

    path: str
    kind: str  # "file", "folder" (its direct entries), "tree" (everything below it) or "cwd" (see above)
    accepts: Callable[[str], bool] | None = None
