"""Sources as the pipeline uses them: resolved URLs, merged options, safe reprs.

A :class:`Source` keeps the location *as written* (its identity: the section
header and the key in state) apart from the URL handed to fsspec (``${VAR}``
and ``~`` expanded, relative paths made absolute against ``base_dir``).
URLs themselves are parsed by fsspec; memconfig only splits ``::`` chains to
find which local parts need resolving and which protocols must be installed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import fsspec
from fsspec.core import split_protocol
from fsspec.implementations.local import LocalFileSystem

from .redact import Redactor

if TYPE_CHECKING:
    from .config import Config

__all__ = ["Source", "build_sources", "protocol_problem"]

#: Which memconfig extra brings a protocol's filesystem.
EXTRAS: Mapping[str, str] = {
    "http": "http",
    "https": "http",
    "s3": "s3",
    "s3a": "s3",
    "git": "git",
}
_LOCAL = frozenset({"file", "local"})
_IN_PROCESS = frozenset({None, "file", "local", "memory"})
_MAGIC = re.compile(r"[*?\[]")


@dataclass(frozen=True, eq=False)
class Source:
    """One location to read, resolved from the config.

    Attributes:
        key: the location as written, credentials masked; section ``{path}``
            and key in state.
        name: the display name (``{name}``), credentials masked; defaults to *key*.
        url: the expanded URL handed to fsspec. May hold secrets: never log it,
            log :attr:`display_url`.
        required: a skip fails the render.
        glob: *url* is a glob pattern to expand.
        parent: for a match of a glob, the glob's key.
    """

    key: str
    name: str
    url: str
    required: bool = False
    glob: bool = False
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    timeout: float = 30.0
    retries: int = 2
    parent: str | None = None
    redact: Redactor = field(default_factory=Redactor, repr=False)
    fs_path: tuple[Any, str] | None = field(default=None, repr=False)
    display_url: str = field(init=False, repr=False)
    """The URL with credentials masked: the only form that is logged."""
    in_process: bool = field(init=False, repr=False)
    """A local or in-memory file: read in the caller's thread, where a thread hop would cost more than the read."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "display_url", self.redact(self.url))
        single = "::" not in self.url
        object.__setattr__(self, "in_process", single and split_protocol(self.url)[0] in _IN_PROCESS)
        if self.fs_path is None and "::" not in self.url and split_protocol(self.url)[0] is None:
            # A plain path: fsspec's local filesystem, without parsing the URL on every pass.
            object.__setattr__(self, "fs_path", (fsspec.filesystem("file"), self.url))

    def __repr__(self) -> str:
        return f"Source(key={self.key!r}, url={self.display_url!r}, required={self.required})"

    @property
    def local_path(self) -> str | None:
        """The path on this machine's filesystem, for a plain local file (not a glob)."""
        if self.glob or self.fs_path is None or not isinstance(self.fs_path[0], LocalFileSystem):
            return None
        return self.fs_path[1]

    def open_fs(self) -> tuple[Any, str]:
        """The fsspec filesystem and path of this source.

        Resolved once, except for chained URLs (``zip://…::https://…``): their
        outer filesystem holds what it read of the inner file, so it is opened
        anew on every pass to see a changed archive.
        """
        if self.fs_path is not None:
            return self.fs_path
        if "::" in self.url:
            return fsspec.core.url_to_fs(self.url, skip_instance_cache=True, **self.storage_options)  # type: ignore[no-any-return]
        fs, path = fsspec.core.url_to_fs(self.url, **self.storage_options)
        object.__setattr__(self, "fs_path", (fs, path))
        return fs, path

    def match(self, fs: Any, path: str) -> Source:
        """The source for one match of this glob."""
        written = _first(self.key)
        resolved_root = fs._strip_protocol(_static_prefix(_first(self.url))).rstrip("/")
        if path.startswith(resolved_root):
            rel = path[len(resolved_root) :].lstrip("/")
            prefix = _static_prefix(written)
            key = prefix + ("/" if prefix and not prefix.endswith("/") else "") + rel
        else:
            key = fs.unstrip_protocol(path)
        chain = self.key[len(written) :]
        url = fs.unstrip_protocol(path) + self.url[len(_first(self.url)) :]
        return replace(
            self, key=key + chain, name=key + chain, url=url, glob=False, parent=self.key, fs_path=(fs, path)
        )


def _first(url: str) -> str:
    return url.split("::", 1)[0]


def _static_prefix(pattern: str) -> str:
    """The part of a glob before its first magic character, up to a ``/``."""
    found = _MAGIC.search(pattern)
    head = pattern if found is None else pattern[: found.start()]
    return head[: head.rfind("/") + 1] if found is not None else head


def resolve_url(written: str, config: Config) -> str:
    """Expand ``${VAR}`` and ``~`` and make local parts of a (chained) URL absolute."""
    from .config import expand_vars

    parts = []
    for part in expand_vars(written).split("::"):
        protocol, path = split_protocol(part)
        if protocol is None:
            parts.append(str(config.resolve_path(part)))
        elif protocol in _LOCAL:
            parts.append(f"{protocol}://{config.resolve_path(path)}")
        else:
            parts.append(part)
    return "::".join(parts)


def protocol_problem(written: str) -> str | None:
    """Why the filesystem for a URL cannot be used here, or ``None``."""
    from .config import expand_vars

    try:
        url = expand_vars(written)
    except ValueError:
        return None  # reported by the config's own validation
    for part in url.split("::"):
        protocol, _ = split_protocol(part)
        if protocol is None or protocol in _LOCAL:
            continue
        try:
            fsspec.get_filesystem_class(protocol)
        except ImportError as exc:
            extra = EXTRAS.get(protocol)
            hint = f"pip install 'memconfig[{extra}]'" if extra else str(exc)
            return f"the {protocol}:// filesystem is not installed ({hint})"
        except ValueError:
            return f"unknown protocol {protocol!r}; is its fsspec package installed?"
    return None


def build_sources(config: Config) -> list[Source]:
    """The config's sources, resolved, with per-protocol and named storage options merged."""
    out = []
    for item in config.sources:
        url = resolve_url(item.written, config)
        options = _options_for(url, config, item.storage_options, item.credentials)
        redact = Redactor(options, _url_secrets(url))
        out.append(
            Source(
                key=redact(item.written),
                name=redact(item.display_name),
                url=url,
                required=item.required,
                glob=item.glob is not None,
                storage_options=options,
                timeout=item.timeout if item.timeout is not None else config.loader.timeout,
                retries=item.retries if item.retries is not None else config.loader.retries,
                redact=redact,
            )
        )
    return out


def _options_for(url: str, config: Config, own: Mapping[str, Any], credentials: str | None) -> dict[str, Any]:
    """Storage options for fsspec: the first protocol's flat, chained ones nested by protocol."""
    protocols = [split_protocol(part)[0] or "file" for part in url.split("::")]
    first, rest = protocols[0], protocols[1:]
    merged: dict[str, Any] = dict(config.storage.get(first, {}))
    if credentials is not None:
        merged.update(config.credentials_table.get(credentials, {}))
    merged.update(own)
    for protocol in rest:
        if protocol in config.storage and protocol not in merged:
            merged[protocol] = dict(config.storage[protocol])
    return merged


def _url_secrets(url: str) -> list[str]:
    """User-info passwords in a URL (also decoded), so they are masked where a library reformats the URL."""
    found = []
    for part in url.split("::"):
        match = re.match(r"^[a-zA-Z][\w+.\-]*://([^/?#]+)@", part)
        if match:
            userinfo = match[1]
            found += [userinfo, *userinfo.split(":", 1)[1:]]
    return [os.fsdecode(s) for s in found] + [unquote(s) for s in found if unquote(s) != s]
