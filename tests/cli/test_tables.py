"""Tables on a terminal fit its width: run on a real pseudo-terminal 80 and 120 columns wide.

No line is wider than the terminal and no cell wraps onto a second line: each
row is one line, with its file name whole; a long path is shortened in the
middle and keeps its file name; times are compact; at a narrow width the
columns that matter least are left out (the name, status and reason stay).
Piped, the same tables are plain text with every cell whole, as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import pytest
from support.terminal import on_terminal, piped

from memconfig.audit import Audit, audit_tables
from memconfig.cli.sources import COLUMNS as SOURCES_COLUMNS
from memconfig.cli.tables import compact_time, shorten_middle
from memconfig.columns import Column

DEEP_NAME = "guidelines-for-the-whole-team.md"
#: What identifies each source's row on screen: its file name (or the name it was given).
SHOWN = ["AGENTS.md", DEEP_NAME, "missing-notes.md", "team conventions"]
COMPACT_TIME = re.compile(r"\d\d:\d\d:\d\dZ|\d\d-\d\d \d\d:\d\dZ")
FULL_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ")
AUDIT_COLUMNS = {table.title: table.columns for table in audit_tables(Audit(schema=1))}
#: Python code that makes rich unimportable, as in an install without memconfig[terminal].
NO_RICH = "import sys; sys.modules['rich'] = None\nimport memconfig.cli as c; c.run()\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A config with a deep path, a named source and a missing one; a log of two renders of it by the CLI."""
    folder = tmp_path_factory.mktemp("tables")
    deep = folder / "a-rather-long-folder-name" / "with-another-one-inside"
    deep.mkdir(parents=True)
    (deep / DEEP_NAME).write_text("# Guidelines\n" + "Be kind.\n" * 40, encoding="utf-8")
    (folder / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
    (folder / "team.md").write_text("# Team\n", encoding="utf-8")
    sources = ["AGENTS.md", str(deep / DEEP_NAME), "missing-notes.md", {"url": "team.md", "name": "team conventions"}]
    config = folder / "memconfig.yaml"
    config.write_text(json.dumps({"version": 1, "sources": sources}), encoding="utf-8")
    log = folder / "memconfig.jsonl"
    for _ in range(2):
        done = piped("render", "-c", str(config), "--log-file", str(log))
        assert done.returncode == 0, done.stderr
    return config, log


def table_at(lines: Sequence[str], first: str) -> tuple[list[str], list[str]]:
    """The headings and the row lines of the table whose heading line starts with *first* (up to a blank line)."""
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == [first])
    rows = []
    for line in lines[at + 2 :]:  # past the rule under the headings
        if not line.strip():
            break
        rows.append(line)
    return lines[at].split(), rows


def assert_left_out_by_priority(columns: Sequence[Column], shown: Sequence[str]) -> None:
    """*shown* is *columns* in order, less some; each left out gives way before every one kept, none is key."""
    names = [c.name for c in columns]
    assert shown == [name for name in names if name in shown], shown
    kept = [c.drop for c in columns if c.name in shown]
    left_out = [c.drop for c in columns if c.name not in shown]
    assert all(drop > 0 for drop in left_out)
    assert not left_out or min(left_out) > max(kept)


def assert_rows_whole(rows: Sequence[str], columns: int) -> None:
    """One line per source, each within *columns*, naming its file whole; the deep path shortened, its name kept."""
    assert len(rows) == len(SHOWN), rows  # a wrapped cell would add a line
    for shown in SHOWN:
        assert len([row for row in rows if shown in row]) == 1, (shown, rows)
    deep = next(row for row in rows if DEEP_NAME in row)
    assert re.search(rf"…/{re.escape(DEEP_NAME)}", deep), deep
    assert all(len(row) <= columns for row in rows)


# -- sources ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("columns", "headings"),
    [
        pytest.param(80, ["NAME", "STATUS", "REASON"], id="80"),
        pytest.param(120, ["NAME", "URL", "STATUS", "BYTES", "REASON"], id="120"),
    ],
)
def test_sources_table_fits_the_terminal(project: tuple[Path, Path], columns: int, headings: list[str]) -> None:
    """``sources`` at 80 columns keeps the name, status and reason (the bytes, then the URL, give way); at 120
    all five; no line wider than the terminal, one line per source, the deep path shortened in the middle."""
    config, _ = project
    log = config.parent / f"sources-{columns}.log"

    done = on_terminal("sources", "-c", str(config), "--log-file", str(log), stdout_too=True, columns=columns)

    assert done.returncode == 0, done.text
    lines = done.lines()
    assert max(len(line) for line in lines) <= columns
    shown, rows = table_at(lines, "NAME")
    assert shown == headings
    assert_left_out_by_priority(SOURCES_COLUMNS, shown)
    assert_rows_whole(rows, columns)
    missing = next(row for row in rows if "missing-notes.md" in row)
    assert "not_found: no such file" in missing
    if "URL" in shown:
        team = next(row for row in rows if "team conventions" in row)
        assert "/team.md" in team


def test_sources_table_without_rich_fits_the_terminal_too(project: tuple[Path, Path]) -> None:
    """Without rich (no memconfig[terminal]), the plain table on a terminal is fitted the same way."""
    config, _ = project

    done = on_terminal(
        "sources", "-c", str(config), "--log-file", str(config.parent / "plain.log"), stdout_too=True, code=NO_RICH
    )  # 120 columns

    assert done.returncode == 0, done.text
    lines = done.lines()
    assert "\x1b" not in done.text and max(len(line) for line in lines) <= 120
    at = next(i for i, line in enumerate(lines) if line.startswith("NAME"))
    assert lines[at].split() == ["NAME", "URL", "STATUS", "BYTES", "REASON"]
    assert_rows_whole([line for line in lines[at + 1 :] if line.strip()], 120)


def test_sources_table_piped_is_whole(project: tuple[Path, Path]) -> None:
    """Piped, nothing is shortened or left out: every path whole, every column there."""
    config, _ = project

    done = piped("sources", "-c", str(config))

    assert done.returncode == 0
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["NAME", "URL", "STATUS", "BYTES", "REASON"]
    deep = str(config.parent / "a-rather-long-folder-name" / "with-another-one-inside" / DEEP_NAME)
    assert rows[1].startswith(deep) and "…" not in done.stdout


# -- audit --------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 120])
def test_audit_tables_fit_the_terminal(project: tuple[Path, Path], columns: int) -> None:
    """``audit`` (the prompt at a time, the sources, the renders): no line wider than the terminal, one line per
    row, times compact, the source, status and reason kept and the columns left out the ones that matter least."""
    _, log = project
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["timestamp"]

    done = on_terminal("audit", str(log), "--at", last, stdout_too=True, columns=columns)

    assert done.returncode == 0, done.text
    lines = done.lines()
    assert max(len(line) for line in lines) <= columns
    sources_at = lines.index(next(line for line in lines if line.startswith("Sources")))
    at_shown, at_rows = table_at(lines[:sources_at], "SOURCE")
    shown, rows = table_at(lines[sources_at:], "SOURCE")
    renders_shown, renders = table_at(lines, "TIME")
    assert {"SOURCE", "IN", "PROMPT", "STATUS", "REASON"} <= set(at_shown)
    assert_left_out_by_priority(AUDIT_COLUMNS["Sources"], shown)
    assert_left_out_by_priority(AUDIT_COLUMNS["Renders"], renders_shown)
    assert shown[:4] == ["SOURCE", "STATUS", "REASON", "SINCE"]
    assert len(shown) < len(AUDIT_COLUMNS["Sources"])  # fifteen columns never fit, not even in 120
    if columns == 120:
        assert {"RENDERS", "LOADS", "CHANGED", "CHARS"} <= set(shown)
        assert renders_shown == [c.name for c in AUDIT_COLUMNS["Renders"]]
    assert_rows_whole(at_rows, columns)
    assert_rows_whole(rows, columns)
    assert len(renders) == 2
    for row in [*rows, *renders]:
        assert COMPACT_TIME.search(row) and not FULL_TIME.search(row), row


def test_audit_tables_piped_are_whole(project: tuple[Path, Path]) -> None:
    """Piped, the audit's tables are as before: every column, full times, every path whole."""
    _, log = project

    done = piped("audit", str(log))

    assert done.returncode == 0
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("SOURCE"))
    assert header.split() == [c.name for c in AUDIT_COLUMNS["Sources"]]
    row = next(line for line in lines if DEEP_NAME in line)
    assert row.startswith(str(log.parent / "a-rather-long-folder-name")) and FULL_TIME.search(row)
    assert "…" not in done.stdout


# -- the pieces ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        pytest.param("example/AGENTS.md", 20, "example/AGENTS.md", id="fits"),
        pytest.param("example/rules/team/AGENTS.md", 20, "example/…/AGENTS.md", id="at-a-folder"),
        pytest.param("/tmp/a-long-folder/another/AGENTS.md", 16, "/tmp/…/AGENTS.md", id="absolute"),
        pytest.param("team (/work/configs/example/team.md)", 24, "team (/work/…/team.md)", id="a-label"),
        pytest.param("a/" + "n" * 30 + ".md", 12, "…nnnnnnnn.md", id="name-too-long"),
        pytest.param("team conventions", 9, "team…ions", id="no-slash"),
    ],
)
def test_shorten_middle_keeps_the_file_name(text: str, width: int, shown: str) -> None:
    """A path too wide is cut in the middle, at a folder's end where it can be; the file name is kept."""
    assert shorten_middle(text, width) == shown
    assert len(shown) <= width


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("2026-12-06 14:03:07Z", "14:03:07Z", id="today"),
        pytest.param("2026-12-06T14:03:07.123456Z", "14:03:07Z", id="today-iso"),
        pytest.param("2026-03-01 09:30:00Z", "03-01 09:30Z", id="this-year"),
        pytest.param("2025-12-06 14:03:07Z", "2025-12-06", id="a-year-before"),
        pytest.param("-", "-", id="no-time"),
    ],
)
def test_compact_time(text: str, shown: str) -> None:
    """A UTC time is its time of day today, month, day, hours and minutes this year, its date before."""
    assert compact_time(text, date(2026, 12, 6)) == shown


# -- explain ------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 120])
def test_explain_values_fit_the_terminal(project: tuple[Path, Path], columns: int) -> None:
    """``explain``'s table of values: one line per key, none wider than the terminal, every key path whole; the
    long source path (value) is cut at its end, the layer (``…/memconfig.yaml:…``) kept or shortened."""
    config, _ = project

    done = on_terminal("explain", "-c", str(config), stdout_too=True, columns=columns)

    assert done.returncode == 0, done.text
    lines = done.lines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Values (the layer that set each):"))
    rows = [line for line in lines[at + 1 :] if line.strip()]
    assert all(len(row) <= columns for row in rows), rows
    keys = [row.split()[0] for row in rows]
    assert keys[:5] == ["version", "sources[0].url", "sources[1].url", "sources[2].url", "sources[3].url"]
    assert "loader.on_decode_error" in keys and "formatter.preset" in keys  # each key whole, on its own line
    assert len(keys) == len(set(keys))


def test_explain_values_piped_are_whole(project: tuple[Path, Path]) -> None:
    """Piped, the values are as before: each layer whole (the config's file name, its line and column)."""
    config, _ = project

    done = piped("explain", "-c", str(config))

    assert done.returncode == 0
    deep = next(line for line in done.stdout.splitlines() if line.split()[:1] == ["sources[1].url"])
    assert re.search(r"  \S*memconfig\.yaml:1:\d+$", deep) and "…/" not in deep, deep
