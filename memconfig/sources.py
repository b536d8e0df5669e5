"""Sources as the pipeline uses them: resolved URLs, merged options, safe reprs.

A :class:`Source` keeps the location *as written* (its identity: the section
header and the key in state) apart from the URL handed to fsspec (``${VAR}``
and ``~`` expanded, relative paths made absolute against ``base_dir``).
URLs themselves are parsed by fsspec; memconfig only splits ``::`` chains
(:func:`_chain`) to find which local parts need resolving, which protocols
must be installed and which filesystem each storage option is for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

import fsspec
from fsspec.core import split_protocol
from fsspec.implementations.local import LocalFileSystem

from .interpolation import expand_vars, expand_vars_traced
from .redact import Redactor, is_secret_key, url_secrets, userinfo_spans

if TYPE_CHECKING:
    from .config import Config

__all__ = ["Source", "build_sources", "merge_options", "protocol_problem"]

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
_WORD = re.compile(r"[a-z]+")


class _Part(NamedTuple):
    """One part of a (``::``-chained) URL."""

    protocol: str | None
    """As fsspec reads it; ``None`` for a plain path."""
    path: str
    """The part after ``protocol://``."""
    text: str
    """The part as written."""


def _chain(url: str) -> list[_Part]:
    """The parts of a URL, outermost first: one part unless it is chained with ``::``.

    As in fsspec, a chained part that is a bare protocol name
    (``simplecache::s3://bucket/a.md``) is that protocol with no path.
    """
    texts = url.split("::")
    parts = []
    for text in texts:
        if len(texts) > 1 and (_WORD.fullmatch(text) or text in fsspec.available_protocols()):
            parts.append(_Part(text, "", text))
        else:
            protocol, path = split_protocol(text)
            parts.append(_Part(protocol, path, text))
    return parts


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
    chained: bool = field(init=False, repr=False)
    """The URL chains filesystems with ``::`` (``zip://a.md::s3://bucket/b.zip``)."""
    in_process: bool = field(init=False, repr=False)
    """A local or in-memory file: read in the caller's thread, where a thread hop would cost more than the read."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "display_url", self.redact(self.url))
        chain = _chain(self.url)
        object.__setattr__(self, "chained", len(chain) > 1)
        object.__setattr__(self, "in_process", not self.chained and chain[0].protocol in _IN_PROCESS)
        if self.fs_path is None and not self.chained and chain[0].protocol is None:
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
        if self.chained:
            return fsspec.core.url_to_fs(self.url, skip_instance_cache=True, **self.storage_options)  # type: ignore[no-any-return]
        fs, path = fsspec.core.url_to_fs(self.url, **self.storage_options)
        object.__setattr__(self, "fs_path", (fs, path))
        return fs, path

    def match(self, fs: Any, path: str) -> Source:
        """The source for one match of this glob."""
        written, resolved = _chain(self.key)[0].text, _chain(self.url)[0].text
        resolved_root = fs._strip_protocol(_static_prefix(resolved)).rstrip("/")
        if path.startswith(resolved_root):
            rel = path[len(resolved_root) :].lstrip("/")
            prefix = _static_prefix(written)
            key = prefix + ("/" if prefix and not prefix.endswith("/") else "") + rel
        else:
            key = fs.unstrip_protocol(path)
        chain = self.key[len(written) :]
        url = fs.unstrip_protocol(path) + self.url[len(resolved) :]
        return replace(
            self, key=key + chain, name=key + chain, url=url, glob=False, parent=self.key, fs_path=(fs, path)
        )


def _static_prefix(pattern: str) -> str:
    """The part of a glob before its first magic character, up to a ``/``."""
    found = _MAGIC.search(pattern)
    head = pattern if found is None else pattern[: found.start()]
    return head[: head.rfind("/") + 1] if found is not None else head


def resolve_url(written: str, config: Config) -> str:
    """Expand ``${VAR}`` and ``~`` and make local parts of a (chained) URL absolute against ``base_dir``.

    Local parts are plain paths, ``file://`` and ``local://`` URLs, and the
    repository of a ``git://repo:ref@path`` URL (none given: ``base_dir``).
    """
    return _absolute(expand_vars(written), config)


def _absolute(url: str, config: Config) -> str:
    """*url* (expanded) with its local parts made absolute, as :func:`resolve_url` says."""
    parts = []
    for part in _chain(url):
        if part.protocol is None:
            parts.append(str(config.resolve_path(part.path)))
        elif part.text == part.protocol:  # a bare protocol name in a chain
            parts.append(part.text)
        elif part.protocol in _LOCAL:
            parts.append(f"{part.protocol}://{config.resolve_path(part.path)}")
        elif part.protocol == "git":
            repo, colon, rest = part.path.partition(":")
            repo, rest = (repo, rest) if colon else ("", part.path)
            parts.append(f"git://{config.resolve_path(repo)}:{rest}")
        else:
            parts.append(part.text)
    return "::".join(parts)


def _expand_url(written: str) -> tuple[str, list[str]]:
    """A source URL with ``${VAR}`` expanded, and the substituted values that must not be shown.

    Values put into the user-info of a URL (``https://alice:${PASS}@host``) are
    percent-encoded, so a password holding ``@``, ``/``, ``?`` or ``#`` stays a
    password (unencoded, part of it would be taken for the host and looked up).
    Not to be shown: those values, and the values of variables whose name looks
    secret (``${GIST_TOKEN}``, ``${DB_PASSWORD}``). Others, like ``${HOME}``, stay readable.
    """
    _, substitutions = expand_vars_traced(written)
    # User-info is found in the text as written, each reference blanked: a default may hold "/" or "@".
    blanked = written
    for sub in substitutions:
        blanked = blanked[: sub.start] + "_" * (sub.end - sub.start) + blanked[sub.end :]
    spans = userinfo_spans(blanked)
    url, substitutions = expand_vars_traced(written, quote_within=spans)
    hidden = [
        sub.value
        for sub in substitutions
        if is_secret_key(sub.name) or any(start <= sub.start and sub.end <= end for start, end in spans)
    ]
    hidden += [userinfo for sub in substitutions if (userinfo := _embedded_userinfo(sub.value))]
    return url, hidden + [quote(value, safe=":") for value in hidden]


def _embedded_userinfo(value: str) -> str | None:
    """The ``user:password`` of a whole URL given by one variable (``url: ${AGENTS_URL}``).

    Read up to the last ``@``, as a password may hold ``/`` or ``#`` that end
    the usual user-info rule early; only when it has the ``user:password`` form.
    """
    scheme = value.find("://")
    at = value.rfind("@")
    if scheme < 0 or at < scheme:
        return None
    userinfo = value[scheme + 3 : at]
    return userinfo if ":" in userinfo else None


def protocol_problem(written: str) -> str | None:
    """Why the filesystem for a URL cannot be used here, or ``None``."""
    try:
        url = expand_vars(written)
    except ValueError:
        return None  # reported by the config's own validation
    for part in _chain(url):
        protocol = part.protocol
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
        expanded, hidden = _expand_url(item.written)
        url = _absolute(expanded, config)
        protocols = [part.protocol or "file" for part in _chain(url)]
        options = _options_for(protocols, config, item.storage_options, item.credentials)
        redact = Redactor(options, [*url_secrets(url), *hidden])
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


def _options_for(
    protocols: Sequence[str], config: Config, own: Mapping[str, Any], credentials: str | None
) -> dict[str, Any]:
    """The storage options handed to fsspec for a URL whose chain has these protocols.

    For a single URL they are flat: ``storage[protocol]``, then the named
    ``credentials``, then the source's own ``storage_options``, each
    deep-merged over the one before.

    For a chained URL (``zip://a.md::s3://bucket/b.zip``) they are keyed by
    protocol, as :func:`fsspec.core.url_to_fs` takes them. ``credentials`` and
    the source's flat ``storage_options`` are for the innermost (last)
    protocol, the filesystem that fetches (here ``s3``); a mapping in
    ``storage_options`` keyed by a protocol of the chain (``{zip: {...}}``)
    is for that protocol; and each protocol's ``storage`` entry lies under
    what the source gives it.
    """
    inner = protocols[-1]
    nested = {k: v for k, v in own.items() if k in protocols and isinstance(v, Mapping)}
    flat = {k: v for k, v in own.items() if k not in nested}
    named = config.credentials_table.get(credentials, {}) if credentials is not None else {}
    merged = {
        protocol: merge_options(
            config.storage.get(protocol, {}),
            *((named, flat) if protocol == inner else ()),
            nested.get(protocol, {}),
        )
        for protocol in protocols
    }
    if len(protocols) == 1:
        return merged[inner]
    return {protocol: options for protocol, options in merged.items() if options}


def merge_options(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge mappings, a later one winning; nested mappings are copied, never shared."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, Mapping):
                below = out.get(key)
                value = merge_options(below if isinstance(below, Mapping) else {}, value)
            out[key] = value
    return out
