"""Sources as the pipeline uses them: resolved URLs, merged options, safe reprs.

A :class:`Source` keeps the location *as written* (its identity: the section
header and the key in state) apart from the URL handed to fsspec (``${VAR}``
and ``~`` expanded, relative paths made absolute against ``base_dir``). How a
URL is read is :mod:`memconfig.sources.urls`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ..interpolation import expand_vars_traced
from ..model.sources import DiscoverSpec, ImportRef, ImportSettings
from ..model.status import SkipReason
from .options import options_for
from .redact import Redactor, is_secret_key, url_secrets, userinfo_spans
from .urls import IN_PROCESS, absolute, chain, local_resolver, looks_like_glob, match_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import Config
    from ..config.schema import SourceConfig

__all__ = ["GLOB_HINT", "Source", "build_sources"]

#: Said of a ``url:`` with glob characters that names no file (:meth:`Source.skip_detail`).
GLOB_HINT = "looks like a glob: write `glob:` instead of `url:` to match files"

_LOCAL_FS = fsspec.filesystem("file")
_NO_SECRETS = Redactor()


@dataclass(eq=False, slots=True)
class Source:
    """One location to read: declared in the config, or made from one by an expander.

    Treat it as immutable (make changed copies with ``dataclasses.replace``);
    it is not frozen only because a frozen dataclass costs several times as
    much to build, and a config may declare thousands.

    Attributes:
        key: the location as written, credentials masked; section ``{path}``
            and key in state. A child's key is derived from its parent's.
        name: the display name (``{name}``), credentials masked; defaults to *key*.
        url: the expanded URL handed to fsspec. May hold secrets: never log it,
            log :attr:`display_url`.
        required: a skip fails the render.
        glob: *url* is a glob pattern, expanded by the ``glob`` expander.
        lineage: the keys of the sources this one was expanded from, the
            declared one first; empty for a declared source.
        via: the expander that made this source (``"glob"``), ``None`` if declared.
        imports: how ``@path`` imports in its text are followed (``None``: they are not); a child has its parent's.
        import_of: for a file imported by ``@path``, the token and its place in the import tree.
        title: the section's ``{title}`` (credentials masked), ``None`` for its name;
            a child has its own name, not its parent's title.
        strip_frontmatter: this source's own frontmatter rule (``None``: the layout's);
            a child has its parent's.
        rules: ``"frontmatter"``: a rule file (or a glob of them) applied by its frontmatter; a child has its parent's.
        discover: what a discovery looks for, and from where (expanded by the ``discover``
            expander); *url* is then its start folder (``<cwd>``: the working directory at render time).
        expanded_by: the registered expander (a plugin's) the config named for *url* (``expander:``).
    """

    key: str
    name: str
    url: str
    required: bool = False
    glob: bool = False
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    timeout: float = 30.0
    retries: int = 2
    imports: ImportSettings | None = None
    import_of: ImportRef | None = field(default=None, repr=False)
    lineage: tuple[str, ...] = ()
    via: str | None = None
    redact: Redactor = field(default_factory=Redactor, repr=False)
    fs_path: tuple[Any, str] | None = field(default=None, repr=False)
    title: str | None = None
    strip_frontmatter: bool | None = None
    rules: str | None = None
    discover: DiscoverSpec | None = field(default=None, repr=False)
    expanded_by: str | None = None
    display_url: str = field(init=False, repr=False)
    """The URL with credentials masked: the only form that is logged."""
    chained: bool = field(init=False, repr=False)
    """The URL chains filesystems with ``::`` (``zip://a.md::s3://bucket/b.zip``)."""
    in_process: bool = field(init=False, repr=False)
    """A local or in-memory file: read in the caller's thread, where a thread hop would cost more than the read."""

    def __post_init__(self) -> None:
        self.display_url = self.redact(self.url)
        parts = chain(self.url)
        self.chained = len(parts) > 1
        self.in_process = not self.chained and parts[0].protocol in IN_PROCESS
        if self.fs_path is None and not self.chained and parts[0].protocol is None:
            # A plain path: fsspec's local filesystem, without parsing the URL on every pass.
            self.fs_path = (_LOCAL_FS, self.url)

    def __repr__(self) -> str:
        return f"Source(key={self.key!r}, url={self.display_url!r}, required={self.required})"

    @property
    def parent(self) -> str | None:
        """The key of the source this one was expanded from, or ``None``."""
        return self.lineage[-1] if self.lineage else None

    @property
    def root(self) -> str:
        """The key of the declared source this one is, or descends from."""
        return self.lineage[0] if self.lineage else self.key

    @property
    def glob_like(self) -> bool:
        """A declared ``url:`` that holds glob characters (:func:`~memconfig.sources.urls.looks_like_glob`):
        it names one file, literally, which a user may have meant as a ``glob:``."""
        return (
            not self.glob
            and self.discover is None
            and self.expanded_by is None
            and not self.lineage
            and looks_like_glob(self.url)
        )

    def skip_detail(self, reason: str, detail: str) -> str:
        """The detail a skip of this source is recorded with: *detail*, and for a :attr:`glob_like` source that is
        ``not_found``, :data:`GLOB_HINT`. Asked where a render records a skip and where ``explain`` plans one, so
        the log, the audit, ``explain`` and ``validate`` say the same."""
        if reason == SkipReason.NOT_FOUND and self.glob_like:
            return f"{detail}; {GLOB_HINT}" if detail else GLOB_HINT
        return detail

    @property
    def expander(self) -> str | None:
        """The name of the expander that turns this source into children, if any."""
        return "glob" if self.glob else "discover" if self.discover is not None else self.expanded_by

    @property
    def local_path(self) -> str | None:
        """The path on this machine's filesystem, for a plain local file (not a glob)."""
        if self.glob or self.discover is not None or self.expanded_by is not None or self.fs_path is None:
            return None
        if not isinstance(self.fs_path[0], LocalFileSystem):
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
        self.fs_path = (fs, path)
        return fs, path

    def derived(self, key: str, name: str, url: str, via: str, fs_path: tuple[Any, str] | None, **more: Any) -> Source:
        """A source made from this one by expander *via*: its own key, name, URL and file, this one's settings.

        The one place a child is made (a glob's match, a discovered file, an
        import): it is no glob or discovery itself, has no title of its own, and
        has this source on its lineage. *more* sets other fields (``required``, ``import_of``).
        """
        return replace(
            self,
            key=key,
            name=name,
            url=url,
            glob=False,
            discover=None,
            expanded_by=None,
            lineage=(*self.lineage, self.key),
            via=via,
            fs_path=fs_path,
            title=None,
            **more,
        )

    def child(self, fs: Any, path: str, via: str) -> Source:
        """The source for *path* (on *fs*), found by expander *via* from this one."""
        key, url = match_key(self.key, self.url, fs, path)
        return self.derived(key, key, url, via, (fs, path))

    def found(self, path: str, via: str) -> Source:
        """The source for the local file *path*, found by expander *via* (a discovery) from this one."""
        return self.derived(path, path, path, via, (_LOCAL_FS, path))


def _expand_url(written: str) -> tuple[str, list[str]]:
    """A source URL with ``${VAR}`` expanded, and the substituted values that must not be shown.

    Values put into the user-info of a URL (``https://alice:${PASS}@host``) are
    percent-encoded, so a password holding ``@``, ``/``, ``?`` or ``#`` stays a
    password (unencoded, part of it would be taken for the host and looked up).
    Not to be shown: those values, and the values of variables whose name looks
    secret (``${GIST_TOKEN}``, ``${DB_PASSWORD}``). Others, like ``${HOME}``, stay readable.
    """
    if "$" not in written:
        return written, []
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


def build_sources(config: Config) -> list[Source]:
    """The config's sources, resolved, with per-protocol and named storage options merged."""
    out = []
    resolve = local_resolver(config.base_path)
    timeout, retries = config.loader.timeout, config.loader.retries
    local_options = "file" in config.storage
    known = config.secret_values  # from ${VAR}s with secret-looking names, anywhere (a name, a header)
    for item in config.sources:
        written = item.written
        if item.discover is not None:
            out.append(_discovery(config, item, resolve))
            continue
        if _plain(written) and not item.storage_options and item.credentials is None and not local_options:
            # A plain local path, the common case: nothing to expand, no options, no secrets.
            url = resolve(written)
            options: dict[str, Any] = {}
            plain = not known and "@" not in url and "=" not in url
            redact = _NO_SECRETS if plain else Redactor({}, [*url_secrets(url), *known])
        else:
            expanded, hidden = _expand_url(written)
            url = absolute(expanded, resolve)
            protocols = [part.protocol or "file" for part in chain(url)]
            named = config.credentials_table.get(item.credentials, {}) if item.credentials is not None else {}
            seconds = config.loader.timeout if item.timeout is None else item.timeout
            allowed = config.loader.allowed_hosts
            options = options_for(protocols, config.storage, named, item.storage_options, seconds, allowed)
            secrets = [*url_secrets(url), *hidden, *known]
            redact = Redactor(options, secrets) if options or secrets else _NO_SECRETS
        key = redact(written)
        out.append(
            Source(
                key=key,
                name=key if item.name is None else redact(item.name),
                url=url,
                required=item.required,
                glob=item.glob is not None,
                storage_options=options,
                timeout=item.timeout if item.timeout is not None else timeout,
                retries=item.retries if item.retries is not None else retries,
                redact=redact,
                title=None if item.title is None else redact(item.title),
                strip_frontmatter=item.strip_frontmatter,
                rules=item.rules,
                expanded_by=item.expander,
            )
        )
    return _with_imports(config, out)


def _with_imports(config: Config, sources: list[Source]) -> list[Source]:
    """*sources* with the import settings each one follows (the config's ``imports``, the source's own over it)."""
    if config.imports is None and all(item.imports is None for item in config.sources):
        return sources
    from ..expand.imports import settings_for  # only configs that import pay for the module

    chosen = settings_for(config)
    if not any(chosen):
        return sources
    return [s if c is None else replace(s, imports=c) for s, c in zip(sources, chosen, strict=True)]


def _discovery(config: Config, item: SourceConfig, resolve: Callable[[str], str]) -> Source:
    """A ``discover:`` source: local folders only; a ``from`` given is resolved against ``base_dir`` now."""
    assert item.discover is not None
    found, down = item.discover, item.discover.down
    start = None if found.from_ is None else resolve(expand_vars_traced(found.from_)[0])
    spec = DiscoverSpec(
        names=tuple(found.ordered_names),
        patterns=tuple(found.patterns or ()),
        stand_ins=tuple((s, name) for name, stand_ins in (found.fallbacks or {}).items() for s in stand_ins),
        pick=found.pick,
        start=start,
        root_markers=tuple(found.root_markers),
        skip_blank=found.skip_blank,
        max_dirs=None if down is None else down.max_dirs,
        respect_gitignore=down is not None and down.respect_gitignore,
        encoding=config.loader.encoding,
        max_bytes=config.loader.max_bytes,
        max_matches=config.loader.max_matches,
    )
    key = item.written
    return Source(
        key=key,
        name=key if item.name is None else item.name,
        url=start if start is not None else "<cwd>",
        required=item.required,
        timeout=item.timeout if item.timeout is not None else config.loader.timeout,
        retries=item.retries if item.retries is not None else config.loader.retries,
        title=item.title,
        strip_frontmatter=item.strip_frontmatter,
        rules=item.rules,
        discover=spec,
    )


def _plain(written: str) -> bool:
    """Whether *written* is a local path with nothing to expand: no ``${VAR}``, ``~``, protocol or chain."""
    return "$" not in written and ":" not in written and not written.startswith("~")
