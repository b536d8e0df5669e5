"""``memconfig validate``: check the config and list every problem, then the local files its sources name.

Nothing is read. The config's own problems exit 2. Then each source that
names one local file is looked at as a render would (a ``stat``, nothing
opened: :func:`memconfig.explain.plan_local_files`, the ``explain``
planner, which asks the loader's own check): a ``required`` one a render
would skip exits 1, with the reason and words a render would log; a ``url:``
with glob characters that names no file gets a note (exit 0).
``--no-source-checks`` leaves the files alone, for a config checked on
another machine than the one it runs on.
"""

from __future__ import annotations

import argparse
import sys

from ..config import Config
from ..exceptions import bounded
from ..model import Failure, SkipReason
from ..safe_text import escaped
from ..words import counted

__all__ = ["add_arguments", "run"]

HELP = (
    "check the config and list every problem (exit 2), then that each required local file is there and a regular "
    "file, reading nothing (exit 1 when a render would fail for one)"
)
#: The exit code when a required source would fail a render, as ``render`` exits then.
SOURCE_FAILS = 1
_FAILS = "a render would fail (exit 1)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-source-checks",
        action="store_true",
        help="check the config alone: do not look for the local files its sources name (for a config validated "
        "on another machine than the one it runs on)",
    )


def run(config: Config, args: argparse.Namespace) -> int:
    file = config.file or args.config
    failures: list[tuple[str, Failure]] = []
    if not args.no_source_checks:
        from ..explain import plan_local_files  # the planner's imports are paid only when files are checked

        for index, source, planned in plan_local_files(config):
            where = f"sources[{index}]"
            if planned.fails_render:
                reason = planned.reason or SkipReason.ERROR
                failures.append((where, Failure(planned.key, reason, planned.detail, planned.name, planned.resolved)))
            elif planned.reason == SkipReason.NOT_FOUND and source.glob_like:
                _say(f"memconfig: note: {file}: {where}.url: {planned.key!r}: {planned.detail}")
    if len(failures) == 1:
        where, failure = failures[0]
        _say(f"memconfig: error: {file}: {where}: required source {failure}; {_FAILS}")
    elif failures:
        head = f"memconfig: error: {file}: {len(failures)} required sources would be skipped; {_FAILS}"
        _say("\n".join([head, *(f"  {where}: {failure}" for where, failure in failures)]))
    else:
        print(f"{file}: ok ({counted(len(config.sources), 'source')})")
        return 0
    return SOURCE_FAILS


def _say(text: str) -> None:
    """*text* on stderr, each line escaped and bounded as every error line is (a config's values are in it)."""
    print(bounded("\n".join(escaped(line) for line in text.split("\n"))), file=sys.stderr)
