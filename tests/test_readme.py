"""The README's Python examples run as pasted: every block marked ``<!-- runnable -->``."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"<!-- runnable -->\n```python\n(.*?)```", re.DOTALL)


def _examples() -> list[Any]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = _BLOCK.findall(text)
    heading = re.compile(r"^## (.+)$", re.MULTILINE)
    params = []
    for number, block in enumerate(blocks, 1):
        where = text.index(block)
        section = [m[1] for m in heading.finditer(text[:where])][-1]
        params.append(pytest.param(block, id=f"{number}-{section.lower().replace(' ', '-')}"))
    return params


def test_readme_has_runnable_examples() -> None:
    """The architecture section shows a processor, a loader and an appender, all run by this test."""
    assert len(_examples()) >= 4


@pytest.mark.parametrize("code", _examples())
def test_readme_example_runs_as_pasted(code: str, memfs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example runs from the repository's root in a fresh namespace, its own asserts included."""
    monkeypatch.chdir(ROOT)
    assert os.getcwd() == str(ROOT)
    module = types.ModuleType("readme_example")  # a real module: dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, "README.md", "exec"), module.__dict__)
