"""Which layer set each config value: the YAML file (at a line and column), a ``MEMCONFIG_*`` variable, the
defaults of a tool's preset (``preset: codex``), the default.

Kept apart from loading: a render never needs to know where a value came
from, and composing the YAML's nodes (with their marks) costs a second pass
over the text, paid only by ``memconfig explain``. The layers are told apart
as pydantic-settings merges them: a ``MEMCONFIG_*`` variable overrides the file
key by key (``MEMCONFIG_LOADER__TIMEOUT`` sets ``loader.timeout`` only; a
JSON value sets what it holds), and a list is replaced whole.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic_settings import EnvSettingsSource
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..interpolation import variable_names
from ..safe_yaml import safe_compose
from ..sources.redact import MASK, is_secret_key, mask, redact_url

if TYPE_CHECKING:
    from .schema import Config

__all__ = ["STDIN", "ConfigValue", "Layer", "Written", "value_layers", "written_at"]

#: What a config read from standard input (``-c -``) is called.
STDIN = "<stdin>"
_MERGE = "tag:yaml.org,2002:merge"
_SHORTHAND = re.compile(r"^sources\[\d+\]$")  # ``- a.md``: a source written as its URL
_OPTIONS = frozenset({"storage", "storage_options"})  # below these, a key's name says whether it holds a secret


@dataclass(frozen=True, slots=True)
class Written:
    """Where a value starts in the YAML text (1-based line and column), and its scalar text as written."""

    line: int
    column: int
    text: str | None = None
    """The scalar as written (``${VAR}`` unexpanded); ``None`` for a mapping or a list."""


@dataclass(frozen=True, slots=True)
class Layer:
    """Where a value came from.

    Attributes:
        kind: ``file`` (the YAML file), ``stdin`` (``-c -``), ``environment``
            (a ``MEMCONFIG_*`` variable), ``preset`` (the defaults a tool's preset
            brings: :data:`~memconfig.format.presets.PRESET_DEFAULTS`) or ``default``.
        file: the config file's name, for ``file`` and ``stdin``.
        line, column: where the value starts in it (1-based).
        variable: the ``MEMCONFIG_*`` variable's name, for ``environment``.
        preset: the preset's name, for ``preset``.
    """

    kind: Literal["file", "stdin", "environment", "preset", "default"]
    file: str | None = None
    line: int | None = None
    column: int | None = None
    variable: str | None = None
    preset: str | None = None

    def __str__(self) -> str:
        if self.kind == "environment":
            return f"environment variable {self.variable}"
        if self.kind == "preset":
            return f"preset {self.preset}"
        if self.kind == "default":
            return "default"
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One value of a config, as it will be used, and the layer that set it.

    Attributes:
        path: its key path, as problems give it (``sources[0].url``, ``loader.timeout``).
        value: the value (JSON data), secrets masked: values under secret-looking
            option names, URL credentials, and what secret-named ``${VAR}``\\ s put there.
        layer: where it came from.
        variables: the names of the ``${VAR}``\\ s written in it (names only: never their values).
    """

    path: str
    value: Any
    layer: Layer
    variables: tuple[str, ...] = ()


def written_at(text: str) -> dict[str, Written]:
    """Where each value of a YAML config starts, by key path (``loader.timeout``, ``sources[0]``).

    A merge key (``<<: *base``) puts its mapping's values at the merging
    mapping's paths, where the mapping's own keys win; an alias's values are
    where its anchor wrote them. A source written as its URL (``- a.md``) is
    also at ``sources[N].url``.
    """
    found: dict[str, Written] = {}
    root = safe_compose(text)
    if root is not None:
        _walk(root, "", found)
    return found


def _walk(node: Node, path: str, found: dict[str, Written]) -> None:
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if key.tag == _MERGE:
                for merged in value.value if isinstance(value, SequenceNode) else [value]:
                    _walk(merged, path, found)
        for key, value in node.value:
            if key.tag != _MERGE and isinstance(key, ScalarNode):
                _mark(value, f"{path}.{key.value}" if path else str(key.value), found)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            _mark(item, f"{path}[{index}]", found)


def _mark(node: Node, path: str, found: dict[str, Written]) -> None:
    mark = node.start_mark
    written = Written(mark.line + 1, mark.column + 1, node.value if isinstance(node, ScalarNode) else None)
    found[path] = written
    if isinstance(node, ScalarNode) and _SHORTHAND.match(path):
        found[f"{path}.url"] = written
    _walk(node, path, found)


def value_layers(config: Config, text: str | None) -> list[ConfigValue]:
    """Every value of *config* and the layer that set it; *text* is the YAML it was read from (``None``: unknown).

    Every field of the fixed sections is listed, defaults included; of a
    source or a preset, the fields given. Reads the ``MEMCONFIG_*`` variables
    of the environment now, as loading did.
    """
    file = config.file or "<config>"
    kind: Literal["file", "stdin"] = "stdin" if file == STDIN else "file"
    marks = written_at(text) if text is not None else {}
    overrides = _overrides(type(config))
    preset, filled = config.preset_filled
    out = []
    for path, segments, value, given in _leaves(config, "", (), only_given=False):
        if path in filled:  # neither the file nor a variable gave it: the preset's defaults did
            out.append(ConfigValue(path, _shown(segments, value, config.secret_values), Layer("preset", preset=preset)))
            continue
        variable = _variable(segments, overrides)
        written = marks.get(path) or (_nearest(path, marks) if given else None)
        if variable is not None:
            layer = Layer("environment", variable=variable)
        elif written is not None:
            layer = Layer(kind, file, written.line, written.column)
        else:
            layer = Layer("default")
        names = variable_names(written.text) if variable is None and written is not None and written.text else ()
        out.append(ConfigValue(path, _shown(segments, value, config.secret_values), layer, names))
    return out


def _leaves(
    value: Any, path: str, segments: tuple[str | int, ...], *, only_given: bool
) -> Iterator[tuple[str, tuple[str | int, ...], Any, bool]]:
    """(path, segments, value, given) of each leaf; *given*: it is from input, not a model's default."""
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            if only_given and name not in value.model_fields_set:
                continue
            where = f"{path}.{name}" if path else name
            yield from _leaves(getattr(value, name), where, (*segments, name), only_given=only_given)
    elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]", (*segments, index), only_given=True)
    elif isinstance(value, Mapping) and value:
        for key, item in value.items():  # a key given in a mapping: a preset's fields, or options
            yield from _leaves(item, f"{path}.{key}", (*segments, str(key)), only_given=True)
    else:
        yield path, segments, value, only_given


def _nearest(path: str, marks: Mapping[str, Written]) -> Written | None:
    """The mark of the closest enclosing value that is in the file (for a value a validator filled in)."""
    while path:
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
        if path in marks:
            return marks[path]
    return None


def _overrides(cls: type[Config]) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The key paths the ``MEMCONFIG_*`` variables set (dicts walked, anything else whole), and the names set."""
    try:
        tree = EnvSettingsSource(cls)()
    except (ValueError, RecursionError):
        tree = {}  # the config loaded, so this does not happen; a layer is then shown as the file's
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[tuple[str, ...], Any]] = [((), tree)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, Mapping) and (item or not where):
            stack.extend(((*where, str(k).lower()), v) for k, v in item.items())
        else:
            paths.append(where)
    names = {name.upper(): name for name in os.environ if name.upper().startswith("MEMCONFIG_")}
    return paths, names


def _variable(segments: tuple[str | int, ...], overrides: tuple[list[tuple[str, ...]], dict[str, str]]) -> str | None:
    """The ``MEMCONFIG_*`` variable that set the value at *segments*, or ``None``."""
    paths, names = overrides
    low = tuple(str(s).lower() for s in segments)
    for path in paths:
        if low[: len(path)] != path:
            continue
        for end in range(len(path), 0, -1):  # the longest name set: MEMCONFIG_LOADER__TIMEOUT before MEMCONFIG_LOADER
            name = names.get("MEMCONFIG_" + "__".join(path[:end]).upper())
            if name is not None:
                return name
    return None


def _shown(segments: tuple[str | int, ...], value: Any, secrets: tuple[str, ...]) -> Any:
    """*value* as it may be shown: under a secret-looking option name masked whole, else credentials masked."""
    options = next((i for i, s in enumerate(segments) if s in _OPTIONS), None)
    hidden = options is not None and any(isinstance(s, str) and is_secret_key(s) for s in segments[options + 1 :])
    if hidden and value not in (None, "", True, False):
        return MASK
    return _masked(value, secrets)


def _masked(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact_url(mask(value, secrets))
    if isinstance(value, list | tuple):
        return [_masked(v, secrets) for v in value]
    if isinstance(value, Mapping):
        return {k: _masked(v, secrets) for k, v in value.items()}
    return value
