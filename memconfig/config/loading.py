"""``load_config``: a YAML file in, a validated :class:`~memconfig.config.schema.Config` out.

Kept apart from :mod:`memconfig.config.safe_yaml` because it needs the
schema, whose checks read YAML too: the two in one module would import each
other.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..exceptions import ConfigError, Problem
from .checks import read_text
from .safe_yaml import safe_load, yaml_message
from .schema import Config

__all__ = ["load_config"]


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, parse and validate a YAML config file.

    Raises:
        ConfigError: the file cannot be read, is not valid YAML, or does not
            describe a valid config; the message names the file and every problem.
    """
    file = os.fspath(path)
    text = _read_config_text(Path(file))
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_message(file, exc)) from None
    if data is None:
        raise ConfigError("the config is empty; it needs at least 'version: 1'", file=file)
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping, not a {type(data).__name__}", file=file)
    return Config.from_mapping(data, file=file, base_dir=Path(file).absolute().parent)


def _read_config_text(path: Path) -> str:
    problems: list[Problem] = []
    text = read_text(path, "", problems)
    if text is None:
        raise ConfigError([Problem("", p.message) for p in problems], file=str(path))
    return text
