"""A dry run of a config: every source as the loader would take it, what it would be checked against, and the verdict.

Nothing is read. Local files are ``stat``-ed (a FIFO is never opened, so it
cannot block), globs are listed by the loader's own expander (a local one
from its folders; a remote one with the loader's timeout, files unread;
over HTTP one request for the folder), remote URLs are not contacted, and a
glob that can only be listed by opening an archive (``zip://*.md::…``) is
not listed, saying so. The checks are the loader's own
(:class:`~memconfig.load.confinement.Confinement`, ``max_matches``,
``max_bytes``), so a verdict is what a render would do with the source as
things stand, except for what only a read can tell (a remote answer, a
file's text). Each config value comes with the layer that set it
(:mod:`memconfig.config.layers`). Everything is shown with secrets masked.

A discovery is walked as a render would walk it (the project root and the
marker that made it one, each folder, each candidate stat-ed), except that no
candidate is opened: under ``pick: first`` the first regular file is shown as
the one taken, with its blank check left to the render. Imports are found in
the text of the files, which a dry run does not read: only their settings are shown.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from fsspec.implementations.local import LocalFileSystem

from .cache.repeats import Claims, repeat_key
from .config.layers import STDIN, ConfigValue, value_layers
from .config.schema import CWD
from .expand import EXPANDERS
from .file_kinds import file_place, irregular_kind
from .interpolation import variable_names
from .load.confinement import Confinement, Roots, resolved_path
from .load.errors import classify, over_max_bytes, over_max_matches
from .load.local import look_at
from .model import SkipReason
from .sources import Source, build_sources
from .sources.hosts import HTTP
from .sources.places import same_place
from .sources.redact import mask
from .sources.urls import IN_PROCESS, LOCAL, chain, local_path, local_path_in, static_prefix
from .words import counted

if TYPE_CHECKING:
    from .config import Config

__all__ = [
    "RENDER_WOULD_FAIL",
    "Candidate",
    "Check",
    "Explanation",
    "PlannedFolder",
    "PlannedSource",
    "explain",
    "fails_render",
    "plan_local_files",
    "plan_sources",
]

Verdict = Literal["read", "refused", "skipped", "expanded", "not_expanded"]
_REFUSALS = frozenset(
    {
        SkipReason.OUTSIDE_ROOT,
        SkipReason.PROTOCOL_NOT_ALLOWED,
        SkipReason.HOST_NOT_ALLOWED,
        SkipReason.OPTION_NOT_ALLOWED,
    }
)
_NOT_CONTACTED = "not contacted: a dry run reads nothing"
_LEFT_OUT = frozenset({"skipped", "refused"})
#: What ``explain`` adds to the verdict of a required source a render would leave out.
RENDER_WOULD_FAIL = "render would fail (exit 1): the source is required"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Check:
    """One thing a source would be checked against, and how it fares.

    Attributes:
        name: the ``loader`` setting (``allowed_roots``, ``allowed_protocols``,
            ``allowed_hosts``, ``max_matches``, ``max_bytes``).
        limit: its value (``None``: not set, anything goes).
        outcome: what the source has, in words (``inside /srv/docs``, ``812 bytes``).
        passed: ``None`` when only a read can tell (a remote source's size).
    """

    name: str
    limit: Any
    outcome: str
    passed: bool | None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate of a folder a discovery looks in, and what a render would do with it.

    Attributes:
        path: the file it names.
        outcome: ``taken``, ``missing``, ``not_regular_file`` or ``not_needed`` (a
            ``pick: first`` folder whose search ended at an earlier one).
        detail: what the outcome rests on (``is a FIFO, not a regular file``; for a file
            taken under ``pick: first`` with ``skip_blank``: its blank check is the render's).
    """

    path: str
    outcome: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PlannedFolder:
    """One folder of a discovery's walk: its candidates, in order."""

    folder: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class PlannedSource:
    """A source as a render would take it, and what it would do with it, without reading it.

    Attributes:
        key: the location as written (``${VAR}`` and ``~`` unexpanded), credentials masked.
        name: the display name, secrets masked.
        resolved: the URL fsspec would be given (variables, ``~`` and ``base_dir``
            applied), secrets masked.
        kind: ``file``, ``memory``, ``remote``, ``chained`` or ``glob``.
        variables: the names of the ``${VAR}``\\ s in the location as written.
        verdict: ``read``, ``refused`` (confinement), ``skipped``, ``expanded``
            (a glob, with its matches) or ``not_expanded`` (a glob that cannot
            be listed without reading content).
        reason: the skip reason a render would log, for ``refused`` and ``skipped``.
        detail: the reason's detail, or what the verdict rests on.
        matches: a glob's matches (a discovery's files taken), each planned as a source of its own.
        walk: a discovery's folders, root first, with their candidates.
        imports: how ``@path`` imports would be followed, in words (``""``: they are not).
        place: where a source a render would read has its content, as the render tells two
            sources of one file apart (a local file's device and inode); not shown.
        fails_render: a declared ``required`` source a render would leave out (skipped or refused,
            or every match out): the render would fail, exit 1 from the CLI (:func:`fails_render`).
    """

    key: str
    name: str
    resolved: str
    kind: str
    required: bool
    variables: tuple[str, ...]
    checks: tuple[Check, ...]
    verdict: Verdict
    reason: SkipReason | None = None
    detail: str = ""
    matches: tuple[PlannedSource, ...] = ()
    walk: tuple[PlannedFolder, ...] = ()
    imports: str = ""
    place: str | None = field(default=None, repr=False)
    fails_render: bool = False

    @property
    def summary(self) -> str:
        """The verdict in words: ``would be refused: outside_root (…)``, ``would be read (812 bytes)``."""
        words = {
            "read": "would be read",
            "refused": "would be refused",
            "skipped": "would be skipped",
            "expanded": "expands to",
            "not_expanded": "not expanded",
        }[self.verdict]
        if self.verdict == "expanded":
            text = f"{words} {counted(len(self.matches), 'match')}"
        else:
            head = f"{words}: {self.reason}" if self.reason is not None else words
            text = f"{head} ({self.detail})" if self.detail else head
        return f"{text}; {RENDER_WOULD_FAIL}" if self.fails_render else text


@dataclass(frozen=True, slots=True)
class Explanation:
    """What ``memconfig explain`` shows: where relative paths resolve, the limits, every source, every value.

    Attributes:
        file: the config's name (``<stdin>`` for ``-c -``).
        base_dir: the folder relative paths resolve against.
        base_dir_from: how that folder was chosen, in words.
        limits: the ``loader`` settings sources are checked against (``allowed_roots`` resolved).
        sources: the declared sources, in order, globs with their matches.
        values: every config value and the layer that set it.
    """

    file: str
    base_dir: str
    base_dir_from: str
    limits: dict[str, Any]
    sources: tuple[PlannedSource, ...]
    values: tuple[ConfigValue, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """JSON data: ``summary`` added to each source, ``layer`` of each value also in words (``where``)."""
        data = asdict(self)
        data["sources"] = [_source_dict(s) for s in self.sources]
        data["values"] = [{**asdict(v), "where": str(v.layer)} for v in self.values]
        return data


def _source_dict(source: PlannedSource) -> dict[str, Any]:
    data = asdict(source)
    del data["place"]
    data["summary"] = source.summary
    data["matches"] = [_source_dict(m) for m in source.matches]
    return data


def explain(config: Config, text: str | None = None) -> Explanation:
    """The dry run of *config*; *text* is the YAML it was read from, for the lines values were set on.

    Without *text*, a config read from a regular file is read again for its
    lines (bounded as loading is); values are otherwise shown as set by ``file``
    without a position only if the environment did not set them.
    """
    if text is None and config.file is not None and config.file != STDIN:
        text = _reread(config.file)
    secrets = config.secret_values
    return Explanation(
        file=config.file or "<config>",
        base_dir=mask(str(config.base_path), secrets),
        base_dir_from=mask(_base_dir_from(config), secrets),
        limits=_limits(config),
        sources=tuple(plan_sources(config)),
        values=tuple(value_layers(config, text)),
    )


def _reread(file: str) -> str | None:
    from .config.checks import read_text

    return read_text(Path(file), "", [])


def _base_dir_from(config: Config) -> str:
    chosen = config.base_dir
    if chosen is None:
        if config.file in (None, STDIN):
            return "the current folder (the config is not a file)"
        return "the config file's folder"
    if chosen == CWD or chosen.startswith(CWD + "/"):
        return f"base_dir {chosen!r}: {CWD} is this process's working folder"
    if os.path.isabs(os.path.expanduser(chosen)):
        return f"base_dir {chosen!r}"
    return f"base_dir {chosen!r}, relative to the config file's folder"


def _limits(config: Config) -> dict[str, Any]:
    opts = config.loader
    confinement = Confinement.from_config(config.loader, config.base_path)
    roots = list(confinement.roots.folders) if confinement is not None and confinement.roots is not None else None
    return {
        "allowed_roots": roots,
        "allowed_protocols": opts.allowed_protocols,
        "allowed_hosts": opts.allowed_hosts,
        "max_matches": opts.max_matches,
        "max_bytes": opts.max_bytes,
        "timeout": opts.timeout,
    }


def plan_sources(config: Config) -> list[PlannedSource]:
    """Every declared source of *config*, planned (globs listed, nothing read), in order."""
    planner = _Planner(config)
    planned = [
        planner.plan(source, variable_names(item.written))
        for source, item in zip(build_sources(config), config.sources, strict=True)
    ]
    claims = Claims({item.key: item.key for item in planned})
    return [_with_failure(_without_repeats(item, item.key, claims)) for item in planned]


def plan_local_files(config: Config) -> list[tuple[int, Source, PlannedSource]]:
    """The declared sources that name one local file (a path, ``file://``, ``local://``), planned: ``stat``-ed
    as a render would, nothing opened, nothing else reached; with each its index in ``sources``.

    What ``memconfig validate`` checks: a required one a render would skip
    (:attr:`PlannedSource.fails_render`), and a ``url:`` with glob characters
    that names no file (its detail says to write ``glob:``).
    """
    planner = _Planner(config)
    return [
        (index, source, _with_failure(planner.plan(source, variable_names(item.written))))
        for index, (source, item) in enumerate(zip(build_sources(config), config.sources, strict=True))
        if source.expander is None and not source.chained and local_path(source.url) is not None
    ]


def _with_failure(item: PlannedSource) -> PlannedSource:
    """A declared source, marked when a render would fail for it (:func:`fails_render`)."""
    return replace(item, fails_render=True) if fails_render(item) else item


def fails_render(item: PlannedSource) -> bool:
    """Whether a render would fail for the declared source *item*, as the render decides it: ``required`` and
    nothing of it in the prompt (skipped or refused, or every match out), unless it only repeats a file already
    in (``duplicate``)."""
    if not item.required:
        return False
    out = list(item.matches) if item.verdict == "expanded" else [item]
    if not out or any(m.verdict not in _LEFT_OUT for m in out):
        return False
    return not all(m.reason == SkipReason.DUPLICATE for m in out)


def _without_repeats(item: PlannedSource, root: str, claims: Claims) -> PlannedSource:
    """*item* (its matches, in their place) with each source that reads an earlier one's file a ``duplicate``.

    Asked of *claims* in prompt order, as a render asks for a pass's results
    (:func:`~memconfig.cache.repeats.mark_repeats`): a match under another
    source's key, or reading an earlier source's file.
    """
    if item.matches:
        return replace(item, matches=tuple(_without_repeats(match, root, claims) for match in item.matches))
    if item.key != root and claims.taken_key(item.key, root):  # a match (one level below its root), another's key
        detail = f"the same file as {item.key!r}"
        return replace(
            item, key=repeat_key(item.key, root), verdict="skipped", reason=SkipReason.DUPLICATE, detail=detail
        )
    owner = claims.by_place(item.key, item.place) if item.verdict == "read" and item.place is not None else None
    if owner is None:
        return item
    return replace(item, verdict="skipped", reason=SkipReason.DUPLICATE, detail=f"the same file as {owner!r}")


class _Planner:
    """The checks a loader built from the config would make, made without reading."""

    def __init__(self, config: Config) -> None:
        self.confinement = Confinement.from_config(config.loader, config.base_path)
        self.max_bytes = config.loader.max_bytes
        self.max_matches = config.loader.max_matches
        whole = self.confinement
        self.roots = whole.roots if whole is not None else None
        self.protocols = (
            None
            if whole is None or whole.protocols is None
            else Confinement(protocols=sorted(whole.protocols), options=sorted(whole.options))
        )
        self.hosts = (
            None
            if whole is None or whole.hosts is None
            else Confinement(hosts=whole.hosts, options=sorted(whole.options))
        )

    def plan(self, source: Source, variables: tuple[str, ...] = ()) -> PlannedSource:
        if source.discover is not None:  # a walk of folders: each file it takes is checked as a source
            return self._discovery(source, variables, [])
        checks = self._confinement_checks(source)
        refused = self.confinement.refusal(source) if self.confinement is not None else None
        if refused is not None:
            return self._planned(source, variables, checks, "refused", refused[0], source.redact(refused[1]))
        if source.glob:
            return self._glob(source, variables, checks)
        if source.chained:
            return self._chained(source, variables, checks)
        if source.in_process:  # a local or in-memory file: its filesystem is had without I/O
            fs, path = source.open_fs()
            if isinstance(fs, LocalFileSystem):
                return self._local(source, path, variables, checks)
            return self._in_memory(source, fs, path, variables, checks)
        checks.append(Check("max_bytes", self.max_bytes, "checked when read", None))
        planned = self._planned(source, variables, checks, "read", None, _NOT_CONTACTED)
        return replace(planned, place=same_place(source.url))

    # -- checks -------------------------------------------------------------

    def _confinement_checks(self, source: Source) -> list[Check]:
        checks = []
        parts = chain(source.url)
        protocols = [part.protocol or "file" for part in parts]
        if self.protocols is not None:
            refused = self.protocols.refusal(source)
            outcome = ", ".join(dict.fromkeys(protocols)) + (" not all allowed" if refused else " allowed")
            checks.append(Check("allowed_protocols", sorted(self.protocols.protocols or ()), outcome, refused is None))
        if self.hosts is not None and any(p in HTTP for p in protocols):
            refused = self.hosts.refusal(source)
            outcome = source.redact(refused[1]) if refused else "host allowed"
            checks.append(Check("allowed_hosts", list(self.hosts.hosts or ()), outcome, refused is None))
        if self.roots is not None:
            path = self._local_path(source)
            if path is not None:
                real = os.path.realpath(path)
                holder = next((f for f in self.roots.folders if _may_reach(Roots((f,)), real, source.glob)), None)
                shown = path if real == path.rstrip(os.sep) or not path else f"{path} (resolves to {real})"
                outcome = f"{shown} is inside {holder}" if holder else f"{shown} is outside every root"
                checks.append(
                    Check("allowed_roots", list(self.roots.folders), source.redact(outcome), holder is not None)
                )
        return checks

    def _local_path(self, source: Source) -> str | None:
        """The local path the roots are checked against: a file's, a glob's folder, an archive's or a repository's."""
        if not source.chained and chain(source.url)[0].protocol in LOCAL | {None}:
            path = chain(source.url)[0].path
            if source.glob:
                return static_prefix(path) or "."
            return path
        for part in chain(source.url):
            found = local_path_in(part)
            if found is not None:
                return found
        return None

    # -- the kinds of source ------------------------------------------------

    def _local(self, source: Source, path: str, variables: tuple[str, ...], checks: list[Check]) -> PlannedSource:
        if self.roots is not None and not self.roots.holds(resolved_path(path)):
            assert self.confinement is not None
            detail = source.redact(self.confinement.outside(path))
            return self._planned(source, variables, checks, "refused", SkipReason.OUTSIDE_ROOT, detail)
        info, reason, detail = look_at(path)  # the render's own look: never opened, a FIFO would block
        if info is None or reason is not None:
            return self._planned(source, variables, checks, "skipped", reason, source.redact(detail))
        planned = self._sized(source, variables, checks, info.st_size, None)
        return replace(planned, place=file_place(info))

    def _in_memory(
        self, source: Source, fs: Any, path: str, variables: tuple[str, ...], checks: list[Check]
    ) -> PlannedSource:
        try:
            info = fs.info(path)
        except Exception as exc:
            reason, detail, _ = classify(exc)
            return self._planned(source, variables, checks, "skipped", reason, source.redact(detail))
        kind = "a directory" if info.get("type") == "directory" else None
        planned = self._sized(source, variables, checks, int(info.get("size") or 0), kind)
        return replace(planned, place=same_place(source.url))

    def _sized(
        self, source: Source, variables: tuple[str, ...], checks: list[Check], size: int, irregular: str | None
    ) -> PlannedSource:
        if irregular == "a directory":
            return self._planned(source, variables, checks, "skipped", SkipReason.IS_DIRECTORY, "is a directory")
        if irregular is not None:
            detail = f"is {irregular}, not a regular file"
            return self._planned(source, variables, checks, "skipped", SkipReason.NOT_REGULAR_FILE, detail)
        fits = size <= self.max_bytes
        checks.append(Check("max_bytes", self.max_bytes, counted(size, "byte"), fits))
        if not fits:
            detail = over_max_bytes(self.max_bytes)
            return self._planned(source, variables, checks, "skipped", SkipReason.TOO_LARGE, detail)
        return self._planned(source, variables, checks, "read", None, counted(size, "byte"))

    def _chained(self, source: Source, variables: tuple[str, ...], checks: list[Check]) -> PlannedSource:
        for part in chain(source.url):
            path = local_path_in(part) if part.protocol != "git" else None  # a repository is a folder
            if path is None:
                continue
            try:
                irregular = irregular_kind(os.stat(path).st_mode)
            except OSError as exc:
                reason, detail, _ = classify(exc)
                return self._planned(source, variables, checks, "skipped", reason, source.redact(f"{path}: {detail}"))
            if irregular is not None:
                detail = source.redact(f"{path} is {irregular}, not a regular file")
                return self._planned(source, variables, checks, "skipped", SkipReason.NOT_REGULAR_FILE, detail)
        checks.append(Check("max_bytes", self.max_bytes, "checked when read", None))
        planned = self._planned(
            source, variables, checks, "read", None, "the member is found when what it chains is opened"
        )
        return replace(planned, place=same_place(source.url))

    def _glob(self, source: Source, variables: tuple[str, ...], checks: list[Check]) -> PlannedSource:
        if source.chained:
            detail = "a glob inside a chained URL is listed only by opening what it chains, and a dry run reads nothing"
            return self._planned(source, variables, checks, "not_expanded", None, detail)
        expander = EXPANDERS["glob"]
        try:
            if source.in_process:
                children = expander.expand(source)  # a local folder (or memory): listed, nothing opened
            else:
                children = _within_timeout(lambda: expander.expand(source), source.timeout)
        except TimeoutError:
            detail = f"not listed within {source.timeout:g} s"
            return self._planned(source, variables, checks, "skipped", SkipReason.TIMEOUT, detail)
        except Exception as exc:
            reason, detail, _ = classify(exc)
            return self._planned(source, variables, checks, "skipped", reason, source.redact(detail))
        count = len(children)
        fits = count <= self.max_matches
        checks.append(Check("max_matches", self.max_matches, counted(count, "match"), fits))
        if not fits:
            detail = over_max_matches(count, self.max_matches)
            return self._planned(source, variables, checks, "skipped", SkipReason.TOO_LARGE, detail)
        if not children:
            return self._planned(source, variables, checks, "skipped", SkipReason.NOT_FOUND, "the glob matched no file")
        matches = tuple(self.plan(child) for child in children)
        return self._planned(source, variables, checks, "expanded", None, "", matches)

    def _discovery(self, source: Source, variables: tuple[str, ...], checks: list[Check]) -> PlannedSource:
        """The walk a render would make now, every candidate stat-ed, none opened."""
        from .expand.discover import Filled, walk
        from .expand.discover import candidates as looked_for

        spec = source.discover
        assert spec is not None
        unread = replace(spec, skip_blank=False, pick="all")  # every candidate stat-ed, nothing read
        found = walk(unread)
        marker = _marker(found.root, spec.root_markers) if found.root is not None else None
        if found.root is None:
            where = "no root marker found: only the start folder" if spec.root_markers else "root_markers: []"
        else:
            where = f"project root {found.root} (holds {marker})"
        present = {path for _, path in found.files}
        folders: list[PlannedFolder] = []
        taken: list[str] = []
        for folder in found.folders:
            candidates: list[Candidate] = []
            done = False
            filled = Filled(spec, folder)
            for path in looked_for(folder, spec):
                if path in taken:
                    continue
                if done:
                    candidates.append(Candidate(path, "not_needed", "an earlier candidate ends the folder's search"))
                elif not filled.needed(path):
                    detail = f"it stands in for {filled.for_name(path)}, which is taken"
                    candidates.append(Candidate(path, "not_needed", detail))
                elif path in present:
                    blank = "its blank check is the render's (a blank file is passed over)"
                    note = blank if spec.pick == "first" and spec.skip_blank else ""
                    candidates.append(Candidate(path, "taken", note))
                    taken.append(path)
                    done = spec.pick == "first"
                    filled.took(path)
                else:
                    reason, detail = _why_not(path)
                    candidates.append(Candidate(path, reason, detail))
            folders.append(PlannedFolder(folder, tuple(candidates)))
        count = len(found.folders)
        detail = f"{where}; {counted(count, 'folder')} from {found.start}"
        if not taken:
            planned = self._planned(source, variables, checks, "skipped", SkipReason.NOT_FOUND, detail)
        else:
            matches = tuple(self.plan(source.found(path, "discover")) for path in taken)
            planned = self._planned(source, variables, checks, "expanded", None, detail, matches)
        return replace(planned, walk=tuple(folders))

    def _planned(
        self,
        source: Source,
        variables: tuple[str, ...],
        checks: Sequence[Check],
        verdict: Verdict,
        reason: SkipReason | None,
        detail: str,
        matches: tuple[PlannedSource, ...] = (),
    ) -> PlannedSource:
        if verdict == "skipped" and reason in _REFUSALS:
            verdict = "refused"
        if reason is not None:
            detail = source.skip_detail(reason, detail)  # as a render records it: a url: like a glob says so
        return PlannedSource(
            key=source.key,
            name=source.name,
            resolved=_resolved(source),
            kind=_kind(source),
            required=source.required,
            variables=variables,
            checks=tuple(checks),
            verdict=verdict,
            reason=reason,
            detail=detail,
            matches=matches,
            imports=_imports(source),
        )


def _marker(root: str, markers: tuple[str, ...]) -> str | None:
    """Which of *markers* made *root* the project root (the first that is there)."""
    return next((m for m in markers if os.path.lexists(os.path.join(root, m))), None)


def _why_not(path: str) -> tuple[str, str]:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing", "no such file"
    kind = irregular_kind(mode)
    return "not_regular_file", f"is {kind}, not a regular file" if kind else "not taken"


def _imports(source: Source) -> str:
    """A source's import settings in words; imports are in the text, which a dry run does not read."""
    chosen = source.imports
    if chosen is None:
        return ""
    return (
        f"imports on (max_depth {chosen.max_depth}, markers {chosen.markers}, allow_home {chosen.allow_home}); "
        "which files are imported is found in each file's text, which a dry run does not read"
    )


def _resolved(source: Source) -> str:
    """What *source* resolves to, masked; a local glob's match as a path, as its glob is (not ``file:///…``)."""
    head = chain(source.url)[0]
    if source.via is not None and not source.chained and head.protocol in LOCAL:
        return source.redact(head.path)
    return source.display_url


def _kind(source: Source) -> str:
    if source.discover is not None:
        return "discover"
    if source.glob:
        return "glob"
    if source.chained:
        return "chained"
    protocol = chain(source.url)[0].protocol
    if protocol is None or protocol in LOCAL:
        return "file"
    return "memory" if protocol in IN_PROCESS else "remote"


def _may_reach(roots: Roots, real: str, glob: bool) -> bool:
    """The loader's check: a file must lie in a root; a glob's folder may also hold one (its matches may)."""
    return roots.may_hold(real) if glob else roots.holds(real)


def _within_timeout(call: Callable[[], _T], timeout: float) -> _T:
    """*call*'s result, on a daemon thread: past *timeout*, :class:`TimeoutError`, and the process can still exit."""
    outcome: list[Any] = []
    done = threading.Event()

    def work() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=work, name="memconfig-explain-list", daemon=True).start()
    if not done.wait(timeout):
        raise TimeoutError
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
