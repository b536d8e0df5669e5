"""Progress and tables on a terminal: the CLI run with stderr (and stdout) on a real pseudo-terminal.

A bar appears only on a terminal, only for loads that outlast half a second,
never with ``--quiet``; without a terminal stderr is the JSON-lines log and
nothing else, and rich is not imported for it. The load log's lines stay
whole on the terminal while the bar is up. ``sources`` draws a rich table on
a terminal and plain aligned text otherwise (how tables fit a terminal's
width: ``test_tables.py``).
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import ROOT
from support.servers import WebServer
from support.terminal import CSI, on_terminal, piped

from memconfig.cli.tables import plain_table

EXAMPLE = ROOT / "configs" / "example.yaml"
SLOW = 1.2  # seconds each slow source takes to answer: well past the half second before a bar
LABEL = "reading sources"
#: Python code that makes rich unimportable, as in an install without memconfig[terminal].
NO_RICH = "import sys; sys.modules['rich'] = None\n"
#: What rich writes as a bar comes up.
HIDE_CURSOR = "\x1b[?25l"


def json_lines(pieces: list[str]) -> list[dict[str, Any]]:
    """Each piece that is not the bar, parsed: every one must be a whole JSON object."""
    return [json.loads(p) for p in pieces if LABEL not in p]


@pytest.fixture
def slow_config(web: WebServer, tmp_path: Path, write_config: Callable[..., Path]) -> Path:
    """Two HTTP sources that take :data:`SLOW` seconds to answer, and a local one."""
    for name in ("one.md", "two.md"):
        web.serve(name, f"# {name}\n\nslow text\n")
        web.delay(name, SLOW)
    (tmp_path / "local.md").write_text("# local\n\nfast text\n", encoding="utf-8")
    return write_config({"version": 1, "sources": [web.url("one.md"), web.url("two.md"), "local.md"]})


# -- the bar ---------------------------------------------------------------------------------


def test_slow_render_shows_progress_on_a_terminal(slow_config: Path) -> None:
    """A render whose sources take over a second shows a bar on the terminal; stdout is the prompt, untouched."""
    done = on_terminal("render", "-c", str(slow_config))

    assert done.returncode == 0
    assert "slow text" in done.stdout and "fast text" in done.stdout
    assert "\x1b" not in done.stdout
    assert LABEL in done.text
    assert "3/3" in "".join(done.pieces())  # done / total, from the loader's count
    events = [line["event"] for line in done.console_events()]  # the log in console form: stderr is a terminal
    assert events.count("source_loaded") == 3 and events[-1] == "prompt_built"


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_log_lines_written_while_the_bar_is_up_stay_whole(
    web: WebServer, write_config: Callable[..., Path], log_format: str
) -> None:
    """A retry logged mid-load (the bar on screen) is one whole line on the terminal, not cut by the bar:
    in console form (the default there, in colour) and as JSON."""
    web.serve("slow.md", "# slow\n\nslow text\n")
    web.delay("slow.md", SLOW * 2)
    web.serve("flaky.md", "# flaky\n\nflaky text\n")
    web.delay("flaky.md", SLOW)  # the first answer, a 503, comes after the bar is up
    web.fail("flaky.md", 503, times=1)
    config = write_config({"version": 1, "sources": [web.url("slow.md"), web.url("flaky.md")]})

    done = on_terminal("render", "-c", str(config), "--log-format", log_format)

    assert done.returncode == 0
    assert LABEL in done.text
    if log_format == "json":
        lines = json_lines(done.pieces())
        retried = [line for line in lines if line["event"] == "source_retried"]
        assert len(retried) == 1 and retried[0]["url"] == web.url("flaky.md")
        assert [line["event"] for line in lines][-1] == "prompt_built"
        return
    assert "\x1b[" in done.text.split("source_retried")[0].rsplit("\n", 1)[-1]  # in colour
    logged = done.console_events()
    retried = [line for line in logged if line["event"] == "source_retried"]
    assert len(retried) == 1 and f"url={web.url('flaky.md')}" in retried[0]["fields"].split()
    assert [line["event"] for line in logged][-1] == "prompt_built"


def test_sources_shows_progress_on_a_terminal(slow_config: Path) -> None:
    """``sources`` reads every source too: the same bar, then the table."""
    done = on_terminal("sources", "-c", str(slow_config))

    assert done.returncode == 0
    assert LABEL in done.text
    assert "one.md" in done.stdout and "loaded" in done.stdout


# -- no bar ----------------------------------------------------------------------------------


def test_no_terminal_no_progress_and_stderr_is_json_lines(slow_config: Path) -> None:
    """With stderr on a pipe, the same slow render writes the JSON-lines log to stderr and nothing else."""
    done = piped("render", "-c", str(slow_config))

    assert done.returncode == 0
    assert "\x1b" not in done.stderr and LABEL not in done.stderr
    events = [json.loads(line)["event"] for line in done.stderr.splitlines()]
    assert events == ["source_loaded"] * 3 + ["prompt_manifest", "prompt_built"]


def test_quiet_shows_no_progress(slow_config: Path) -> None:
    """``--quiet`` on a terminal: no bar (no cursor hidden, no line redrawn); the log is still there, line by line."""
    done = on_terminal("render", "--quiet", "-c", str(slow_config))

    assert done.returncode == 0
    assert LABEL not in done.text and HIDE_CURSOR not in done.text and "\r" not in done.text.replace("\r\n", "")
    assert [line["event"] for line in done.console_events()][-1] == "prompt_built"


def test_fast_render_shows_no_progress() -> None:
    """A render of local files (well under half a second) shows no bar on a terminal."""
    done = on_terminal("render", "-c", str(EXAMPLE))

    assert done.returncode == 0
    assert LABEL not in done.text and HIDE_CURSOR not in done.text and "\r" not in done.text.replace("\r\n", "")
    assert [line["event"] for line in done.console_events()][-1] == "prompt_built"


_RICH_IMPORTS = textwrap.dedent(
    """
    import sys
    import structlog  # imports rich itself when it is installed (memconfig.cli imports it only with a command)
    import memconfig.cli
    before = {m for m in sys.modules if m.split(".")[0] == "rich"}
    code = memconfig.cli.main(sys.argv[1:])
    added = sorted(m for m in sys.modules if m.split(".")[0] == "rich" and m not in before)
    print("RICH", ",".join(added), file=sys.stderr)
    sys.exit(code)
    """
)


@pytest.mark.parametrize("command", ["render", "sources"])
def test_rich_is_not_imported_without_a_terminal(slow_config: Path, command: str) -> None:
    """Without a terminal, memconfig imports no rich module (neither the bar nor the table), however slow the load."""
    done = piped(command, "-c", str(slow_config), code=_RICH_IMPORTS)

    assert done.returncode == 0
    assert done.stderr.splitlines()[-1] == "RICH "


def test_without_rich_a_terminal_gets_no_bar_and_a_plain_table(slow_config: Path) -> None:
    """Without rich (no memconfig[terminal]) a slow load on a terminal shows no bar, and the table is plain text."""
    done = on_terminal(
        "sources", "-c", str(slow_config), stdout_too=True, code=NO_RICH + "import memconfig.cli as c; c.run()"
    )

    assert done.returncode == 0
    assert LABEL not in done.text and HIDE_CURSOR not in done.text
    table = done.text[done.text.index("NAME") :]
    assert "\x1b" not in table and "─" not in table  # no style, no rule: the plain text
    assert table.split("\r\n")[0].split() == ["NAME", "URL", "STATUS", "BYTES", "REASON"]


# -- the progress API for other commands ---------------------------------------------------------

_LONG_WORK = textwrap.dedent(
    """
    import sys, time
    from memconfig.cli.progress import progress
    with progress(3, "reading logs", quiet="--quiet" in sys.argv) as bar:
        for _ in range(3):
            time.sleep(0.4)
            bar.advance()
    print("done", file=sys.stderr)
    """
)


def test_progress_api_shows_a_bar_for_long_work_on_a_terminal() -> None:
    """``progress(total, label)`` / ``advance()``: a bar with the label and the count, on a terminal."""
    done = on_terminal(code=_LONG_WORK)

    assert done.returncode == 0
    assert "reading logs" in done.text
    assert "/3" in "".join(done.pieces())
    assert done.pieces()[-1] == "done"


@pytest.mark.parametrize("where", ["quiet", "no terminal"])
def test_progress_api_shows_nothing_when_quiet_or_without_a_terminal(where: str) -> None:
    """The same work with ``quiet`` or with stderr on a pipe: not a byte but the program's own."""
    screen = on_terminal("--quiet", code=_LONG_WORK).text if where == "quiet" else piped(code=_LONG_WORK).stderr

    assert screen.replace("\r", "") == "done\n"


# -- tables -----------------------------------------------------------------------------------


def odd_name_config(tmp_path: Path, write_config: Callable[..., Path]) -> Path:
    """A source whose name looks like rich markup (11 bytes), and one that is not there."""
    (tmp_path / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    return write_config({"version": 1, "sources": [{"url": "a.md", "name": "[bold red]odd[/] name"}, "gone.md"]})


def test_sources_table_on_a_terminal_is_drawn_by_rich(tmp_path: Path, write_config: Callable[..., Path]) -> None:
    """On a terminal, ``sources`` draws a table with a rule under the headings; a name is shown as text, not markup."""
    config = odd_name_config(tmp_path, write_config)

    done = on_terminal("sources", "-c", str(config), stdout_too=True)

    assert done.returncode == 0
    text = CSI.sub("", done.text)
    heading = next(line for line in text.splitlines() if "NAME" in line)
    assert heading.split() == ["NAME", "URL", "STATUS", "BYTES", "REASON"]
    assert re.search(r"^\s*[━─]{10,}", text, re.MULTILINE)  # the rule rich draws under the headings
    assert "[bold red]odd[/] name" in text
    assert "not_found: no such file" in text


def test_sources_table_without_a_terminal_is_plain_text(tmp_path: Path, write_config: Callable[..., Path]) -> None:
    """Piped, the same table is plain text: two spaces between columns, byte counts aligned right, no escapes."""
    config = odd_name_config(tmp_path, write_config)

    done = piped("sources", "-c", str(config))

    assert done.returncode == 0
    assert "\x1b" not in done.stdout
    header, first, second = done.stdout.splitlines()
    assert header.split() == ["NAME", "URL", "STATUS", "BYTES", "REASON"]
    assert first.startswith("[bold red]odd[/] name  ")
    bytes_end = header.index("BYTES") + len("BYTES")
    assert first[:bytes_end].endswith(" 11") and second[:bytes_end].endswith(" 0")
    assert second.endswith("not_found: no such file")


def test_plain_table_pads_every_column_but_the_last() -> None:
    """The helper other commands print with: columns two spaces apart, *right* ones flush right, no trailing blanks."""
    text = plain_table(["NAME", "N", "NOTE"], [["a", "1", ""], ["longer", "100", "why"]], right={"N"})

    assert text == "NAME      N  NOTE\na         1\nlonger  100  why\n"
