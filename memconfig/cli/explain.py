"""``memconfig explain``: a dry run reading no content; each source, its checks and verdict, and each value's layer."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

from ..columns import Column
from ..config import Config, load_config_stream
from ..config.checks import read_text
from ..config.layers import STDIN
from ..exceptions import ConfigError, Problem
from ..explain import Explanation, PlannedSource, explain
from ..limits import MAX_CONFIG_BYTES
from ..safe_text import escaped
from ..words import counted
from .progress import on_terminal
from .tables import fit_table, plain_table, terminal_width

__all__ = ["Loaded", "load", "run"]

HELP = (
    "show every source (globs listed, variables resolved), its checks and verdict,"
    " and where each value was set; reads no content"
)
_WIDEST_VALUE = 72
#: The values' table: the key path is never cut, the layer is the first to give way.
_VALUE_COLUMNS = (Column("key", kind="id"), Column("value", kind="text"), Column("layer", kind="path", drop=1))


class Loaded(NamedTuple):
    """The config, and the YAML text it was read from (for the lines its values are on)."""

    config: Config
    text: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help="a readable report, or JSON")


def load(name: str) -> Loaded:
    """Read the config as every command does (the same messages), keeping its text; ``-`` is standard input."""
    if name == "-":
        try:
            data = sys.stdin.buffer.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror or exc}", file=STDIN) from None
        config = load_config_stream(io.BytesIO(data), file=STDIN)
        return Loaded(config, data.decode("utf-8"))
    problems: list[Problem] = []
    text = read_text(Path(name), "", problems)  # once: the config may be a pipe (-c <(…))
    if text is None:
        raise ConfigError(problems, file=name)
    config = load_config_stream(io.BytesIO(text.encode("utf-8")), file=name, base_dir=Path(name).absolute().parent)
    return Loaded(config, text)


def run(loaded: Loaded, args: argparse.Namespace) -> int:
    explanation = explain(loaded.config, loaded.text)
    if args.format == "json":
        print(json.dumps(explanation.as_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        width = terminal_width(sys.stdout) if on_terminal(sys.stdout) else None
        print("\n".join(report(explanation, width)))
    return 0


def report(explanation: Explanation, width: int | None = None) -> list[str]:
    """The readable report, as lines; its table of values fitted to a terminal *width* wide (``None``: whole)."""
    lines = [
        f"{_clean(explanation.file)}: dry run (no source was read, no remote URL contacted)",
        f"base_dir: {_clean(explanation.base_dir)} ({_clean(explanation.base_dir_from)})",
        "",
        "Checked against:",
    ]
    limits = explanation.limits
    for name, value in limits.items():
        shown = "any (not set)" if value is None else ", ".join(map(str, value)) if isinstance(value, list) else value
        if name == "max_bytes":
            shown = counted(value, "byte")
        elif name == "timeout":
            shown = f"{value:g} s (a remote glob's listing)"
        lines.append(f"  loader.{name:<18} {_clean(str(shown))}")
    count = len(explanation.sources)
    lines += ["", f"Sources ({count} declared):" if count else "Sources: none declared"]
    for number, source in enumerate(explanation.sources, 1):
        lines += _source_lines(source, f"  {number}. ", "     ")
    lines += ["", "Values (the layer that set each):"]
    rows = [
        [_clean(v.path), _clean(_value(v.value)), _clean(str(v.layer) + _via(v.variables))] for v in explanation.values
    ]
    if width is not None:  # a terminal: no line wraps (the layer gives way first, then the value is cut)
        rows = fit_table(_VALUE_COLUMNS, rows, width, lambda n: 2 * n, len)[1]
    lines += [f"  {line}".rstrip() for line in plain_table(["", "", ""], rows).splitlines()[1:]]
    return lines


def _source_lines(source: PlannedSource, first: str, indent: str, imports: str = "") -> list[str]:
    tags = [source.kind, *(["required"] if source.required else [])]
    head = _clean(source.key) + (f"  (name: {_clean(source.name)})" if source.name != source.key else "")
    lines = [f"{first}{head}  [{', '.join(tags)}]"]
    if source.variables:
        lines.append(f"{indent}variables: {', '.join('${' + v + '}' for v in source.variables)}")
    if source.resolved != source.key:
        lines.append(f"{indent}resolved:  {_clean(source.resolved)}")
    for check in source.checks:
        mark = "ok" if check.passed else "when read" if check.passed is None else "FAILS"
        lines.append(f"{indent}check {check.name}: {_clean(check.outcome)} [{mark}]")
    if source.kind == "discover":
        lines.append(f"{indent}walk: {_clean(source.detail)}")
    for folder in source.walk:
        lines.append(f"{indent}folder {_clean(folder.folder)}:")
        for candidate in folder.candidates:
            note = f" ({_clean(candidate.detail)})" if candidate.detail else ""
            lines.append(f"{indent}  {_clean(candidate.path)}: {candidate.outcome}{note}")
    if source.imports and source.imports != imports:  # a match follows its parent's: said once
        lines.append(f"{indent}{_clean(source.imports)}")
    lines.append(f"{indent}-> {_clean(source.summary)}")
    for match in source.matches:
        lines += _source_lines(match, f"{indent}- ", indent + "  ", source.imports)
    return lines


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _WIDEST_VALUE else text[: _WIDEST_VALUE - 1] + "…"


def _via(variables: tuple[str, ...]) -> str:
    return f" via {', '.join('${' + v + '}' for v in variables)}" if variables else ""


def _clean(text: str) -> str:
    """*text* with control characters written as escapes: a config's text must not drive the terminal."""
    return escaped(text)
