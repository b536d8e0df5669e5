"""``load_config``: a YAML file (or stream) in, a validated :class:`~memconfig.config.schema.Config` out.

Kept apart from :mod:`memconfig.safe_yaml` because it needs the
schema, whose checks read YAML too: the two in one module would import each
other.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import yaml

from ..exceptions import ConfigError, Problem
from ..file_kinds import inherited
from ..limits import MAX_CONFIG_BYTES
from ..safe_yaml import safe_load, yaml_message
from .checks import decode_text, read_text
from .schema import Config, working_folder

__all__ = ["load_config", "load_config_stream"]

_KINDS = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, parse and validate a YAML config file.

    No more than :data:`~memconfig.limits.MAX_CONFIG_BYTES` + 1 bytes
    are read. Relative paths in the config resolve against the file's folder.

    Read from a pipe the process was handed (``<(cmd)``), they resolve
    against the current folder, as for standard input.

    Raises:
        ConfigError: the file cannot be read, is too large, is not valid YAML,
            or does not describe a valid config; the message names the file
            and every problem.
    """
    file = os.fspath(path)
    problems: list[Problem] = []
    text = read_text(Path(file), "", problems)
    if text is None:
        raise ConfigError(problems, file=file)
    # a pipe the process was handed (-c <(…)) lives in no folder of the user's: relative paths are the cwd's
    base = working_folder() if inherited(file) else Path(os.path.abspath(file)).parent
    return _parse(text, file, base)


def load_config_stream(
    stream: BinaryIO, *, file: str = "<stdin>", base_dir: str | os.PathLike[str] | None = None
) -> Config:
    """Read, parse and validate a YAML config from a binary stream (standard input for ``-c -``).

    Args:
        stream: Read to its end, or to :data:`~memconfig.limits.MAX_CONFIG_BYTES` + 1 bytes.
        file: What messages call it.
        base_dir: The folder relative paths resolve against when the config
            sets no ``base_dir``; defaults to the current folder.

    Raises:
        ConfigError: as :func:`load_config`.
    """
    try:
        data = stream.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=file) from None
    try:
        text = decode_text(data)
    except ValueError as exc:
        raise ConfigError(f"the input {exc}", file=file) from None
    return _parse(text, file, Path(base_dir).absolute() if base_dir is not None else working_folder())


def _parse(text: str, file: str, base_dir: Path) -> Config:
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_message(file, exc)) from None
    if data is None:
        raise ConfigError("the config is empty; it needs at least 'version: 1'", file=file)
    if not isinstance(data, dict):
        kind = _KINDS.get(type(data), type(data).__name__)
        raise ConfigError(f"the top level must be a mapping, not {kind}", file=file)
    return Config.from_mapping(data, file=file, base_dir=base_dir)
