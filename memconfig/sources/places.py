"""When two spellings of a URL are one place: the form sources are compared in to find repeats.

A local file's identity is its inode (symlinks, hard links and ``..`` all
lead to it); that is known only once it is opened, so the loader's results
carry it. Everything else is compared as fsspec would address it: the
filesystem's main protocol name (``s3a://`` is ``s3://``), and for HTTP the URL
normalised as RFC 3986 says (scheme and host in lower case, no default port,
no ``.`` or ``..`` segments, unreserved characters not percent-encoded).
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import urlsplit, urlunsplit

import fsspec

from .hosts import DEFAULT_PORTS, HTTP
from .urls import LOCAL, Part, chain

__all__ = ["same_place"]

_ENCODED = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def same_place(url: str) -> str:
    """*url* in a form that is equal for every spelling of the same place (a chain: link by link)."""
    return "::".join(_normal(part) for part in chain(url))


def _normal(part: Part) -> str:
    protocol = part.protocol.lower() if part.protocol else None
    if protocol is None or protocol in LOCAL:
        return "file://" + posixpath.normpath(part.path)
    if part.text == protocol:  # a bare protocol in a chain (simplecache::…)
        return protocol
    if protocol in HTTP:
        return _normal_http(part.text)
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError):
        return part.text
    names = cls.protocol if isinstance(cls.protocol, tuple | list) else (cls.protocol,)
    # The rest as written: a filesystem's own path form may drop what the URL carries (git's ref).
    return f"{names[0]}://{part.path}"


def _normal_http(url: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        return url
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (
        (f"{userinfo}@" if userinfo else "") + host + (f":{port}" if port and port != DEFAULT_PORTS[scheme] else "")
    )
    path = _decode_unreserved(parts.path) or "/"
    kept_slash = path.endswith("/")
    path = posixpath.normpath(path)
    path = "/" + path.lstrip("/")  # normpath keeps a leading "//"
    if kept_slash and not path.endswith("/"):
        path += "/"
    return urlunsplit((scheme, netloc, path, _decode_unreserved(parts.query), ""))


def _decode_unreserved(text: str) -> str:
    def decoded(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else match.group(0).upper()

    return _ENCODED.sub(decoded, text) if "%" in text else text
