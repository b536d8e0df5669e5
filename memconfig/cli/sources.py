"""``memconfig sources``: read every source now and print a table of what happened to each."""

from __future__ import annotations

import argparse

from ..columns import Column
from ..config import Config
from ..exceptions import SourceError
from ..model import Failure, LoadResult, SkipReason
from ..pipeline import Pipeline
from .logs import cli_logging
from .progress import load_progress
from .tables import print_table

__all__ = ["run"]

HELP = "load every source and print a table of what happened"
#: On a narrow terminal the name, status and reason stay; the byte count gives way first, then the URL.
COLUMNS = (
    Column("NAME", kind="path"),
    Column("URL", kind="path", drop=1),
    Column("STATUS"),
    Column("BYTES", True, drop=2),
    Column("REASON"),
)


def run(config: Config, args: argparse.Namespace) -> int:
    with cli_logging(config, args):
        pipeline = Pipeline.from_config(config)
        with load_progress(args):
            results = pipeline.load()
        failed = _print_sources(results)
    if failed:
        raise SourceError(failed)
    return 0


def _print_sources(results: list[LoadResult]) -> list[Failure]:
    """Print the table (rich on a terminal, plain text otherwise); return the sources that would fail a render."""
    rows = []
    failed = []
    for result in results:
        if not result.ok and (result.source.required or result.fatal):
            source = result.source
            why = result.reason or SkipReason.ERROR
            failed.append(Failure(source.key, why, result.detail, source.name, source.display_url))
        reason = f"{result.reason}: {result.detail}" if result.reason else ""
        rows.append((result.source.name, result.source.display_url, result.status, result.bytes, reason))
    print_table(COLUMNS, rows)
    return failed
