"""Which hosts an HTTP source may reach (``loader.allowed_hosts``), checked before every request it sends.

A pattern is a host (``docs.example.com``), ``*.`` and a domain for its
subdomains (``*.example.com``: ``a.example.com``, ``a.b.example.com``, not
``example.com`` itself), either with a port (``example.com:8443``); without a
port any port matches, and a URL without one has its scheme's (80, 443).

:class:`HostGuard` is an aiohttp client middleware, which aiohttp calls for
every request, each hop of a redirect included, before it connects. Put in
an HTTP filesystem's ``client_kwargs``, it sees every request fsspec sends
for the source (the read, the ``HEAD`` of a fingerprint, the range reads of
a zip over HTTP), so none ever reaches a host outside the list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["DEFAULT_PORTS", "HTTP", "HostGuard", "HostNotAllowed", "host_allowed", "shown_host"]

HTTP = frozenset({"http", "https"})
"""The protocols whose sources reach a host."""
DEFAULT_PORTS = {"http": 80, "https": 443}


class HostNotAllowed(Exception):
    """A request was about to go to a host outside ``loader.allowed_hosts``, and was not sent.

    Attributes:
        host: ``host`` or ``host:port``; never the rest of the URL (its path and
            query may hold a token).
    """

    def __init__(self, host: str) -> None:
        super().__init__(host)
        self.host = host

    def __str__(self) -> str:
        return f"host {self.host!r} is not in loader.allowed_hosts"


@dataclass(frozen=True, slots=True)
class HostGuard:
    """An aiohttp client middleware: a request to a host *allowed* does not match raises :class:`HostNotAllowed`.

    Its ``repr`` is its list, so fsspec's instance cache (which tells
    filesystems apart by the ``repr`` of their options) shares one filesystem
    between sources with the same list.
    """

    allowed: tuple[str, ...]

    async def __call__(self, request: Any, handler: Any) -> Any:
        url = str(request.url)
        if not host_allowed(url, self.allowed):
            raise HostNotAllowed(shown_host(url))
        return await handler(request)


def host_allowed(url: str, allowed: Sequence[str]) -> bool:
    """Whether the host of *url* matches one of *allowed*: ``name``, ``*.name`` (subdomains), either with ``:port``."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:  # a port out of range, an IPv6 host without its "]"
        return False
    name = (parts.hostname or "").rstrip(".").lower()
    for pattern in allowed:
        pattern_name, colon, pattern_port = pattern.lower().rpartition(":")
        if not colon or not pattern_port.isdigit() or (":" in pattern_name and not pattern_name.endswith("]")):
            pattern_name, pattern_port = pattern.lower(), ""
        if pattern_port and int(pattern_port) != port:
            continue
        pattern_name = pattern_name.strip("[]").rstrip(".")
        if name == pattern_name or (pattern_name.startswith("*.") and name.endswith(pattern_name[1:])):
            return True
    return False


def shown_host(url: str) -> str:
    """The ``host`` or ``host:port`` of *url*, without user-info, path or query: for messages."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:  # an IPv6 host without its "]": what follows "//", up to the path
        netloc = re.split(r"[/?#]", url.partition("//")[2], maxsplit=1)[0]
    return netloc.rpartition("@")[2].lower()
