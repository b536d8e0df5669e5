"""The load log's form: console lines for a person at a terminal, JSON lines for a pipe or a file, unless told.

Run as a user does: stderr on a real pseudo-terminal (80 or 120 columns wide), or on a pipe.
``configs/example.yaml`` sets no ``logging.format``, so the default (``auto``) decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli import ROOT
from support.terminal import on_terminal, piped

EXAMPLE = ROOT / "configs" / "example.yaml"
EVENTS = ["source_loaded"] * 3 + ["source_skipped", "prompt_manifest", "prompt_built"]
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def json_events(text: str) -> list[str]:
    """The event of each line of *text*, every line a whole JSON object."""
    return [json.loads(line)["event"] for line in text.splitlines()]


@pytest.mark.parametrize("columns", [80, 120])
def test_render_on_a_terminal_logs_console_lines_in_colour(columns: int) -> None:
    """stderr a terminal, no format set: one console line per event (time, level, event, fields), coloured; no
    JSON on the terminal, and the prompt on stdout untouched."""
    done = on_terminal("render", "-c", str(EXAMPLE), columns=columns)

    assert done.returncode == 0, done.text
    assert "<agent_memory>" in done.stdout and "\x1b" not in done.stdout
    assert not any(line.lstrip().startswith("{") for line in done.lines())
    logged = done.console_events()
    assert [line["event"] for line in logged] == EVENTS
    assert len(logged) == len([line for line in done.lines() if line.strip()])  # nothing else, nothing cut
    assert COLOUR.search(done.text)
    skipped = logged[EVENTS.index("source_skipped")]
    assert skipped["level"] == "info"
    assert {"reason=not_found", "source=example/missing.md"} <= set(skipped["fields"].split())


def test_the_console_log_on_a_terminal_leaves_out_what_every_line_repeats() -> None:
    """On a terminal: no host, pid or render_id (the same on every line), no empty field, a name only where it is
    not the key, hashes cut to 12 characters, the manifest's list as its length."""
    done = on_terminal("render", "-c", str(EXAMPLE))

    logged = {line["event"]: line["fields"] for line in reversed(done.console_events())}  # the first of each
    for fields in logged.values():
        assert not re.search(r"\b(host|pid|render_id|parent|via)=", fields), fields
    assert "name=" not in logged["source_skipped"]  # example/missing.md: its name is its key
    names = [line["fields"] for line in done.console_events() if "name='team conventions'" in line["fields"]]
    assert len(names) == 1
    assert re.search(r"\bsha256=[0-9a-f]{12}( |$)", logged["prompt_built"])
    assert "sources=[4]" in logged["prompt_manifest"]


def test_no_color_turns_the_colours_off() -> None:
    """``NO_COLOR`` set: the same console lines on the terminal, without one escape sequence."""
    done = on_terminal("render", "-c", str(EXAMPLE), env={"NO_COLOR": "1"})

    assert done.returncode == 0
    assert "\x1b" not in done.text
    assert [line["event"] for line in done.console_events()] == EVENTS


def test_stderr_on_a_pipe_gets_json_lines_though_stdout_is_a_terminal() -> None:
    """``memconfig render … 2> load.jsonl`` at a terminal: the log is JSON lines, with every field."""
    done = on_terminal("render", "-c", str(EXAMPLE), stdout_too=True, stderr_too=False)

    assert done.returncode == 0
    assert json_events(done.stderr) == EVENTS
    first = json.loads(done.stderr.splitlines()[0])
    assert {"host", "pid", "render_id", "timestamp"} <= first.keys() and len(first["sha256"]) == 64
    assert "<agent_memory>" in done.text


def test_a_pipe_gets_json_lines() -> None:
    """stdout and stderr on pipes (a script, CI): JSON lines, as before."""
    done = piped("render", "-c", str(EXAMPLE))

    assert done.returncode == 0
    assert json_events(done.stderr) == EVENTS


@pytest.mark.parametrize(
    ("logging", "flags", "form"),
    [
        pytest.param({"format": "json"}, [], "json", id="config-json"),
        pytest.param({"format": "console"}, ["--log-format", "json"], "json", id="flag-over-config"),
        pytest.param({"format": "json"}, ["--log-format", "auto"], "console", id="flag-auto-over-config"),
        pytest.param({"format": "auto"}, [], "console", id="config-auto"),
    ],
)
def test_the_config_or_the_flag_decides_on_a_terminal(
    write_config: Callable[..., Path], tmp_path: Path, logging: dict[str, str], flags: list[str], form: str
) -> None:
    """``logging.format`` in the config wins over the default; ``--log-format`` wins over both."""
    (tmp_path / "a.md").write_text("# a\n", encoding="utf-8")
    config = write_config({"version": 1, "sources": ["a.md"], "logging": logging})

    done = on_terminal("render", "-c", str(config), *flags)

    assert done.returncode == 0, done.text
    events = ["source_loaded", "prompt_manifest", "prompt_built"]
    if form == "json":
        assert "\x1b" not in done.text
        assert [json.loads(line)["event"] for line in done.lines() if line.strip()] == events
    else:
        assert [line["event"] for line in done.console_events()] == events


def test_a_log_file_gets_json_lines_from_a_terminal_too(tmp_path: Path) -> None:
    """``--log-file`` with no format: JSON lines in the file (what ``memconfig audit`` reads); nothing on the
    terminal but the prompt."""
    log = tmp_path / "load.jsonl"

    done = on_terminal("render", "-c", str(EXAMPLE), "--log-file", str(log), stdout_too=True)

    assert done.returncode == 0
    assert json_events(log.read_text(encoding="utf-8")) == EVENTS
    assert "source_loaded" not in done.text and "<agent_memory>" in done.text


def test_sources_on_a_terminal_logs_console_lines() -> None:
    """``sources`` reads every source too: its log on a terminal is console lines, its table on stdout."""
    done = on_terminal("sources", "-c", str(EXAMPLE))

    assert done.returncode == 0
    assert [line["event"] for line in done.console_events()] == ["source_loaded"] * 3 + ["source_skipped"]
    assert "team conventions" in done.stdout
