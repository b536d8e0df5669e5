"""The ``memconfig`` command as a user runs it: stdout, stderr and exit codes; and the library's own output."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml
from support.cli import ROOT
from support.cli import memconfig as run

import memconfig
from memconfig.cli import main
from memconfig.format.presets import DEFAULT_TEMPLATE

EXAMPLE = ROOT / "configs" / "example.yaml"
WriteConfig = Callable[..., Path]
Cli = Callable[..., subprocess.CompletedProcess[str]]


# -- helpers -------------------------------------------------------------------


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet in a fresh interpreter, as an application using the library would."""
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCONFIG_")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environ,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of *text* parsed as one JSON object."""
    return [json.loads(line) for line in text.splitlines()]


def clean(text: str) -> str:
    """A source's text as the deepagents preset puts it in a section."""
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL).rstrip()


def expected_example_prompt(system: str | None = None) -> tuple[str, list[str], list[str]]:
    """The prompt configs/example.yaml should render, with its loaded and its missing sources."""
    written = example_sources()
    loaded = [w for w in written if (EXAMPLE.parent / w).is_file()]
    missing = [w for w in written if w not in loaded]
    body = "\n\n".join(f"{w}\n\n{clean((EXAMPLE.parent / w).read_text(encoding='utf-8'))}" for w in loaded)
    block = DEFAULT_TEMPLATE.replace("{agent_memory}", body)
    return (f"{system}\n\n{block}" if system else block), loaded, missing


def example_sources() -> list[str]:
    """The sources of configs/example.yaml as written, in order."""
    sources = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["sources"]
    return [s if isinstance(s, str) else s["url"] for s in sources]


EventTuple = tuple[str, str | None, str | None]


def expected_example_events() -> list[EventTuple]:
    """(event, source, reason) per source of configs/example.yaml, in config order, then the block's manifest and
    prompt_built."""
    per_source: list[EventTuple] = [
        ("source_loaded", w, None) if (EXAMPLE.parent / w).is_file() else ("source_skipped", w, "not_found")
        for w in example_sources()
    ]
    return [*per_source, ("prompt_manifest", None, None), ("prompt_built", None, None)]


def event_tuples(events: list[dict[str, Any]]) -> list[EventTuple]:
    """(event, source, reason) of each event dict."""
    return [(e["event"], e.get("source"), e.get("reason")) for e in events]


@pytest.fixture
def project(tmp_path: Path, write_config: WriteConfig) -> Callable[..., Path]:
    """Write ``a.md`` and ``b.md`` beside a config whose sources are given (default: both)."""
    (tmp_path / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n\nbeta\n", encoding="utf-8")

    def make(**data: Any) -> Path:
        return write_config({"version": 1, "sources": ["a.md", "b.md"], **data})

    return make


@pytest.fixture
def reset_structlog() -> Iterator[None]:
    """Undo the global structlog configuration an in-process CLI run makes."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, reset_structlog: None) -> Cli:
    """Run ``memconfig.cli.main`` in this process from the repository root; faster than a subprocess."""
    for name in list(os.environ):
        if name.upper().startswith("MEMCONFIG_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(ROOT)

    def invoke(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code  # type: ignore[assignment]
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["memconfig", *args], code, out, err)

    return invoke


# -- render ----------------------------------------------------------------------


def test_render_example_prints_prompt_and_logs_json_lines() -> None:
    """``render -c configs/example.yaml`` prints the prompt on stdout and one JSON event per source on stderr."""
    expected, loaded, missing = expected_example_prompt()
    assert len(loaded) >= 2 and missing, "the example must show loaded sources and a missing one"

    done = run("render", "-c", "configs/example.yaml")

    assert done.returncode == 0
    assert done.stdout == expected
    logged = json_lines(done.stderr)
    assert event_tuples(logged) == expected_example_events()
    built = logged[-1]
    assert built["event"] == "prompt_built"
    assert (built["sources_loaded"], built["sources_skipped"]) == (len(loaded), len(missing))
    assert built["chars"] == len(expected)


def test_render_works_from_any_folder(tmp_path: Path) -> None:
    """Relative sources resolve against the config's folder, so the example renders the same from elsewhere."""
    expected, _, _ = expected_example_prompt()

    done = run("render", "-c", str(EXAMPLE), cwd=tmp_path)

    assert done.returncode == 0
    assert done.stdout == expected


@pytest.mark.parametrize("pwd", ["project", "parent", "empty"])
def test_deepagents_config_reads_home_and_working_folder(tmp_path: Path, pwd: str) -> None:
    """configs/deepagents.yaml reads ~/.deepagents (HOME) and ./.deepagents of the folder it runs in.

    That folder is the process's own, whatever ``$PWD`` a parent left (a subprocess started with ``cwd=``).
    """
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".deepagents").mkdir(parents=True)
    (project / ".deepagents").mkdir(parents=True)
    (home / ".deepagents" / "AGENTS.md").write_text("user rule", encoding="utf-8")
    (project / ".deepagents" / "AGENTS.md").write_text("project rule", encoding="utf-8")

    done = run(
        "render",
        "-c",
        str(ROOT / "configs" / "deepagents.yaml"),
        cwd=project,
        env={"HOME": str(home), "PWD": {"project": str(project), "parent": str(tmp_path), "empty": ""}[pwd]},
    )

    assert done.returncode == 0, done.stderr
    assert "~/.deepagents/AGENTS.md\n\nuser rule\n\n./.deepagents/AGENTS.md\n\nproject rule" in done.stdout
    assert [e["event"] for e in json_lines(done.stderr)] == [
        "source_loaded",
        "source_loaded",
        "prompt_manifest",
        "prompt_built",
    ]


@pytest.mark.parametrize(
    ("args", "system"),
    [
        pytest.param(["--system", "You are a careful agent."], "You are a careful agent.", id="system-text"),
        pytest.param(["--system", "Ünïcode {agent_memory} {0}"], "Ünïcode {agent_memory} {0}", id="system-braces"),
        pytest.param(["--system", ""], None, id="empty-system-is-none"),
    ],
)
def test_render_with_system_text(args: list[str], system: str | None) -> None:
    """``--system TEXT`` comes first, verbatim, then a blank line and the block; an empty one counts as none."""
    expected, _, _ = expected_example_prompt(system)

    done = run("render", "-c", str(EXAMPLE), *args)

    assert done.returncode == 0
    assert done.stdout == expected


def test_render_with_system_file(tmp_path: Path) -> None:
    """``--system-file F`` reads the existing system prompt from a UTF-8 file."""
    system = tmp_path / "system.txt"
    system.write_text("Système: be brief.\n", encoding="utf-8")
    expected, _, _ = expected_example_prompt("Système: be brief.\n")

    done = run("render", "-c", str(EXAMPLE), "--system-file", str(system))

    assert done.returncode == 0
    assert done.stdout == expected


def test_system_file_dash_reads_standard_input() -> None:
    """``--system-file -`` reads the existing system prompt from standard input."""
    expected, _, _ = expected_example_prompt("Système: be brief.\n")

    done = run(
        "render", "-c", str(EXAMPLE), "--system-file", "-", "--log-file", os.devnull, stdin="Système: be brief.\n"
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == expected


@pytest.mark.parametrize("command", ["render", "validate", "sources"])
def test_config_dash_reads_standard_input_relative_to_the_working_folder(tmp_path: Path, command: str) -> None:
    """``-c -`` reads the config from standard input; its relative paths resolve against the working folder."""
    (tmp_path / "notes.md").write_text("Keep it short.\n", encoding="utf-8")
    config = "version: 1\nsources: [notes.md]\nformatter: {preset: plain}\n"

    done = run(
        command, "-c", "-", *(["--log-file", os.devnull] if command != "validate" else []), cwd=tmp_path, stdin=config
    )

    assert done.returncode == 0, done.stderr
    expected = {"render": "Keep it short.", "validate": "<stdin>: ok (1 source)\n"}
    if command in expected:
        assert done.stdout == expected[command]
    else:
        assert "loaded" in done.stdout and "notes.md" in done.stdout


def test_config_and_system_file_cannot_both_be_standard_input(cli: Cli) -> None:
    """``-c - --system-file -`` is a usage error: standard input can be read once."""
    done = cli("render", "-c", "-", "--system-file", "-")

    assert done.returncode == 2
    assert "-c - and --system-file - cannot both read standard input" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--system", "x", "--system-file", "f.txt"],
            "argument --system-file: not allowed with argument --system",
            id="both",
        ),
        pytest.param(["--system-file", "no-such-file.txt"], "--system-file no-such-file.txt:", id="missing-file"),
        pytest.param(["--log-format", "xml"], "invalid choice: 'xml'", id="bad-log-format"),
        pytest.param(["--bogus"], "unrecognized arguments: --bogus", id="unknown-option"),
    ],
)
def test_render_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    """Bad render options exit 2 with a message on stderr and nothing on stdout."""
    done = cli("render", "-c", str(EXAMPLE), *args)

    assert done.returncode == 2
    assert done.stdout == ""
    assert message in done.stderr


def test_system_file_not_utf8_exits_2(cli: Cli, tmp_path: Path) -> None:
    """A --system-file that is not UTF-8 is a usage error naming the file, not a crash."""
    system = tmp_path / "system.txt"
    system.write_bytes(b"caf\xe9")

    done = cli("render", "-c", str(EXAMPLE), "--system-file", str(system))

    assert done.returncode == 2
    assert done.stdout == ""
    assert f"memconfig: error: --system-file {system}:" in done.stderr


def test_closed_stdout_ends_quietly() -> None:
    """When the reader of stdout goes away (``| head``), render stops with exit 141 (SIGPIPE) and prints nothing."""
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCONFIG_")}
    with subprocess.Popen(
        [sys.executable, "-m", "memconfig", "render", "-c", str(EXAMPLE), "--log-file", os.devnull],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        stderr = process.stderr.read().decode()

    assert process.returncode == 141
    assert stderr == ""


def test_reader_leaving_mid_prompt_exits_141_quietly(tmp_path: Path) -> None:
    """A prompt larger than the pipe, its reader gone after one byte (``| head -c1``): exit 141, nothing printed."""
    (tmp_path / "big.md").write_text("x" * 4_000_000, encoding="utf-8")
    config = tmp_path / "memconfig.yaml"
    config.write_text("version: 1\nloader: {max_bytes: 8000000}\nsources: [big.md]\n", encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCONFIG_")}
    with subprocess.Popen(
        [sys.executable, "-m", "memconfig", "render", "-c", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(1)
        process.stdout.close()
        stderr = process.stderr.read().decode()
        process.wait(timeout=60)

    assert process.returncode == 141
    logged = [json.loads(line)["event"] for line in stderr.splitlines()]
    assert logged == ["source_loaded", "prompt_manifest", "prompt_built"]


# -- where the log goes ---------------------------------------------------------------


def test_log_file_gets_the_json_lines_and_stderr_stays_empty(tmp_path: Path) -> None:
    """``--log-file F`` writes the JSON-lines log to F and nothing to stderr."""
    log = tmp_path / "load.jsonl"
    expected, _, _ = expected_example_prompt()

    done = run("render", "-c", str(EXAMPLE), "--log-file", str(log))

    assert done.returncode == 0
    assert done.stdout == expected
    assert done.stderr == ""
    assert event_tuples(json_lines(log.read_text(encoding="utf-8"))) == expected_example_events()


def test_console_log_format() -> None:
    """``--log-format console`` writes readable lines, one per event, with the skip reason."""
    done = run("render", "-c", str(EXAMPLE), "--log-format", "console")

    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert not any(line.startswith("{") for line in lines)
    assert sum("source_loaded" in line for line in lines) >= 2
    assert any("source_skipped" in line and "reason=not_found" in line for line in lines)
    assert "prompt_built" in lines[-1]


def test_logging_section_of_config(project: Callable[..., Path], tmp_path: Path) -> None:
    """``logging.file`` (relative to the config folder) and ``logging.format`` apply without flags."""
    config = project(logging={"file": "logs.txt", "format": "console"})

    done = run("render", "-c", str(config), cwd=ROOT)

    assert done.returncode == 0
    assert done.stderr == ""
    text = (tmp_path / "logs.txt").read_text(encoding="utf-8")
    assert "source_loaded" in text
    assert "prompt_built" in text
    assert not text.startswith("{")


def test_flags_override_logging_section(project: Callable[..., Path], tmp_path: Path) -> None:
    """--log-file and --log-format win over the config's logging section."""
    config = project(logging={"file": "logs.txt", "format": "console"})
    log = tmp_path / "flag.jsonl"

    done = run("render", "-c", str(config), "--log-file", str(log), "--log-format", "json")

    assert done.returncode == 0
    assert not (tmp_path / "logs.txt").exists()
    assert [e["event"] for e in json_lines(log.read_text(encoding="utf-8"))] == [
        "source_loaded",
        "source_loaded",
        "prompt_manifest",
        "prompt_built",
    ]


def test_log_level_filters_events(project: Callable[..., Path]) -> None:
    """``--log-level warning`` drops info events; a required source's skip (a warning) and the failure stay."""
    config = project(sources=["a.md", {"url": "gone.md", "required": True}, "also-gone.md"])

    done = run("render", "-c", str(config), "--log-level", "warning")

    logged = json_lines(done.stderr.split("memconfig: error:")[0])
    assert [(e["event"], e["level"]) for e in logged] == [("source_skipped", "warning"), ("prompt_failed", "error")]
    assert logged[0]["source"] == "gone.md"
    assert [f["source"] for f in logged[1]["failures"]] == ["gone.md"]


def test_unwritable_log_file_exits_2(tmp_path: Path) -> None:
    """A log file that cannot be opened is a usage error naming it; the prompt is not printed."""
    target = tmp_path / "no-such-dir" / "log.jsonl"

    done = run("render", "-c", str(EXAMPLE), "--log-file", str(target))

    assert done.returncode == 2
    assert done.stdout == ""
    assert f"memconfig: error: cannot open log file {target}" in done.stderr


# -- failing sources ---------------------------------------------------------------------


def test_required_source_missing_exits_1(project: Callable[..., Path]) -> None:
    """A required source that is skipped fails the render: exit 1, an error naming it (by its name, its URL beside)
    and the reason, no prompt."""
    config = project(sources=["a.md", {"url": "gone.md", "name": "team rules", "required": True}])

    done = run("render", "-c", str(config))

    assert done.returncode == 1
    assert done.stdout == ""
    error = done.stderr.splitlines()[-1]
    assert error.startswith("memconfig: error: ")
    assert f"source 'team rules' ({config.parent / 'gone.md'}) was not loaded" in error
    assert "not_found" in error
    skipped = [e for e in json_lines("\n".join(done.stderr.splitlines()[:-1])) if e["event"] == "source_skipped"]
    assert [(e["source"], e["reason"], e["required"]) for e in skipped] == [("gone.md", "not_found", True)]


def test_decode_error_with_fail_policy_exits_1(project: Callable[..., Path], tmp_path: Path) -> None:
    """With ``on_decode_error: fail`` an undecodable file fails the render with exit 1, naming it."""
    (tmp_path / "b.md").write_bytes(b"\xff\xfe not utf-8")
    config = project(loader={"on_decode_error": "fail"})

    done = run("render", "-c", str(config))

    assert done.returncode == 1
    assert done.stdout == ""
    error = done.stderr.splitlines()[-1]
    assert error.startswith("memconfig: error: ")
    assert "'b.md'" in error
    assert "decode_error" in error
    assert "required source" not in error, "b.md is not required; the message must not say it is"


def test_decode_error_with_skip_policy_renders(project: Callable[..., Path], tmp_path: Path) -> None:
    """With the default ``skip`` an undecodable file is logged as skipped and the render succeeds."""
    (tmp_path / "b.md").write_bytes(b"\xff\xfe not utf-8")

    done = run("render", "-c", str(project()))

    assert done.returncode == 0
    assert "alpha" in done.stdout
    reasons = {e["source"]: e.get("reason") for e in json_lines(done.stderr) if "source" in e}
    assert reasons["b.md"] == "decode_error"


# -- validate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sources", "expected"),
    [pytest.param(["a.md"], "1 source", id="one"), pytest.param(["a.md", "b.md"], "2 sources", id="two")],
)
def test_validate_counts_the_sources_in_words(write_config: WriteConfig, sources: list[str], expected: str) -> None:
    """``validate`` says "ok (1 source)" for one, "ok (2 sources)" for two."""
    config = write_config({"version": 1, "sources": sources})

    assert run("validate", "-c", str(config)).stdout == f"{config}: ok ({expected})\n"


def test_validate_ok() -> None:
    """``validate`` on a good config exits 0 and says so on stdout, without loading anything."""
    done = run("validate", "-c", "configs/example.yaml")

    assert done.returncode == 0
    _, loaded, missing = expected_example_prompt()
    assert done.stdout == f"configs/example.yaml: ok ({len(loaded) + len(missing)} sources)\n"
    assert done.stderr == ""


def test_validate_lists_every_problem(cli: Cli, write_config: WriteConfig) -> None:
    """``validate`` on a bad config exits 2 and lists every problem with its key path."""
    path = write_config(
        {
            "version": 1,
            "sources": ["a.md", {"url": "b.md", "bogus": True}, "a.md"],
            "formatter": {"preset": "nope", "template": "{agent_memory.__class__}"},
            "loader": {"on_decode_error": "ignore"},
        }
    )

    done = cli("validate", "-c", str(path))

    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"memconfig: error: {path}: 5 problems"
    assert sorted(line.strip().split(":")[0] for line in lines[1:]) == sorted(
        ["sources[1].bogus", "sources[2]", "formatter.preset", "formatter.template", "loader.on_decode_error"]
    )


def test_validate_checks_environment_overrides(project: Callable[..., Path]) -> None:
    """A bad MEMCONFIG_* override fails validate, naming the variable."""
    done = run("validate", "-c", str(project()), env={"MEMCONFIG_LOADER__MAX_BYTES": "-5"})

    assert done.returncode == 2
    assert "loader.max_bytes: must be greater than 0 (set by environment variable MEMCONFIG_LOADER__MAX_BYTES)" in (
        done.stderr
    )


def test_validate_finds_required_local_files_after_variables_and_home(tmp_path: Path) -> None:
    """Required sources written with ``~`` and ``${VAR}`` are looked for where a render reads them: there, exit 0."""
    home, notes = tmp_path / "home", tmp_path / "notes"
    home.mkdir()
    notes.mkdir()
    (home / "AGENTS.md").write_text("Home.\n", encoding="utf-8")
    (notes / "team.md").write_text("Team.\n", encoding="utf-8")
    config = tmp_path / "memconfig.yaml"
    config.write_text(
        "version: 1\nsources:\n  - {url: ~/AGENTS.md, required: true}\n  - {url: '${NOTES}/team.md', required: true}\n"
        "  - {url: 'file://${NOTES}/gone.md'}\n",
        encoding="utf-8",
    )
    env = {"HOME": str(home), "NOTES": str(notes)}

    done = run("validate", "-c", str(config), env=env)

    assert (done.returncode, done.stdout, done.stderr) == (0, f"{config}: ok (3 sources)\n", "")
    (home / "AGENTS.md").unlink()
    os.mkfifo(home / "AGENTS.md")
    refused = run("validate", "-c", str(config), env=env)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"memconfig: error: {config}: sources[0]: required source '~/AGENTS.md': "
        "not_regular_file (is a FIFO, not a regular file); a render would fail (exit 1)\n"
    )
    rendered = run("render", "-c", str(config), "--log-file", os.devnull, env=env)
    assert rendered.returncode == 1
    assert "'~/AGENTS.md' was not loaded and the render needs it: not_regular_file (is a FIFO, not a regular file)" in (
        rendered.stderr
    )


def test_validate_help_says_what_its_exit_codes_mean(cli: Cli) -> None:
    """``validate --help`` names the exit code of a required file a render would skip, and the flag that skips it."""
    done = cli("validate", "--help")

    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "exit 1 when a render would fail for one" in text
    assert "--no-source-checks check the config alone: do not look for the local files" in text


# -- did you mean ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["rendr"], "argument COMMAND: invalid choice: 'rendr' (did you mean 'render'?)", id="command"),
        pytest.param(
            ["render", "-c", "x", "--format", "jsn"],
            "argument --format: invalid choice: 'jsn' (did you mean 'json'?) (choose from 'text', 'json', 'openai', "
            "'anthropic')",
            id="render-format",
        ),
        pytest.param(
            ["render", "-c", "x", "--log-format", "consol"],
            "argument --log-format: invalid choice: 'consol' (did you mean 'console'?)",
            id="log-format",
        ),
        pytest.param(
            ["explain", "-c", "x", "--format", "jsno"],
            "argument --format: invalid choice: 'jsno' (did you mean 'json'?)",
            id="explain-format",
        ),
        pytest.param(
            ["audit", "--status", "skiped"],
            "argument --status: invalid choice: 'skiped' (did you mean 'skipped'?)",
            id="status",
        ),
        pytest.param(
            ["explain", "-c", "x", "--format", "yaml"], "invalid choice: 'yaml' (choose from", id="none-close"
        ),
    ],
)
def test_an_unknown_choice_on_the_command_line_names_the_closest(cli: Cli, args: list[str], message: str) -> None:
    """A command, a format, a log format or a status that does not exist: exit 2, the closest choice named."""
    done = cli(*args)

    assert (done.returncode, done.stdout) == (2, "")
    assert message in done.stderr


def test_a_config_full_of_typos_names_each_closest_key(write_config: WriteConfig) -> None:
    """Every unknown key, choice and protocol of a config is reported with its closest known one, at once."""
    path = write_config(
        "version: 1\nformater: {preset: plain}\nsources:\n  - url: a.md\n    requried: true\n"
        "  - htps://example.com/AGENTS.md\nlogging: {format: jsn}\n"
    )

    done = run("validate", "-c", str(path))

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"memconfig: error: {path}: 4 problems",
        "  sources[0].requried: unknown key (did you mean 'required'?)",
        "  logging.format: must be 'auto', 'json' or 'console' (did you mean 'json'?)",
        "  formater: unknown key (did you mean 'formatter'?)",
        "  sources[1].url: unknown protocol 'htps' (did you mean 'https'?); is its fsspec package installed? "
        "(registered loaders: none)",
    ]


@pytest.mark.parametrize("command", [pytest.param(c, id=c) for c in ("validate", "render")])
def test_an_unknown_memconfig_variable_is_a_warning_not_an_error(project: Callable[..., Path], command: str) -> None:
    """``MEMCONFIG_FORMATER__PRESET`` sets nothing: every command warns, naming it and the closest, and goes on."""
    path = project(formatter={"preset": "plain"})
    log = ["--log-file", os.devnull] if command == "render" else []

    done = run(command, "-c", str(path), *log, env={"MEMCONFIG_FORMATER__PRESET": "claude"})

    assert done.returncode == 0
    assert done.stderr == (
        "memconfig: warning: environment variable MEMCONFIG_FORMATER__PRESET names no config key ('formater'): "
        "ignored (did you mean MEMCONFIG_FORMATTER__PRESET?)\n"
    )
    assert done.stdout == (f"{path}: ok (2 sources)\n" if command == "validate" else "# A\n\nalpha\n\n# B\n\nbeta")


@pytest.mark.parametrize("command", [pytest.param(c, id=c) for c in ("render", "validate", "sources")])
def test_yaml_syntax_error_exits_2_with_position(cli: Cli, write_config: WriteConfig, command: str) -> None:
    """Every command reports a YAML syntax error as FILE:LINE:COLUMN and exits 2."""
    path = write_config("version: 1\nsources: [a.md\n")

    done = cli(command, "-c", str(path))

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"memconfig: error: {path}:3:1: YAML syntax error: ")


@pytest.mark.parametrize("command", [pytest.param(c, id=c) for c in ("render", "validate", "sources")])
def test_nonexistent_config_exits_2_naming_it(cli: Cli, command: str) -> None:
    """A config path that does not exist exits 2 with an error naming it."""
    done = cli(command, "-c", "no/such/memconfig.yaml")

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("memconfig: error: no/such/memconfig.yaml: file not found")


@pytest.mark.parametrize("command", [pytest.param(c, id=c) for c in ("render", "validate", "sources")])
def test_non_string_top_level_key_exits_2_naming_it(write_config: WriteConfig, command: str) -> None:
    """A top-level ``on:`` (a boolean in YAML) is a config problem saying how to quote it: exit 2, no traceback."""
    path = write_config("version: 1\non: push\nsources: [a.md]\n")

    done = run(command, "-c", str(path))

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f'memconfig: error: {path}: True: keys must be strings (quote it: "on")\n'


def test_unknown_protocol_exits_2(cli: Cli, project: Callable[..., Path]) -> None:
    """A source on a filesystem fsspec does not know is a config problem: exit 2 naming the source."""
    done = cli("render", "-c", str(project(sources=["a.md", "nosuchproto://x/AGENTS.md"])))

    assert done.returncode == 2
    assert done.stdout == ""
    assert "sources[1].url: unknown protocol 'nosuchproto'" in done.stderr


# -- sources ------------------------------------------------------------------------------


def test_sources_prints_a_table() -> None:
    """``sources`` prints one row per source with name, url, status, bytes and reason."""
    _, loaded, missing = expected_example_prompt()

    done = run("sources", "-c", "configs/example.yaml")

    assert done.returncode == 0
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["NAME", "URL", "STATUS", "BYTES", "REASON"]
    cells = [re.split(r"\s{2,}", row) for row in rows]
    assert len(cells) == len(loaded) + len(missing)
    by_url = {Path(c[1]).relative_to(EXAMPLE.parent).as_posix(): c for c in cells}
    for source in loaded:
        assert by_url[source][2:4] == ["loaded", str((EXAMPLE.parent / source).stat().st_size)]
    for source in missing:
        assert by_url[source][2:] == ["skipped", "0", "not_found: no such file"]
    assert by_url["example/team.md"][0] == "team conventions"
    assert all(json.loads(line) for line in done.stderr.splitlines())


def test_sources_with_failing_required_source_exits_1(project: Callable[..., Path]) -> None:
    """``sources`` still prints the whole table, but exits 1 when a required source would fail a render."""
    done = run("sources", "-c", str(project(sources=["a.md", {"url": "gone.md", "required": True}])))

    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 3
    assert "gone.md" in done.stderr.splitlines()[-1]
    assert "not_found" in done.stderr.splitlines()[-1]


# -- help, version, usage ------------------------------------------------------------------


def test_help_lists_commands() -> None:
    """``--help`` exits 0 and names the three commands."""
    done = run("--help")

    assert done.returncode == 0
    assert all(command in done.stdout for command in ("render", "validate", "sources"))
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("command", "options"),
    [
        pytest.param("render", ["--config", "--system", "--system-file", "--log-file", "--log-format"], id="render"),
        pytest.param("sources", ["--config", "--log-file", "--log-format"], id="sources"),
        pytest.param("validate", ["--config"], id="validate"),
    ],
)
def test_command_help_lists_options(cli: Cli, command: str, options: list[str]) -> None:
    """Each command's ``--help`` exits 0 and lists its options."""
    done = cli(command, "--help")

    assert done.returncode == 0
    assert all(option in done.stdout for option in options)


def test_version() -> None:
    """``--version`` prints the package version and exits 0."""
    done = run("--version")

    assert done.returncode == 0
    assert done.stdout.strip() == f"memconfig {memconfig.__version__}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["render"], "the following arguments are required: -c/--config", id="render-without-c"),
        pytest.param(["validate"], "the following arguments are required: -c/--config", id="validate-without-c"),
        pytest.param([], "the following arguments are required: COMMAND", id="no-command"),
        pytest.param(["bogus"], "invalid choice: 'bogus'", id="unknown-command"),
    ],
)
def test_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    """Missing -c, a missing or unknown command exit 2 with argparse's usage message."""
    done = cli(*args)

    assert done.returncode == 2
    assert done.stdout == ""
    assert message in done.stderr


# -- in-process main() ------------------------------------------------------------------------


@pytest.mark.usefixtures("reset_structlog")
def test_main_returns_exit_codes(project: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    """main() returns 0 / 1 / 2 instead of exiting, and writes the prompt to sys.stdout."""
    assert main(["render", "-c", str(project())]) == 0
    out, err = capsys.readouterr()
    assert "a.md\n\n# A\n\nalpha" in out
    assert [e["event"] for e in json_lines(err)] == [
        "source_loaded",
        "source_loaded",
        "prompt_manifest",
        "prompt_built",
    ]

    assert main(["render", "-c", str(project(sources=[{"url": "gone.md", "required": True}]))]) == 1
    assert capsys.readouterr().out == ""

    assert main(["validate", "-c", str(project(bogus=1))]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("bogus: unknown key\n")


def test_main_usage_error_raises_system_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse usage errors leave main() as SystemExit(2), as the console script expects."""
    with pytest.raises(SystemExit) as caught:
        main(["render"])

    assert caught.value.code == 2
    assert "-c/--config" in capsys.readouterr().err


# -- secrets -----------------------------------------------------------------------------------


def test_secrets_never_reach_cli_output(project: Callable[..., Path], tmp_path: Path) -> None:
    """Planted passwords, tokens and URL user-info appear in no stdout, stderr or log of any command."""
    secrets = ("planted-password-1", "planted-token-22", "planted-userinfo-333")
    (tmp_path / "creds.yaml").write_text(f"team:\n  token: {secrets[1]}\n", encoding="utf-8")
    config = project(
        credentials_file="creds.yaml",
        sources=[
            "a.md",
            {"url": "memory://vault/AGENTS.md", "credentials": "team", "storage_options": {"password": secrets[0]}},
            {"url": f"http://agent:{secrets[2]}@127.0.0.1:9/AGENTS.md", "retries": 0, "timeout": 5},
            {"url": f"http://127.0.0.1:9/b.md?token={secrets[1]}", "retries": 0, "timeout": 5},
        ],
    )

    outputs = [run(command, "-c", str(config)) for command in ("render", "sources", "validate")]

    assert [o.returncode for o in outputs] == [0, 0, 0]
    for done in outputs:
        for secret in secrets:
            assert secret not in done.stdout
            assert secret not in done.stderr
    assert "http://***@127.0.0.1:9/AGENTS.md" in outputs[1].stdout
    assert "b.md?token=***" in outputs[1].stdout


@pytest.mark.parametrize("password", [pytest.param("Zx9/Qk+w==", id="slash"), pytest.param("hunter#22", id="hash")])
def test_password_from_a_variable_never_reaches_cli_output(write_config: WriteConfig, password: str) -> None:
    """A ``${VAR}`` password holding ``/`` or ``#`` is masked in the sources table and the log of every command."""
    path = write_config(
        {"version": 1, "sources": [{"url": "https://alice:${MC_PASS}@127.0.0.1:9/AGENTS.md", "retries": 0}]}
    )

    outputs = [
        run(command, "-c", str(path), env={"MC_PASS": password}) for command in ("render", "sources", "validate")
    ]

    assert [o.returncode for o in outputs] == [0, 0, 0]
    for done in outputs:
        assert password not in done.stdout + done.stderr
    assert "https://***@127.0.0.1:9/AGENTS.md  skipped" in outputs[1].stdout


# -- the library's own output -------------------------------------------------------------------


def test_library_writes_nothing_to_stdout(tmp_path: Path) -> None:
    """Importing memconfig and rendering prints nothing, and configures neither structlog nor logging."""
    done = run_python(
        f"""
        import logging, structlog
        import memconfig
        pipeline = memconfig.Pipeline.from_yaml({str(EXAMPLE)!r})
        prompt = pipeline.render(system="S")
        pipeline.load()
        assert prompt.startswith("S\\n\\n<agent_memory>"), prompt
        assert not structlog.is_configured()
        assert not logging.getLogger().handlers
        # the logging HOWTO's advice for libraries: a NullHandler, nothing that writes
        assert all(isinstance(h, logging.NullHandler) for h in logging.getLogger("memconfig").handlers)
        """,
        cwd=tmp_path,
    )

    assert done.stdout == ""
    assert done.stderr == ""


def test_stdlib_logging_application_receives_events(tmp_path: Path) -> None:
    """An application that calls logging.basicConfig gets every event from the ``memconfig`` logger."""
    done = run_python(
        f"""
        import json, logging, sys
        records = []
        class Collect(logging.Handler):
            def emit(self, record):
                records.append((record.name, record.levelname, record.memconfig, json.loads(record.getMessage())))
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
        logging.getLogger().addHandler(Collect())
        import memconfig
        memconfig.Pipeline.from_yaml({str(EXAMPLE)!r}).render()
        json.dump(records, sys.stdout)
        """,
        cwd=tmp_path,
    )

    records = json.loads(done.stdout)
    assert {name for name, *_ in records} == {"memconfig"}
    assert event_tuples([fields for _, _, fields, _ in records]) == expected_example_events()
    assert all(fields == message for _, _, fields, message in records)
    assert done.stderr.splitlines()[0].startswith("memconfig INFO {")
    assert len(done.stderr.splitlines()) == len(records)


def test_structlog_application_receives_events(tmp_path: Path) -> None:
    """An application that configures structlog gets the events as event dicts through its processors."""
    done = run_python(
        f"""
        import json, sys, structlog
        events = []
        def collect(logger, method, event_dict):
            events.append(dict(event_dict, method=method))
            raise structlog.DropEvent
        structlog.configure(processors=[collect])
        import memconfig
        memconfig.Pipeline.from_yaml({str(EXAMPLE)!r}).render()
        json.dump(events, sys.stdout)
        """,
        cwd=tmp_path,
    )

    events = json.loads(done.stdout)
    assert event_tuples(events) == expected_example_events()
    assert all(e["method"] == "info" for e in events)
    assert done.stderr == ""


def test_nothing_on_stdout_after_capture_logs(tmp_path: Path) -> None:
    """After ``capture_logs()`` (which leaves structlog printing to stdout) a render prints nothing; logging gets it."""
    done = run_python(
        f"""
        import json, logging, sys
        from structlog.testing import capture_logs
        records = []
        class Collect(logging.Handler):
            def emit(self, record):
                records.append(record.memconfig)
        logging.getLogger("memconfig").addHandler(Collect())
        logging.getLogger("memconfig").setLevel(logging.DEBUG)
        import memconfig
        pipeline = memconfig.Pipeline.from_yaml({str(EXAMPLE)!r})
        with capture_logs():
            pass
        pipeline.render(system="S")
        json.dump(records, sys.stderr)
        """,
        cwd=tmp_path,
    )

    assert done.stdout == ""
    assert event_tuples(json.loads(done.stderr)) == expected_example_events()


def test_capture_logs_captures_the_events_and_prints_nothing(tmp_path: Path) -> None:
    """Inside ``capture_logs()`` the events are captured, twice in a row; before, between and after, nothing prints."""
    done = run_python(
        f"""
        import json, sys
        from structlog.testing import capture_logs
        import memconfig
        pipeline = memconfig.Pipeline.from_yaml({str(EXAMPLE)!r})
        pipeline.render()
        captured = []
        for _ in range(2):
            with capture_logs() as logs:
                pipeline.render()
            captured.append([log["event"] for log in logs])
            pipeline.render()
        json.dump(captured, sys.stderr)
        """,
        cwd=tmp_path,
    )

    assert done.stdout == ""
    first, second = json.loads(done.stderr)
    assert first == second
    assert first[-1] == "prompt_built"


def test_structlog_application_keeps_its_events_around_capture_logs(tmp_path: Path) -> None:
    """An application's own structlog configuration gets the events before and after a ``capture_logs()`` block."""
    done = run_python(
        f"""
        import json, sys, structlog
        from structlog.testing import capture_logs
        events = []
        def collect(logger, method, event_dict):
            events.append(event_dict["event"])
            return event_dict
        structlog.configure(processors=[collect, structlog.processors.JSONRenderer()],
                            logger_factory=structlog.PrintLoggerFactory(sys.stderr))
        import memconfig
        pipeline = memconfig.Pipeline.from_yaml({str(EXAMPLE)!r})
        pipeline.render()
        with capture_logs() as logs:
            pipeline.render()
        pipeline.render()
        print(json.dumps([events.count("prompt_built"), [log["event"] for log in logs].count("prompt_built")]))
        """,
        cwd=tmp_path,
    )

    assert json.loads(done.stdout) == [2, 1]
    assert [json.loads(line)["event"] for line in done.stderr.splitlines()].count("prompt_built") == 2


def test_json_lines_logger_writes_the_lines_of_the_processor_chain() -> None:
    """The CLI's one-step JSON logger writes what add_log_level + timestamp + JSONRenderer would, keys in order."""
    import io
    import re

    import orjson
    import structlog

    from memconfig.cli.logs import ProcessFields, UTCTimeStamper, configure_cli_logging

    def lines(stream: io.BytesIO) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in stream.getvalue().splitlines()]

    fast = io.BytesIO()
    configure_cli_logging("json", "info", fast)
    logger = structlog.get_logger("memconfig").bind(source="a.md")
    logger.debug("hidden", n=0)
    logger.info("source_loaded", n=1, path=Path("x"))
    logger.warning("source_%s", "skipped")
    chain = io.BytesIO()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            UTCTimeStamper(),
            ProcessFields(),
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        logger_factory=structlog.BytesLoggerFactory(file=chain),
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
    )
    logger = structlog.get_logger("memconfig").bind(source="a.md")
    logger.info("source_loaded", n=1, path=str(Path("x")))
    logger.warning("source_%s", "skipped")
    got, want = lines(fast), lines(chain)
    assert [list(line) for line in got] == [list(line) for line in want]
    assert [{k: v for k, v in line.items() if k != "timestamp"} for line in got] == [
        {k: v for k, v in line.items() if k != "timestamp"} for line in want
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", line["timestamp"]) for line in got)


def test_output_that_cannot_be_written_exits_74_without_a_traceback() -> None:
    """A full disk (``/dev/full``) is neither a bad config (2) nor a failed source (1)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "memconfig", "render", "-c", str(EXAMPLE)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 74
    assert "memconfig: error: cannot write the output: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_system_file_is_bounded_like_a_config(tmp_path: Path) -> None:
    (tmp_path / "huge.txt").write_bytes(b"x" * (1048576 + 1))
    done = run("render", "-c", str(EXAMPLE), "--system-file", str(tmp_path / "huge.txt"))
    assert done.returncode == 2
    assert f"--system-file {tmp_path / 'huge.txt'}: larger than the limit of 1048576 characters" in done.stderr
    done = run("render", "-c", str(EXAMPLE), "--system-file", "/dev/zero")  # a device: not even opened
    assert done.returncode == 2
    assert "--system-file /dev/zero: is a character device, not a regular file: not opened" in done.stderr


@pytest.mark.parametrize("command", ["render", "validate", "explain"])
def test_a_removed_working_directory_is_a_clear_error_not_a_traceback(tmp_path: Path, command: str) -> None:
    """A shell left in a folder that was deleted: exit 2 and one line saying so (was a misleading exit 74)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    config = ROOT / "configs" / "example.yaml"
    prelude = f"import os\nos.chdir({str(gone)!r})\nos.rmdir({str(gone)!r})"
    result = run(command, "-c", str(config), cwd=tmp_path, prelude=prelude)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"memconfig: error: {config}: the working directory no longer exists: run from a folder that does"
    )
    assert result.stdout == ""


def test_json_lines_reach_an_unbuffered_log_whole_even_through_short_writes() -> None:
    """The CLI's log file is unbuffered: each line is one write with no flush; a short write writes the rest."""
    import io

    import orjson
    import structlog

    from memconfig.cli.logs import configure_cli_logging

    class Short(io.RawIOBase):
        """A raw file that takes at most 7 bytes per write, as a pipe or a full disk may."""

        def __init__(self) -> None:
            self.data = bytearray()
            self.calls = 0

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            self.calls += 1
            taken = bytes(b[:7])
            self.data += taken
            return len(taken)

    raw = Short()
    configure_cli_logging("json", "info", raw)
    structlog.get_logger("memconfig").info("source_loaded", source="a.md", chars=12)
    structlog.get_logger("memconfig").info("prompt_built", chars=99)
    lines = [orjson.loads(line) for line in bytes(raw.data).splitlines()]
    assert [(line["event"], line.get("source")) for line in lines] == [
        ("source_loaded", "a.md"),
        ("prompt_built", None),
    ]
    assert raw.calls > 2  # the lines did come in pieces


def test_a_forked_worker_logs_its_own_pid(tmp_path: Path) -> None:
    """``pid`` is read once per process, and again in a forked child: the audit tells the two runs apart."""
    import io

    import orjson
    import structlog

    from memconfig.cli.logs import configure_cli_logging

    log = tmp_path / "log.jsonl"
    stream = open(log, "ab", buffering=0)  # noqa: SIM115 - closed below, in both processes
    assert isinstance(stream, io.RawIOBase)
    configure_cli_logging("json", "info", stream)
    structlog.get_logger("memconfig").info("prompt_built", who="parent")
    child = os.fork()
    if child == 0:  # the child: log one line and leave without running the parent's cleanup
        try:
            structlog.get_logger("memconfig").info("prompt_built", who="child")
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    stream.close()
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert [(line["who"], line["pid"]) for line in lines] == [("parent", os.getpid()), ("child", child)]


def test_a_log_file_that_takes_nothing_costs_the_line_not_a_hang() -> None:
    """A raw file whose write takes 0 bytes (nothing written, no error): the line is given up, the call returns."""
    import io

    import structlog

    from memconfig.cli.logs import configure_cli_logging

    class Full(io.RawIOBase):
        def __init__(self) -> None:
            self.calls = 0

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            self.calls += 1
            return 0

    full = Full()
    configure_cli_logging("json", "info", full)
    structlog.get_logger("memconfig").info("prompt_built", chars=1)
    assert full.calls == 1
