"""The YAML config (schema version 1): its model, loading, and error reporting.

Loading goes: read the file, parse YAML (``yaml.safe_load``), expand
``${VAR}`` / ``${VAR:-default}`` in string values, validate with
pydantic-settings (``MEMCONFIG_*`` environment variables override the file,
nested with ``__``), then check what needs the disk (template and credentials
files, installed protocols) and repeated sources. Those checks run even when
validation failed, so every problem found is reported at once, each with its
key path.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from ..exceptions import ConfigError, Problem
from ..format.presets import MEMORY_SLOT, PRESETS, SECTION_SLOTS, Preset
from ..format.templates import Template, TemplateError
from ..sources.options import merge_options
from ..sources.redact import is_secret_key, redact_options, redact_url
from ..sources.urls import protocol_problem
from .interpolation import UnsetVariableError, expand_vars

__all__ = [
    "AppenderConfig",
    "CacheConfig",
    "Config",
    "FormatterConfig",
    "LoaderConfig",
    "LoggingConfig",
    "SourceConfig",
    "expand_vars",
    "load_config",
]

_SECTIONS = frozenset({"sources", "storage", "loader", "cache", "formatter", "appender", "logging"})


def _check_vars(value: str | None) -> str | None:
    if value is not None:
        expand_vars(value)
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceConfig(_Model):
    """One entry of ``sources``: a URL or a glob, with its options.

    ``url`` and ``glob`` are kept as written; ``${VAR}`` and ``~`` are
    expanded when the pipeline is built, because the text as written is the
    source's identity (the section header and the key in state).
    """

    url: str | None = None
    glob: str | None = None
    name: str | None = None
    required: bool = False
    storage_options: dict[str, Any] = Field(default_factory=dict)
    credentials: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=0, le=20)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"url": value}
        if not isinstance(value, Mapping | SourceConfig):
            raise ValueError("must be a URL string or a mapping with 'url' (or 'glob')")
        return value

    _vars = field_validator("url", "glob")(_check_vars)

    @model_validator(mode="after")
    def _one_location(self) -> SourceConfig:
        if (self.url is None) == (self.glob is None):
            raise ValueError("give exactly one of 'url' or 'glob'")
        if not self.written.strip():
            raise ValueError("the source location is empty")
        return self

    @property
    def written(self) -> str:
        """The location exactly as written in the config."""
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


class LoaderConfig(_Model):
    """How sources are read."""

    encoding: str = "utf-8"
    on_decode_error: Literal["skip", "replace", "fail"] = "skip"
    max_bytes: int = Field(default=1 << 20, gt=0)
    concurrency: int = Field(default=64, ge=1, le=1024)
    timeout: float = Field(default=30.0, gt=0)
    retries: int = Field(default=2, ge=0, le=20)
    backoff: float = Field(default=0.2, ge=0)

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

    policy: Literal["once", "revalidate", "ttl", "always"] = "once"
    ttl: float = Field(default=60.0, ge=0)
    state_key: str = Field(default="memory_contents", min_length=1)


class FormatterConfig(_Model):
    """The memory block's layout: a preset, each field overridable."""

    preset: str = "deepagents"
    template: str | None = None
    template_file: str | None = None
    section: str | None = None
    separator: str | None = None
    empty: str | None = None
    strip_html_comments: bool | None = None

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        if value not in PRESETS:
            raise ValueError(f"unknown preset {value!r}; choose one of: {', '.join(sorted(PRESETS))}")
        return value

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

    @model_validator(mode="after")
    def _one_template(self) -> FormatterConfig:
        if self.template is not None and self.template_file is not None:
            raise ValueError("give 'template' or 'template_file', not both")
        return self

    def layout(self, template_text: str | None = None) -> Preset:
        """The preset with this config's overrides applied."""
        base = PRESETS[self.preset]
        return Preset(
            template=template_text if template_text is not None else self.template or base.template,
            section=base.section if self.section is None else self.section,
            separator=base.separator if self.separator is None else self.separator,
            empty=base.empty if self.empty is None else self.empty,
            strip_html_comments=(
                base.strip_html_comments if self.strip_html_comments is None else self.strip_html_comments
            ),
        )


class AppenderConfig(_Model):
    """The shape a render is handed over in, and how the block joins an existing system prompt."""

    format: str = "text"
    separator: str = "\n\n"
    position: Literal["append", "prepend"] = "append"

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        from ..append import APPENDERS  # the table of appenders, which needs nothing of the config

        if value not in APPENDERS:
            raise ValueError(f"unknown format {value!r}; choose one of: {', '.join(sorted(APPENDERS))}")
        return value


class LoggingConfig(_Model):
    """Where the CLI writes its JSON-lines (or console) load log."""

    format: Literal["json", "console"] = "json"
    level: Literal["debug", "info", "warning", "error"] = "info"
    file: str | None = None

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
    sources: list[SourceConfig] = Field(default_factory=list)
    base_dir: str | None = None
    credentials_file: str | None = None
    storage: dict[str, dict[str, Any]] = Field(default_factory=dict)
    loader: LoaderConfig = Field(default_factory=LoaderConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    formatter: FormatterConfig = Field(default_factory=FormatterConfig)
    appender: AppenderConfig = Field(default_factory=AppenderConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    _file: str | None = PrivateAttr(default=None)
    _base: Path = PrivateAttr(default_factory=Path.cwd)
    _template_text: str | None = PrivateAttr(default=None)
    _credentials: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)

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

    # -- what loading resolved --------------------------------------------

    @property
    def file(self) -> str | None:
        """The config file this came from, if any."""
        return self._file

    @property
    def base_path(self) -> Path:
        """The folder relative paths in this config resolve against."""
        return self._base

    @property
    def template_text(self) -> str | None:
        """The text of ``formatter.template_file``, read when the config was loaded."""
        return self._template_text

    @property
    def credentials_table(self) -> Mapping[str, Mapping[str, Any]]:
        """Named storage options from ``credentials_file``."""
        return self._credentials

    def resolve_path(self, path: str) -> Path:
        """A local path from this config: ``~`` expanded, relative to :attr:`base_path`."""
        return _resolve(self._base, path)

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
        problems: list[Problem] = []
        expanded = _expand_tree(dict(data), "", problems)
        config: Config | None = None
        try:
            config = cls(**expanded)
        except ValidationError as exc:
            problems += [_problem_from_pydantic(err) for err in exc.errors()]
        except SettingsError as exc:
            problems.append(_problem_from_settings(exc))
        # The disk is checked even when the schema has problems, so that every problem is listed at once.
        plain = config.model_dump(include=_ON_DISK) if config is not None else _with_environment(cls, expanded)
        origin = Path(base_dir) if base_dir is not None else Path.cwd()
        chosen = plain.get("base_dir")
        base = Path(os.path.abspath(_resolve(origin, chosen) if isinstance(chosen, str) else origin))
        template_text, credentials = _check_on_disk(plain, base, problems)
        if config is None or problems:
            raise ConfigError(problems, file=file)
        config._file = file
        config._base = base
        config._template_text = template_text
        config._credentials = credentials
        return config


# -- loading ---------------------------------------------------------------

# What _check_on_disk reads of a config.
_ON_DISK = {"base_dir", "credentials_file", "sources", "formatter"}
# Keys whose strings keep ${VAR} as written (they are expanded when used).
_KEEP_AS_WRITTEN = re.compile(r"^sources\[\d+\]\.(url|glob)$|^sources\[\d+\]$")
# Where storage options sit: there, a value under a secret-looking name is a secret.
_OPTIONS = re.compile(r"^(storage|sources\[\d+\]\.storage_options)\.")
_UNSET_IN_SECRET = (
    "references an environment variable that is not set (its name is not shown, as it may be part of the secret;"
    " write ${NAME:-default}, or $$ for a literal $)"
)


def _expand_tree(value: Any, path: str, problems: list[Problem], secret: bool = False) -> Any:
    """*value* with ``${VAR}`` expanded in its strings; each problem is added to *problems* at its key path.

    A mapping key that is not a string (YAML reads an unquoted ``on`` as
    ``True`` and ``1`` as a number) is a problem, and is left out. Under a
    secret (*secret*, or a storage option with a secret-looking name) a problem
    never quotes the value, nor a variable name that may be part of it.
    """
    if isinstance(value, str):
        if _KEEP_AS_WRITTEN.match(path):
            return value
        try:
            return expand_vars(value)
        except UnsetVariableError as exc:
            named = not secret or value.strip() == f"${{{exc.name}}}"
            problems.append(Problem(path, str(exc) if named else _UNSET_IN_SECRET))
        except ValueError as exc:
            problems.append(Problem(path, str(exc)))
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                below = secret or (is_secret_key(key) and _OPTIONS.match(where) is not None)
                out[key] = _expand_tree(item, where, problems, below)
            else:
                hint = f' (quote it: "{key.text}")' if isinstance(key, _Key) and key.text else ""
                problems.append(Problem(where, f"keys must be strings{hint}"))
        return out
    if isinstance(value, list):
        return [_expand_tree(v, f"{path}[{i}]", problems, secret) for i, v in enumerate(value)]
    return value


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _problem_from_pydantic(err: Mapping[str, Any]) -> Problem:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "union["))))
    message = str(err["msg"])
    message = message.removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    elif err["type"] == "missing":
        message = "required key is missing"
    elif err["type"] in ("model_type", "dict_type"):
        message = "must be a mapping"
    else:
        message = message.replace("Input should be", "must be")
    return Problem(_format_loc(loc), message + _env_hint(loc))


def _problem_from_settings(exc: SettingsError) -> Problem:
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None:
        return Problem("(environment)", str(exc))
    name = f"MEMCONFIG_{found[1].upper()}"
    return Problem(found[1], f"environment variable {name} is not valid JSON (lists and mappings must be JSON)")


def _env_hint(loc: tuple[int | str, ...]) -> str:
    """Name the ``MEMCONFIG_*`` variable behind a bad value, since the YAML may not even mention it."""
    names = [str(p) for p in loc]
    set_names = {k.upper() for k in os.environ if k.upper().startswith("MEMCONFIG_")}
    for end in range(len(names), 0, -1):
        if not all(n.isidentifier() for n in names[:end]):
            continue
        name = "MEMCONFIG_" + "__".join(names[:end]).upper()
        if name in set_names:
            return f" (set by environment variable {name})"
    return ""


def _resolve(base: Path, path: str) -> Path:
    expanded = Path(os.path.expanduser(path))
    return expanded if expanded.is_absolute() else base / expanded


def _with_environment(cls: type[Config], data: Mapping[str, Any]) -> dict[str, Any]:
    """*data* with the ``MEMCONFIG_*`` overrides laid over it, as validation saw it."""
    try:
        overrides = EnvSettingsSource(cls)()
    except ValueError:
        overrides = {}  # a SettingsError, reported by validation
    return merge_options(data, overrides)


def _reported(problems: list[Problem], path: str) -> bool:
    return any(p.path == path for p in problems)


def _location(item: Any) -> tuple[str, str, Any] | None:
    """A source entry's location key (``url`` or ``glob``), what is written there, and its ``credentials``.

    ``None`` for an entry too malformed to say (validation reports it).
    """
    if isinstance(item, str):
        return "url", item, None
    if not isinstance(item, Mapping):
        return None
    given = [(key, item[key]) for key in ("url", "glob") if item.get(key) is not None]
    if len(given) != 1 or not isinstance(given[0][1], str) or not given[0][1].strip():
        return None
    return given[0][0], given[0][1], item.get("credentials")


def _check_on_disk(
    data: Mapping[str, Any], base: Path, problems: list[Problem]
) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """Checks that need the filesystem or installed packages, and repeated sources.

    Works on the config as plain data (validated or not), so that it also runs
    when the schema has problems; a value that is malformed there is left to
    validation's report.

    Returns:
        What was read: the text of ``formatter.template_file`` and the
        ``credentials_file`` table (``None`` and empty when not set or not valid).
    """
    items = data.get("sources")
    sources = [
        (i, found) for i, item in enumerate(items if isinstance(items, list) else []) if (found := _location(item))
    ]
    seen: dict[str, int] = {}
    for i, (_, written, _) in sources:
        # Compared as shown (credentials masked): that form is the source's key in state.
        shown = redact_url(written)
        if shown in seen:
            problems.append(Problem(f"sources[{i}]", f"repeats sources[{seen[shown]}] ({shown!r})"))
        seen.setdefault(shown, i)

    files_ok = not _reported(problems, "base_dir")  # relative to a base_dir that is wrong, every file is missing
    template_text = None
    formatter = data.get("formatter")
    template_file = formatter.get("template_file") if isinstance(formatter, Mapping) else None
    if isinstance(template_file, str) and files_ok and not _reported(problems, "formatter.template_file"):
        path = _resolve(base, template_file)
        text = _read_text(path, "formatter.template_file", problems)
        if text is not None:
            try:
                Template(text, {MEMORY_SLOT}, [MEMORY_SLOT])
                template_text = text
            except TemplateError as exc:
                problems.append(Problem("formatter.template_file", f"{path}: {exc}"))

    credentials_file = data.get("credentials_file")
    wanted = any(isinstance(credentials, str) for _, (_, _, credentials) in sources)
    table: dict[str, dict[str, Any]] = {}
    table_ok = False
    if wanted and isinstance(credentials_file, str) and files_ok and not _reported(problems, "credentials_file"):
        count = len(problems)
        table = _read_credentials(_resolve(base, credentials_file), problems)
        table_ok = len(problems) == count
    for i, (key, written, credentials) in sources:
        if isinstance(credentials, str):
            if credentials_file is None:
                problems.append(Problem(f"sources[{i}].credentials", "no credentials_file is set"))
            elif table_ok and credentials not in table:
                problems.append(Problem(f"sources[{i}].credentials", f"no entry {credentials!r} in credentials_file"))
        problem = protocol_problem(written)
        if problem:
            problems.append(Problem(f"sources[{i}].{key}", problem))
    return template_text, table


def _read_text(path: Path, key: str, problems: list[Problem]) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problems.append(Problem(key, f"file not found: {path}"))
    except IsADirectoryError:
        problems.append(Problem(key, f"is a directory: {path}"))
    except UnicodeDecodeError as exc:
        problems.append(Problem(key, f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})"))
    except OSError as exc:
        problems.append(Problem(key, f"cannot read {path}: {exc.strerror or exc}"))
    return None


def _read_credentials(path: Path, problems: list[Problem]) -> dict[str, dict[str, Any]]:
    text = _read_text(path, "credentials_file", problems)
    if text is None:
        return {}
    try:
        data = _safe_load(text) or {}
    except yaml.YAMLError as exc:
        problems.append(Problem("credentials_file", _yaml_message(str(path), exc)))
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        problems.append(Problem("credentials_file", f"{path}: must map names to storage options"))
        return {}
    # Interpolation problems here name the entry, never its value.
    found: list[Problem] = []
    table = _expand_tree(data, "", found, secret=True)
    problems += [Problem(f"credentials_file: {p.path}", p.message) for p in found]
    return {str(k): v for k, v in table.items()}


class _Key(NamedTuple):
    """A mapping key YAML did not read as a string, and its text as written (``on`` for ``True``)."""

    value: Any
    text: str

    def __str__(self) -> str:
        return str(self.value)


class _SafeLoader(yaml.SafeLoader):
    """``yaml.safe_load``, except that a key given twice in one mapping is an error, not a silent override.

    A key that is not a string comes back as a :class:`_Key`, so that the
    problem reported for it can show the key as written.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        texts: dict[Any, str] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
                if not isinstance(key, str) and isinstance(key_node, yaml.ScalarNode):
                    texts[key] = key_node.value
        mapping = super().construct_mapping(node, deep)
        if not texts:
            return mapping
        return {_Key(k, texts[k]) if not isinstance(k, str) and k in texts else k: v for k, v in mapping.items()}


def _safe_load(text: str) -> Any:
    return yaml.load(text, Loader=_SafeLoader)  # a SafeLoader subclass: plain data only


def _yaml_message(file: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    text = f"{problem} ({context})" if context else str(problem)
    if mark is not None:
        return f"{file}:{mark.line + 1}:{mark.column + 1}: YAML syntax error: {text}"
    return f"{file}: YAML syntax error: {text}"


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, parse and validate a YAML config file.

    Raises:
        ConfigError: the file cannot be read, is not valid YAML, or does not
            describe a valid config; the message names the file and every problem.
    """
    file = os.fspath(path)
    text = _read_config_text(Path(file))
    try:
        data = _safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_message(file, exc)) from None
    if data is None:
        raise ConfigError("the config is empty; it needs at least 'version: 1'", file=file)
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping, not a {type(data).__name__}", file=file)
    return Config.from_mapping(data, file=file, base_dir=Path(file).absolute().parent)


def _read_config_text(path: Path) -> str:
    problems: list[Problem] = []
    text = _read_text(path, "", problems)
    if text is None:
        raise ConfigError([Problem("", p.message) for p in problems], file=str(path))
    return text
