"""The pipeline: wires loader → state cache → processors → formatter → appender, and nothing more."""

from __future__ import annotations

import functools
import os
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from . import events
from .append import TextAppender, appender_for
from .collector import paused
from .config import Config, load_config
from .drive import Flow, arun, run
from .exceptions import BudgetExceeded, SourceError
from .limits import MAX_HELD_CHARS
from .model import (
    Drop,
    Failure,
    Lazy,
    LoadResult,
    Note,
    Records,
    Render,
    RenderCounts,
    Section,
    SkipReason,
    Snapshot,
    SourceRecord,
    Status,
)
from .process import ProcessorChain
from .process.chain import Placed, Rule
from .stages import (
    Appender,
    Closing,
    Formatter,
    Loader,
    LoaderCapabilities,
    Processor,
    ServingCache,
    StateCache,
    provides,
)
from .timing import ms_since
from .wiring import build_stages

if TYPE_CHECKING:
    from .process.rules import PathsInPlay

__all__ = ["Pipeline"]

Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None
"""The paths in play a render is given: one, several, or none."""

"""A snapshot processed and formatted: the block, its sha256, the records, the sections taken out, the notes."""
_CACHE_COUNTS = ("cache_hits", "revalidated", "refreshed", "stale", "loaded", "skipped")
_MEMO = 8  # distinct blocks kept (of MAX_HELD_CHARS in all): enough for states that differ, flat under churn


class Pipeline:
    """Builds one memory block from the sources a config declares, and hands it over in the shape asked for.

    ``build`` / ``abuild`` give a :class:`~memconfig.Render`; ``render`` /
    ``arender`` give it through an appender (``text``: the system prompt with the
    block added). Contents are kept in *state* (any mutable mapping: an
    agent's state, a checkpointed thread's dict); without one, the pipeline's
    own state is used, so repeated renders share one cache. A context manager:
    leaving it (or :meth:`close`) stops the loader's threads and the watcher.
    """

    def __init__(
        self,
        loader: Loader,
        cache: StateCache,
        formatter: Formatter,
        appender: Appender | None = None,
        *,
        processors: Sequence[Processor | Rule] = (),
        config: Config | None = None,
    ) -> None:
        self.loader = loader
        self.cache = cache
        self.capabilities = LoaderCapabilities.of(loader)
        """What the loader can do besides ``load``, asked once, here (and told to a cache that serves it)."""
        if provides(cache, ServingCache):
            cache.serve(loader, self.capabilities)
        self._closing = tuple(stage for stage in (cache, loader) if provides(stage, Closing))
        self.processors = ProcessorChain(processors)
        self.formatter = formatter
        self.appender = appender if appender is not None else TextAppender()
        self.config = config
        self.state: dict[str, Any] = {}
        self._appenders: dict[str, Appender] = {}
        self._views: OrderedDict[str, _View] = OrderedDict()
        self._outcome: _Outcome | None = None
        file = os.path.abspath(config.file) if config is not None and config.file is not None else None
        self._manifests = events.Manifests(file)

    @classmethod
    def from_config(
        cls,
        config: Config | Mapping[str, Any],
        *,
        processors: Sequence[Processor | Placed] = (),
        loader: Loader | None = None,
    ) -> Pipeline:
        """Build the stages from a config object or a plain mapping (:func:`~memconfig.wiring.build_stages`).

        Args:
            processors: the caller's own processors, run after the built-in cleaning and
                escaping and the processors the config names (``processors:``), before the
                budgets; one :class:`~memconfig.process.Placed` runs just before or after the
                built-in rule it names (``Placed(p, before="escaping")``).
            loader: a loader of the caller's own, instead of the fsspec one (and of the loaders
                registered for URL protocols, :data:`memconfig.registry.LOADERS`); its
                ``token`` (if it has one; else its class) is part of what states are made for.

        Raises:
            ConfigError: the mapping is not a valid config.
        """
        if not isinstance(config, Config):
            config = Config.from_mapping(config)
        with paused():
            stages = build_stages(config, processors=processors, loader=loader)
        loader, cache, formatter, appender = stages.loader, stages.cache, stages.formatter, stages.appender
        return cls(loader, cache, formatter, appender, processors=stages.rules, config=config)

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike[str],
        *,
        processors: Sequence[Processor | Placed] = (),
        loader: Loader | None = None,
    ) -> Pipeline:
        """Build from a YAML config file. Raises :class:`ConfigError` naming the file."""
        return cls.from_config(load_config(path), processors=processors, loader=loader)

    def __repr__(self) -> str:
        return f"Pipeline({self.loader!r}, {self.cache!r}, {self.processors!r}, {self.formatter!r}, {self.appender!r})"

    # -- its resources -----------------------------------------------------------

    def close(self) -> None:
        """Stop what the stages hold: the loader's thread pool, the ``watch`` policy's watcher. Idempotent.

        A render after ``close`` opens them again as the first render did (a new
        pool when a read needs one; under ``watch``, a new watcher, and every
        source checked once). Dropping the pipeline frees them too.
        """
        for stage in self._closing:
            stage.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the entry points: thin drivers over one flow --------------------------

    @property
    def takes_paths(self) -> bool:
        """Whether the block depends on the paths in play (a source has ``rules: frontmatter``)."""
        return self.processors.takes_paths

    def build(self, state: MutableMapping[str, Any] | None = None, *, paths: Paths = None) -> Render:
        """The memory block and an account of every source.

        Args:
            paths: the paths in play for ``rules: frontmatter`` sources (files
                being worked on): relative ones against the working folder, then
                matched relative to each rule file's project root, as Cursor and
                Claude Code match against the workspace (its nearest folder holding
                ``.git``, or a discovery's ``root_markers``; the folder holding
                ``.claude/rules`` for a file a discovery's ``patterns`` found; the
                config's ``base_dir`` for a rule file in no project). A change of
                paths alone reads nothing: the block is decided again from the state.

        Raises:
            SourceError: a required source is not available (or a decode error
                under ``on_decode_error: fail``); it lists every such source.
        """
        with events.render_scope() as render_id:
            return run(self._build(self._state(state), render_id, self._paths(paths)))

    async def abuild(self, state: MutableMapping[str, Any] | None = None, *, paths: Paths = None) -> Render:
        """:meth:`build` for asyncio callers: remote reads are awaited, never blocking the loop."""
        with events.render_scope() as render_id:
            return await arun(self._build(self._state(state), render_id, self._paths(paths)))

    def render(
        self,
        system: Any = None,
        state: MutableMapping[str, Any] | None = None,
        *,
        format: str | Appender | None = None,
        paths: Paths = None,
    ) -> Any:
        """:meth:`build`, handed to an appender: by default, the system prompt with the block added (a ``str``).

        Args:
            format: a name from :data:`memconfig.append.APPENDERS` (``"text"``),
                an appender of your own, or ``None`` for the config's ``appender.format``.
        """
        return self._appender(format).append(system, self.build(state, paths=paths))

    async def arender(
        self,
        system: Any = None,
        state: MutableMapping[str, Any] | None = None,
        *,
        format: str | Appender | None = None,
        paths: Paths = None,
    ) -> Any:
        """:meth:`render` for asyncio callers."""
        return self._appender(format).append(system, await self.abuild(state, paths=paths))

    def load(self, state: MutableMapping[str, Any] | None = None) -> list[LoadResult]:
        """Read every source now, whatever the cache policy; one result per source (or expansion child)."""
        with events.render_scope():
            snapshot = run(self.cache.resolve(self._state(state), self.loader, force=True))
        return list(snapshot.results)

    # -- the one flow -----------------------------------------------------------

    def _build(self, state: MutableMapping[str, Any], render_id: str, paths: PathsInPlay = ()) -> Flow[Render]:
        started = time.perf_counter()
        snapshot = yield from self.cache.resolve(state, self.loader)
        outcome = self._outcome
        # an unchanged turn gets the same snapshot again; with other paths in play, its block may differ
        if outcome is None or outcome.snapshot is not snapshot or outcome.paths != paths:
            try:
                outcome = self._account(snapshot, paths)
            except BudgetExceeded as exc:
                loaded, skipped = len(snapshot.sections), snapshot.stats.get("sources_skipped", 0)
                _log_failure([*snapshot.failures, *exc.failures], loaded, skipped, started)
                raise
        if snapshot.failures:
            counts = outcome.counts
            _log_failure(snapshot.failures, counts["sources_loaded"], counts["sources_skipped"], started)
            raise SourceError(snapshot.failures)
        view = outcome.view
        if not outcome.memo:  # a block made now: what it holds, once, before the prompt_built naming it
            self._manifests.log(view.sha256, len(view.text), view.records())
        outcome.log(ms_since(started))
        self._outcome = outcome.again()
        return Render(view.text, view.sha256, render_id, view.records, outcome.counts, outcome.memo)

    def _account(self, snapshot: Snapshot, paths: PathsInPlay) -> _Outcome:
        """The block for *snapshot* and *paths* (memoised by both), its counts and its ``prompt_built``."""
        key = snapshot.digest if not paths else "\x1f".join((snapshot.digest, *paths))
        view = self._views.get(key)  # a dict read needs no lock
        memo = view is not None
        if view is None:
            view = self._view(snapshot, paths, key)
        for drop in view.drops:  # each source that enters a state is told why it is not in the prompt
            if not memo or drop.section.source in snapshot.taken:
                s = drop.section
                if drop.reason is SkipReason.NOT_APPLICABLE:  # a rule that does not apply: by design, not a loss
                    events.rule_not_applicable(s, drop.detail)
                else:
                    events.source_dropped(s, drop.reason, drop.processor, drop.detail)
        noted = dict.fromkeys(events.NOTE_COUNTS.values(), 0)
        for note in view.notes:
            if not memo or note.section.source in snapshot.taken:
                events.processor_note(note)
            counted = events.NOTE_COUNTS.get(note.event)
            if counted is not None:
                noted[counted] += 1
        stats = snapshot.stats
        counts = RenderCounts(
            sources_loaded=len(snapshot.sections) - len(view.drops),
            sources_skipped=stats.get("sources_skipped", 0) + len(view.drops),
            dropped=_dropped(view.drops),
            **{key: stats.get(key, 0) for key in _CACHE_COUNTS},
            **noted,
        )
        return _Outcome(snapshot, view, counts, memo, paths)

    def _view(self, snapshot: Snapshot, paths: PathsInPlay, key: str) -> _View:
        """Process and format *snapshot* for *paths*; its records are made when first asked for. Memoised by *key*."""
        with paused():
            sections, drops, notes = self.processors(snapshot.sections, paths)
            block = self.formatter.format(sections)
        chars = block.chars or _chars(sections)
        records = Lazy(functools.partial(_records, snapshot.records, chars, drops, notes))
        view = _View(block.text, block.sha256, records, tuple(drops), tuple(notes))
        views = self._views
        views[key] = view
        while len(views) > _MEMO or (len(views) > 1 and _chars_held(views) > MAX_HELD_CHARS):
            try:
                views.popitem(last=False)  # one step (no iterator for another thread to invalidate)
            except KeyError:
                break  # another render emptied it meanwhile
        return view

    def _state(self, state: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return self.state if state is None else state

    def _paths(self, paths: Paths) -> PathsInPlay:
        """The paths in play, normalised; none when no processor looks at them (the block cannot depend on them)."""
        if paths is None or not self.processors.takes_paths:
            return ()
        from .process.rules import in_play

        return in_play(paths)

    def _appender(self, format: str | Appender | None) -> Appender:
        if format is None:
            return self.appender
        if not isinstance(format, str):
            return format
        found = self._appenders.get(format)
        if found is None:
            found = self._appenders[format] = appender_for(format, self.config or Config(version=1))
        return found


class _Outcome:
    """What a render of one snapshot gives: the block and records, the counts, and its ``prompt_built``."""

    __slots__ = ("counts", "log", "memo", "paths", "snapshot", "view")

    def __init__(
        self,
        snapshot: Snapshot,
        view: _View,
        counts: RenderCounts,
        memo: bool,
        paths: PathsInPlay = (),
    ) -> None:
        self.snapshot, self.view, self.counts, self.memo, self.paths = snapshot, view, counts, memo, paths
        fields = {
            "sources_loaded": counts.sources_loaded,
            "sources_skipped": counts.sources_skipped,
            "chars": len(view.text),
            "sha256": view.sha256,
            "memo": memo,
            **{key: counts[key] for key in _CACHE_COUNTS},
            "dropped": counts.dropped,
            **{key: counts[key] for key in events.NOTE_COUNTS.values()},
        }
        self.log = events.BuiltLine(fields)

    def again(self) -> _Outcome:
        """The outcome of rendering the same snapshot again: the same, from the memo."""
        return self if self.memo else _Outcome(self.snapshot, self.view, self.counts, True, self.paths)


class _View(NamedTuple):
    """A snapshot processed and formatted for some paths in play: memoised by both."""

    text: str
    sha256: str
    records: Lazy[tuple[SourceRecord, ...]]
    drops: tuple[Drop, ...]
    notes: tuple[Note, ...]


def _dropped(drops: Sequence[Drop]) -> int:
    """The sections processors took out, each a ``source_dropped`` (a rule that does not apply is no drop)."""
    return sum(drop.reason is not SkipReason.NOT_APPLICABLE for drop in drops)


def _chars_held(views: OrderedDict[str, _View]) -> int:
    """The characters of the blocks *views* keeps (its values listed in one step: another render may add one)."""
    return sum(len(view.text) for view in list(views.values()))


def _log_failure(failures: Sequence[Failure], loaded: int, skipped: int, started: float) -> None:
    fields = {"sources_loaded": loaded, "sources_skipped": skipped, "duration_ms": ms_since(started)}
    events.prompt_failed(failures, fields)


def _chars(sections: Sequence[Section]) -> dict[str, int]:
    """Each section's characters in the block, for a formatter that does not say (trailing whitespace trimmed)."""
    return {s.source: len(s.text.rstrip()) for s in sections}


def _records(
    seen: Records, chars: Mapping[str, int], drops: Sequence[Drop], notes: Sequence[Note]
) -> tuple[SourceRecord, ...]:
    """The cache's records, sized by *chars*, with what processing did: sources taken out, notes."""
    records = seen(chars)
    return _with_parent_sizes(_processed(records, drops, notes) if drops or notes else records)


def _processed(records: Sequence[SourceRecord], drops: Sequence[Drop], notes: Sequence[Note]) -> list[SourceRecord]:
    """*records* with the sources processors took out marked skipped (and why), and each one's notes."""
    out = {d.section.source: d for d in drops}
    noted: dict[str, tuple[str, ...]] = {}
    for note in notes:
        noted[note.section.source] = (*noted.get(note.section.source, ()), note.event)
    changed = []
    for record in records:
        key = record.source
        drop = out.get(key)
        if drop is not None:
            detail = drop.detail or f"by {drop.processor}"  # a processor's own words, else its token
            record = record._replace(status=Status.SKIPPED, reason=drop.reason, detail=detail, chars=0)
            if drop.reason is not SkipReason.NOT_APPLICABLE:  # logged as its source_dropped (a rule's: a skip)
                noted[key] = (*noted.get(key, ()), "source_dropped")
        if key in noted:
            record = record._replace(notes=noted[key])
        changed.append(record)
    return changed


def _with_parent_sizes(records: Sequence[SourceRecord]) -> tuple[SourceRecord, ...]:
    """Records with each expanded source's ``chars`` the sum of its children's."""
    sizes: dict[str, int] = {}
    for record in records:
        if record.parent is not None and record.via != "import":  # an import's text is in its importer's
            sizes[record.parent] = sizes.get(record.parent, 0) + record.chars
    if not sizes:
        return tuple(records)
    return tuple(r.sized(sizes[r.source]) if r.source in sizes else r for r in records)
