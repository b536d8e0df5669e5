"""pydantic and pydantic-settings errors turned into :class:`~memconfig.exceptions.Problem`, each at its key path.

Kept apart from the schema: the models say what a valid config is, this
says how an invalid one is reported (``sources[0].url``, ``unknown key``
with the closest known key, the ``MEMCONFIG_*`` variable behind a bad value),
and which ``MEMCONFIG_*`` variables set nothing at all (a warning).
"""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_settings import SettingsError

from ..exceptions import Problem
from ..suggest import did_you_mean

__all__ = ["PREFIX", "any_variable", "ignored_variables", "problem_from_pydantic", "problem_from_settings"]

PREFIX = "MEMCONFIG_"


def any_variable(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether a ``MEMCONFIG_*`` variable is set (in any case, as pydantic-settings reads them).

    Without one the environment layer is left out: reading it walks every
    variable for every key, a millisecond or two of a small config's start.
    """
    return any(name[:10].upper() == PREFIX for name in environ)


"""The prefix of the environment variables that override a config's values (nested keys joined by ``__``)."""

_DEEPEST = 4  # how far below the top the variables suggested go (``MEMCONFIG_FORMATTER__BUDGET__MAX_CHARS``)
_QUOTED = re.compile(r"'([^']*)'")  # the choices of a literal_error's ``expected``: "'json' or 'console'"


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def problem_from_pydantic(err: Mapping[str, Any], model: type[BaseModel] | None = None) -> Problem:
    """One entry of ``ValidationError.errors()`` at its key path (``sources[0].url``), in plain words.

    With the *model* validated, an unknown key comes with the known keys closest
    to it at its level (``unknown key (did you mean 'required'?)``); a value not
    among a field's choices, with the closest choice.
    """
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "union["))))
    message = str(err["msg"])
    message = message.removeprefix("Value error, ")
    given = err.get("input")
    if err["type"] == "extra_forbidden":
        message = "unknown key"
        if model is not None and loc and isinstance(loc[-1], str):
            message += did_you_mean(loc[-1], _keys_at(model, loc[:-1]))
    elif err["type"] == "missing":
        message = "required key is missing"
    elif err["type"] in ("model_type", "dict_type"):
        message = "must be a mapping"
    else:
        message = message.replace("Input should be", "must be")
        if err["type"] in ("literal_error", "enum") and isinstance(given, str):
            message += did_you_mean(given, _QUOTED.findall(str(err.get("ctx", {}).get("expected", ""))))
    return Problem(_format_loc(loc), message + _env_hint(loc))


def _keys_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys a mapping at *loc* of *model* may have: its model's fields, as YAML names them (``[]``: unknown)."""
    found: list[Any] = [model]
    for part in loc:
        found = [inner for kind in found for inner in _inside(kind, part)]
    return [
        field.alias or name
        for kind in found
        for option in _options(kind)
        if isinstance(option, type) and issubclass(option, BaseModel)
        for name, field in option.model_fields.items()
    ]


def _inside(kind: Any, part: int | str) -> Iterator[Any]:
    """The types a value of type *kind* holds at *part* (a field's, a list item's, a mapping value's)."""
    for option in _options(kind):
        if isinstance(option, type) and issubclass(option, BaseModel):
            if isinstance(part, str):
                for name, field in option.model_fields.items():
                    if part in (name, field.alias):
                        yield _resolved(field.annotation, option, name)
            continue
        origin, args = typing.get_origin(option), typing.get_args(option)
        if origin in (list, tuple) and isinstance(part, int) and args:
            yield args[0]
        elif origin in (dict, Mapping) and isinstance(part, str) and len(args) == 2:
            yield args[1]


def _resolved(annotation: Any, model: type[BaseModel], name: str) -> Any:
    """*annotation*, or for a forward reference (a field typed by a model defined further down) what it names."""
    if not isinstance(annotation, typing.ForwardRef):
        return annotation
    try:
        return typing.get_type_hints(model).get(name)
    except Exception:  # a name the module does not define: no suggestion, the error stands
        return None


def _options(kind: Any) -> Iterator[Any]:
    """*kind* itself, or each type of a union (``X | None``), ``Annotated`` taken off."""
    if typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        yield kind
        return
    args = typing.get_args(kind)
    if args and typing.get_origin(kind) not in (list, tuple, dict, Mapping, typing.Literal):
        for arg in args:
            yield from _options(arg)
    else:
        yield kind


def problem_from_settings(exc: SettingsError) -> Problem:
    """A ``MEMCONFIG_*`` variable pydantic-settings could not parse, named with its field."""
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None:
        return Problem("(environment)", str(exc))
    name = f"{PREFIX}{found[1].upper()}"
    return Problem(found[1], f"environment variable {name} is not valid JSON (lists and mappings must be JSON)")


def ignored_variables(model: type[BaseModel], environ: Mapping[str, str] = os.environ) -> list[Problem]:
    """The ``MEMCONFIG_*`` variables of *environ* that set nothing: their first key is none of *model*'s.

    pydantic-settings passes over them without a word, while the same typo in
    the YAML is an error; each comes back with the closest variable memconfig
    reads (``MEMCONFIG_FORMATER__PRESET``: ``MEMCONFIG_FORMATTER__PRESET``). A
    warning, not an error: other programs may use the prefix for their own settings.
    A variable whose first key is known is read, and a bad key below it is a
    validation error of its own (``formatter.presett: unknown key``).
    """
    top = {(field.alias or name).lower() for name, field in model.model_fields.items()}
    ignored = sorted(n for n in environ if n.upper().startswith(PREFIX) and _first_key(n) not in top)
    if not ignored:
        return []
    keys = [name[len(PREFIX) :] for name in _variable_names(model, "")]  # compared without the prefix all share
    found = []
    for name in ignored:
        hint = did_you_mean(name[len(PREFIX) :].upper(), keys, show=_named)
        found.append(
            Problem("", f"environment variable {name} names no config key ({_first_key(name)!r}): ignored{hint}")
        )
    return found


def _named(key: str) -> str:
    return PREFIX + key


def _first_key(variable: str) -> str:
    return variable[len(PREFIX) :].split("__", 1)[0].lower()


def _variable_names(model: type[BaseModel], above: str, depth: int = 0) -> Iterator[str]:
    """``MEMCONFIG_LOADER``, ``MEMCONFIG_LOADER__TIMEOUT``, …: a variable for every key of the models, nested."""
    for name, field in model.model_fields.items():
        variable = f"{above}__{(field.alias or name).upper()}" if above else f"{PREFIX}{(field.alias or name).upper()}"
        yield variable
        for option in _options(_resolved(field.annotation, model, name)):
            if depth < _DEEPEST and isinstance(option, type) and issubclass(option, BaseModel):
                yield from _variable_names(option, variable, depth + 1)


def _env_hint(loc: tuple[int | str, ...]) -> str:
    """Name the ``MEMCONFIG_*`` variable behind a bad value, since the YAML may not even mention it."""
    names = [str(p) for p in loc]
    set_names = {k.upper() for k in os.environ if k.upper().startswith(PREFIX)}
    for end in range(len(names), 0, -1):
        if not all(n.isidentifier() for n in names[:end]):
            continue
        name = PREFIX + "__".join(names[:end]).upper()
        if name in set_names:
            return f" (set by environment variable {name})"
        below = sorted(n for n in set_names if n.startswith(f"{name}__"))
        if below:  # MEMCONFIG_SOURCES__0__URL: pydantic-settings makes a mapping of it, never a list's item
            return (
                f" (set by environment variable {below[0]}: a list is set whole, as JSON, e.g. {name}='[...]')"
                if len(below) == 1
                else f" (set by environment variables {', '.join(below)}: a list is set whole, as JSON in {name})"
            )
    return ""
