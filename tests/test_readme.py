"""The examples of the README and docs/ are true as pasted: every ``python`` block runs, every ``yaml`` validates."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_HEADING = re.compile(r"^#{1,3} (.+)$", re.MULTILINE)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def _blocks(language: str, documents: list[Path] = DOCUMENTS) -> list[Any]:
    params = []
    for document in documents:
        text = document.read_text(encoding="utf-8")
        blocks = re.finditer(rf"^```{language}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
        for number, found in enumerate(blocks, 1):
            section = [m[1] for m in _HEADING.finditer(text[: found.start()])][-1]
            slug = re.sub(r"[^a-z0-9]+", "-", section.lower()).strip("-")
            params.append(pytest.param(found[1], id=f"{document.stem}-{number}-{slug}"))
    return params


def _environment(*texts: str) -> dict[str, str]:
    """This environment, without MEMCONFIG_* overrides, with each ``${VAR}`` the texts name set (to a dummy)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMCONFIG_")}
    for text in texts:
        environ.update({name: "dummy-value" for name in _VARIABLE.findall(text) if name not in environ})
    return environ


def test_readme_has_examples_in_both_languages() -> None:
    """The front door shows Python (a quick start, a processor, a loader, an appender) and configs."""
    readme = DOCUMENTS[:1]
    assert len(_blocks("python", readme)) >= 4
    assert len(_blocks("yaml", readme)) >= 2


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

    Variables it refers to are set, as the README says they must be.
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
