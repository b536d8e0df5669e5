"""The YAML config's schema (version 1): the pydantic models, and :meth:`Config.from_mapping`.

Only what a valid config is lives here. Validating a mapping also expands
``${VAR}`` (:mod:`~memconfig.config.expansion`), reports errors at their key
paths (:mod:`~memconfig.config.problems`) and runs the checks that need the
disk (:mod:`~memconfig.config.checks`); reading a YAML file into a config is
:mod:`~memconfig.config.loading`.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import functools
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import fsspec
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from ..collector import paused
from ..exceptions import ConfigError, Problem
from ..format.markup import LayoutProblem, layout_problems
from ..format.presets import (
    MEMORY_SLOT,
    PRESETS,
    SECTION_SLOTS,
    Preset,
    define_presets,
    overrides,
    switched,
    unknown_preset,
    with_preset_defaults,
)
from ..interpolation import expand_vars
from ..process.builtin_rules import BUILT_IN, unknown_rule
from ..registry import APPENDERS, appenders, expanders, processors
from ..shapes import is_mapping
from ..sources.redact import Redactor, every_value, mask, redact_options, redact_url, variable_secrets
from ..suggest import did_you_mean
from ..templates import MARKER_SLOTS, Template
from .checks import check_on_disk, resolve, with_environment
from .expansion import expand_tree
from .problems import any_variable, ignored_variables, problem_from_pydantic, problem_from_settings

__all__ = [
    "AppenderConfig",
    "BudgetConfig",
    "CacheConfig",
    "CacheControlConfig",
    "Config",
    "FormatterConfig",
    "ImportsConfig",
    "LoaderConfig",
    "LoggingConfig",
    "PresetConfig",
    "ProcessorConfig",
    "SourceConfig",
    "TokensConfig",
]

_HOST_PATTERN = re.compile(r"(\*\.)?([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?")
_SHAPED = frozenset({"glob", "discover"})  # the expanders a source's own key (not ``expander:``) chooses
_SECTIONS = frozenset(
    {"sources", "storage", "loader", "imports", "cache", "formatter", "presets", "appender", "processors", "logging"}
)


def _check_vars(value: str | None) -> str | None:
    if value is not None:
        expand_vars(value)
    return value


def _empty_dict() -> dict[Any, Any]:
    """An empty default: a function, as pydantic reads ``dict``'s signature by compiling a tokenizer (start-up)."""
    return {}


def _empty_list() -> list[Any]:
    """A field's empty default (see :func:`_empty_dict`)."""
    return []


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # .inf would wait forever


#: What may not be in a discovered file's name: it names a file in each folder walked, nothing else.
_NAME_PROBLEM = re.compile(r"[/\\\x00]")


class DownConfig(_Model):
    """``discover.down``: also search the folders below ``from``, breadth-first (Gemini CLI's downward scan)."""

    max_dirs: int = Field(default=200, ge=0, le=100_000)
    """At most this many folders below ``from`` are looked at."""
    respect_gitignore: bool = True
    """Folders (and files) git ignores are not searched (asked of ``git check-ignore``)."""


class DiscoverConfig(_Model):
    """``discover:``: find instruction files by name in the folders from the project root down to ``from``."""

    names: list[str] | None = Field(default=None, min_length=1)
    """File names looked for in each folder walked, in order (``AGENTS.override.md``, ``AGENTS.md``)."""
    fallbacks: dict[str, list[str]] | None = None
    """Names that stand in for one of ``names`` in a folder with no such file, the first present taken:
    ``{CLAUDE.md: [AGENTS.md]}`` (Claude Code reads ``AGENTS.md`` where a folder has no ``CLAUDE.md``)."""
    patterns: list[str] | None = Field(default=None, min_length=1)
    """Globs relative to each folder walked (``.claude/rules/**/*.md``): the regular files they match are
    candidates too, after ``names``, in sorted order; ``**``, ``*``, ``?``, ``[…]`` and ``{a,b}``."""
    pick: Literal["first", "all"] = "first"
    """``first``: in each folder, the first candidate present (Codex); ``all``: every candidate present (Gemini CLI)."""
    from_: str | None = Field(default=None, alias="from")
    """The working folder (default: the process's working directory at render time); relative: to ``base_dir``."""
    root_markers: list[str] = Field(default_factory=lambda: [".git"])
    """A file or folder whose presence makes a folder the project root, the nearest one up from ``from``
    (a git worktree's ``.git`` is a file); ``[]``, or none found: only ``from`` is searched."""
    skip_blank: bool = True
    """``pick: first`` passes over a blank candidate; ``false``: the first regular file ends the folder's search
    even when blank (Codex's own loop: a blank ``AGENTS.override.md`` hides ``AGENTS.md``)."""
    down: DownConfig | None = None
    """Also search the folders below ``from``."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, populate_by_name=True)

    @field_validator("names", "root_markers")
    @classmethod
    def _plain_names(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        for name in value:
            if not name or not name.strip():
                raise ValueError("a name must not be empty")
            if _NAME_PROBLEM.search(name) or name in (".", ".."):
                raise ValueError(f"{name!r} is not a file name: no '/', '\\', NUL, '.' or '..'")
        if len(set(value)) != len(value):
            raise ValueError("a name is listed twice")
        return value

    @field_validator("patterns")
    @classmethod
    def _relative_patterns(cls, value: list[str] | None) -> list[str] | None:
        for pattern in value or ():
            parts = pattern.replace("\\", "/").split("/")
            if not pattern.strip() or "\x00" in pattern:
                raise ValueError("a pattern must not be empty")
            if pattern.startswith(("/", "~")) or ".." in parts or parts[0] == ".":
                raise ValueError(f"{pattern!r} must be relative to the folder walked, with no '..' or leading './'")
        if value is not None and len(set(value)) != len(value):
            raise ValueError("a pattern is listed twice")
        return value

    @model_validator(mode="after")
    def _something_to_find(self) -> DiscoverConfig:
        if self.names is None and self.patterns is None:
            raise ValueError("give 'names' (files to look for in each folder) or 'patterns' (globs), or both")
        names = self.names or []
        seen = set(names)
        for name, stand_ins in (self.fallbacks or {}).items():
            if name not in names:
                raise ValueError(f"fallbacks: {name!r} is not one of 'names'")
            for stand_in in stand_ins:
                if not stand_in.strip() or _NAME_PROBLEM.search(stand_in) or stand_in in (".", ".."):
                    raise ValueError(f"fallbacks: {stand_in!r} is not a file name: no '/', '\\', NUL, '.' or '..'")
                if stand_in in seen:
                    raise ValueError(f"fallbacks: {stand_in!r} is listed twice (in 'names' or another fallback)")
                seen.add(stand_in)
        return self

    @property
    def ordered_names(self) -> list[str]:
        """The names, each followed by the names that stand in for it: the order they are looked for in a folder."""
        fallbacks = self.fallbacks or {}
        return [n for name in self.names or () for n in (name, *fallbacks.get(name, ()))]

    @property
    def candidates(self) -> list[str]:
        """The names (a name and its stand-ins as ``CLAUDE.md|AGENTS.md``), then the patterns, in order."""
        fallbacks = self.fallbacks or {}
        return [*("|".join((n, *fallbacks.get(n, ()))) for n in self.names or ()), *(self.patterns or ())]

    _vars = field_validator("from_")(_check_vars)


class ImportsConfig(_Model):
    """``imports:``: ``@path`` tokens in a file's text are replaced by the files they name.

    See :mod:`memconfig.expand.imports`.

    ``imports: true`` (or ``false``) is short for ``{enabled: true}``. A source's own
    ``imports`` overrides the config's, field by field.
    """

    enabled: bool = True
    """Replace ``@path`` tokens (``false``: the text is left as it is)."""
    max_depth: int = Field(default=5, ge=0, le=32)
    """The top file is depth 0; files down to this depth are inlined (Claude Code: five hops)."""
    markers: Literal["none", "comments"] = "none"
    """``comments``: Gemini CLI's ``<!-- Imported from: P -->`` … ``<!-- End of import from: P -->`` around what is
    inlined, and ``<!-- Import failed: P - reason -->`` where an import failed."""
    allow_home: bool = False
    """``@~/path`` imports a file under the home folder (outside the project root)."""

    @model_validator(mode="before")
    @classmethod
    def _from_bool(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value


class SourceConfig(_Model):
    """One entry of ``sources``: a URL, a glob or a discovery, with its options.

    ``url`` and ``glob`` are kept as written; ``${VAR}`` and ``~`` are
    expanded when the pipeline is built, because the text as written is the
    source's identity (the section header and the key in state).
    """

    url: str | None = None
    """Where the source is: a local path (relative to ``base_dir``, ``~`` expanded) or any fsspec URL
    (``https://…``, ``s3://…``, ``zip://…::…``, ``git://repo:ref@path``). A source is exactly one of ``url``,
    ``glob`` or ``discover``; a plain string in ``sources`` is a ``url``."""
    glob: str | None = None
    """A glob, local or over any fsspec filesystem that lists: each match is a source of its own, in sorted order,
    with this entry's settings; more than ``loader.max_matches`` matches skip the whole glob (``too_large``)."""
    discover: DiscoverConfig | None = None
    """Find files by name from the project root down to a folder (:mod:`memconfig.expand.discover`)."""
    expander: str | None = None
    """A registered expander (:data:`memconfig.registry.EXPANDERS`, a plugin's) that turns ``url`` into the
    sources it stands for; ``glob`` and ``discover`` have keys of their own."""
    name: str | None = None
    """What logs, tables and the ``{name}`` slot call the source (default: the location as written)."""
    required: bool = False
    """A skip fails the render (exit 1), unless a good copy from an earlier read is kept."""
    storage_options: dict[str, Any] = Field(default_factory=_empty_dict)
    """fsspec storage options for this source. For a chained URL, flat options go to the innermost
    filesystem (the one that fetches); nest them under a protocol for another layer (``{zip: {…}}``)."""
    credentials: str | None = None
    """The name of an entry of ``credentials_file``: its storage options, kept out of this file."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds per attempt of a remote read (default: ``loader.timeout``)."""
    retries: int | None = Field(default=None, ge=0, le=20)
    """Retries of transient failures of a remote read (default: ``loader.retries``)."""
    title: str | None = None
    """The section's ``{title}`` slot (default: the name)."""
    priority: int = 0
    """Under ``formatter.budget``, the lowest priority is cut or dropped first (on equal priority, the later source)."""
    max_chars: int | None = Field(default=None, gt=0)
    """This source's own budget, in characters: cut on a line boundary, with the marker."""
    max_tokens: int | None = Field(default=None, gt=0)
    """This source's own budget, in tokens (counted as ``formatter.tokens`` says)."""
    strip_frontmatter: bool | None = None
    """Remove a leading YAML ``---`` block (unset: the layout's rule)."""
    imports: ImportsConfig | None = None
    """This source's own ``imports`` settings, over the config's (field by field)."""
    rules: Literal["frontmatter", "claude", "cursor"] | None = None
    """Rule files: each file's frontmatter decides per render whether it applies to the paths in play
    (:mod:`memconfig.process.rules`). ``frontmatter`` reads Cursor's keys and Claude Code's (``alwaysApply``,
    ``globs``, ``paths``, ``description``); ``claude`` reads ``paths`` alone (a rule without it always applies),
    as Claude Code does; ``cursor`` reads Cursor's keys alone."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"url": value}
        if not isinstance(value, Mapping | SourceConfig):
            raise ValueError("must be a URL string or a mapping with 'url' (or 'glob', or 'discover')")
        return value

    _vars = field_validator("url", "glob")(_check_vars)

    @field_validator("expander")
    @classmethod
    def _registered_expander(cls, value: str | None) -> str | None:
        if value in _SHAPED:
            raise ValueError(f"{value!r} is chosen by the source's shape: write '{value}:' instead of 'url:'")
        if value is not None and expanders.get(value) is None:
            raise ValueError(expanders.unknown(value))
        return value

    @model_validator(mode="after")
    def _one_location(self) -> SourceConfig:
        if [self.url, self.glob, self.discover].count(None) != 2:
            raise ValueError("give exactly one of 'url' or 'glob' (or 'discover')")
        if self.expander is not None and self.url is None:
            raise ValueError("'expander' expands a 'url' ('glob' and 'discover' are expanders of their own)")
        if not self.written.strip():
            raise ValueError("the source location is empty")
        return self

    @property
    def written(self) -> str:
        """The location exactly as written in the config (a discovery's: what it looks for, and from where)."""
        if self.discover is not None:
            found = self.discover
            where = f"@{found.from_}" if found.from_ is not None else ""
            return f"discover:{found.pick}:{','.join(found.candidates)}{where}"
        return self.url if self.url is not None else self.glob  # type: ignore[return-value]

    @property
    def display_name(self) -> str:
        return self.name if self.name is not None else self.written

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            if key == "storage_options":
                value = redact_options(value)
            elif key in ("url", "glob") and value is not None:
                value = redact_url(value)
            yield key, value

    _secrets: tuple[str, ...] = PrivateAttr(default=())  # the config's, see Config.secret_values

    def __repr_str__(self, join_str: str) -> str:
        # pydantic types this inherited attribute as Representation's; repr() and str() both come through here.
        return Redactor({}, self._secrets)(super().__repr_str__(join_str))  # type: ignore[misc]


class LoaderConfig(_Model):
    """How sources are read."""

    encoding: str = "utf-8"
    """The text encoding of every source."""
    on_decode_error: Literal["skip", "replace", "fail"] = "skip"
    """A source that is not valid text in ``encoding``: ``skip`` the file, ``replace`` the bad bytes (a
    ``bytes_replaced`` warning), or ``fail`` the render (exit 1)."""
    max_bytes: int = Field(default=1 << 20, gt=0)
    """Larger sources are skipped as ``too_large``; no more than this + 1 bytes is read."""
    concurrency: int = Field(default=64, ge=1, le=1024)
    """Remote reads in flight at once, per pipeline (shared by concurrent renders)."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds per attempt of a remote source (a source's own ``timeout`` overrides it); a timeout is not retried.
    Local and ``memory://`` files are read in place, without one."""
    retries: int = Field(default=2, ge=0, le=20)
    """Retries of transient failures: HTTP 5xx and 429, connection errors, S3 throttling; never 404 or 403. A
    server's ``Retry-After`` (seconds or a date) is the delay, capped at the source's timeout. Each retry is a
    ``source_retried`` event; memconfig's retries are the only ones (botocore's and s3fs's own are turned off, and
    each HTTP request is bounded by the source's timeout), and every wait between attempts is capped at the
    source's timeout too, so a dead endpoint costs at most ``timeout * (2 * retries + 1)`` seconds."""
    backoff: float = Field(default=0.2, ge=0, le=60)
    """The base of the exponential backoff (with jitter) between retries, in seconds."""
    max_matches: int = Field(default=1000, ge=1, le=1_000_000)
    """A glob matching more files than this is skipped whole (``too_large``, one event), so no prompt grows without
    bound."""
    allowed_roots: list[str] | None = None
    """Local sources must lie inside one of these folders once symlinks are resolved, or are skipped as
    ``outside_root`` (unset: anywhere). Glob matches, the local archive of a ``zip://…::path`` and a ``git://``
    repository too; a glob whose folder is outside is refused before it is listed."""
    allowed_protocols: list[str] | None = None
    """Protocols every link of a source's URL must use (unset: any); ``file`` covers plain paths, ``http`` and
    ``https`` are separate. Others are skipped as ``protocol_not_allowed``, before anything is read."""
    allowed_hosts: list[str] | None = None
    """Hosts a source may connect to (unset: any): an HTTP URL's and every redirect's, a proxy's, an S3 or GCS
    endpoint's (``s3.amazonaws.com`` without one): ``docs.example.com``, ``*.example.com`` (subdomains), either with
    ``:port``. Others are skipped as ``host_not_allowed``, never sent a request; a protocol whose host memconfig
    cannot tell is refused."""
    allowed_options: list[str] | None = None
    """Storage options (dotted names: ``client_kwargs.trust_env``) allowed under an allow-list although memconfig
    cannot judge what they reach; under any allow-list, the others are ``option_not_allowed``."""

    @field_validator("allowed_roots")
    @classmethod
    def _plain_folders(cls, value: list[str] | None) -> list[str] | None:
        for folder in value or ():
            if not folder or any(ord(c) < 32 or c == "\x7f" for c in folder):
                raise ValueError("a folder must be a non-empty path without control characters")
        return value

    @field_validator("allowed_protocols")
    @classmethod
    def _known_protocols(cls, value: list[str] | None) -> list[str] | None:
        known = set(fsspec.available_protocols()) | {"file", "local"}
        unknown = [p for p in value or () if p not in known]
        if unknown:
            hint = did_you_mean(unknown[0], known)
            raise ValueError(
                f"unknown protocol {unknown[0]!r}{hint} (fsspec knows e.g. file, memory, http, https, s3, zip, git)"
            )
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _host_patterns(cls, value: list[str] | None) -> list[str] | None:
        for pattern in value or ():
            if not _HOST_PATTERN.fullmatch(pattern):
                raise ValueError(f"{pattern!r} is not a host pattern (name, *.domain or [IPv6], optionally :port)")
        return value

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        try:
            codecs.lookup(value)
        except LookupError:
            raise ValueError(f"unknown encoding {value!r}") from None
        return value


class CacheConfig(_Model):
    """When sources are read again, and where their contents live in state."""

    policy: Literal["once", "revalidate", "ttl", "always", "watch"] = "once"
    """When a render reads sources again: ``once`` (each source once per state: deepagents' behaviour; a failed
    required source is tried again), ``revalidate`` (every source's fingerprint, re-reading only what changed),
    ``ttl`` (as ``revalidate``, at most every ``ttl`` seconds), ``always`` (every source), ``watch`` (only what a
    file watcher reported changed; the ``memconfig[watch]`` extra). See docs/cache.md."""
    ttl: float = Field(default=60.0, ge=0)
    """Seconds between checks under ``policy: ttl``."""
    state_key: str = Field(default="memory_contents", min_length=1)
    """Where the contents live in the state mapping (deepagents' key); memconfig's meta goes beside them, under
    this key + ``_meta``."""


class BudgetConfig(_Model):
    """A limit on the whole block, and what happens to sources when they do not fit."""

    max_chars: int | None = Field(default=None, gt=0)
    """The whole block as formatted (template, headers, separators and markers included), in characters."""
    max_tokens: int | None = Field(default=None, gt=0)
    """The whole block as formatted, in tokens (counted as ``formatter.tokens`` says)."""
    max_bytes: int | None = Field(default=None, ge=0)
    """A running budget of UTF-8 bytes of content, from the first source down (Codex's ``project_doc_max_bytes``):
    each source takes what is left, cut on a byte boundary; ``0`` leaves every source out."""
    policy: Literal["fail", "truncate", "drop"] = "truncate"
    """What gives when the block is over: ``truncate`` cuts the lowest-priority source (the later one on equal
    priority) just enough, ``drop`` leaves whole sources out in that order, ``fail`` fails the render (exit 1)
    naming the budget and the sizes. Every cut is a ``source_truncated``, every source left out a
    ``source_dropped`` (``over_budget``)."""
    marker: str | None = None
    """The text left where a source was cut (a template; ``""``: none, the cut is still logged).

    It marks the cuts of sources' own limits too: ``budget: {marker: ""}``, with no limit, sets only that."""

    @field_validator("marker")
    @classmethod
    def _valid_marker(cls, value: str | None) -> str | None:
        if value is not None:
            Template(value, MARKER_SLOTS)
        return value

    @model_validator(mode="after")
    def _one_limit(self) -> BudgetConfig:
        limits = [n for n in ("max_chars", "max_tokens", "max_bytes") if getattr(self, n) is not None]
        if len(limits) > 1:
            raise ValueError("give only one of 'max_chars', 'max_tokens' or 'max_bytes'")
        if not limits and "policy" in self.model_fields_set:
            raise ValueError("'policy' needs a limit: one of 'max_chars', 'max_tokens' or 'max_bytes'")
        return self


class TokensConfig(_Model):
    """How tokens are counted for ``max_tokens``: an estimate, or exact counts with tiktoken."""

    count: Literal["estimate", "tiktoken"] = "estimate"
    """``estimate`` (a documented rule, no dependency: docs/budgets.md) or ``tiktoken`` (exact counts, the
    ``memconfig[tokens]`` extra; the encoding from ``encoding_file`` or tiktoken's local cache, never downloaded)."""
    encoding: str = "cl100k_base"
    """The tiktoken encoding's name."""
    encoding_file: str | None = None
    """A local ``.tiktoken`` file with the encoding's ranks: nothing is ever downloaded."""


def _built_in_rule(name: str) -> str:
    if name not in BUILT_IN:
        raise ValueError(unknown_rule(name))
    return name


RuleName = Annotated[str, AfterValidator(_built_in_rule)]
"""The name of a built-in rule of the processor chain (:data:`~memconfig.process.BUILT_IN`)."""


class _LayoutFields(_Model):
    """The fields of a :class:`~memconfig.format.presets.Preset` a config may replace (``None``: the base's)."""

    template: str | None = None
    """The block's template; must contain ``{agent_memory}`` (unset: the base preset's)."""
    section: str | None = None
    """One source's section; slots ``{path}`` (the source as written), ``{name}``, ``{title}``, ``{content}``
    (unset: the base preset's)."""
    separator: str | None = None
    """Between sections (unset: the base preset's)."""
    empty: str | None = None
    """What fills ``{agent_memory}`` when nothing loaded (unset: the base preset's)."""
    strip_html_comments: bool | Literal["outside_code"] | None = None
    """Remove ``<!-- … -->`` (``outside_code``: but those inside fenced code blocks, as Claude Code keeps them)."""
    strip_frontmatter: bool | None = None
    """Remove a leading YAML ``---`` block, as in Cursor's and Claude Code's rule files (unset: the base
    preset's)."""
    escape: bool | None = None
    """Neutralise a wrapper's closing tag inside content (unset: the layout's rule, on for tag layouts)."""
    trim: bool | None = None
    """Right-strip each source's content (unset: the layout's rule; ``codex`` keeps it verbatim)."""
    strip_bom: bool | None = None
    """Remove a leading byte order mark (unset: the layout's rule; ``codex`` keeps it)."""
    disable: tuple[RuleName, ...] | None = None
    """Built-in rules left out of the chain, by name (unset: the base's; ``[]``: none)."""

    @field_validator("template")
    @classmethod
    def _valid_template(cls, value: str | None) -> str | None:
        if value is not None:
            Template(value, {MEMORY_SLOT}, [MEMORY_SLOT])
        return value

    @field_validator("section")
    @classmethod
    def _valid_section(cls, value: str | None) -> str | None:
        if value is not None:
            Template(value, SECTION_SLOTS)
        return value


class PresetConfig(_LayoutFields):
    """A preset defined in the config's ``presets:`` section: a base preset with fields replaced."""

    extends: str = "plain"
    """The preset this one starts from: a built-in one or another of ``presets:``."""


#: The names of the presets the config being validated defines (see ``Config._defined_presets``).
_DEFINED_PRESETS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("presets", default=frozenset())


class FormatterConfig(_LayoutFields):
    """The memory block's layout: a preset, each field overridable."""

    preset: str = "deepagents"
    """The layout to start from: a built-in preset (docs/presets.md; the tools' ``codex``, ``claude`` and
    ``gemini`` bring their sources, imports and budget as defaults: docs/discovery.md) or one of ``presets:``."""
    template_file: str | None = None
    """A file holding the block's template, instead of ``template`` (relative to ``base_dir``)."""
    budget: BudgetConfig | None = None
    """A limit on the whole block, and what gives when it is over (docs/budgets.md)."""
    tokens: TokensConfig = Field(default_factory=TokensConfig)
    """How ``max_tokens`` limits are counted."""

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        defined = _DEFINED_PRESETS.get()
        if value not in PRESETS and value not in defined:
            raise ValueError(unknown_preset(value, defined))
        return value

    @model_validator(mode="after")
    def _one_template(self) -> FormatterConfig:
        if self.template is not None and self.template_file is not None:
            raise ValueError("give 'template' or 'template_file', not both")
        return self

    def layout(self, template_text: str | None = None, presets: Mapping[str, Preset] = PRESETS) -> Preset:
        """The preset (from *presets*: the built-ins, or the config's too) with this config's overrides applied."""
        if self.preset not in presets:
            raise ValueError(unknown_preset(self.preset, presets))
        chosen = replace(presets[self.preset], **overrides(self))
        return switched(chosen if template_text is None else replace(chosen, template=template_text))


class CacheControlConfig(_Model):
    """Anthropic prompt caching on the memory block."""

    type: Literal["ephemeral"] = "ephemeral"
    """Anthropic's cache type (there is one)."""
    ttl: Literal["5m", "1h"] | None = None
    """How long Anthropic keeps the cached prefix (unset: Anthropic's default, five minutes)."""

    def as_block(self) -> dict[str, str]:
        """The ``cache_control`` value a content block carries: ``{"type": "ephemeral"}``, with ``ttl`` if set."""
        return self.model_dump(exclude_none=True)


#: The shape the command line prints the render in (``render --format``), while it reads the config.
_PRINTED: contextvars.ContextVar[str | None] = contextvars.ContextVar("printed", default=None)


@contextlib.contextmanager
def printed_as(format: str | None) -> Iterator[None]:
    """Check the configs validated inside for printing in *format* too (``memconfig render --format``).

    An ``appender`` setting is a mistake when no format in play uses it: the
    config's own ``appender.format``, nor the one the command line prints
    (``--format openai`` with ``placement: user`` in a config of format
    ``text``). A shape that uses no setting (``json``: the render as it is,
    before any appender joins it to a prompt) leaves every setting to the
    config's other uses. ``None``: the config's own format only.
    """
    token = _PRINTED.set(format)
    try:
        yield
    finally:
        _PRINTED.reset(token)


def _unused(name: str, format: str) -> bool:
    """Whether the appender setting *name* has no effect with *format* (an unknown format: it is reported)."""
    entry = appenders.get(format)
    return entry is not None and entry.honours is not None and name not in entry.honours


class AppenderConfig(_Model):
    """The shape a render is handed over in, and how the block joins an existing system prompt."""

    format: str = "text"
    """The shape ``render`` hands the block over in: ``text`` is the system prompt with the block added; ``json``,
    ``openai``, ``anthropic`` and ``langchain`` are in docs/integrations.md; a plugin may register more."""
    separator: str = "\n\n"
    """Between the system prompt and the block."""
    position: Literal["append", "prepend"] = "append"
    """``append`` the block to the system prompt, or ``prepend`` it."""
    placement: Literal["system", "user"] = "system"
    """``user``: the block goes in a user message before the first user turn (as Codex and Claude Code do)."""
    role: Literal["system", "developer"] = "system"
    """The role of the message the ``openai`` appender adds the block to."""
    cache_control: CacheControlConfig | None = None
    """``anthropic`` / ``langchain``: mark the memory block for prompt caching."""

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if appenders.get(value) is None:
            names = appenders.names()
            raise ValueError(f"unknown format {value!r}{did_you_mean(value, names)}; choose one of: {', '.join(names)}")
        return value

    @field_validator("separator", "position", "placement", "role", "cache_control")
    @classmethod
    def _honoured(cls, value: Any, info: ValidationInfo) -> Any:
        """A setting no format in play uses (:func:`printed_as`) is a mistake, unless it is left at its default."""
        name, format = info.field_name or "", info.data.get("format")
        if not isinstance(format, str) or not _unused(name, format) or value == cls.model_fields[name].default:
            return value
        printed = _PRINTED.get()
        also = ""
        if printed is not None and printed != format:
            entry = appenders.get(printed)
            if entry is not None and entry.honours == frozenset():
                return value  # it prints the render as it is: the settings are for the config's other uses
            if not _unused(name, printed):
                return value
            also = f" nor with --format {printed!r}"
        users = ", ".join(n for n, e in sorted(APPENDERS.items()) if e.honours is not None and name in e.honours)
        raise ValueError(f"has no effect with format {format!r}{also} (it applies to: {users})")


class ProcessorConfig(_Model):
    """A registered processor (:data:`memconfig.registry.PROCESSORS`) by name, built from its options.

    The listed processors run after the built-in cleaning and escaping and
    before the budgets, in the order given, unless placed ``before:`` or
    ``after:`` a built-in rule by its name (:data:`~memconfig.process.BUILT_IN`);
    a bare name is a processor with no options.
    """

    name: str
    """A registered processor's name (memconfig registers ``strip_bom``, ``strip_html_comments``,
    ``strip_frontmatter``; a plugin adds its own)."""
    options: dict[str, Any] = Field(default_factory=_empty_dict)
    """Handed to the processor's ``from_config``."""
    before: RuleName | None = None
    """Run just before this built-in rule (``budgets``, ``html_comments`` …)."""
    after: RuleName | None = None
    """Run just after this built-in rule."""

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name")
    @classmethod
    def _registered(cls, value: str) -> str:
        if processors.get(value) is None:
            raise ValueError(processors.unknown(value))
        return value

    @model_validator(mode="after")
    def _one_place(self) -> ProcessorConfig:
        if self.before is not None and self.after is not None:
            raise ValueError("give 'before' or 'after', not both")
        return self


class LoggingConfig(_Model):
    """Where the CLI writes its load log, and in which form."""

    format: Literal["auto", "json", "console"] = "auto"
    """``auto``: console text (structlog's ``ConsoleRenderer``) when the log goes to stderr and stderr is a
    terminal, JSON lines anywhere else (a pipe, a file, CI); ``json`` or ``console``: always that form."""
    level: Literal["debug", "info", "warning", "error"] = "info"
    """The lowest level logged."""
    file: str | None = None
    """Where the CLI writes the load log (default: stderr); relative to ``base_dir``."""

    @field_validator("level", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class Config(BaseSettings):
    """A whole memconfig config. Build it with :func:`load_config` or :meth:`from_mapping`."""

    model_config = SettingsConfigDict(
        env_prefix="MEMCONFIG_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        validate_default=True,
    )

    version: Literal[1]
    """The schema's version: ``1``."""
    sources: list[SourceConfig] = Field(default_factory=_empty_list)
    """The sources, in prompt order: each a URL string or a mapping (below)."""
    base_dir: str | None = None
    """The folder relative paths resolve against: sources, ``template_file``, ``credentials_file``, ``logging.file``,
    ``loader.allowed_roots`` (default: the config file's folder). ``~`` expands; ``<cwd>`` (or ``<cwd>/sub``) is the
    working folder of the process that loads the config (``os.getcwd()``, not ``$PWD``)."""
    credentials_file: str | None = None
    """A YAML file (keep it out of version control) mapping names to storage options; a source refers to an
    entry with ``credentials: NAME``."""
    storage: dict[str, dict[str, Any]] = Field(default_factory=_empty_dict)
    """Storage options per protocol (``{s3: {endpoint_url: …}}``), deep-merged under the options of every source,
    and every layer of a chained URL, of that protocol."""
    loader: LoaderConfig = Field(default_factory=LoaderConfig)
    """How sources are read."""
    imports: ImportsConfig | None = None
    """``@path`` tokens replaced by the files they name (docs/imports.md): ``true``, or the settings below;
    a source's own ``imports`` overrides them. Unset: off."""
    cache: CacheConfig = Field(default_factory=CacheConfig)
    """When sources are read again, and where their contents live in state (docs/cache.md)."""
    formatter: FormatterConfig = Field(default_factory=FormatterConfig)
    """The memory block's layout."""
    presets: dict[str, PresetConfig] = Field(default_factory=_empty_dict)
    """Presets of your own, by name: a base preset with fields replaced (docs/presets.md)."""
    appender: AppenderConfig = Field(default_factory=AppenderConfig)
    """The shape ``render`` hands the block over in (docs/integrations.md)."""
    processors: list[ProcessorConfig] = Field(default_factory=_empty_list)
    """Registered processors (docs/architecture.md), in order, after the built-in cleaning and escaping and
    before the budgets: each ``{name, options}`` (or a bare name), or placed by a built-in rule's name with
    ``before:`` / ``after:`` (``{name: stamp, after: frontmatter}``). A name nothing registers, or a spot that is no
    built-in rule, is an error at its key path (``processors[0].after``) listing the choices."""
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    """The CLI's load log."""

    _file: str | None = PrivateAttr(default=None)
    # Defaults pydantic neither calls nor deep-copies for every config (from_mapping sets each).
    _base: Path | None = PrivateAttr(default=None)  # None: the working folder of the time it is asked
    _template_text: str | None = PrivateAttr(default=None)
    _credentials: dict[str, dict[str, Any]] = PrivateAttr(default={})
    _secrets: tuple[str, ...] = PrivateAttr(default=())
    _preset_filled: tuple[str | None, frozenset[str]] | None = PrivateAttr(default=None)
    _warnings: tuple[Problem, ...] = PrivateAttr(default=())

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment first: MEMCONFIG_* overrides what the YAML file says.
        return (env_settings, init_settings)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        # A section whose entries are all commented out is null in YAML: read it as absent.
        if isinstance(data, Mapping):
            return {k: v for k, v in data.items() if not (v is None and k in _SECTIONS)}
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _defined_presets(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        # formatter.preset may name a preset of the presets: section; its validator is told their names.
        presets = data.get("presets") if is_mapping(data) else None
        token = _DEFINED_PRESETS.set(frozenset(presets) if is_mapping(presets) else frozenset())
        try:
            return handler(data)
        finally:
            _DEFINED_PRESETS.reset(token)

    @field_validator("presets")
    @classmethod
    def _presets_resolve(cls, value: dict[str, PresetConfig]) -> dict[str, PresetConfig]:
        _, problems = define_presets(value)
        if problems:
            raise ValidationError.from_exception_data(
                "presets",
                [
                    InitErrorDetails(
                        type=PydanticCustomError("value_error", "{message}", {"message": p.message}),
                        loc=(p.name,) if p.field is None else (p.name, p.field),
                        input=value[p.name].extends if p.field == "extends" else p.name,
                    )
                    for p in problems
                ],
            )
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_number(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be 1")
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)  # from MEMCONFIG_VERSION
        return value

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            yield key, {p: redact_options(o) for p, o in value.items()} if key == "storage" else value

    def __repr_str__(self, join_str: str) -> str:
        # pydantic types this inherited attribute as Representation's; repr() and str() both come through here.
        return Redactor({}, self._secrets)(super().__repr_str__(join_str))  # type: ignore[misc]

    # -- what loading resolved --------------------------------------------

    @property
    def file(self) -> str | None:
        """The config file this came from, if any."""
        return self._file

    @property
    def base_path(self) -> Path:
        """The folder relative paths in this config resolve against."""
        return self._base if self._base is not None else working_folder()

    @property
    def template_text(self) -> str | None:
        """The text of ``formatter.template_file``, read when the config was loaded."""
        return self._template_text

    @property
    def credentials_table(self) -> Mapping[str, Mapping[str, Any]]:
        """Named storage options from ``credentials_file``."""
        return self._credentials

    @property
    def secret_values(self) -> tuple[str, ...]:
        """What ``${VAR}`` references with secret-looking names put into this config, and every value of the
        ``credentials_file`` entries its sources use: masked wherever shown."""
        return self._secrets

    @property
    def preset_filled(self) -> tuple[str | None, frozenset[str]]:
        """The built-in preset whose defaults this config took, and the key paths of the values they filled in."""
        return self._preset_filled if self._preset_filled is not None else (None, frozenset())

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """What loading passed over that is likely a mistake, though the config is valid: a ``MEMCONFIG_*``
        variable that names no config key (``MEMCONFIG_FORMATER__PRESET``), with the closest one it may have
        meant. The CLI prints them (``memconfig: warning: …``); the library leaves them to its caller."""
        return self._warnings

    def resolve_path(self, path: str) -> Path:
        """A local path from this config: ``~`` expanded, relative to :attr:`base_path`."""
        return resolve(self.base_path, path)

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, file: str | None = None, base_dir: str | Path | None = None
    ) -> Config:
        """Validate a plain mapping (as YAML would give) into a config.

        Args:
            data: The config's content.
            file: Where it came from, for error messages.
            base_dir: The folder relative paths resolve against when the config
                sets no ``base_dir``; defaults to the current folder.

        Raises:
            ConfigError: listing every problem, each with its key path.
        """
        with paused():  # a model per source: see memconfig.collector
            problems: list[Problem] = []
            try:  # a config is read in a working folder, even when its paths are absolute
                working = working_folder()
            except ConfigError as exc:
                raise ConfigError(exc.problems, file=file) from None
            from_environment = any_variable()
            # The preset's defaults go under the config as it finally reads: after ``${VAR}`` expansion and
            # with the MEMCONFIG_* overrides laid over it, so that the preset chosen last brings its own.
            tree = expand_tree(dict(data), "", problems)
            preset = with_preset_defaults(with_environment(cls, tree) if from_environment else tree)
            expanded = preset.data
            config: Config | None = None
            try:
                if from_environment:  # pydantic-settings lays the MEMCONFIG_* variables over the data
                    config = cls(**expanded)
                else:  # nothing to lay over: validated as a plain model, without making its sources (~150 µs)
                    made = cls.__new__(cls)
                    BaseModel.__init__(made, **expanded)
                    config = made
            except ValidationError as exc:
                problems += [problem_from_pydantic(err, cls) for err in exc.errors()]
            except SettingsError as exc:
                problems.append(problem_from_settings(exc))
            except RecursionError:  # the JSON of a MEMCONFIG_* variable, nested without end
                problems.append(Problem("(environment)", "a MEMCONFIG_* variable holds JSON nested too deeply to read"))
            # The disk is checked even when the schema has problems, so that every problem is listed at once.
            plain = _on_disk(config) if config is not None else with_environment(cls, expanded)
            origin = Path(base_dir) if base_dir is not None else working
            chosen = plain.get("base_dir")
            base = Path(os.path.abspath(_base_folder(origin, chosen) if isinstance(chosen, str) else origin))
            template_text, credentials = check_on_disk(plain, base, problems)
            if config is not None and not problems:
                problems += _layout_problems(config, template_text)
            if config is None or problems:
                secrets = variable_secrets(data)  # a message may quote the value it rejects
                raise ConfigError([Problem(p.path, mask(p.message, secrets)) for p in problems], file=file)
            config._file = file
            config._base = base
            config._template_text = template_text
            config._credentials = credentials
            # a credentials entry's values are all secret, whatever their names (a profile, an endpoint's user):
            # those of the entries the sources use (the file's others reach nothing this config does)
            used = [credentials[s.credentials] for s in config.sources if s.credentials in credentials]
            masked = tuple(dict.fromkeys([*variable_secrets(data), *every_value(used)]))
            config._secrets = masked
            config._preset_filled = (preset.preset, preset.filled)
            config._warnings = tuple(ignored_variables(cls)) if from_environment else ()
            if masked:  # a private attribute is set through pydantic's __setattr__: only when there is something
                for source in config.sources:
                    source._secrets = masked
            return config


def _on_disk(config: Config) -> dict[str, Any]:
    """What :func:`~memconfig.config.checks.check_on_disk` reads of a valid config, as plain data.

    A source with nothing but its location is its string (what check_on_disk reads it as), not a dump of
    every field: a dump per source was a tenth of validating a long list.
    """
    sources: list[Any] = [
        item.url
        if item.url is not None and item.credentials is None
        else {
            "url": item.url,
            "glob": item.glob,
            "credentials": item.credentials,
            "discover": None if item.discover is None else item.discover.model_dump(),
        }
        for item in config.sources
    ]
    return {
        "base_dir": config.base_dir,
        "credentials_file": config.credentials_file,
        "formatter": config.formatter.model_dump(include={"template_file", "tokens"}),
        "sources": sources,
    }


def _layout_problems(config: Config, template_text: str | None) -> list[Problem]:
    """Layouts that would let a value end its wrapper (:func:`~memconfig.format.markup.layout_problems`), by key."""
    presets, _ = define_presets(config.presets)
    found: list[Problem] = []
    for name in config.presets:
        found += [Problem(f"presets.{name}.{p.field}", p.message) for p in _unsafe(switched(presets[name]))]
    formatter = config.formatter
    own = {*overrides(formatter), *(["template"] if template_text is not None else [])}
    for p in _unsafe(formatter.layout(template_text, presets)):
        if p.field in own:
            key = "template_file" if p.field == "template" and formatter.template_file else p.field
            found.append(Problem(f"formatter.{key}", p.message))
        elif formatter.preset not in config.presets:  # else reported under presets: already
            found.append(Problem("formatter", f"with preset {formatter.preset!r}'s {p.field}: {p.message}"))
    return found + _marker_problems(config, formatter.layout(template_text, presets))


def _marker_problems(config: Config, layout: Preset) -> list[Problem]:
    """``imports.markers: comments`` under a layout that strips HTML comments: every marker would be removed."""
    if not layout.strip_html_comments:
        return []
    message = (
        "the import markers are HTML comments, which this layout strips (strip_html_comments); "
        "set formatter.strip_html_comments: false, or markers: none"
    )
    found = []
    if config.imports is not None and config.imports.enabled and config.imports.markers == "comments":
        found.append(Problem("imports.markers", message))
    for index, item in enumerate(config.sources):
        own = item.imports
        if own is not None and "markers" in own.model_fields_set and own.markers == "comments" and own.enabled:
            found.append(Problem(f"sources[{index}].imports.markers", message))
    return found


@functools.lru_cache(maxsize=64)  # by layout: a process has a few, and each config asks again
def _unsafe(layout: Preset) -> tuple[LayoutProblem, ...]:
    if not layout.escape:
        return ()
    template = Template(layout.template, {MEMORY_SLOT}, [MEMORY_SLOT])
    return layout_problems(template.parts, Template(layout.section, SECTION_SLOTS).parts, layout.separator)


#: ``base_dir: <cwd>`` (or ``<cwd>/sub``): the working folder of the process that loads the config.
CWD = "<cwd>"


def working_folder() -> Path:
    """``os.getcwd()``, or a config error when the folder was removed under the process (not a traceback)."""
    try:
        return Path(os.getcwd())
    except FileNotFoundError:
        raise ConfigError("the working directory no longer exists: run from a folder that does") from None


def _base_folder(origin: Path, chosen: str) -> Path:
    """The folder ``base_dir`` names: :data:`CWD` is the process's working folder (``os.getcwd()``, not ``$PWD``,
    which a parent process leaves behind when it starts memconfig elsewhere); else relative to *origin*."""
    if chosen == CWD or chosen.startswith(CWD + "/"):
        return working_folder() / chosen[len(CWD) :].lstrip("/")
    return resolve(origin, chosen)
