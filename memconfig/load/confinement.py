"""Confinement: which folders, protocols and hosts a config's sources may reach.

A config often comes from a repository someone else controls; ``loader.allowed_roots``,
``allowed_protocols`` and ``allowed_hosts`` say what it may read. They judge every place
a source reaches (:func:`memconfig.sources.reach.reach`: its URL's links and what its
storage options name), and with any of them set, an option memconfig cannot judge is
refused unless ``loader.allowed_options`` lists it. The checks run where the reads happen
(symlinks are resolved at read time, not when the config is loaded), and a refusal is a
skip with its reason, like any other source that cannot go in.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import fsspec

from ..model import SkipReason
from ..sources.hosts import HTTP, host_allowed, shown_host
from ..sources.urls import LOCAL, local_path_in, static_prefix

if TYPE_CHECKING:
    from pathlib import Path

    from ..config.schema import LoaderConfig
    from ..sources import Source
    from ..sources.reach import Reached

__all__ = ["Confinement", "Roots", "resolved_path"]


class Roots:
    """The folders local files must lie in, symlinks resolved."""

    __slots__ = ("_prefixes", "folders")

    def __init__(self, folders: Iterable[str]) -> None:
        self.folders = tuple(os.path.realpath(os.path.expanduser(f)) for f in folders)
        self._prefixes = tuple(f if f.endswith(os.sep) else f + os.sep for f in self.folders)

    def __repr__(self) -> str:
        return f"Roots({list(self.folders)!r})"

    def holds(self, real: str | None) -> bool:
        """Whether the resolved path *real* is one of the folders or lies inside one (``None``: no path, never)."""
        return real is not None and (real in self.folders or real.startswith(self._prefixes))

    def may_hold(self, real: str | None) -> bool:
        """Whether something below the resolved folder *real* can lie in a root: it is inside one, or holds one."""
        if real is None:
            return False
        below = real if real.endswith(os.sep) else real + os.sep
        return self.holds(real) or any(folder.startswith(below) for folder in self.folders)


class Confinement:
    """What a source may reach; :meth:`refusal` says why one may not.

    Args:
        roots: local files must resolve inside these folders (``None``: anywhere).
        protocols: the protocols every link of a source's URL must use (``None``: any);
            an fsspec alias counts as its filesystem's protocol (``local`` is ``file``).
        hosts: the hosts sources may connect to (``None``: any), through their URL, a
            proxy or an endpoint; ``*.example.com`` matches its subdomains, ``host:port`` one port.
        options: storage options (dotted names) allowed although memconfig cannot judge them.
    """

    def __init__(
        self,
        roots: Sequence[str] | None = None,
        protocols: Sequence[str] | None = None,
        hosts: Sequence[str] | None = None,
        options: Sequence[str] = (),
    ) -> None:
        self.roots = Roots(roots) if roots is not None else None
        self.protocols = frozenset(protocols) if protocols is not None else None
        self.hosts = tuple(h.lower() for h in hosts) if hosts is not None else None
        self.options = frozenset(options)

    @classmethod
    def from_config(cls, opts: LoaderConfig, base: Path) -> Confinement | None:
        """The confinement the ``loader`` settings set (roots relative to *base*, ``base_dir``), or ``None``."""
        if opts.allowed_roots is None and opts.allowed_protocols is None and opts.allowed_hosts is None:
            return None
        roots = None if opts.allowed_roots is None else [str(base / os.path.expanduser(r)) for r in opts.allowed_roots]
        return cls(roots, opts.allowed_protocols, opts.allowed_hosts, opts.allowed_options or ())

    def __repr__(self) -> str:
        return (
            f"Confinement(roots={self.roots!r}, protocols={self.protocols!r}, hosts={self.hosts!r},"
            f" options={sorted(self.options)!r})"
        )

    @property
    def token(self) -> str:
        """What is allowed: a state read under another allowance is read afresh."""
        roots = None if self.roots is None else self.roots.folders
        protocols = None if self.protocols is None else sorted(self.protocols)
        return repr((roots, protocols, self.hosts, *([sorted(self.options)] if self.options else [])))

    def refusal(self, source: Source) -> tuple[SkipReason, str] | None:
        """Why *source* may not be read, judged from its URL and its storage options, secrets masked.

        The local paths inside a URL (the archive of ``zip://a.md::/srv/x.zip``,
        the repository of ``git:///srv/repo:v1@a.md``) and those its options name
        (``fo``, ``cache_storage``) are resolved here; a plain local file's folder
        is checked at its read.
        """
        from ..sources.reach import reach  # only a config with an allow-list pays for the module

        for place in reach(source.url, source.storage_options):
            refused = self._judge(place, source)
            if refused is not None:
                return refused[0], source.redact(refused[1])
        return None

    def _judge(self, place: Reached, source: Source) -> tuple[SkipReason, str] | None:
        """Why the one *place* may not be reached, the option naming it first in the detail."""
        kind = place.kind
        if kind == "unknown" or kind == "unchecked":
            if place.option in self.options:
                return None
            if kind == "unknown":
                why = "is not one memconfig can check; list it in loader.allowed_options to allow it"
                return SkipReason.OPTION_NOT_ALLOWED, f"{place.where} {why}"
            return SkipReason.OPTION_NOT_ALLOWED, f"{place.where}: {place.value}"
        if kind == "link":
            refused = self._link(place, source)
        elif kind == "protocol":
            refused = self._protocol(place.value)
        elif kind == "host":
            refused = self._host(place.value)
        elif self.roots is not None and not self.roots.holds(resolved_path(place.value)):
            refused = SkipReason.OUTSIDE_ROOT, self.outside(place.value)
        else:
            refused = None
        if refused is None or not place.where:
            return refused
        return refused[0], f"{place.where}: {refused[1]}"

    def _link(self, place: Reached, source: Source) -> tuple[SkipReason, str] | None:
        part = place.part
        assert part is not None
        protocol = part.protocol or "file"
        refused = self._protocol(protocol)
        if refused is not None:
            return refused
        if self.hosts is not None:
            from ..sources.reach import connects

            host = connects(part, place.options or {})
            if host is False:
                return (
                    SkipReason.HOST_NOT_ALLOWED,
                    f"protocol {protocol!r} connects to hosts memconfig cannot tell, and loader.allowed_hosts is set",
                )
            refused = self._host(host.value) if host is not None else None
            if refused is not None:
                assert host is not None
                return refused[0], f"{host.where}: {refused[1]}" if host.where and not place.where else refused[1]
        if self.roots is None:
            return None
        if place.option or source.chained or protocol not in LOCAL:
            path = local_path_in(part)
            if path is not None and not self.roots.holds(resolved_path(path)):
                return SkipReason.OUTSIDE_ROOT, self.outside(path)
        elif source.glob and not self.roots.may_hold(resolved_path(static_prefix(part.path) or ".")):
            return SkipReason.OUTSIDE_ROOT, f"{self.outside(static_prefix(part.path))}: nothing was listed"
        return None

    def _protocol(self, protocol: str) -> tuple[SkipReason, str] | None:
        if self.protocols is not None and not _aliases(protocol) & self.protocols:
            return SkipReason.PROTOCOL_NOT_ALLOWED, f"protocol {protocol!r} is not in loader.allowed_protocols"
        return None

    def _host(self, url: str) -> tuple[SkipReason, str] | None:
        if self.hosts is not None and not host_allowed(url, self.hosts):
            return SkipReason.HOST_NOT_ALLOWED, f"host {shown_host(url)!r} is not in loader.allowed_hosts"
        return None

    def outside(self, path: str) -> str:
        """The detail of a local file outside the roots."""
        assert self.roots is not None
        real = resolved_path(path)
        where = f"{path} (resolves to {real})" if real is not None and real != path else path
        return f"{where} is outside loader.allowed_roots"


@functools.lru_cache(maxsize=64)
def _aliases(protocol: str) -> frozenset[str]:
    """*protocol* and the other names of its filesystem (``file`` and ``local``); ``http`` is not ``https``."""
    if protocol in HTTP:
        return frozenset({protocol})
    try:
        names = fsspec.get_filesystem_class(protocol).protocol
    except (ImportError, ValueError):
        return frozenset({protocol})
    return frozenset({protocol, *([names] if isinstance(names, str) else names)})


def resolved_path(path: str) -> str | None:
    """*path* with its symlinks resolved; ``None`` for one that names no file (a NUL byte: an option's value can
    hold anything), which no root holds."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return None
