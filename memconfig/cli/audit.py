"""``memconfig audit LOG...``: memconfig's load logs, from files, globs, URLs or stdin, as tables or JSON.

``-c FILE`` is optional: with it, logs in a bucket or behind a server are
reached with the config's ``storage`` options, and with no LOG the config's
``logging.file`` is read. On a terminal the tables are drawn by rich and a
long audit shows a bar (a step per log, and its lines so far); piped, or with ``--quiet``,
neither. Exit 0 when every log was read, 1 when one could not be read in full
(the others are still reported), 2 for a usage mistake.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import orjson

from ..audit.aggregate import Filters
from ..audit.inputs import STDIN, log_inputs
from ..audit.model import STATUSES, Audit, InputSummary
from ..audit.output import TABLE_RENDERS, audit_data, audit_tables, headline
from ..audit.read import read_audit
from ..audit.times import parse_user_time
from ..exceptions import ConfigError, bounded
from ..model import SkipReason
from ..safe_text import escaped
from ..sources.redact import secret_values_in
from ..suggest import did_you_mean
from ..words import counted
from .progress import on_terminal, progress
from .tables import print_table, terminal_width, wrap

if TYPE_CHECKING:  # reading logs needs no config model: pydantic is imported only with -c
    from ..config import Config

__all__ = ["CONFIG_OPTIONAL", "HELP", "REASONS", "add_arguments", "run"]

HELP = "read load logs (files, globs, URLs, '-') and report each source and each render"
#: ``-c`` is optional for this command (main reads it only when given).
CONFIG_OPTIONAL = True
#: Exit code when a log could not be read in full.
UNREADABLE = 1
READING = "reading logs"
#: The reasons ``--reason`` may name: why a source is skipped, dropped or stale, and ``unknown`` (an event without one).
REASONS: tuple[str, ...] = (*(reason.value for reason in SkipReason), "unknown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "logs",
        nargs="*",
        metavar="LOG",
        help="a log file, a glob, an fsspec URL (s3://…/*.jsonl.gz, https://…) or '-' (standard input); "
        "compression from the name. Default: the config's logging.file",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table", help="the output's format")
    parser.add_argument("--html", metavar="FILE", help="write a self-contained HTML report to FILE (instead of stdout)")
    parser.add_argument("--at", metavar="TIME", help="what the prompt held at TIME (the last render at or before it)")
    parser.add_argument("--since", metavar="TIME", help="only events at or after TIME (ISO 8601, or ago: 2d, 6h)")
    parser.add_argument(
        "--until", metavar="TIME", help="only events at or before TIME (a date alone: to the end of that day)"
    )
    parser.add_argument(
        "--source", action="append", default=[], metavar="PATTERN", help="only sources matching (key, name or url)"
    )
    parser.add_argument(
        "--reason",
        action="append",
        default=[],
        metavar="REASON",
        help="only sources skipped or dropped for REASON (not_found, is_directory, …; a name memconfig does not give "
        "is warned of, with the closest one)",
    )
    parser.add_argument(
        "--status",
        action="append",
        default=[],
        choices=(*STATUSES, "failed"),
        help="only sources whose last status is this ('failed': failed renders and the sources they missed)",
    )
    parser.add_argument(
        "--renders", type=int, default=TABLE_RENDERS, metavar="N", help="renders listed in the table (the latest N)"
    )


def run(config: Config | None, args: argparse.Namespace) -> int:
    names = list(args.logs)
    if not names:
        if config is None or not config.logging.file:
            raise ConfigError("no LOG given (and no config with logging.file to read)")
        names = [str(config.resolve_path(config.logging.file))]
    if names.count(STDIN) > 1:
        raise ConfigError("'-' (standard input) can be read only once")
    if STDIN in names and getattr(args, "config", None) == STDIN:
        raise ConfigError("-c - and LOG - cannot both read standard input")
    filters = Filters(
        sources=tuple(args.source),
        since=parse_user_time(args.since, "--since") if args.since else None,
        until=parse_user_time(args.until, "--until") if args.until else None,
        reasons=tuple(args.reason),
        statuses=tuple(args.status),
        at=parse_user_time(args.at, "--at") if args.at else None,
    )
    if filters.since and filters.until and filters.since > filters.until:
        raise ConfigError(f"--since {args.since} is after --until {args.until}")
    for reason in filters.reasons:
        if reason not in REASONS:  # a warning: a log of another version (or a plugin's) may hold other reasons
            hint = did_you_mean(reason, REASONS)
            warning = f"memconfig: warning: --reason {reason!r} is no reason memconfig gives{hint}"
            print(bounded(escaped(warning)), file=sys.stderr)
    storage = dict(config.storage) if config is not None else {}
    secrets = (
        *(config.secret_values if config is not None else ()),
        *(value for options in storage.values() for value in secret_values_in(options)),
    )  # masked wherever an older or a foreign log may hold them bare
    if args.html:
        from .output import check_target  # only this output needs it

        check_target(args.html, "--html")
    logs = log_inputs(names, storage, secrets, handed=bool(args.logs))
    with progress(len(logs), READING, quiet=getattr(args, "quiet", False)) as bar:

        def done(read: InputSummary) -> None:
            bar.describe(READING)
            bar.advance()

        def reading(read: InputSummary) -> None:
            bar.describe(f"{READING}: {read.name}, {counted(read.lines, 'line')}")

        audit = read_audit(logs, filters, progress=done, tick=reading, secrets=secrets)
    if args.html:
        from ..audit.html import html_pieces
        from .output import write_pieces

        write_pieces(args.html, (piece.encode("utf-8") for piece in html_pieces(audit)))
    elif args.format == "json":
        write_bytes(orjson.dumps(audit_data(audit), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
    else:
        print_tables(audit, args.renders)
    unreadable = [log for log in audit.inputs if log.error]
    for log in unreadable:
        print(escaped(f"memconfig: warning: cannot read {log.name}: {log.error}"), file=sys.stderr)
    return UNREADABLE if unreadable else 0


def write_bytes(data: bytes) -> None:
    """*data* (UTF-8) to stdout as bytes when it has a buffer: a large audit is not copied again into text."""
    out = sys.stdout
    buffer = getattr(out, "buffer", None)
    if buffer is None:  # a StringIO, say
        out.write(data.decode())
        return
    out.flush()
    buffer.write(data)
    buffer.flush()


def print_tables(audit: Audit, renders: int) -> None:
    """The headline, then each table: drawn by rich on a terminal, plain aligned text otherwise."""
    out = sys.stdout
    lines = headline(audit)
    if on_terminal(out):  # each line within the terminal's width, as the tables are
        width = terminal_width(out)
        lines = [part for line in lines for part in wrap(line, width)]
    out.write("\n".join(lines) + "\n")
    for table in audit_tables(audit, renders):
        out.write("\n")
        title = table.title + (f" ({table.note})" if table.note else "")
        print_table(table.columns, table.rows, title=title, file=out)
        if not table.rows:
            out.write("  (none)\n")
