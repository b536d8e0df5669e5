"""Every path the config or the command line names is stat'ed before it is opened: no FIFO, socket or device
is waited on (exit 2, naming it), while the caller's own pipes (``-``, ``<(cmd)``) are read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import HANG, environment, memconfig
from support.terminal import on_terminal

NOT_OPENED = "not a regular file: not opened (it could block, or never end)"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "team.md").write_text("Use tabs.\n", encoding="utf-8")
    (tmp_path / "memconfig.yaml").write_text("version: 1\nsources: [team.md]\n", encoding="utf-8")
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


def test_a_log_file_in_the_config_that_is_a_fifo_is_refused(project: Path) -> None:
    (project / "memconfig.yaml").write_text("version: 1\nsources: [team.md]\nlogging: {file: fifo}\n")
    done = memconfig("render", "-c", "memconfig.yaml", cwd=project)
    assert done.returncode == 2
    assert done.stderr.strip() == f"memconfig: error: logging.file: {project / 'fifo'} is a FIFO, {NOT_OPENED}"
    assert done.stdout == ""


def test_a_log_file_on_the_command_line_that_is_a_fifo_is_refused(project: Path) -> None:
    done = memconfig("render", "-c", "memconfig.yaml", "--log-file", "fifo", cwd=project)
    assert done.returncode == 2
    assert done.stderr.strip() == f"memconfig: error: --log-file: fifo is a FIFO, {NOT_OPENED}"


def test_the_log_may_be_dev_null_or_the_process_stderr(project: Path) -> None:
    for target in (os.devnull, "/dev/stderr"):
        done = memconfig("render", "-c", "memconfig.yaml", "--log-file", target, cwd=project)
        assert done.returncode == 0 and "Use tabs." in done.stdout, done.stderr


def test_the_log_may_be_the_process_stderr_on_a_terminal(project: Path) -> None:
    """--log-file /dev/stderr (and a config's logging.file: /dev/stderr) when stderr is a terminal: written to,
    not refused as a device; only reading a terminal could wait forever."""
    done = on_terminal("render", "-c", str(project / "memconfig.yaml"), "--log-file", "/dev/stderr")
    assert done.returncode == 0, done.text
    assert "Use tabs." in done.stdout and '"event":"prompt_built"' in done.text
    config = project / "logged.yaml"
    config.write_text(
        (project / "memconfig.yaml").read_text(encoding="utf-8") + "logging: {file: /dev/stderr}\n", encoding="utf-8"
    )
    done = on_terminal("render", "-c", str(config))
    assert done.returncode == 0, done.text
    assert '"event":"prompt_built"' in done.text


def test_a_system_file_that_is_a_fifo_is_refused(project: Path) -> None:
    done = memconfig("render", "-c", "memconfig.yaml", "--system-file", "fifo", cwd=project)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"--system-file fifo: is a FIFO, {NOT_OPENED}")


def test_a_config_that_is_a_named_fifo_is_refused(project: Path) -> None:
    done = memconfig("validate", "-c", "fifo", cwd=project)
    assert done.returncode == 2
    assert done.stderr.strip() == f"memconfig: error: fifo: is a FIFO, {NOT_OPENED}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
def test_process_substitution_is_read_as_the_caller_gave_it(project: Path) -> None:
    """``-c <(cat memconfig.yaml) --system-file <(echo …)``: the caller's own pipes, read to their end."""
    script = f"{sys.executable} -m memconfig render -c <(cat memconfig.yaml) --system-file <(printf 'Be brief.')"
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=project,
        env=environment(None),
        timeout=HANG,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Be brief.") and "Use tabs." in done.stdout


def test_a_relative_config_in_a_removed_working_folder_says_so(tmp_path: Path) -> None:
    """The shell's folder deleted under it, ``-c memconfig.yaml``: exit 2 saying why the file is not found."""
    gone = tmp_path / "gone"
    gone.mkdir()
    prelude = f"import os\nos.chdir({str(gone)!r})\nos.rmdir({str(gone)!r})"
    done = memconfig("validate", "-c", "memconfig.yaml", cwd=tmp_path, prelude=prelude)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "memconfig: error: memconfig.yaml: file not found: memconfig.yaml"
        " (the working directory no longer exists: run from a folder that does)"
    )
    assert "cannot write the output" not in done.stderr


@pytest.mark.parametrize(
    ("key", "named"),
    [
        pytest.param("formatter", "{template_file: /dev/stdin}", id="template-stdin"),
        pytest.param("formatter", "{template_file: /dev/fd/0}", id="template-fd-0"),
        pytest.param("formatter", "{template_file: /dev/stdout}", id="template-stdout"),
        pytest.param("credentials_file", "/dev/stdin", id="credentials-stdin"),
    ],
)
def test_a_config_naming_the_terminal_is_refused_not_waited_on(project: Path, key: str, named: str) -> None:
    """A config's template_file or credentials_file that is the process's own terminal: exit 2, never read."""
    config = project / "memconfig.yaml"
    sources = "[{url: team.md, credentials: team}]" if key == "credentials_file" else "[team.md]"
    config.write_text(f"version: 1\nsources: {sources}\n{key}: {named}\n", encoding="utf-8")
    done = on_terminal("validate", "-c", str(config), stdin_too=True, stdout_too=True)
    where = "formatter.template_file" if key == "formatter" else key
    path = named.removeprefix("{template_file: ").removesuffix("}")
    assert done.returncode == 2, done.text
    assert done.pieces() == [f"memconfig: error: {config}: {where}: {path} is a character device, {NOT_OPENED}"]


def test_a_config_naming_standard_input_is_refused_when_it_is_a_pipe(project: Path) -> None:
    """Only the command line may name the caller's pipes: a template_file of /dev/stdin is refused on a pipe too."""
    (project / "memconfig.yaml").write_text(
        "version: 1\nsources: [team.md]\nformatter: {template_file: /dev/stdin}\n", encoding="utf-8"
    )
    done = memconfig("render", "-c", "memconfig.yaml", cwd=project, stdin="{memory} and more\n")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"memconfig: error: memconfig.yaml: formatter.template_file: /dev/stdin is a FIFO, {NOT_OPENED}"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(
    "option",
    [pytest.param(("-c", "/dev/stdin"), id="config"), pytest.param(("--system-file", "/dev/fd/0"), id="system-file")],
)
def test_the_terminal_named_on_the_command_line_is_refused(project: Path, option: tuple[str, str]) -> None:
    """-c /dev/stdin or --system-file /dev/fd/0 on a terminal: a character device, not the caller's pipe: exit 2."""
    config = () if option[0] == "-c" else ("-c", str(project / "memconfig.yaml"))
    done = on_terminal("render", *config, *option, stdin_too=True, stdout_too=True)
    assert done.returncode == 2, done.text
    name, path = option
    shown = f"{path}:" if name == "-c" else f"--system-file {path}:"
    assert done.pieces()[-1] == f"memconfig: error: {shown} is a character device, {NOT_OPENED}"
