"""``memconfig validate``: check the config and list every problem, reading no source."""

from __future__ import annotations

import argparse

from ..config import Config
from ..words import counted

__all__ = ["run"]

HELP = "check the config; list every problem"


def run(config: Config, args: argparse.Namespace) -> int:
    print(f"{config.file or args.config}: ok ({counted(len(config.sources), 'source')})")
    return 0
