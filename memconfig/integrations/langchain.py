"""LangChain v1 middleware: a memconfig pipeline loads in ``before_agent`` and injects on every model call.

The contents live in the agent's state, in deepagents' shape
(``state[cache.state_key]`` is ``{source: content}``) with memconfig's meta
beside it (``state[cache.state_key + "_meta"]``). Both are private state: out
of the agent's input and output schemas, kept in checkpoints. So a
checkpointed thread carries what its last turn loaded, and each new turn asks
the cache policy what to read again: under ``revalidate`` an edit made between
two turns reaches the second one; under ``once`` the thread keeps what it
loaded first.

A model call injects the block of the load its turn made, kept by the state's
digest, so the calls of one turn (tool loops) render nothing again. A call
whose state this process has not loaded (a thread resumed from a checkpoint
after an interrupt, in a new process) builds from the state it has, and hands
back what changed as a state update with the model's response.

The paths in play of ``rules: frontmatter`` sources are the list under
``state["memconfig_paths"]`` (:attr:`MemconfigMiddleware.paths_key`), an
input key: the application passes it with the turn, and a tool may set it
with a ``Command(update=...)``; like any state key of a checkpointed thread,
it stays until replaced. A model call whose paths differ from those of its
turn's load renders the block again for them, reading nothing.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict, cast

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse
    from langchain.agents.middleware.types import ModelRequest, PrivateStateAttr
    from langgraph.types import Command
except ImportError:
    from ..install import install_hint

    raise ImportError(f"memconfig.integrations.langchain needs LangChain v1: {install_hint('langchain')}") from None
try:
    from langchain.agents.middleware import TracePolicy, omit_payload
except ImportError:  # a LangChain v1 from before trace policies: hooks are traced as LangChain does it
    TracePolicy = None  # type: ignore[assignment,misc]

from ..append.langchain import LangchainAppender
from ..config import Config
from ..pipeline import Pipeline
from ..process.rules import PathsInPlay, in_play
from ._agent import AsyncHandler, Handler, changes, held

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from ..model import Render
    from ..process import Placed
    from ..stages import Loader, Processor

__all__ = ["MemconfigMiddleware"]

_KEPT = 32  # distinct loads kept for injection: a few per live thread, small enough to stay flat


class MemconfigMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Adds memconfig's memory block to every model call of a ``create_agent`` agent.

    Build it with :meth:`from_yaml`, :meth:`from_config` or from a
    :class:`~memconfig.Pipeline`. The block goes in through the ``langchain``
    appender, configured by the config's ``appender`` section (separator,
    position, ``placement: user``, ``cache_control``), whatever its ``format``.

    Each run of the agent loads once (``before_agent``), with the config's
    cache policy deciding what is read again; every event of that load
    carries one ``render_id``.

    Raises (from ``invoke`` / ``ainvoke``):
        SourceError: a required source is not available. The run stops before
            the model is called, and the state keeps what it held.
    """

    trace_policy = (
        None if TracePolicy is None else TracePolicy(process_inputs=omit_payload, process_outputs=omit_payload)
    )
    """The hooks' spans and timings are traced, their payloads (the memory files' text) are not."""

    def __init__(self, pipeline: Pipeline, *, paths_key: str = "memconfig_paths") -> None:
        self.pipeline = pipeline
        config = pipeline.config or Config(version=1)
        self.state_key: str = getattr(pipeline.cache, "state_key", config.cache.state_key)
        self.meta_key: str = getattr(pipeline.cache, "meta_key", f"{self.state_key}_meta")
        self.paths_key = paths_key
        """The state key holding the paths in play (a list of paths), for ``rules: frontmatter`` sources."""
        self.state_schema = _private_state(self.state_key, self.meta_key, paths_key)
        appender = pipeline.appender
        if not isinstance(appender, LangchainAppender):
            appender = LangchainAppender.from_config(config.appender)
        self.appender = appender
        self._loads: OrderedDict[tuple[str, PathsInPlay], Render] = OrderedDict()
        self._lock = threading.Lock()
        self._owns = False  # a pipeline it built itself (from_config, from_yaml) is its to close

    @classmethod
    def from_config(
        cls,
        config: Config | Mapping[str, Any],
        *,
        processors: Sequence[Processor | Placed] = (),
        loader: Loader | None = None,
        paths_key: str = "memconfig_paths",
    ) -> MemconfigMiddleware:
        """Build from a config object or a plain mapping. Raises :class:`ConfigError`."""
        return cls._owning(Pipeline.from_config(config, processors=processors, loader=loader), paths_key)

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike[str],
        *,
        processors: Sequence[Processor | Placed] = (),
        loader: Loader | None = None,
        paths_key: str = "memconfig_paths",
    ) -> MemconfigMiddleware:
        """Build from a YAML config file. Raises :class:`ConfigError` naming the file."""
        return cls._owning(Pipeline.from_yaml(path, processors=processors, loader=loader), paths_key)

    @classmethod
    def _owning(cls, pipeline: Pipeline, paths_key: str) -> MemconfigMiddleware:
        middleware = cls(pipeline, paths_key=paths_key)
        middleware._owns = True
        return middleware

    def close(self) -> None:
        """Close the pipeline if this middleware built it (:meth:`Pipeline.close`); one given to it is the caller's."""
        if self._owns:
            self.pipeline.close()

    def __enter__(self) -> MemconfigMiddleware:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        """Unique per state key, so that two instances over different keys can share an agent."""
        default = "memory_contents"
        return type(self).__name__ if self.state_key == default else f"{type(self).__name__}[{self.state_key}]"

    def __repr__(self) -> str:
        return f"MemconfigMiddleware({self.pipeline!r}, state_key={self.state_key!r})"

    # -- loading: once per run ------------------------------------------------

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Load what the cache policy says must be read; return only the state keys that changed."""
        copy, paths = self._held(state), self._paths(state)
        self._keep(copy, paths, self.pipeline.build(copy, paths=paths))
        return changes(state, copy)

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """:meth:`before_agent` for ``ainvoke``: remote reads are awaited."""
        copy, paths = self._held(state), self._paths(state)
        self._keep(copy, paths, await self.pipeline.abuild(copy, paths=paths))
        return changes(state, copy)

    # -- injecting: every model call ------------------------------------------

    def wrap_model_call(self, request: ModelRequest[Any], handler: Handler) -> Any:
        """Call the model with the block of this state's load in the request."""
        paths = self._paths(request.state)
        render = self._kept(request.state, paths)
        update = None
        if render is None:
            copy = self._held(request.state)
            render = self._keep(copy, paths, self.pipeline.build(copy, paths=paths))
            update = changes(request.state, copy)
        return _with_update(handler(self._inject(request, render)), update)

    async def awrap_model_call(self, request: ModelRequest[Any], handler: AsyncHandler) -> Any:
        """:meth:`wrap_model_call` for ``ainvoke``."""
        paths = self._paths(request.state)
        render = self._kept(request.state, paths)
        update = None
        if render is None:
            copy = self._held(request.state)
            render = self._keep(copy, paths, await self.pipeline.abuild(copy, paths=paths))
            update = changes(request.state, copy)
        return _with_update(await handler(self._inject(request, render)), update)

    def _inject(self, request: ModelRequest[Any], render: Render) -> ModelRequest[Any]:
        appender = self.appender
        if appender.placement == "user":
            return request.override(messages=cast(list[Any], appender.insert(request.messages, render)))
        system = appender.append(request.system_message, render)
        return request if system is request.system_message else request.override(system_message=system)

    # -- the state's keys, and the loads kept ---------------------------------

    def _held(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return held(state, (self.state_key, self.meta_key))

    def _digest(self, state: Mapping[str, Any]) -> str | None:
        meta = state.get(self.meta_key)
        found = meta.get("digest") if isinstance(meta, dict) else None
        return found if isinstance(found, str) else None

    def _paths(self, state: Mapping[str, Any]) -> PathsInPlay:
        """The state's paths in play, normalised; none when the pipeline has no rules (its block cannot differ).

        Raises:
            TypeError: the key holds something else than a path or a list of paths.
        """
        if not self.pipeline.takes_paths:
            return ()
        try:
            return in_play(state.get(self.paths_key))
        except TypeError as exc:
            raise TypeError(f"state[{self.paths_key!r}]: {exc}") from None

    def _keep(self, held: Mapping[str, Any], paths: PathsInPlay, render: Render) -> Render:
        digest = self._digest(held)
        if digest is not None:
            key = (digest, paths)
            with self._lock:
                self._loads[key] = render
                self._loads.move_to_end(key)
                while len(self._loads) > _KEPT:
                    self._loads.popitem(last=False)
        return render

    def _kept(self, state: Mapping[str, Any], paths: PathsInPlay) -> Render | None:
        """The render of the load that made *state*, for *paths*, if made here (a dict read needs no lock)."""
        digest = self._digest(state)
        return self._loads.get((digest, paths)) if digest is not None and self.state_key in state else None


def _private_state(state_key: str, meta_key: str, paths_key: str) -> type[AgentState[Any]]:
    """The state schema: the content keys private (out of input and output, kept in checkpoints), the paths input."""
    fields = {
        state_key: NotRequired[Annotated[dict[str, str], PrivateStateAttr]],
        meta_key: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]],
        paths_key: NotRequired[list[str]],
    }
    return cast("type[AgentState[Any]]", TypedDict("MemconfigState", fields))  # type: ignore[operator]


def _with_update(response: Any, update: MutableMapping[str, Any] | None) -> Any:
    """The model's response, with the state keys a load made during the call to be written back."""
    if not update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=dict(update)))
