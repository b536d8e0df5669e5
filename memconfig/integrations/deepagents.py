"""A drop-in for deepagents' ``MemoryMiddleware``: the same constructor, state and messages, plus load events.

Change one import (``from memconfig.integrations.deepagents import
MemoryMiddleware``) and an agent sees what deepagents' middleware gives it:
``state["memory_contents"]`` as ``{path: text}`` (private state), loaded once
per thread through the same backend in one batched download, and the memory
block as one more text block of the system message, tagged for Anthropic's
prompt cache when asked. What changes is what the operator sees: every
source's ``source_loaded`` / ``source_skipped`` event and a ``prompt_built``
per model call. deepagents' template is read from the installed package.

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
import hashlib
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, cast

try:
    from deepagents.middleware import memory as _deepagents_memory
    from deepagents.middleware._utils import is_anthropic_chat_model
    from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse, PrivateStateAttr
    from langchain_core.messages import ContentBlock, SystemMessage
except ImportError:
    raise ImportError(
        "memconfig.integrations.deepagents needs deepagents: pip install 'memconfig[deepagents]'"
    ) from None

from .. import events
from ..append.langchain import LangchainAppender
from ..config import Config, load_config
from ..config.schema import SourceConfig
from ..drive import Flow, arun, run
from ..exceptions import ConfigError, SourceError
from ..failures import SkipReason
from ..format import TemplateFormatter
from ..load.backend import BackendLoader, BackendResult
from ..pipeline import Pipeline
from ..process import StripHTMLComments
from ..render import Lazy, Section, SourceRecord
from ..sources import Source
from ..stages import Block, Formatter, Processor, Snapshot

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.runtime import Runtime

__all__ = ["MemoryMiddleware", "MemoryState"]

#: deepagents' own state schema and template, from the installed package (never copied).
MemoryState = _deepagents_memory.MemoryState
DEFAULT_TEMPLATE: str = _deepagents_memory.MEMORY_SYSTEM_PROMPT
STATE_KEY = "memory_contents"
META_KEY = f"{STATE_KEY}_meta"
_EPHEMERAL: Mapping[str, str] = MappingProxyType({"type": "ephemeral"})
_Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
_AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


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
        self._backend = backend
        self.sources = sources
        self._add_cache_control = add_cache_control
        self.system_prompt = system_prompt
        self.config = _with_sources(config, sources) if config is not None else None
        self._policies = self.config is not None
        if self.config is not None:
            self.state_schema = MemoryStateWithMeta
        self._loading = _loading_pipeline(backend, self.config, sources)
        self._appender = LangchainAppender()
        self._control = _cache_control(self.config)
        self._renders: dict[str | None, Pipeline] = {}
        self._lock = threading.Lock()
        if system_prompt is not None:
            self._renders[system_prompt] = self._render_pipeline(system_prompt)

    def __repr__(self) -> str:
        return (
            f"MemoryMiddleware(backend={type(self._backend).__name__}, sources={self.sources!r}, "
            f"add_cache_control={self._add_cache_control}, config={'yes' if self._policies else 'no'})"
        )

    # -- loading: before the agent runs ------------------------------------------

    def before_agent(  # type: ignore[override]
        self, state: Mapping[str, Any], runtime: Runtime[Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """Load the memory into the state: once per thread, or as the config's cache policy says."""
        loader = cast(BackendLoader, self._loading.loader)
        with loader.bound(runtime), events.render_scope():
            if not self._policies and STATE_KEY in state:  # deepagents loads once per thread
                return None
            held = self._held(state)
            return self._update(state, held, run(self._resolve(held, not self._policies)))

    async def abefore_agent(  # type: ignore[override]
        self, state: Mapping[str, Any], runtime: Runtime[Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """:meth:`before_agent` for ``ainvoke``: the backend's ``adownload_files`` is awaited."""
        loader = cast(BackendLoader, self._loading.loader)
        with loader.bound(runtime), events.render_scope():
            if not self._policies and STATE_KEY in state:
                return None
            held = self._held(state)
            snapshot = await arun(self._resolve(held, not self._policies))
            return self._update(state, held, snapshot)

    def _resolve(self, held: dict[str, Any], force: bool) -> Flow[Snapshot]:
        return self._loading.cache.resolve(held, self._loading.loader, force=force)

    def _held(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of the state's memory keys: the cache writes to it, never to the agent's state."""
        if not self._policies:
            return {}
        return {key: state[key] for key in (STATE_KEY, META_KEY) if key in state}

    def _update(self, state: Mapping[str, Any], held: Mapping[str, Any], snapshot: Snapshot) -> dict[str, Any] | None:
        if not self._policies:
            _raise_as_deepagents(snapshot)
            return {STATE_KEY: dict(held.get(STATE_KEY) or {})}
        if snapshot.failures:
            stats = snapshot.stats
            fields = {"sources_loaded": len(snapshot.sections), "sources_skipped": stats.get("sources_skipped", 0)}
            events.prompt_failed(snapshot.failures, {**fields, "duration_ms": 0.0})
            raise SourceError(snapshot.failures)
        changed = {key: value for key, value in held.items() if value is not state.get(key)}
        return changed or None

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

    def wrap_model_call(self, request: ModelRequest[Any], handler: _Handler) -> ModelResponse[Any]:
        """Call the model with the memory in the system message."""
        return handler(self.modify_request(request))

    async def awrap_model_call(self, request: ModelRequest[Any], handler: _AsyncHandler) -> ModelResponse[Any]:
        """:meth:`wrap_model_call` for ``ainvoke`` (rendering reads nothing, so it does not wait)."""
        return await handler(self.modify_request(request))

    def _format_agent_memory(self, contents: dict[str, str], template: str = DEFAULT_TEMPLATE) -> str:
        """The memory of *contents* in *template*'s ``{agent_memory}`` slot, as deepagents formats it."""
        pipeline = self._pipeline(template)
        sections, _, _ = pipeline.processors(_sections(self._view_sources, contents))
        return pipeline.formatter.format(sections).text

    # -- the stages ---------------------------------------------------------------

    @property
    def _view_sources(self) -> list[Source]:
        by_key = {s.key: s for s in cast(Any, self._loading.cache).sources}
        return [by_key[key] for key in self.sources if key in by_key]

    def _pipeline(self, template: str) -> Pipeline:
        found = self._renders.get(template)
        if found is None:
            with self._lock:
                found = self._renders[template] = self._render_pipeline(template)
        return found

    def _render_pipeline(self, template: str) -> Pipeline:
        """Processors and formatter over the state's contents: nothing is read when a model is called."""
        loading = self._loading
        config = self.config
        if config is not None:
            processors: Sequence[Processor] = loading.processors.processors
            own = config.formatter.template is not None or config.formatter.template_file is not None
            formatter: Formatter = loading.formatter if own else _formatter(loading.formatter, template)
        else:  # deepagents' cleaning: comments only (a leading BOM stays, as there)
            processors = [StripHTMLComments()]
            formatter = _formatter(loading.formatter, template)
        view = ContentsView(self._view_sources, STATE_KEY)
        return Pipeline(loading.loader, view, formatter, self._appender, processors=processors, config=config)


class ContentsView:
    """A state cache that never reads: the sections are the contents the state holds, in source order.

    A model call renders what its turn loaded; the same contents give the same
    snapshot object, so an unchanged call is served from the pipeline's memo.
    """

    def __init__(self, sources: Sequence[Source], state_key: str) -> None:
        self.sources = list(sources)
        self.state_key = state_key
        self._last: tuple[dict[str, str], Snapshot] | None = None

    def __repr__(self) -> str:
        return f"ContentsView(state_key={self.state_key!r}, sources={len(self.sources)})"

    def resolve(self, state: MutableMapping[str, Any], loader: Any, *, force: bool = False) -> Flow[Snapshot]:
        contents = state.get(self.state_key) or {}
        last = self._last
        if last is not None and last[0] == contents:
            return last[1]
        sections = _sections(self.sources, contents)
        missing = [s for s in self.sources if s.key not in contents]
        digest = hashlib.sha256(
            "".join(f"{s.source}\x1f{s.sha256}\x1e" for s in sections).encode()
            + "".join(f"{s.key}\x1d" for s in missing).encode()
        ).hexdigest()
        records = Lazy(lambda: _records(self.sources, sections))
        stats = {"cache_hits": len(sections), "sources_skipped": len(missing)}
        snapshot = Snapshot(tuple(sections), digest, records, (), stats)
        self._last = (dict(contents), snapshot)
        return snapshot
        yield  # a flow that never waits


def _sections(sources: Sequence[Source], contents: Mapping[str, str]) -> list[Section]:
    out = []
    for source in sources:
        text = contents.get(source.key)
        if text:
            sha = hashlib.sha256(text.encode()).hexdigest()
            out.append(Section(source.key, source.name, source.display_url, text, sha))
    return out


def _records(sources: Sequence[Source], sections: Sequence[Section]) -> tuple[SourceRecord, ...]:
    held = {s.source: s for s in sections}
    records = []
    for source in sources:
        section = held.get(source.key)
        if section is not None:
            records.append(SourceRecord(source.name, source.key, source.display_url, "loaded", sha256=section.sha256))
        else:
            detail = "not in the state"
            records.append(
                SourceRecord(source.name, source.key, source.display_url, "skipped", SkipReason.NOT_FOUND, detail)
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
            raise ValueError(f"Failed to download {result.source.key}: {result.backend_error}")


def _with_sources(config: str | os.PathLike[str] | Mapping[str, Any], sources: Sequence[str]) -> Config:
    """The config with the middleware's sources: its own entries give settings to those of the same path."""
    loaded = load_config(config) if isinstance(config, (str, os.PathLike)) else Config.from_mapping(config)
    if loaded.cache.state_key != STATE_KEY:
        raise ConfigError(f"cache.state_key: the deepagents drop-in keeps deepagents' key {STATE_KEY!r}")
    declared = {item.url: item for item in loaded.sources if item.url is not None}
    extra = [item.url or item.glob for item in loaded.sources if item.url not in sources]
    if extra:
        raise ConfigError(f"sources: {extra[0]!r} is not one of the middleware's sources= (add it there)")
    items = [declared.get(path) or SourceConfig(url=path) for path in dict.fromkeys(sources)]
    return loaded.model_copy(update={"sources": items})


def _loading_pipeline(backend: Any, config: Config | None, sources: Sequence[str]) -> Pipeline:
    """The pipeline whose loader and state cache fill ``memory_contents`` through the backend."""
    if config is None:  # deepagents reads: no size limit, any text, errors raised by the middleware
        config = Config.from_mapping({"version": 1, "sources": [_plain(p) for p in dict.fromkeys(_paths(sources))]})
        loader = BackendLoader(backend, max_bytes=None, text_only=False)
    else:
        opts = config.loader
        loader = BackendLoader(
            backend, encoding=opts.encoding, on_decode_error=opts.on_decode_error, max_bytes=opts.max_bytes
        )
    return Pipeline.from_config(config, loader=loader)


def _paths(sources: Any) -> list[str]:
    if not isinstance(sources, (list, tuple)) or not all(isinstance(p, str) for p in sources):
        raise TypeError(f"sources must be a list of str, got {sources!r}")
    return list(sources)


def _plain(path: str) -> dict[str, str]:
    """A source entry for *path* as deepagents takes it: the path is the key, handed to the backend as is."""
    return {"url": path}


def _formatter(base: Formatter, template: str) -> Formatter:
    """*base*'s layout with *template*; a template memconfig refuses is filled the way deepagents fills it."""
    layout = cast(TemplateFormatter, base).layout
    try:
        return TemplateFormatter(dataclasses.replace(layout, template=template))
    except (ConfigError, ValueError):
        return _StrFormat(TemplateFormatter(dataclasses.replace(layout, template="{agent_memory}")), template)


class _StrFormat:
    """A template memconfig's safe templates refuse (a conversion, a spec), filled by ``str.format`` as in deepagents.

    The template is the developer's own Python string, not a config file's;
    file content is never parsed as a template either way.
    """

    def __init__(self, body: TemplateFormatter, template: str) -> None:
        self.body, self.template = body, template
        self.token = f"{body.token}|str.format:{hashlib.sha256(template.encode()).hexdigest()}"

    def format(self, sections: Sequence[Section]) -> Block:
        text = self.template.format(agent_memory=self.body.format(sections).text)
        return Block(text, hashlib.sha256(text.encode()).hexdigest())


def _cache_control(config: Config | None) -> Mapping[str, Any]:
    control = config.appender.cache_control if config is not None else None
    return control.model_dump(exclude_none=True) if control is not None else _EPHEMERAL
