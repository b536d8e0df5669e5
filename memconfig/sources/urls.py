"""How memconfig reads a source's URL: the one place URLs are interpreted.

fsspec parses URLs (``split_protocol``, ``url_to_fs``); this module only
splits ``::`` chains (:func:`chain`) to find which local parts need resolving,
which protocols must be installed and which filesystem each storage option is
for, and derives the key of a glob's match from the pattern as written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import fsspec
from fsspec.core import split_protocol
from fsspec.implementations.local import LocalFileSystem

from ..install import install_hint
from ..interpolation import expand_vars
from ..registry import loaders
from ..suggest import did_you_mean
from .redact import redact_url

__all__ = [
    "EXTRAS",
    "IN_PROCESS",
    "LOCAL",
    "WILDCARDS",
    "Part",
    "absolute",
    "chain",
    "first_magic",
    "literal_folder",
    "local_path",
    "local_path_in",
    "looks_like_glob",
    "match_key",
    "protocol_problem",
    "registered_protocol",
    "resolve_url",
    "url_problem",
]

#: Which memconfig extra brings a protocol's filesystem.
EXTRAS: Mapping[str, str] = {
    "http": "http",
    "https": "http",
    "s3": "s3",
    "s3a": "s3",
    "git": "git",
}
LOCAL = frozenset({"file", "local"})
IN_PROCESS = frozenset({None, "file", "local", "memory"})
#: What makes a part of a glob a pattern: fsspec's wildcards. A discovery's patterns (wcmatch, with
#: braces) count ``{`` too; a glob's ``{`` is a plain character, as fsspec reads it.
WILDCARDS = frozenset("*?[")
_BRACED = WILDCARDS | {"{"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Protocols whose URLs name a host (and maybe a port) after "//".
_HOSTED = frozenset({"http", "https", "ftp", "sftp", "ssh", "smb", "webdav", "webhdfs"})
_BRACKETED_HOST = re.compile(
    r"(?P<protocol>[A-Za-z][A-Za-z0-9+.-]*)://(?:[^/@\[\]]*@)?\[(?P<address>[^\]/]*)(?P<closed>\]?)"
)
_WORD = re.compile(r"[a-z]+")


class Part(NamedTuple):
    """One part of a (``::``-chained) URL."""

    protocol: str | None
    """As fsspec reads it; ``None`` for a plain path."""
    path: str
    """The part after ``protocol://``."""
    text: str
    """The part as written."""


def chain(url: str) -> tuple[Part, ...]:
    """The parts of a URL, outermost first: one part unless it is chained with ``::``.

    As in fsspec, a chained part that is a bare protocol name
    (``simplecache::s3://bucket/a.md``) is that protocol with no path.
    """
    if "::" not in url:
        return _single(url)
    parts = []
    for text in url.split("::"):
        if _WORD.fullmatch(text) or text in fsspec.available_protocols():
            parts.append(Part(text, "", text))
        else:
            protocol, path = split_protocol(text)
            parts.append(Part(protocol, path, text))
    return tuple(parts)


def _single(url: str) -> tuple[Part, ...]:
    if "://" not in url and not url.startswith("data:"):  # no protocol, as fsspec's split_protocol reads it
        return (Part(None, url, url),)
    protocol, path = split_protocol(url)
    return (Part(protocol, path, url),)


def local_path(url: str) -> str | None:
    """The file on this machine a source's URL names (a plain path, a ``file://`` or ``local://`` URL), else ``None``.

    Read as the loader forms them: a glob's match is ``file://`` and the path as it
    is (fsspec's ``unstrip_protocol``), not percent-encoded, so ``r%20x/``, ``#`` and
    ``?`` are the folder's and the file's own names, never decoded or cut.
    """
    parts = chain(url)
    if len(parts) != 1 or not (parts[0].protocol is None or parts[0].protocol in LOCAL):
        return None
    return parts[0].path or None


def local_path_in(part: Part) -> str | None:
    """The path on this machine a link of a URL reads: a local file's, a git repository's; ``None`` if none.

    A local file's path is read as fsspec's local filesystem reads it: one
    ``file://`` or ``file:`` prefix taken off, ``~`` expanded, absolute.
    """
    if (part.protocol is None or part.protocol in LOCAL) and part.path:
        path: str = LocalFileSystem._strip_protocol(part.text)
        return path
    if part.protocol == "git":
        repo, colon, _ = part.path.partition(":")
        return repo if colon and repo else None
    return None


def first_magic(parts: Sequence[str], *, braces: bool = False) -> int | None:
    """The index of the first of a pattern's ``/``-separated *parts* with a wildcard (``None``: a plain path).

    The one reading of "where a pattern's literal folder ends", for globs
    (:func:`static_prefix`, a glob's watched folder) and, with *braces*, a
    discovery's patterns (:func:`literal_folder`).
    """
    magic = _BRACED if braces else WILDCARDS
    return next((i for i, part in enumerate(parts) if not magic.isdisjoint(part)), None)


def looks_like_glob(url: str) -> bool:
    """Whether *url* (a ``url:``, not a ``glob:``) holds glob characters (``*``, ``?``, ``[``) in a path.

    An HTTP(S) URL's query (``?token=…``) and its host (``[::1]``) are not its
    path: they do not count.
    """
    for part in chain(url):
        path = part.path
        if part.protocol in _HOSTED:
            try:
                path = urlsplit(part.text).path
            except ValueError:  # a malformed host: reported by the config's checks
                continue
        if not WILDCARDS.isdisjoint(path):
            return True
    return False


def static_prefix(pattern: str) -> str:
    """The part of a glob before its first part with a wildcard, with its ``/`` (the whole of a plain path)."""
    parts = pattern.split("/")
    found = first_magic(parts)
    if found is None:
        return pattern
    return "/".join(parts[:found]) + "/" if found else ""


def literal_folder(pattern: str, *, braces: bool = False) -> str:
    """The folders of *pattern* before its first part with a wildcard, never its last part (``''``: none).

    ``.claude/rules`` of ``.claude/rules/**/*.md``; ``docs`` of ``docs/x.md``.
    """
    parts = pattern.split("/")
    found = first_magic(parts[:-1], braces=braces)
    return "/".join(parts[: len(parts) - 1 if found is None else found])


def resolve_url(written: str, base: Path) -> str:
    """Expand ``${VAR}`` and ``~`` and make local parts of a (chained) URL absolute against *base* (``base_dir``).

    Local parts are plain paths, ``file://`` and ``local://`` URLs, and the
    repository of a ``git://repo:ref@path`` URL (none given: ``base_dir``).
    """
    return absolute(expand_vars(written), local_resolver(base))


def absolute(url: str, resolve: Callable[[str], str]) -> str:
    """*url* (expanded) with its local parts made absolute by *resolve* (from :func:`local_resolver`)."""
    parts = []
    for part in chain(url):
        if part.protocol is None:
            parts.append(resolve(part.path))
        elif part.text == part.protocol:  # a bare protocol name in a chain
            parts.append(part.text)
        elif part.protocol in LOCAL:
            parts.append(f"{part.protocol}://{resolve(part.path)}")
        elif part.protocol == "git":
            repo, colon, rest = part.path.partition(":")
            repo, rest = (repo, rest) if colon else ("", part.path)
            parts.append(f"git://{resolve(repo)}:{rest}")
        else:
            parts.append(part.text)
    return "::".join(parts)


def local_resolver(base: Path) -> Callable[[str], str]:
    """Makes a local path absolute against *base*, ``~`` expanded, written as :class:`pathlib.Path` writes it.

    Most paths need nothing pathlib would change (no ``.`` parts, no doubled
    or trailing ``/``): those are joined as strings, far cheaper per source.
    """
    root = str(base)

    def resolve(path: str) -> str:
        if path.startswith("~"):
            path = os.path.expanduser(path)
        joined = path if path.startswith("/") else f"{root}/{path}"
        if "//" in joined or "/." in joined or joined.endswith("/"):
            return str(base / path)
        return joined

    return resolve


def protocol_problem(written: str) -> str | None:
    """Why neither a filesystem nor a registered loader can read a URL here, or ``None``."""
    try:
        url = expand_vars(written)
    except ValueError:
        return None  # reported by the config's own validation
    if ":" not in url:  # a plain path: the local filesystem
        return None
    parts = chain(url)
    if len(parts) == 1 and registered_protocol(url) is not None:
        return None
    for part in parts:
        protocol = part.protocol
        if protocol is None or protocol in LOCAL:
            continue
        try:
            fsspec.get_filesystem_class(protocol)
        except ImportError as exc:
            extra = EXTRAS.get(protocol)
            hint = install_hint(extra) if extra else str(exc)
            return f"the {protocol}:// filesystem is not installed ({hint})"
        except ValueError:
            names = loaders.names()
            hint = did_you_mean(protocol, [*fsspec.available_protocols(), *names])
            known = ", ".join(names) or "none"
            installed = f"is its fsspec package installed? (registered loaders: {known})"
            return f"unknown protocol {protocol!r}{hint}; {installed}"
    return None


def registered_protocol(url: str) -> str | None:
    """The protocol of *url* when a loader is registered for it (:data:`memconfig.registry.LOADERS`), else ``None``.

    Only a URL that is not chained has one. A protocol registered from Python
    wins; one that fsspec knows is fsspec's unless so registered, so reading
    an ``s3://`` URL never reads the plugins' entry points.
    """
    protocol, found, rest = url.partition("://")
    if not found or "::" in rest or protocol in LOCAL or not protocol:
        return None
    if loaders.get(protocol, scan=False) is not None:
        return protocol
    if protocol in fsspec.available_protocols():
        return None
    return protocol if loaders.get(protocol) is not None else None


def url_problem(written: str) -> str | None:
    """Why a source's location is not a usable URL or path, or ``None``: control characters, a bad host or port.

    Checked as written and as expanded; the message quotes neither, since
    either may hold a secret (user-info, a token in the path, a variable's value).
    """
    try:
        expanded = expand_vars(written)
    except ValueError:
        expanded = written  # an unset variable is reported by the config's own validation
    for text in (written, expanded) if expanded != written else (written,):
        found = _CONTROL.search(text)
        if found is not None:
            return f"contains a control character (U+{ord(found[0]):04X}) at character {found.start() + 1}"
    if "://" not in expanded:  # no host to check: a path (a chain's links each have a protocol)
        return None
    # User-info masked as sources mask it (a password may hold "/" or "@"): what is left is host and port.
    expanded = redact_url(expanded)
    for bracket in _BRACKETED_HOST.finditer(expanded):
        if bracket["protocol"].lower() in _HOSTED and not bracket["closed"]:
            return f"the IPv6 host of this {bracket['protocol']}:// URL has no closing ']'"
        if "::" in bracket["address"]:
            return (
                "an IPv6 address written with '::' cannot be used: '::' chains URLs here (as in fsspec);"
                " write every group, e.g. [0:0:0:0:0:0:0:1] for [::1]"
            )
    for part in chain(expanded):
        if part.protocol not in _HOSTED or not part.text.lower().startswith(f"{part.protocol}://"):
            continue
        try:
            parts = urlsplit(part.text)
        except ValueError:  # urllib says only "Invalid IPv6 URL"
            return f"the host of this {part.protocol}:// URL is malformed (an IPv6 address is written in [brackets])"
        if not parts.hostname:
            return f"this {part.protocol}:// URL has no host"
        try:
            port = parts.port
        except ValueError:
            port = 0
        if port == 0:
            return f"the port of this {part.protocol}:// URL is not a number from 1 to 65535"
    return None


def match_key(written: str, resolved: str, fs: Any, path: str) -> tuple[str, str]:
    """The key and URL of the match *path* of a glob written as *written* and resolved to *resolved*.

    The key keeps the pattern's text as written up to its first magic character
    (``${VAR}`` and ``~`` unexpanded), so a match is named as its glob is; a
    chained glob's outer layers (``::…``) carry over to both.
    """
    head_written, head_resolved = chain(written)[0].text, chain(resolved)[0].text
    resolved_root = fs._strip_protocol(static_prefix(head_resolved)).rstrip("/")
    if path.startswith(resolved_root):
        rel = path[len(resolved_root) :].lstrip("/")
        prefix = static_prefix(head_written)
        key = prefix + ("/" if prefix and not prefix.endswith("/") else "") + rel
    else:
        key = fs.unstrip_protocol(path)
    return key + written[len(head_written) :], fs.unstrip_protocol(path) + resolved[len(head_resolved) :]
