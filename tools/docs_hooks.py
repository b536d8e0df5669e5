"""MkDocs hooks (``mkdocs.yml``: ``hooks:``): the three reference pages, made at build time from the code.

Nothing here is a second copy of the documentation: each page is read from what it documents, so it
cannot drift from it.

* ``reference/configuration.md``: the config schema's pydantic models (:mod:`memconfig.config.schema`):
  every key path, its type and choices, its default and limits, and the docstring written under the field.
* ``reference/events.md``: the event declarations (:data:`memconfig.events.EVENTS`): name, level, fields
  and the record's docstring; the skip reasons from :class:`memconfig.model.SkipReason`.
* ``reference/cli.md``: the ``argparse`` parser the command line runs (:mod:`memconfig.cli.main`): every
  command, its options, choices, defaults and help, and each command module's docstring.

A field, event field or skip reason without its docstring is a build warning (so ``mkdocs build --strict``
fails): the reference is only as good as the docstrings it is made from.
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib
import inspect
import itertools
import json
import logging
import re
import sys
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ForwardRef, Literal, Union, get_args, get_origin

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # document this tree's memconfig, not another installed copy
    sys.path.insert(0, str(ROOT))

log = logging.getLogger("mkdocs.plugins.memconfig")  # a warning here fails `mkdocs build --strict`

__all__ = ["PAGES", "cli_reference", "config_reference", "event_reference", "on_files"]


# -- docstrings written under a field (PEP 257's "attribute docstrings") ---------------------------


@cache
def _attribute_docs(cls: type) -> Mapping[str, str]:
    """``{name: docstring}`` for the class's own annotated fields (and enum members) followed by a string."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    [node] = ast.parse(source).body
    found: dict[str, str] = {}
    body = node.body if isinstance(node, ast.ClassDef) else []
    for statement, following in itertools.pairwise(body):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            name = statement.targets[0].id
        else:
            continue
        written = following.value if isinstance(following, ast.Expr) else None
        doc = written.value if isinstance(written, ast.Constant) else None
        if isinstance(doc, str):
            found[name] = inspect.cleandoc(doc)
    return found


def _field_doc(cls: type, name: str) -> str:
    """The docstring under field *name*, from *cls* or the class it inherits the field from."""
    for klass in cls.__mro__:
        text = _attribute_docs(klass).get(name) if klass.__module__.startswith("memconfig") else None
        if text:
            return text
    return ""


def _one_line(text: str) -> str:
    """Markdown table cells hold one line: paragraphs joined, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _rst_to_markdown(text: str) -> str:
    """Docstrings write code as ``x`` and refer with :mod:`x`: shown as `x`; ``docs/x.md`` links to that page."""
    text = re.sub(r":(?:mod|class|func|meth|data|attr|exc):`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"(?<![\w/.])docs/([\w-]+)\.md", r"[docs/\1.md](../\1.md)", text)
    return text.replace("``", "`")


def _missing(what: str) -> None:
    log.warning("memconfig reference: %s has no docstring to document it", what)


# -- (a) the configuration reference ---------------------------------------------------------------


def _is_model(value: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(value, type) and issubclass(value, BaseModel)


def _section_id(model: type) -> str:
    return model.__name__.lower()


def _type_text(annotation: Any, models: list[type], owner: type | None = None) -> str:
    """A type as a reader of YAML needs it: choices listed, a model linked to its own table, ``None`` left out."""
    if isinstance(annotation, str | ForwardRef):  # declared before the class it names: read in its module
        written = annotation if isinstance(annotation, str) else annotation.__forward_arg__
        annotation = eval(written, vars(sys.modules[owner.__module__])) if owner is not None else Any
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return " · ".join(f"`{json.dumps(a) if not isinstance(a, str) else a}`" for a in args)
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return " or ".join(_type_text(a, models, owner) for a in kept)
    if hasattr(annotation, "__metadata__"):  # Annotated[str, validator]: the built-in rules' names
        return " · ".join(f"`{name}`" for name in _rule_names())
    if origin in (list, tuple):
        item = args[0] if args else Any
        return f"list of {_type_text(item, models, owner)}"
    if origin is dict:
        if not args:
            return "mapping"
        return f"mapping of {_type_text(args[0], models, owner)} to {_type_text(args[1], models, owner)}"
    if _is_model(annotation):
        if annotation not in models:
            models.append(annotation)
        where = _paths().get(annotation, annotation.__name__ + ".").rstrip(".")
        return f"[`{where}`](#{_section_id(annotation)})"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, "any")


def _rule_names() -> tuple[str, ...]:
    from memconfig.process import BUILT_IN

    return tuple(BUILT_IN)


def _yaml_value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, enum.Enum):
        value = value.value
    if _is_model(type(value)):
        return "its defaults"
    if isinstance(value, str):
        plain = value.isidentifier() and value not in ("null", "true", "false")
        return f"`{value}`" if plain else f"`{json.dumps(value)}`"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


def _default_text(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return _yaml_value(field.default_factory())
    return _yaml_value(field.default) if field.default is not PydanticUndefined else ""


def _limits_text(field: Any) -> str:
    """The numeric bounds pydantic checks (``ge``, ``gt``, ``le``, ``min_length``), as a reader writes them."""
    shown = []
    for item in field.metadata:
        for attribute, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"), ("min_length", "at least")):
            bound = getattr(item, attribute, None)
            if bound is not None:
                shown.append(f"{sign} {bound:,}" if attribute != "min_length" else "not empty")
    return ", ".join(shown)


def _model_rows(model: type[BaseModel], prefix: str, models: list[type]) -> Iterator[str]:
    for name, field in model.model_fields.items():
        key = field.alias or name
        doc = _field_doc(model, name)
        if not doc:
            _missing(f"config key {prefix}{key} ({model.__name__}.{name})")
        limits = _limits_text(field)
        kind = _type_text(field.annotation, models, model) + (f" ({limits})" if limits else "")
        named = _named_choices().get(f"{prefix}{key}")
        if named is not None:
            choices, other = named
            kind = " · ".join(f"`{c}`" for c in choices) + f", or {other}"
        text = _one_line(_rst_to_markdown(doc)) + _used_by(model, name)
        yield f"| `{prefix}{key}` | {kind} | {_default_text(field)} | {text} |"


def _builtin(registry: Any) -> list[str]:
    """The names memconfig itself registers (a plugin's, from an entry point, are the installation's, not the docs')."""
    return [n for n, e in registry._entries.items() if isinstance(e.target, str) and e.target.startswith("memconfig.")]


def _named_choices() -> dict[str, tuple[list[str], str]]:
    """Keys whose value names an entry of a closed table: the built-in names, and what else may be named."""
    from memconfig.format.presets import PRESETS
    from memconfig.registry import appenders, processors

    return {
        "formatter.preset": (list(PRESETS), "one defined under `presets:`"),
        "presets.<name>.extends": (list(PRESETS), "another of `presets:`"),
        "appender.format": (_builtin(appenders), "a plugin's"),
        "processors[].name": (_builtin(processors), "a plugin's"),
    }


def _used_by(model: type, name: str) -> str:
    """For an ``appender`` setting: the formats that use it (the registry's ``honours``), where not all do."""
    from memconfig.config.schema import AppenderConfig
    from memconfig.registry import appenders

    if model is not AppenderConfig or name == "format":
        return ""
    users = [n for n in _builtin(appenders) if (h := appenders._entries[n].honours) is not None and name in h]
    return f" Used by: {', '.join(f'`{u}`' for u in users)}." if users else ""


#: Where each model sits in a config, written as a key path (``[]``: an item of a list, ``<name>``: any key).
def _paths() -> dict[type, str]:
    from memconfig.config import schema

    return {
        schema.Config: "",
        schema.SourceConfig: "sources[].",
        schema.DiscoverConfig: "sources[].discover.",
        schema.DownConfig: "sources[].discover.down.",
        schema.ImportsConfig: "imports.",
        schema.LoaderConfig: "loader.",
        schema.CacheConfig: "cache.",
        schema.FormatterConfig: "formatter.",
        schema.BudgetConfig: "formatter.budget.",
        schema.TokensConfig: "formatter.tokens.",
        schema.PresetConfig: "presets.<name>.",
        schema.AppenderConfig: "appender.",
        schema.CacheControlConfig: "appender.cache_control.",
        schema.ProcessorConfig: "processors[].",
        schema.LoggingConfig: "logging.",
    }


def _heading(model: type, path: str) -> str:
    where = path.rstrip(".") or "the top level"
    return f"## `{where}` {{#{_section_id(model)}}}" if path else f"## The top level {{#{_section_id(model)}}}"


def config_reference() -> str:
    """The configuration reference: a table per model of the schema, every key path in it."""
    from memconfig.config import schema

    paths = _paths()
    models: list[type] = [schema.Config]
    parts = [
        "# Configuration reference",
        "",
        "Generated from the config schema, `memconfig/config/schema.py` (schema `version: 1`), when the site is "
        "built: every key, its type, its default and what it does, from the docstring under each field. "
        "How a config is read — errors, `${VAR}`, `MEMCONFIG_*` variables, paths — is in the "
        "[configuration guide](../configuration.md).",
        "",
    ]
    done = 0
    while done < len(models):  # breadth-first: a model's table comes after the first table that links to it
        model = models[done]
        done += 1
        path = paths.get(model)
        if path is None:
            log.warning("memconfig reference: %s has no key path in docs_hooks._paths()", model.__name__)
            path = f"{model.__name__}."
        about = inspect.cleandoc(model.__doc__ or "")
        if not about:
            _missing(f"config model {model.__name__}")
        parts += [_heading(model, path), "", _rst_to_markdown(about), ""]
        parts += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        parts += list(_model_rows(model, path, models))
        parts.append("")
    return "\n".join(parts)


def config_keys() -> list[str]:
    """The top-level keys of a config, as the reference lists them."""
    from memconfig.config.schema import Config

    return [field.alias or name for name, field in Config.model_fields.items()]


# -- (b) the event reference -----------------------------------------------------------------------


def _annotation_text(annotation: Any) -> str:
    """An event field's type as it reads in a JSON line (the records' annotations are strings: PEP 563)."""
    text = annotation.__forward_arg__ if isinstance(annotation, ForwardRef) else str(annotation)
    text = text.replace("dict[str, Any]", "object")
    for python, json_name in {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.items():
        text = re.sub(rf"\b{python}\b", json_name, text)
    return re.sub(r"list\[(\w+)\]", r"list of \1s", text).replace("| None", "or null")


def event_reference() -> str:
    """The event reference: every event of :data:`memconfig.events.EVENTS`, its level and fields."""
    from memconfig import events
    from memconfig.model import SkipReason

    parts = [
        "# Event reference",
        "",
        "Generated from the event declarations, `memconfig/events.py` (`EVENTS`, schema version "
        f"{events.SCHEMA_VERSION}), when the site is built: each event is a typed record whose fields are the "
        "event's. Every event also carries `render_id`; the command line adds `event`, `level`, `timestamp`, "
        "`host` and `pid`. What the log is for and how to read it: [the load log](../events.md).",
        "",
        "| event | level | when |",
        "| --- | --- | --- |",
    ]
    for name, spec in events.EVENTS.items():
        parts.append(f"| [`{name}`](#{name}) | {spec.level} | {_one_line(spec.about)} |")
    parts.append("")
    for name, spec in events.EVENTS.items():
        if not spec.about:
            _missing(f"event {name}")
        parts += [f"## `{name}` {{#{name}}}", "", f"**Level**: {spec.level}. {_sentence(spec.about)}", ""]
        if spec.level == "by reason":
            parts += [_level_rule(name), ""]
        hints = spec.record.__annotations__
        parts += ["| field | type | meaning |", "| --- | --- | --- |"]
        for field in spec.fields:
            doc = _field_doc(spec.record, field) or events.FIELD_MEANINGS.get(field, "")
            if not doc:
                _missing(f"field {field} of event {name}")
            kind = _annotation_text(hints.get(field, ""))
            parts.append(f"| `{field}` | {kind} | {_one_line(_rst_to_markdown(doc))} |")
        parts.append("")
    parts += [
        "## Skip reasons {#skip-reasons}",
        "",
        _rst_to_markdown(inspect.cleandoc(SkipReason.__doc__ or "").split("\n\n")[0]),
        "",
        "| reason | meaning |",
        "| --- | --- |",
    ]
    for member in SkipReason:
        doc = _field_doc(SkipReason, member.name)
        if not doc:
            _missing(f"skip reason {member.value}")
        parts.append(f"| `{member.value}` | {_one_line(_rst_to_markdown(doc))} |")
    parts.append("")
    return "\n".join(parts)


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else ""


def _level_rule(name: str) -> str:
    """Where the level depends on the event's content, its emitters' docstrings say how."""
    from memconfig import events

    skipped = inspect.cleandoc(events.source_skipped.__doc__ or "").split("\n\n", 1)[-1]
    not_applicable = inspect.cleandoc(events.rule_not_applicable.__doc__ or "").split("\n", 1)[0]
    return _rst_to_markdown(" ".join(f"{skipped} {not_applicable}".split()))


# -- (c) the CLI reference -------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    """The whole parser: every command set up in full, as for ``--help``."""
    parser: argparse.ArgumentParser = _cli_main()._parser([])
    return parser


def _cli_main() -> types.ModuleType:
    return importlib.import_module("memconfig.cli.main")  # ``memconfig.cli.main`` is also the function's name


def _subcommands(parser: argparse.ArgumentParser) -> Mapping[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_commands() -> list[str]:
    """The subcommands of ``memconfig``, as the reference lists them."""
    return list(_subcommands(_parser()))


def _option_rows(parser: argparse.ArgumentParser) -> Iterator[str]:
    formatter = parser._get_formatter()
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        positional = not action.option_strings
        names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
        value = ""
        if action.nargs != 0 and not positional:
            choices = _choices(action.choices)
            value = " · ".join(f"`{c}`" for c in choices) if choices else f"`{action.metavar or action.dest.upper()}`"
        text = formatter._expand_help(action) if action.help else ""
        if not text:
            _missing(f"command-line option {names}")
        notes = []
        if action.required and action.nargs not in ("*", "?"):
            notes.append("required")
        if (isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+")) and "repeatable" not in text:
            notes.append("any number" if positional else "repeatable")
        if id(action) in groups:
            others = [o for a in groups[id(action)]._group_actions if a is not action for o in a.option_strings[-1:]]
            notes.append("not with " + ", ".join(f"`{o}`" for o in others))
        default = action.default
        shown = "" if default in (None, False, [], argparse.SUPPRESS) else f"`{default}`"
        yield f"| {names} | {value} | {shown} | {_one_line(text)}{_notes(notes)} |"


def _notes(notes: list[str]) -> str:
    return f" ({'; '.join(notes)})" if notes else ""


def _choices(choices: Any) -> list[str]:
    """An option's choices; a lazy table of registered names (``render --format``) shows memconfig's own."""
    if choices is None:
        return []
    if isinstance(choices, list | tuple | dict | set | frozenset):
        return [str(c) for c in choices]
    from memconfig.registry import appenders

    return [str(c) for c in choices if c in _builtin(appenders)]


def cli_reference() -> str:
    """The command-line reference: every command of the parser, its usage and options, its module's docstring."""
    parser = _parser()
    intro = inspect.cleandoc(_cli_main().__doc__ or "").split("\n\n", 1)
    parts = [
        "# Command-line reference",
        "",
        "Generated from the command line's own parser (`memconfig/cli/main.py` and each command's module) "
        "when the site is built. How the commands are used together: [the command line](../cli.md).",
        "",
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        _rst_to_markdown(" ".join(intro[-1].split())) if len(intro) > 1 else "",
        "",
        "| option | value | default | meaning |",
        "| --- | --- | --- | --- |",
        *_option_rows(parser),
        "",
    ]
    for name, sub in _subcommands(parser).items():
        module = importlib.import_module(f"memconfig.cli.{name}")
        about = inspect.cleandoc(module.__doc__ or "")
        if not about:
            _missing(f"command {name}")
        parts += [f"## `memconfig {name}` {{#{name}}}", "", "```text", sub.format_usage().strip(), "```", ""]
        parts += [_rst_to_markdown(" ".join(paragraph.split())) + "\n" for paragraph in about.split("\n\n")]
        parts += ["| option | value | default | meaning |", "| --- | --- | --- | --- |", *_option_rows(sub), ""]
    return "\n".join(parts)


# -- the hook --------------------------------------------------------------------------------------

#: The generated pages: where each goes in the site, and what makes it.
PAGES: Mapping[str, Callable[[], str]] = {
    "reference/configuration.md": config_reference,
    "reference/events.md": event_reference,
    "reference/cli.md": cli_reference,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site (before the navigation is built, so ``nav`` can name them)."""
    from mkdocs.structure.files import File

    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    return files
