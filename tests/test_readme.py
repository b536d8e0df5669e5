"""The examples of the README and docs/ are true as pasted.

Every ``python`` block runs, every ``yaml`` block validates, the README's shell examples run in order after the
set-up commands with no network, and every ``console`` transcript's commands print what it shows.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import ROOT

README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").rglob("*.md"))]
MAX_README_LINES = 250
_HEADING = re.compile(r"^#{1,3} (.+)$", re.MULTILINE)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")
#: The README's set-up commands: run by the user (and by .ci/run), not by these tests.
_SETUP = "python3 -m venv .venv"
#: The port the README's HTTP example serves on; the test gives it a free one instead.
_README_PORT = "8765"


def _found(language: str, documents: list[Path]) -> list[tuple[Path, int, str, str]]:
    """Each fenced block in *language*: its document, its number there, the section it is in, its text."""
    found = []
    for document in documents:
        text = document.read_text(encoding="utf-8")
        blocks = re.finditer(rf"^```{language}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
        for number, block in enumerate(blocks, 1):
            section = [m[1] for m in _HEADING.finditer(text[: block.start()])][-1]
            found.append((document, number, section, block[1]))
    return found


def _blocks(language: str, documents: list[Path] = DOCUMENTS) -> list[Any]:
    params = []
    for document, number, section, code in _found(language, documents):
        slug = re.sub(r"[^a-z0-9]+", "-", section.lower()).strip("-")
        name = document.relative_to(ROOT).with_suffix("").as_posix().replace("/", "-")
        params.append(pytest.param(code, id=f"{name}-{number}-{slug}"))
    return params


def _readme_shell() -> list[str]:
    """The README's shell examples after its set-up commands, in order."""
    return [code for _, _, _, code in _found("sh", [README]) if not code.startswith(_SETUP)]


def _environment(*texts: str) -> dict[str, str]:
    """This environment, without MEMCONFIG_* overrides, with each ``${VAR}`` the texts name set (to a dummy)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMCONFIG_")}
    for text in texts:
        environ.update({name: "dummy-value" for name in _VARIABLE.findall(text) if name not in environ})
    return environ


def _clone(folder: Path) -> Path:
    """What a user has after the set-up commands: the repository's examples, in a git repository, and a ``.venv``
    whose ``memconfig`` and ``python`` are this tree's (``PYTHONPATH`` is set by :func:`_user_environment`)."""
    shutil.copytree(ROOT / "configs", folder / "configs")
    git = [
        "git",
        "-c",
        "user.name=memconfig",
        "-c",
        "user.email=memconfig@example.invalid",
        "-c",
        "init.defaultBranch=main",
    ]
    subprocess.run([*git, "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "-C", str(folder), "add", "configs"], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "-q", "-m", "a clone"], check=True)
    bin_folder = folder / ".venv" / "bin"
    bin_folder.mkdir(parents=True)
    for name, command in (
        ("python", f'exec "{sys.executable}" "$@"'),
        ("memconfig", f'exec "{sys.executable}" -m memconfig "$@"'),
    ):
        script = bin_folder / name
        script.write_text(f"#!/bin/sh\n{command}\n", encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_folder


def _user_environment(folder: Path, bin_folder: Path) -> dict[str, str]:
    """A user's shell: this tree's memconfig, a home folder of its own (``~/.agents/…`` is not the developer's)."""
    home = folder / "home"
    home.mkdir(exist_ok=True)
    environ = _environment()
    environ.update(
        HOME=str(home),
        PATH=os.pathsep.join((str(bin_folder), environ.get("PATH", ""))),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH")) if p),
    )
    return environ


def _run_shell(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """*script* in ``bash -euo pipefail`` in a session of its own; whatever it left running is stopped after it."""
    with subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=120)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)  # a background server the script did not stop
    return subprocess.CompletedProcess(process.args, process.returncode, output, "")


def test_readme_is_at_most_250_lines() -> None:
    """The front door fits: what memconfig is, the set-up, the three uses, the integrations, links."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; at most {MAX_README_LINES}"


def test_readme_has_an_example_for_each_use() -> None:
    """The README shows the set-up, the three uses (edit YAML, any fsspec URL, audit) in the shell, and Python."""
    setup = [code for _, _, _, code in _found("sh", [README]) if code.startswith(_SETUP)]
    assert len(setup) == 2
    shell = "\n".join(_readme_shell())
    assert "cat > my-agent/memconfig.yaml" in shell and "memconfig render" in shell
    assert "http://127.0.0.1:" in shell and "zip://" in shell
    assert "memconfig audit" in shell
    assert len(_blocks("python", [README])) >= 2


def test_readme_shell_examples_run_in_order_offline(tmp_path: Path, free_port: int) -> None:
    """Pasted in order into a clone after the set-up commands, each shell example succeeds (exit 0, no traceback).

    Nothing outside 127.0.0.1 is reached: the HTTP example's server is the one it starts (on a free port here).
    """
    bin_folder = _clone(tmp_path)
    environ = _user_environment(tmp_path, bin_folder)
    examples = _readme_shell()
    assert examples
    for number, example in enumerate(examples, 1):
        done = _run_shell(example.replace(_README_PORT, str(free_port)), tmp_path, environ)
        assert done.returncode == 0, f"README shell example {number} failed:\n{example}\n{done.stdout}"
        assert "Traceback" not in done.stdout, done.stdout
    assert (tmp_path / "my-agent" / "report.html").stat().st_size > 0
    log = (tmp_path / "my-agent" / "log.jsonl").read_text(encoding="utf-8")
    assert log.count('"event":"prompt_built"') == 2  # the two runs the audit example reads


@pytest.mark.parametrize("code", _blocks("python"))
def test_readme_python_runs_as_pasted(code: str) -> None:
    """The block runs in a fresh interpreter from the repository's root, its own asserts included."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=_environment()
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("config", _blocks("yaml"))
def test_readme_yaml_validates_as_pasted(config: str, tmp_path: Path) -> None:
    """Pasted as a config in ``configs/`` (beside the files it names there), ``memconfig validate`` accepts it.

    Variables it refers to are set, as the page says they must be.
    """
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    pasted = folder / "pasted.yaml"
    pasted.write_text(config, encoding="utf-8")
    credentials = (folder / "credentials.example.yaml").read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "validate", "-c", str(pasted)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_environment(config, credentials),
    )
    assert done.returncode == 0, done.stderr + done.stdout


def _shown(line: str) -> re.Pattern[str]:
    """A transcript's output line as a pattern: ``...`` stands for anything, runs of spaces for any spacing."""
    parts = [re.escape(" ".join(part.split())) for part in line.strip().split("...")]
    return re.compile(r"\s*" + ".*".join(parts) + r"\s*")


def _transcript(text: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines and the output lines shown under each."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps and line.strip():
            steps[-1][1].append(line)
    return steps


@pytest.mark.parametrize("transcript", _blocks("console"))
def test_console_transcripts_are_true(transcript: str, tmp_path: Path) -> None:
    """Each ``$`` command of the transcript exits 0 in a clone, and the lines shown are in its output, in order."""
    steps = _transcript(transcript)
    assert steps, "a console block with no $ command"
    for command, _ in steps:
        for program in re.findall(r"(?:^|\|)\s*([\w.-]+)", command):
            if program != "memconfig" and shutil.which(program) is None:
                pytest.skip(f"{program} is not installed")
    bin_folder = _clone(tmp_path)
    environ = _user_environment(tmp_path, bin_folder)
    for command, shown in steps:
        done = _run_shell(command, tmp_path, environ)
        assert done.returncode == 0, f"$ {command}\n{done.stdout}"
        lines = iter(done.stdout.splitlines())
        for expected in shown:
            pattern = _shown(expected)
            assert any(pattern.fullmatch(" ".join(line.split())) for line in lines), (
                f"$ {command}: no line like {expected!r} (in order) in:\n{done.stdout}"
            )
