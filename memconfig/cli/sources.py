"""``memconfig sources``: read every source now and print a table of what happened to each."""

from __future__ import annotations

import argparse

from ..config import Config
from ..exceptions import SourceError
from ..failures import Failure, SkipReason
from ..pipeline import Pipeline
from .logs import cli_logging

__all__ = ["run"]

HELP = "load every source and print a table of what happened"


def run(config: Config, args: argparse.Namespace) -> int:
    with cli_logging(config, args):
        failed = _print_sources(Pipeline.from_config(config))
    if failed:
        raise SourceError(failed)
    return 0


def _print_sources(pipeline: Pipeline) -> list[Failure]:
    """Print the table; return the sources that would fail a render."""
    rows = [("NAME", "URL", "STATUS", "BYTES", "REASON")]
    failed = []
    for result in pipeline.load():
        if not result.ok and (result.source.required or result.fatal):
            failed.append(Failure(result.source.key, result.reason or SkipReason.ERROR, result.detail))
        reason = f"{result.reason}: {result.detail}" if result.reason else ""
        rows.append((result.source.name, result.source.display_url, result.status, str(result.bytes), reason))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[4]).rstrip())
    return failed
