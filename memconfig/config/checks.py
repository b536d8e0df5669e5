"""The checks that need the disk or installed packages, and repeated sources.

Kept apart from the schema because they are not about a value's shape: they
read ``formatter.template_file`` and ``credentials_file`` (and stat
``formatter.tokens.encoding_file``), ask fsspec about
protocols, and compare sources with each other. They work on the config as
plain data, so they run (and report) even when validation failed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic_settings import BaseSettings, EnvSettingsSource

from ..exceptions import Problem
from ..file_kinds import not_openable
from ..format.presets import MEMORY_SLOT
from ..limits import MAX_CONFIG_BYTES
from ..safe_yaml import safe_load, yaml_message
from ..sources.options import merge_options
from ..sources.redact import redact_url
from ..sources.urls import protocol_problem, url_problem
from ..templates import Template, TemplateError
from .expansion import expand_tree
from .problems import any_variable

__all__ = ["check_on_disk", "decode_text", "read_text", "resolve", "with_environment"]


def resolve(base: Path, path: str) -> Path:
    """A local *path* from the config: ``~`` expanded, relative to *base*."""
    expanded = Path(os.path.expanduser(path))
    return expanded if expanded.is_absolute() else base / expanded


def with_environment(cls: type[BaseSettings], data: Mapping[str, Any]) -> dict[str, Any]:
    """*data* with the ``MEMCONFIG_*`` overrides laid over it, as validation saw it."""
    if not any_variable():
        return merge_options(data)
    try:
        overrides = EnvSettingsSource(cls)()
    except (ValueError, RecursionError):
        overrides = {}  # a SettingsError (or JSON nested without end), reported by validation
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


def check_on_disk(
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
    discoveries: dict[str, int] = {}
    for i, item in enumerate(items if isinstance(items, list) else []):
        # dict tried first, and None let through untested: an ABC isinstance costs ~2k instructions, per source
        found = item.get("discover") if isinstance(item, dict | Mapping) else None
        if found is not None and isinstance(found, Mapping):  # the same search twice finds the same files twice
            same = repr(sorted(found.items(), key=lambda kv: str(kv[0])))
            if same in discoveries:
                problems.append(Problem(f"sources[{i}]", f"repeats sources[{discoveries[same]}] (the same discover:)"))
            discoveries.setdefault(same, i)

    files_ok = not _reported(problems, "base_dir")  # relative to a base_dir that is wrong, every file is missing
    template_text = None
    formatter = data.get("formatter")
    template_file = formatter.get("template_file") if isinstance(formatter, Mapping) else None
    if isinstance(template_file, str) and files_ok and not _reported(problems, "formatter.template_file"):
        path = resolve(base, template_file)
        text = read_text(path, "formatter.template_file", problems)
        if text is not None:
            try:
                Template(text, {MEMORY_SLOT}, [MEMORY_SLOT])
                template_text = text
            except TemplateError as exc:
                problems.append(Problem("formatter.template_file", f"{path}: {exc}"))
    tokens = formatter.get("tokens") if isinstance(formatter, Mapping) else None
    encoding_file = tokens.get("encoding_file") if isinstance(tokens, Mapping) else None
    if isinstance(encoding_file, str) and files_ok:  # read when the pipeline is built; not waited on there either
        path = resolve(base, encoding_file)
        refused = not_openable(str(path))
        if refused is not None:
            problems.append(Problem("formatter.tokens.encoding_file", f"{path} {refused}"))

    credentials_file = data.get("credentials_file")
    wanted = any(isinstance(credentials, str) for _, (_, _, credentials) in sources)
    table: dict[str, dict[str, Any]] = {}
    table_ok = False
    if wanted and isinstance(credentials_file, str) and files_ok and not _reported(problems, "credentials_file"):
        count = len(problems)
        table = _read_credentials(resolve(base, credentials_file), problems)
        table_ok = len(problems) == count
    for i, (key, written, credentials) in sources:
        if isinstance(credentials, str):
            if credentials_file is None:
                problems.append(Problem(f"sources[{i}].credentials", "no credentials_file is set"))
            elif table_ok and credentials not in table:
                problems.append(Problem(f"sources[{i}].credentials", f"no entry {credentials!r} in credentials_file"))
        problem = url_problem(written) or protocol_problem(written)
        if problem:
            problems.append(Problem(f"sources[{i}].{key}", problem))
    return template_text, table


def read_text(path: Path, key: str, problems: list[Problem]) -> str | None:
    """The UTF-8 text of *path*, or ``None`` with the reason added to *problems* at *key*.

    At most :data:`~memconfig.limits.MAX_CONFIG_BYTES` + 1 bytes are
    read, so a huge file is refused at once. A FIFO, a socket or a device is
    not opened (it could block validation, or never end), except a pipe the
    process was handed for the config itself (``-c <(…)``), which is read to
    its end: a file the config names (*key* set) is never the caller's pipe.
    """
    try:
        refused = not_openable(str(path), handed=not key)
        if refused is not None:
            problems.append(Problem(key, f"{path} {refused}" if key else refused))  # the config: named already
            return None
        with open(path, "rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        problems.append(Problem(key, f"file not found: {path}{_if_cwd_gone(path)}"))
    except IsADirectoryError:
        problems.append(Problem(key, f"is a directory: {path}"))
    except OSError as exc:
        problems.append(Problem(key, f"cannot read {path}: {exc.strerror or exc}"))
    else:
        try:
            text = decode_text(data)
            nul = data.find(b"\0") if key else -1  # the config's own NULs are YAML's to place (line:column)
            if nul >= 0:  # a binary file; and nothing a prompt should carry
                raise ValueError(f"is not text: it holds a NUL byte (at {_where(data, nul)})")
            return text
        except ValueError as exc:
            problems.append(Problem(key, f"{path} {exc}" if key else f"the file {exc}"))  # no key: it is the config
    return None


def decode_text(data: bytes) -> str:
    """*data* (read with a bound of :data:`~memconfig.limits.MAX_CONFIG_BYTES` + 1) as UTF-8 text.

    Raises:
        ValueError: it is over the bound, or not UTF-8 (the message gives the line and column).
    """
    if len(data) > MAX_CONFIG_BYTES:
        limit = f"{MAX_CONFIG_BYTES >> 20} MiB"
        raise ValueError(f"is larger than the limit of {limit} (memconfig.config.MAX_CONFIG_BYTES)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"is not UTF-8 text ({exc.reason} at {_where(data, exc.start)})") from None
    return text


def _if_cwd_gone(path: Path) -> str:
    """Why a relative *path* cannot be found when the working directory was removed under the process."""
    if path.is_absolute():
        return ""
    try:
        os.getcwd()
    except FileNotFoundError:
        return " (the working directory no longer exists: run from a folder that does)"
    return ""


def _where(data: bytes, at: int) -> str:
    """Byte *at* of *data* as a reader finds it: line, column (in characters) and byte."""
    line = data.count(b"\n", 0, at) + 1
    column = len(data[data.rfind(b"\n", 0, at) + 1 : at].decode("utf-8", "replace")) + 1
    return f"line {line}, column {column}, byte {at}"


def _read_credentials(path: Path, problems: list[Problem]) -> dict[str, dict[str, Any]]:
    text = read_text(path, "credentials_file", problems)
    if text is None:
        return {}
    try:
        data = safe_load(text) or {}
    except yaml.YAMLError as exc:
        problems.append(Problem("credentials_file", yaml_message(str(path), exc)))
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        problems.append(Problem("credentials_file", f"{path}: must map names to storage options"))
        return {}
    # Interpolation problems here name the entry, never its value.
    found: list[Problem] = []
    table = expand_tree(data, "", found)
    problems += [Problem(f"credentials_file: {p.path}", p.message) for p in found]
    return {str(k): v for k, v in table.items()}
