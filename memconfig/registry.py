"""Open registries: the names a config may use for appenders, expanders, processors and loaders.

Each registry maps a name (for loaders: a URL protocol) to an entry whose
``target`` says where the implementation lives: ``"module:attr"``, imported
the first time it is asked for, or the object itself. memconfig's own
implementations are registered below, as strings, exactly as a plugin's are.
A plugin package adds its own through entry points in the groups
``memconfig.appenders``, ``memconfig.expanders``, ``memconfig.processors``
and ``memconfig.loaders``, read the first time a name is not found or the
names are listed (never at import: start-up time is measured), or from
Python with :func:`register`, as fsspec's ``register_implementation`` does.

A miss says what there is to choose from; a target whose module cannot be
imported says what to install. This module depends on nothing but
:mod:`memconfig.exceptions` (and the leaves :mod:`memconfig.suggest` and, for a
missing extra's message, :mod:`memconfig.install`), so the config's schema can check
a name against a registry without importing a single stage.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from .exceptions import ConfigError
from .install import install_hint
from .suggest import did_you_mean

__all__ = [
    "APPENDERS",
    "EXPANDERS",
    "LOADERS",
    "PROCESSORS",
    "AppenderEntry",
    "Entry",
    "Registry",
    "RegistryView",
    "register",
]


class Entry(NamedTuple):
    """Where an expander, processor or loader lives, and what to install for it.

    Attributes:
        target: ``"module:attr"`` (imported on first use) or the object itself.
        extra: the memconfig extra that brings what it imports (the message names the command that installs it).
        errtxt: said instead when the import fails (the name of a package outside memconfig's extras).
    """

    target: Any
    extra: str | None = None
    errtxt: str | None = None


class AppenderEntry(NamedTuple):
    """Where an appender lives (``module:Class``, built with ``from_config``) and the extra it needs.

    Attributes:
        printable: ``memconfig render --format NAME`` can print it (the class has
            ``output(system, render)``: a ``str`` printed as it is, else data printed as JSON);
            ``None`` (a plugin's, from an entry point): as its class says, once it is imported.
        honours: the ``appender`` settings this shape uses; setting another to
            something other than its default is a config error at its key path
            (``None``: no check).
        errtxt: said instead of the install hint when the import fails.
    """

    target: Any
    extra: str | None = None
    printable: bool | None = False
    honours: frozenset[str] | None = None
    errtxt: str | None = None


E = TypeVar("E", Entry, AppenderEntry)

Kind = Literal["appenders", "expanders", "processors", "loaders"]


class Registry(Generic[E]):
    """Names to entries, filled by memconfig, by :meth:`register` and by the entry points of group *group*.

    Args:
        what: how a message names one entry (``"output format"``, ``"processor"``).
        group: the entry-point group plugins register in (``memconfig.appenders``).
        make: builds an entry from a target and the fields :meth:`register` is given.
        build: turns a loaded target into what :meth:`load` gives (an expander class into
            an expander); ``None``: the target as it is.
    """

    def __init__(
        self, what: str, group: str, make: Callable[..., E], build: Callable[[Any], Any] | None = None
    ) -> None:
        self.what = what
        self.group = group
        self._make: Callable[..., E] = make
        self._build = build
        self._entries: dict[str, E] = {}
        self._loaded: dict[str, Any] = {}
        self._scanned = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Registry({self.group!r}, {sorted(self._entries)!r})"

    def register(self, name: str, target: Any, *, clobber: bool = False, **fields: Any) -> None:
        """Register *target* (``"module:attr"`` or the object) as *name*; *fields* fill the rest of its entry.

        Raises:
            ValueError: *name* is registered already and *clobber* is not set.
        """
        with self._lock:
            if name in self._entries and not clobber:
                raise ValueError(f"{self.what} {name!r} is registered already (pass clobber=True to replace it)")
            self._entries[name] = self._make(target, **fields)
            self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Take *name* out (a test's or a plugin's own registration); an entry point's comes back only on restart."""
        with self._lock:
            del self._entries[name]
            self._loaded.pop(name, None)

    def get(self, name: str, *, scan: bool = True) -> E | None:
        """The entry called *name*, or ``None``; a miss reads the entry points once (unless not *scan*), then looks
        again."""
        found = self._entries.get(name)
        if found is None and scan and not self._scanned:
            self._scan()
            found = self._entries.get(name)
        return found

    def entry(self, name: str) -> E:
        """The entry called *name*.

        Raises:
            ConfigError: none is registered; the message lists the choices.
        """
        found = self.get(name)
        if found is None:
            raise ConfigError(self.unknown(name))
        return found

    def listed(self) -> list[str]:
        """Every registered name, in the order registered (memconfig's own first; the entry points read first)."""
        self._scan()
        return list(self._entries)

    def names(self) -> list[str]:
        """Every registered name, sorted, as messages list them."""
        return sorted(self.listed())

    def unknown(self, name: str) -> str:
        """What to say of a name that is not registered: it, and every name that is."""
        names = self.names()
        return f"unknown {self.what} {name!r}{did_you_mean(name, names)}; choose one of: {', '.join(names)}"

    def load(self, name: str) -> Any:
        """What *name* stands for, imported (once) and built.

        Raises:
            ConfigError: *name* is not registered (the choices listed), or its
                module cannot be imported (the message says what to install).
        """
        loaded = self._loaded.get(name)
        if loaded is not None:
            return loaded
        entry = self.entry(name)
        target = entry.target
        if isinstance(target, str):
            module_name, _, attribute = target.partition(":")
            try:
                target = importlib.import_module(module_name)
            except ImportError as exc:
                hint = entry.errtxt or (install_hint(entry.extra) if entry.extra else str(exc))
                raise ConfigError(f"{self.what} {name!r} needs a package that is not installed ({hint})") from None
            for part in attribute.split(".") if attribute else ():
                target = getattr(target, part)
        built = target if self._build is None else self._build(target)
        self._loaded[name] = built
        return built

    def view(self, *, loaded: bool = False) -> RegistryView[E]:
        """A read-only mapping of this registry, kept current: of entries, or (*loaded*) of what they stand for."""
        return RegistryView(self, loaded)

    def _scan(self) -> None:
        """Add the entry points of :attr:`group` that no name registered here already has (once)."""
        if self._scanned:
            return
        from importlib.metadata import entry_points  # only a miss or a listing pays for reading the metadata

        found = entry_points(group=self.group)
        with self._lock:
            for point in found:
                if point.name not in self._entries:
                    self._entries[point.name] = self._make(point.value)
            self._scanned = True


class RegistryView(Mapping[str, Any], Generic[E]):
    """A registry as a read-only mapping: names to entries, or to what they stand for (imported on access)."""

    __slots__ = ("_loaded", "_registry")

    def __init__(self, registry: Registry[E], loaded: bool) -> None:
        self._registry: Registry[E] = registry
        self._loaded = loaded

    def __getitem__(self, name: str) -> Any:
        entry = self._registry.get(name)
        if entry is None:
            raise KeyError(name)
        return self._registry.load(name) if self._loaded else entry

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._registry.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.listed())

    def __len__(self) -> int:
        return len(self._registry.listed())

    def __bool__(self) -> bool:
        return bool(self._registry._entries) or len(self) > 0  # a registry with entries needs no entry points read

    def __repr__(self) -> str:
        return f"RegistryView({self._registry.group!r}, {self._registry.listed()!r})"


def _appender(
    target: Any,
    extra: str | None = None,
    printable: bool | None = None,
    honours: frozenset[str] | None = None,
    errtxt: str | None = None,
) -> AppenderEntry:
    """An appender's entry; one from an entry point says nothing of *printable*: its class decides."""
    return AppenderEntry(target, extra, printable, honours, errtxt)


def _instance(target: Any) -> Any:
    """An expander registered as a class is made once, with no arguments; one registered as an object is used."""
    return target() if isinstance(target, type) else target


appenders: Registry[AppenderEntry] = Registry("output format", "memconfig.appenders", _appender)
expanders: Registry[Entry] = Registry("expander", "memconfig.expanders", Entry, _instance)
processors: Registry[Entry] = Registry("processor", "memconfig.processors", Entry)
loaders: Registry[Entry] = Registry("loader", "memconfig.loaders", Entry)

_REGISTRIES: Mapping[str, Registry[Any]] = {
    "appenders": appenders,
    "expanders": expanders,
    "processors": processors,
    "loaders": loaders,
}


def register(kind: Kind, name: str, target: Any, *, clobber: bool = False, **fields: Any) -> None:
    """Register *target* as *name* in the registry of *kind*, as an entry point would.

    Args:
        kind: ``"appenders"``, ``"expanders"``, ``"processors"`` or ``"loaders"``
            (for a loader, *name* is the URL protocol it reads: ``mydb`` for ``mydb://…``).
        target: ``"module:attr"`` (imported when first used) or the object itself: an
            appender or processor class with ``from_config``, an expander (or its class),
            a loader class with ``from_config``.
        clobber: replace an entry of that name (else that is a ``ValueError``).
        fields: the rest of the entry: ``extra`` / ``errtxt`` (what to install), and for an
            appender ``printable`` and ``honours``.
    """
    if kind not in _REGISTRIES:
        hint = did_you_mean(kind, _REGISTRIES)
        raise ValueError(f"unknown registry {kind!r}{hint}; choose one of: {', '.join(_REGISTRIES)}")
    _REGISTRIES[kind].register(name, target, clobber=clobber, **fields)


# memconfig's own, registered the way a plugin's are: by where they live, imported when first used.
appenders.register(
    "text", "memconfig.append.text:TextAppender", printable=True, honours=frozenset({"separator", "position"})
)
appenders.register("json", "memconfig.append.json:JSONAppender", printable=True, honours=frozenset())
appenders.register(
    "openai",
    "memconfig.append.openai:OpenAIAppender",
    printable=True,
    honours=frozenset({"separator", "position", "placement", "role"}),
)
appenders.register(
    "anthropic",
    "memconfig.append.anthropic:AnthropicAppender",
    printable=True,
    honours=frozenset({"position", "placement", "cache_control"}),
)
appenders.register(
    "langchain",
    "memconfig.append.langchain:LangchainAppender",
    extra="langchain",
    printable=False,
    honours=frozenset({"separator", "position", "placement", "cache_control"}),
)
processors.register("strip_bom", "memconfig.process.cleaning:StripBOM")
processors.register("strip_html_comments", "memconfig.process.cleaning:StripHTMLComments")
processors.register("strip_frontmatter", "memconfig.process.frontmatter:StripFrontmatter")
expanders.register("glob", "memconfig.expand.glob:GlobExpander")
expanders.register("discover", "memconfig.expand.discover:DiscoverExpander")

APPENDERS: Mapping[str, AppenderEntry] = appenders.view()
"""The appenders by name (``appender.format``): a read-only view of the registry, entry points included."""
EXPANDERS: Mapping[str, Any] = expanders.view(loaded=True)
"""The expanders by name, each made on first access: a read-only view of the registry."""
PROCESSORS: Mapping[str, Entry] = processors.view()
"""The processors a config may name (``processors: [{name: …}]``): a read-only view of the registry."""
LOADERS: Mapping[str, Entry] = loaders.view()
"""The loaders by the URL protocol they read: a read-only view of the registry (fsspec's protocols need none)."""
