"""A drop-in for deepagents' ``MemoryMiddleware``: the same constructor, state and messages, plus load events.

Change one import (``from memconfig.integrations.deepagents import
MemoryMiddleware``) and an agent sees what deepagents' middleware gives it:
``state["memory_contents"]`` as ``{path: text}`` (private state), loaded once
per thread through the same backend in one batched download, and the memory
block as one more text block of the system message, tagged for Anthropic's
prompt cache when asked. What changes is what the operator sees: every
source's ``source_loaded`` / ``source_skipped`` event and a ``prompt_built``
per model call. deepagents' template is read from the installed package.
Paths go to the backend exactly as given (no ``${VAR}`` expanded, no two
paths taken for one file: only the backend knows that); logs mask credentials.

An optional ``config=`` (a YAML path or a mapping, without ``sources``, or
with settings for some of them) brings memconfig's policies: the cache
policy across turns (``revalidate`` sees an edit on the next turn), budgets,
escaping, the loader's limits and the logging. Its meta then lives beside
the contents (``memory_contents_meta``, private too).

Loads run in ``before_agent`` (through memconfig's state cache); model calls
render from the contents in the request's state and never read anything.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import string
import threading
import time
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, cast

try:
    from deepagents.middleware import memory as _deepagents_memory
    from deepagents.middleware._utils import is_anthropic_chat_model
    from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse, PrivateStateAttr
    from langchain_core.messages import ContentBlock, SystemMessage
except ImportError:
    from ..install import install_hint

    raise ImportError(f"memconfig.integrations.deepagents needs deepagents: {install_hint('deepagents')}") from None

from .. import events
from ..append.langchain import LangchainAppender
from ..config import Config, load_config
from ..config.schema import CacheControlConfig, SourceConfig
from ..drive import Flow, arun, run
from ..exceptions import ConfigError, SourceError
from ..format import TemplateFormatter
from ..format.formatter import BlockSizes
from ..format.markup import enclosing
from ..load.backend import BackendLoader, BackendResult
from ..model import Block, Section, SkipReason, Snapshot, SourceRecord, Status
from ..pipeline import Pipeline
from ..sources import Source
from ..sources.redact import Redactor, url_secrets
from ..stages import Closing, StateCache, provides
from ..timing import ms_since
from ..wiring import Stages, build_stages
from ._agent import AsyncHandler, Handler, changes, held

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_core.runnables import RunnableConfig
    from langgraph.runtime import Runtime

__all__ = ["MemoryMiddleware", "MemoryState"]

#: deepagents' own state schema and template, from the installed package (never copied).
MemoryState = _deepagents_memory.MemoryState
DEFAULT_TEMPLATE: str = _deepagents_memory.MEMORY_SYSTEM_PROMPT
STATE_KEY = "memory_contents"
DEEPAGENTS_RULES = ("html_comments",)
"""The built-in rules deepagents' own middleware has (it strips HTML comments, nothing else)."""
META_KEY = f"{STATE_KEY}_meta"
_KEPT = 32  # distinct contents a view keeps snapshots of: a few per live thread


class MemoryStateWithMeta(MemoryState):
    """deepagents' schema plus memconfig's meta (with ``config=``): private, so kept in checkpoints only."""

    memory_contents_meta: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class MemoryMiddleware(AgentMiddleware[Any, Any, Any]):
    """deepagents' ``MemoryMiddleware`` over memconfig's pipeline: same behaviour, every load logged.

    Args:
        backend: a deepagents backend (``FilesystemBackend``, ``StateBackend``,
            ``StoreBackend``, ``CompositeBackend`` …), or a factory called with
            the LangGraph runtime that returns one.
        sources: the memory files, in prompt order, as the backend names them.
        add_cache_control: tag the system message's last content block with
            ``cache_control`` (``{"type": "ephemeral"}``, or the config's
            ``appender.cache_control``) when the request's model is ``ChatAnthropic``.
        system_prompt: the template around the memory, with an ``{agent_memory}``
            slot; deepagents' own by default; ``None``: load, but add nothing.
        config: a memconfig config (a YAML path or a mapping) for memconfig's
            policies. Its ``sources``, if any, must name entries of *sources*
            and give their settings (``required``, ``max_chars`` …).

    Raises:
        TypeError: *system_prompt* is not a ``str`` or ``None``.
        ValueError: *system_prompt* has no ``{agent_memory}`` slot.
        ConfigError: *config* is not a valid config (a ``ValueError`` too).
    """

    trace_policy = getattr(_deepagents_memory.MemoryMiddleware, "trace_policy", None)
    state_schema = MemoryState
    excluded_as = _deepagents_memory.MemoryMiddleware
    """A harness profile that excludes deepagents' ``MemoryMiddleware`` by class excludes this one too."""

    def __init__(
        self,
        *,
        backend: Any,
        sources: list[str],
        add_cache_control: bool = False,
        system_prompt: str | None = DEFAULT_TEMPLATE,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    ) -> None:
        if system_prompt is not None:
            if not isinstance(system_prompt, str):
                raise TypeError(f"system_prompt must be str or None, got {type(system_prompt).__name__}")
            if "{agent_memory}" not in system_prompt:
                raise ValueError("system_prompt must contain the `{agent_memory}` format slot")
        paths = _paths(sources)
        self._backend = backend
        self.sources = sources
        self._add_cache_control = add_cache_control
        self.system_prompt = system_prompt
        self.config = _with_sources(config, paths) if config is not None else None
        self._policies = self.config is not None
        if self.config is not None:
            self.state_schema = MemoryStateWithMeta
        distinct = list(dict.fromkeys(paths))
        self._base = self.config or _plain_config(distinct)
        self._sources = _backend_sources(distinct, self.config)
        # Where each source's text is in the state: deepagents' path without a config, memconfig's key with one.
        self._state_keys = {
            s.key: s.key if self._policies else path for s, path in zip(self._sources, distinct, strict=True)
        }
        by_path = dict(zip(distinct, self._sources, strict=True))
        # In the prompt, deepagents lists a path as often as sources= does; memconfig puts each source in once.
        self._shown = [(self._state_keys[by_path[p].key], by_path[p]) for p in (distinct if self._policies else paths)]
        self._loader = _backend_loader(backend, self.config, paths)
        self._appender = LangchainAppender()
        loading = self._stages(None)  # the contents are read through the config's cache, laid out by its layout
        self._cache = loading.cache
        self._layout = loading.layout
        self._closing = tuple(stage for stage in (self._cache, self._loader) if provides(stage, Closing))
        control = self.config.appender.cache_control if self.config is not None else None
        self._control = (control or CacheControlConfig()).as_block()
        self._renders: dict[str, Pipeline] = {}
        self._lock = threading.Lock()
        if system_prompt is not None:
            self._renders[system_prompt] = self._render_pipeline(system_prompt)

    def __repr__(self) -> str:
        shown = [source.redact(source.url) for _, source in self._shown]
        return (
            f"MemoryMiddleware(backend={type(self._backend).__name__}, sources={shown!r}, "
            f"add_cache_control={self._add_cache_control}, config={'yes' if self._policies else 'no'})"
        )

    def close(self) -> None:
        """Stop what the middleware's stages hold (the ``watch`` policy's watcher); idempotent, as
        :meth:`Pipeline.close <memconfig.Pipeline.close>` (a later run starts it again)."""
        for stage in self._closing:
            stage.close()

    def __enter__(self) -> MemoryMiddleware:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- loading: before the agent runs ------------------------------------------

    def before_agent(  # type: ignore[override]
        self, state: Mapping[str, Any], runtime: Runtime[Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """Load the memory into the state: once per thread, or as the config's cache policy says."""
        started = time.perf_counter()
        with self._loader.bound(runtime), events.render_scope():
            if not self._policies and STATE_KEY in state:  # deepagents loads once per thread
                return None
            copy = self._held(state)
            return self._update(state, copy, run(self._resolve(copy)), started)

    async def abefore_agent(  # type: ignore[override]
        self, state: Mapping[str, Any], runtime: Runtime[Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """:meth:`before_agent` for ``ainvoke``: the backend's ``adownload_files`` is awaited."""
        started = time.perf_counter()
        with self._loader.bound(runtime), events.render_scope():
            if not self._policies and STATE_KEY in state:
                return None
            copy = self._held(state)
            return self._update(state, copy, await arun(self._resolve(copy)), started)

    def _resolve(self, copy: dict[str, Any]) -> Flow[Snapshot]:
        return self._cache.resolve(copy, self._loader, force=not self._policies)

    def _held(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Without a config, nothing: deepagents reads afresh whenever the state has no memory."""
        return held(state, (STATE_KEY, META_KEY)) if self._policies else {}

    def _update(
        self, state: Mapping[str, Any], copy: Mapping[str, Any], snapshot: Snapshot, started: float
    ) -> dict[str, Any] | None:
        if not self._policies:
            _raise_as_deepagents(snapshot)
            keys = self._state_keys
            return {STATE_KEY: {keys[key]: text for key, text in (copy.get(STATE_KEY) or {}).items()}}
        if snapshot.failures:
            fields = {
                "sources_loaded": len(snapshot.sections),
                "sources_skipped": snapshot.stats.get("sources_skipped", 0),
                "duration_ms": ms_since(started),
            }
            events.prompt_failed(snapshot.failures, fields)
            raise SourceError(snapshot.failures)
        return changes(state, copy)

    # -- injecting: every model call ---------------------------------------------

    def modify_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with the memory block added to its system message (and the cache breakpoint)."""
        system = request.system_message
        if self.system_prompt is not None:
            contents = (request.state or {}).get(STATE_KEY) or {}
            render = self._pipeline(self.system_prompt).build({STATE_KEY: contents})
            system = self._appender.append(system, render)
        if (
            self._add_cache_control
            and is_anthropic_chat_model(request.model)
            and system is not None
            and system.content_blocks
        ):
            blocks: list[ContentBlock] = list(system.content_blocks)
            blocks[-1] = cast(ContentBlock, {**blocks[-1], "cache_control": dict(self._control)})
            system = SystemMessage(content_blocks=blocks)
        if system is request.system_message:
            return request
        return request.override(system_message=system)

    def wrap_model_call(self, request: ModelRequest[Any], handler: Handler) -> ModelResponse[Any]:
        """Call the model with the memory in the system message."""
        return handler(self.modify_request(request))

    async def awrap_model_call(self, request: ModelRequest[Any], handler: AsyncHandler) -> ModelResponse[Any]:
        """:meth:`wrap_model_call` for ``ainvoke`` (rendering reads nothing, so it does not wait)."""
        return await handler(self.modify_request(request))

    def _format_agent_memory(self, contents: dict[str, str], template: str = DEFAULT_TEMPLATE) -> str:
        """The memory of *contents* in *template*'s ``{agent_memory}`` slot, as deepagents formats it."""
        pipeline = self._pipeline(template)
        sections, _, _ = pipeline.processors(_sections(self._shown, contents))
        return pipeline.formatter.format(sections).text

    # -- the stages ---------------------------------------------------------------

    def _pipeline(self, template: str) -> Pipeline:
        found = self._renders.get(template)
        if found is None:
            with self._lock:
                found = self._renders.get(template) or self._render_pipeline(template)
                self._renders[template] = found
        return found

    def _render_pipeline(self, template: str) -> Pipeline:
        """The stages for *template* over the state's contents: nothing is read when a model is called."""
        stages = self._stages(template, ContentsView(self._shown, STATE_KEY))
        return Pipeline(
            stages.loader, stages.cache, stages.formatter, self._appender, processors=stages.rules, config=self.config
        )

    def _stages(self, template: str | None, cache: StateCache | None = None) -> Stages:
        """The stages for *template* (:func:`~memconfig.wiring.build_stages`), over the backend's sources.

        Without a config, deepagents' cleaning: HTML comments only (a leading BOM
        stays, as there), nothing escaped. A config's own template wins over
        *template*; ``None``: the config's layout as it is.
        """
        config = self.config
        opts = config.formatter if config is not None else None
        own = opts is not None and (opts.template is not None or opts.template_file is not None)
        return build_stages(
            self._base,
            loader=self._loader,
            sources=self._sources,
            formatter=None if own or template is None else functools.partial(_formatter, template=template),
            cache=cache,
            appender=self._appender,
            enabled=None if config is not None else DEEPAGENTS_RULES,
        )


class ContentsView:
    """A state cache that never reads: the sections are the contents the state holds, in prompt order.

    A model call renders what its turn loaded. Equal contents give the same
    snapshot object, so an unchanged call is served from the pipeline's memo.
    The last few contents seen are kept (for the threads calling at once);
    they are compared text by text, which for the same strings is one identity
    check each, and for a state read back from a checkpoint one comparison.

    Args:
        shown: ``(state key, source)`` per section, in prompt order.
    """

    def __init__(self, shown: Sequence[tuple[str, Source]], state_key: str) -> None:
        self.shown = list(shown)
        self.sources = [source for _, source in self.shown]
        self.state_key = state_key
        self._keys = [key for key, _ in self.shown]
        self._seen: tuple[tuple[tuple[Any, ...], Snapshot], ...] = ()  # newest first; replaced whole, never changed
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ContentsView(state_key={self.state_key!r}, sources={len(self.shown)})"

    def resolve(self, state: MutableMapping[str, Any], loader: Any, *, force: bool = False) -> Flow[Snapshot]:
        contents = state.get(self.state_key) or {}
        texts = tuple(map(contents.get, self._keys))
        for seen, snapshot in self._seen:  # read without the lock: the tuple is never changed
            if seen == texts:
                return snapshot
        snapshot = self._snapshot(contents)
        with self._lock:
            self._seen = ((texts, snapshot), *self._seen[: _KEPT - 1])
        return snapshot
        yield  # a flow that never waits

    def _snapshot(self, contents: Mapping[str, str]) -> Snapshot:
        sections = _sections(self.shown, contents)
        missing = [source for key, source in dict(self.shown).items() if key not in contents]
        digest = hashlib.sha256(
            "".join(f"{s.source}\x1f{s.sha256}\x1e" for s in sections).encode()
            + "".join(f"{s.key}\x1d" for s in missing).encode()
        ).hexdigest()
        records = functools.partial(_records, self.shown, sections)  # not self: no cycle through the view
        stats = {"cache_hits": len(sections), "sources_skipped": len(missing)}
        return Snapshot(tuple(sections), digest, records, (), stats)


def _sections(shown: Sequence[tuple[str, Source]], contents: Mapping[str, str]) -> list[Section]:
    """A section per shown source with text in *contents*; its ``{path}`` is where the state holds it."""
    out = []
    for key, source in shown:
        text = contents.get(key)
        if text:
            sha = hashlib.sha256(text.encode()).hexdigest()
            out.append(Section(key, source.name, source.display_url, text, sha))
    return out


def _records(
    shown: Sequence[tuple[str, Source]], sections: Sequence[Section], chars: Mapping[str, int]
) -> tuple[SourceRecord, ...]:
    held = {s.source: s for s in sections}
    records = []
    for key, source in dict(shown).items():
        section = held.get(key)
        if section is not None:
            size = chars.get(source.key, 0)
            loaded = SourceRecord(
                source.name, source.key, source.display_url, Status.LOADED, chars=size, sha256=section.sha256
            )
            records.append(loaded)
        else:
            detail = "not in the state"
            records.append(
                SourceRecord(source.name, source.key, source.display_url, Status.SKIPPED, SkipReason.NOT_FOUND, detail)
            )
    return tuple(records)


def _raise_as_deepagents(snapshot: Snapshot) -> None:
    """Without a config, a backend error or undecodable bytes stop the run, as in deepagents (after the events)."""
    for result in snapshot.results:
        if not isinstance(result, BackendResult):
            continue
        if result.decode_error is not None:
            raise result.decode_error
        if result.backend_error is not None and result.reason != SkipReason.NOT_FOUND:
            source = result.source  # the path as given, credentials masked (for any other path: as deepagents says it)
            raise ValueError(f"Failed to download {source.redact(source.url)}: {result.backend_error}")


def _with_sources(config: str | os.PathLike[str] | Mapping[str, Any], sources: Sequence[str]) -> Config:
    """The config with the middleware's sources: its own entries give settings to those of the same path."""
    loaded = load_config(config) if isinstance(config, (str, os.PathLike)) else Config.from_mapping(config)
    if loaded.cache.state_key != STATE_KEY:
        raise ConfigError(f"cache.state_key: the deepagents drop-in keeps deepagents' key {STATE_KEY!r}")
    declared = {item.url: item for item in loaded.sources if item.url is not None}
    extra = [item.url or item.glob for item in loaded.sources if item.url not in sources]
    if extra:
        raise ConfigError(f"sources: {extra[0]!r} is not one of the middleware's sources= (add it there)")
    items = [declared.get(path) or _entry(path) for path in dict.fromkeys(sources)]
    return loaded.model_copy(update={"sources": items})


def _plain_config(paths: Sequence[str]) -> Config:
    """The config of a drop-in without one: memconfig's defaults, a source per path (never validated as URLs)."""
    return Config(version=1).model_copy(update={"sources": [_entry(path) for path in paths]})


def _entry(path: str) -> SourceConfig:
    """A source entry for a path of ``sources=``, not validated as a config's URL: no ``${VAR}`` in it is expanded."""
    return SourceConfig.model_construct(url=path)


def _backend_sources(paths: Sequence[str], config: Config | None) -> list[Source]:
    """A source per path, handed to the backend exactly as given: no ``${VAR}`` expanded, nothing made absolute.

    The path is the source's URL (never logged); its key and name, which are
    logged, have credentials masked. Two paths that mask alike get distinct keys.
    """
    known = config.secret_values if config is not None else ()
    items: Sequence[SourceConfig | None] = config.sources if config is not None else [None] * len(paths)
    out: list[Source] = []
    keys: set[str] = set()
    for path, item in zip(paths, items, strict=True):
        secrets = [*url_secrets(path), *known]
        redact = Redactor({}, secrets) if secrets else Redactor()
        key = masked = redact(path)
        while key in keys:
            key = f"{masked} ({len(keys) + 1})"
        keys.add(key)
        out.append(
            Source(
                key=key,
                name=key if item is None or item.name is None else redact(item.name),
                url=path,
                required=item is not None and item.required,
                redact=redact,
                title=None if item is None or item.title is None else redact(item.title),
                strip_frontmatter=None if item is None else item.strip_frontmatter,
            )
        )
    return out


def _backend_loader(backend: Any, config: Config | None, paths: Sequence[str]) -> BackendLoader:
    """The loader filling ``memory_contents`` through the backend."""
    if config is None:  # deepagents reads: no size limit, any text, the list as given, errors raised by the middleware
        return BackendLoader(backend, max_bytes=None, text_only=False, listed=paths)
    opts = config.loader
    return BackendLoader(
        backend, encoding=opts.encoding, on_decode_error=opts.on_decode_error, max_bytes=opts.max_bytes
    )


def _paths(sources: Any) -> list[str]:
    if not isinstance(sources, (list, tuple)) or not all(isinstance(p, str) for p in sources):
        raise TypeError(f"sources must be a list of str, got {sources!r}")
    return list(sources)


def _formatter(base: TemplateFormatter, template: str) -> TemplateFormatter | _StrFormat:
    """*base*'s layout with *template*; a template memconfig refuses is filled the way deepagents fills it."""
    try:
        return TemplateFormatter(dataclasses.replace(base.layout, template=template), base.titles)
    except (ConfigError, ValueError):
        return _StrFormat(
            TemplateFormatter(dataclasses.replace(base.layout, template="{agent_memory}"), base.titles), template
        )


class _StrFormat:
    """A template memconfig's safe templates refuse (a conversion, a spec), filled by ``str.format`` as in deepagents.

    The template is the developer's own Python string, not a config file's;
    file content is never parsed as a template either way. Its wrappers (for
    escaping) are the elements open where ``{agent_memory}`` first appears.
    """

    def __init__(self, body: TemplateFormatter, template: str) -> None:
        self.body, self.template = body, template
        self.layout = body.layout
        self.token = f"{body.token}|str.format:{hashlib.sha256(template.encode()).hexdigest()}"
        parts: list[tuple[bool, str]] = []
        for literal, field, _, _ in string.Formatter().parse(template):
            parts.append((False, literal))
            if field is not None:
                parts.append((True, field.split(".")[0].split("[")[0]))
        around = enclosing(parts, "agent_memory") if body.layout.escape else ()
        self.wrappers: tuple[str, ...] = tuple(dict.fromkeys((*around, *body.wrappers)))

    def format(self, sections: Sequence[Section]) -> Block:
        text = self.template.format(agent_memory=self.body.format(sections).text)
        return Block(text, hashlib.sha256(text.encode()).hexdigest())

    def sizes(self, sections: Sequence[Section], count: Callable[[str], int] = len) -> BlockSizes:
        """The block's size in parts, each measured on what :meth:`format` makes (see ``TemplateFormatter.sizes``)."""
        empty = count(self.layout.empty)
        frame = count(self.format(()).text) - empty
        laid_out = tuple(count(self.format((item,)).text) - frame for item in sections)
        return BlockSizes(frame, empty, count(self.layout.separator), laid_out)
