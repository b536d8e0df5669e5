"""What the CLI writes for people to read carries no control character: ESC, BEL and newlines are escaped."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import memconfig

from memconfig.cli.progress import Progress
from memconfig.cli.tables import plain_table, print_table
from memconfig.exceptions import ConfigError, Problem
from memconfig.safe_text import escaped

HOSTILE = "a\x1b]0;owned\x07\x1b[2J\u009b31m\nb"


def _raw(text: str) -> bool:
    """Whether *text* holds a control character a terminal would act on (a newline ending a line aside)."""
    return any((ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    name = "ev\x1b[2Jil.md"
    (tmp_path / name).write_text("@./imp\x1b]0;t\x07.md and text\n", encoding="utf-8")
    (tmp_path / "memconfig.yaml").write_text(
        'version: 1\nsources:\n  - glob: "*.md"\n    name: "team\\a\\e[31m"\n'
        "imports: {enabled: true}\nlogging: {format: console, level: debug}\n",
        encoding="utf-8",
    )
    return tmp_path


def test_the_console_log_escapes_file_names_import_tokens_and_names(project: Path) -> None:
    done = memconfig("render", "-c", "memconfig.yaml", cwd=project)
    assert done.returncode == 0, done.stderr
    assert not _raw(done.stderr), done.stderr
    assert "ev\\x1b[2Jil.md" in done.stderr
    assert "imp\\x1b]0;t\\x07.md" in done.stderr
    assert all(line for line in done.stderr.splitlines())  # one event per line: no value broke one in two


def test_the_sources_table_and_explain_escape_what_the_config_holds(project: Path) -> None:
    for command in (["sources", "--log-format", "json"], ["explain"]):
        done = memconfig(*command, "-c", "memconfig.yaml", cwd=project)
        assert done.returncode == 0, done.stderr
        assert not _raw(done.stdout), (command, done.stdout)
        assert "\\x1b[2J" in done.stdout


def test_escaped_writes_every_c0_and_c1_control_as_an_escape() -> None:
    assert escaped(HOSTILE) == "a\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x0ab"
    assert escaped("plain: é, 日本") == "plain: é, 日本"


def test_a_table_cell_is_escaped_plain_and_drawn(tmp_path: Path) -> None:
    assert plain_table(["NAME"], [[escaped(HOSTILE)]]).splitlines()[1] == escaped(HOSTILE)
    out = tmp_path / "table.txt"
    with out.open("w", encoding="utf-8") as file:
        print_table(["NAME", "N"], [[HOSTILE, 1]], right=["N"], file=file)
    assert not _raw(out.read_text(encoding="utf-8"))
    assert escaped(HOSTILE) in out.read_text(encoding="utf-8")


def test_the_progress_label_is_escaped() -> None:
    bar = Progress(3, HOSTILE, shown=False)
    bar.describe("reading " + HOSTILE)
    assert bar.label == "reading " + escaped(HOSTILE)
    bar.close()


def test_an_error_line_escapes_what_the_config_holds(tmp_path: Path) -> None:
    """A template_file holding ESC … BEL: the error names it escaped, and a second problem keeps its own line."""
    (tmp_path / "memconfig.yaml").write_text(
        'version: 1\nsources: [a.md]\nformatter: {template_file: "x\\e]0;PWNED\\a"}\nunknown: 1\n', encoding="utf-8"
    )
    done = memconfig("validate", "-c", "memconfig.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert not _raw(done.stderr), done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "memconfig: error: memconfig.yaml: 2 problems"
    assert f"  formatter.template_file: file not found: {tmp_path}/x\\x1b]0;PWNED\\x07" in lines


def test_format_message_escapes_each_line_and_keeps_the_lines() -> None:
    """MemconfigError.format_message: controls escaped within each line, the newlines between lines kept."""
    error = ConfigError([Problem("a", "x\x1b[2J"), Problem("b", "y\x07\tz")], file="c\x9b.yaml")
    assert error.format_message() == "c\\x9b.yaml: 2 problems\n  a: x\\x1b[2J\n  b: y\\x07\\x09z"
