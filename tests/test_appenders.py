"""The appender table: a closed, read-only set of output shapes, each imported when first asked for."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

import memconfig
import memconfig.append
from memconfig import APPENDERS, Config, ConfigError, Pipeline, Render, TextAppender
from memconfig.append import AppenderEntry, appender_for

MISSING = AppenderEntry("no_such_module_xyz:Thing", "openai")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    return tmp_path


def _config(project: Path, **extra: Any) -> dict[str, Any]:
    return {"version": 1, "base_dir": str(project), "sources": ["a.md"], "formatter": {"preset": "plain"}, **extra}


class Recorder:
    """A user's appender: keeps what it was given and hands back a message list."""

    def __init__(self) -> None:
        self.got: list[tuple[Any, Render]] = []

    def append(self, system: Any, render: Render) -> list[dict[str, str]]:
        self.got.append((system, render))
        return [{"role": "system", "content": render.text}]


@pytest.fixture
def with_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table with one more entry, whose module is not installed."""
    table = MappingProxyType({**memconfig.append.APPENDERS, "fake": MISSING})
    monkeypatch.setattr(memconfig.append, "APPENDERS", table)


def test_table_is_read_only_and_holds_text() -> None:
    """APPENDERS is a MappingProxyType with `text`; it cannot be written to."""
    assert isinstance(APPENDERS, MappingProxyType)
    assert APPENDERS is memconfig.append.APPENDERS
    assert "text" in APPENDERS
    assert isinstance(APPENDERS["text"], AppenderEntry)
    with pytest.raises(TypeError):
        APPENDERS["evil"] = AppenderEntry("os:system")  # type: ignore[index]


def test_text_entry_builds_a_configured_text_appender() -> None:
    """`appender_for("text", config)` gives a TextAppender with the config's separator and position."""
    config = Config.from_mapping({"version": 1, "appender": {"separator": " | ", "position": "prepend"}})
    appender = appender_for("text", config)
    assert isinstance(appender, TextAppender)
    assert (appender.separator, appender.position) == (" | ", "prepend")


def test_unknown_name_lists_the_choices() -> None:
    """An unknown appender name is a ConfigError that lists every name in the table."""
    with pytest.raises(ConfigError, match=r"'openai_messages'.*choose one of: text") as caught:
        appender_for("openai_messages", Config(version=1))
    assert caught.value.exit_code == 2


@pytest.mark.usefixtures("with_missing_extra")
def test_missing_dependency_names_the_extra_to_install() -> None:
    """An entry whose module cannot be imported raises a ConfigError naming `pip install 'memconfig[EXTRA]'`."""
    with pytest.raises(ConfigError, match=r"pip install 'memconfig\[openai\]'") as caught:
        appender_for("fake", Config(version=1))
    assert "'fake'" in str(caught.value)


@pytest.mark.usefixtures("with_missing_extra")
def test_missing_dependency_fails_when_the_pipeline_is_built(project: Path) -> None:
    """A config asking for an entry whose package is missing fails at `from_config`, not mid-render."""
    with pytest.raises(ConfigError, match=r"pip install 'memconfig\[openai\]'"):
        Pipeline.from_config(_config(project, appender={"format": "fake"}))


def test_unknown_format_in_config_is_a_config_error(project: Path) -> None:
    """`appender.format` is validated against the table; the error names the key path and the choices."""
    with pytest.raises(ConfigError, match=r"appender\.format: .*'nope'.*text"):
        Pipeline.from_config(_config(project, appender={"format": "nope"}))


def test_cli_validate_rejects_an_unknown_format(tmp_path: Path) -> None:
    """`memconfig validate -c FILE` exits 2 naming `appender.format` for an unknown format."""
    path = tmp_path / "memconfig.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "sources": [], "appender": {"format": "nope"}}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "validate", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "appender.format" in done.stderr and "nope" in done.stderr


def test_user_appender_gets_the_render(project: Path) -> None:
    """`render(format=obj)` hands obj the system and the Render of that very render, and returns its result."""
    recorder = Recorder()
    with capture_logs() as logs:
        result = Pipeline.from_config(_config(project)).render("SYS", {}, format=recorder)
    assert result == [{"role": "system", "content": "alpha"}]
    [(system, render)] = recorder.got
    assert system == "SYS"
    assert isinstance(render, Render) and render.text == "alpha"
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert built["render_id"] == render.render_id


def test_user_appender_under_arender(project: Path) -> None:
    """`arender(format=obj)` gives obj the Render too."""
    recorder = Recorder()
    result = asyncio.run(Pipeline.from_config(_config(project)).arender(None, {}, format=recorder))
    assert result == [{"role": "system", "content": "alpha"}]
    assert recorder.got[0][1].text == "alpha"


@pytest.mark.parametrize(
    "format",
    [pytest.param("nope", id="unknown"), pytest.param("TEXT", id="wrong-case")],
)
def test_render_with_an_unknown_format_name_fails(project: Path, format: str) -> None:
    """`render(format=NAME)` with a name not in the table raises ConfigError listing the choices."""
    with pytest.raises(ConfigError, match="choose one of: text"):
        Pipeline.from_config(_config(project)).render("SYS", {}, format=format)


def test_format_name_uses_the_configs_appender_settings(project: Path) -> None:
    """`render(format="text")` builds the text appender from the pipeline's config."""
    pipeline = Pipeline.from_config(_config(project, appender={"separator": " | ", "position": "prepend"}))
    assert pipeline.render("SYS", {}, format="text") == "alpha | SYS"
    assert pipeline.render("SYS", {}) == "alpha | SYS"
