"""The ``deepagents`` preset against the real deepagents ``MemoryMiddleware``.

deepagents' own prompt text is read from the installed package at test time
(it is never copied into this repository) and handed to memconfig as
``template_file``; the CLI's output must then equal, byte for byte, the text of
the system message deepagents would send.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from deepagents.backends.filesystem import FilesystemBackend
from deepagents.middleware.memory import MEMORY_SYSTEM_PROMPT, MemoryMiddleware
from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import SystemMessage

from memconfig import Pipeline

FILES: dict[str, bytes] = {
    "AGENTS.md": b"# Rules\n\nUse {braces} and {agent_memory} and {0} and {{x}} literally.\n\n\n",
    "docs/team.md": b"Team <!-- hidden\nmultiline --> conventions.\n<!-- trailing -->   \n",
    "comments-only.md": b"<!-- nothing for the model -->\n",
    "empty.md": b"",
    "unicode.md": "Grüße — ☃ — 日本語\n".encode(),
}
SOURCES = ["AGENTS.md", "missing.md", "docs/team.md", "comments-only.md", "empty.md", "unicode.md"]


def _deepagents_text(root: Path, sources: list[str], system: str | None) -> str:
    """The text deepagents sends: the system message's text blocks, joined."""
    middleware: Any = MemoryMiddleware(backend=FilesystemBackend(root_dir=root), sources=sources)
    update = middleware.before_agent({}, None, None)
    request = ModelRequest(
        model=FakeListChatModel(responses=["ok"]),
        messages=[],
        system_message=SystemMessage(content=system) if system else None,
        state={"messages": [], **(update or {})},
        runtime=None,
    )
    sent = middleware.modify_request(request).system_message
    return "".join(block["text"] for block in sent.content_blocks if block["type"] == "text")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with memory files of every awkward kind, and deepagents' template beside them."""
    for name, data in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "template.txt").write_text(MEMORY_SYSTEM_PROMPT, encoding="utf-8")
    return tmp_path


def _config(project: Path, sources: list[str]) -> Path:
    path = project / "memconfig.yaml"
    data = {"version": 1, "sources": sources, "formatter": {"preset": "deepagents", "template_file": "template.txt"}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "system",
    [
        pytest.param("You are a careful assistant.", id="with-system"),
        pytest.param(None, id="no-system"),
        pytest.param("Line one\n\nLine {two} }}", id="system-with-braces"),
    ],
)
def test_cli_output_is_byte_identical_to_deepagents(project: Path, system: str | None) -> None:
    """`memconfig render --system TEXT` prints exactly what deepagents sends."""
    config = _config(project, SOURCES)
    args = [sys.executable, "-m", "memconfig", "render", "-c", str(config)]
    if system is not None:
        args += ["--system", system]
    done = subprocess.run(args, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == _deepagents_text(project, SOURCES, system)


@pytest.mark.parametrize(
    "sources",
    [
        pytest.param(["missing.md"], id="nothing-loaded"),
        pytest.param(["comments-only.md", "empty.md"], id="only-empty-files"),
        pytest.param(["unicode.md", "AGENTS.md"], id="reordered"),
        pytest.param([], id="no-sources"),
    ],
)
def test_library_render_matches_deepagents(project: Path, sources: list[str]) -> None:
    """`Pipeline.render` equals deepagents for edge cases: nothing loaded, only empty files, any order."""
    pipeline = Pipeline.from_yaml(_config(project, sources))
    assert pipeline.render("SYSTEM") == _deepagents_text(project, sources, "SYSTEM")


def test_state_written_by_deepagents_renders_the_same(project: Path) -> None:
    """A state deepagents filled (`memory_contents`) renders identically without reading any file."""
    middleware: Any = MemoryMiddleware(backend=FilesystemBackend(root_dir=project), sources=SOURCES)
    state = dict(middleware.before_agent({}, None, None))
    for name in FILES:
        (project / name).write_text("changed on disk", encoding="utf-8")
    pipeline = Pipeline.from_yaml(_config(project, SOURCES))
    expected = MEMORY_SYSTEM_PROMPT.format(
        agent_memory=middleware._format_agent_memory(state["memory_contents"], "{agent_memory}")
    )
    assert pipeline.render(None, state) == expected
    assert "changed on disk" not in pipeline.render(None, state)


def test_default_template_is_memconfigs_own_wording() -> None:
    """The shipped deepagents preset keeps the layout but not deepagents' prompt text."""
    from memconfig.format.presets import PRESETS

    ours = PRESETS["deepagents"].template
    assert "{agent_memory}" in ours
    theirs = {line.strip() for line in MEMORY_SYSTEM_PROMPT.splitlines() if len(line.strip()) > 30}
    assert not theirs & {line.strip() for line in ours.splitlines()}
