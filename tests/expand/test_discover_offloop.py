"""A downward discovery under ``abuild`` walks off the event loop, and keeps git's ignore answers while they hold."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import plain_pipeline
from support.trees import git_init, write

from memconfig import Pipeline

HANG = 20.0  # seconds: only a blocked loop waits this long; nothing below asserts a duration


def _pipeline(root: Path) -> Pipeline:
    found = {"names": ["AGENTS.md"], "from": str(root), "down": {"max_dirs": 50}}  # respect_gitignore: the default
    return plain_pipeline(root, [{"discover": found}], "revalidate")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository: AGENTS.md at the top, in a/, a/deep/ and in build/, which .gitignore leaves out."""
    root = git_init(tmp_path / "repo")
    write(root / ".gitignore", "build/\n")
    for folder, text in (("", "top"), ("a", "in a"), ("a/deep", "in deep"), ("build", "in build")):
        write(root / folder / "AGENTS.md", f"{text}\n")
    return root


@pytest.fixture
def git_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The git commands run through ``subprocess.run`` (each counted, then run for real)."""
    seen: list[list[str]] = []
    real = subprocess.run

    def counting(args: Any, *more: Any, **options: Any) -> Any:
        if list(args)[:1] == ["git"]:
            seen.append(list(args))
        return real(args, *more, **options)

    monkeypatch.setattr(subprocess, "run", counting)
    return seen


def test_abuild_walks_a_downward_discovery_off_the_event_loop(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the discovery asks git what it ignores, a coroutine scheduled beside the render runs: the walk is not
    on the loop's thread (each git call waits for that coroutine's tick; on the loop it would wait in vain)."""
    ticked = threading.Event()
    waits: list[bool] = []
    real = subprocess.run

    def waiting(args: Any, *more: Any, **options: Any) -> Any:
        if list(args)[:1] == ["git"]:
            waits.append(ticked.wait(HANG))
        return real(args, *more, **options)

    monkeypatch.setattr(subprocess, "run", waiting)

    async def tick() -> None:
        ticked.set()

    async def render() -> str:
        ticker = asyncio.get_running_loop().create_task(tick())  # runs only when the render lets the loop run
        try:
            return (await _pipeline(repo).abuild()).text
        finally:
            await ticker

    text = asyncio.run(render())
    assert waits and all(waits), waits
    assert text.split("\n\n") == ["top", "in a", "in deep"]  # build/ left out, as git says


def test_an_unchanged_gitignore_spawns_no_git_on_a_revalidating_render(repo: Path, git_runs: list[list[str]]) -> None:
    """The second render with every .gitignore as it was runs no git; an edited .gitignore (the top's, or one in a
    folder searched) is asked again, and what it now ignores is left out."""
    pipeline = _pipeline(repo)
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep"]
    assert any("check-ignore" in run for run in git_runs)
    git_runs.clear()
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep"]
    assert git_runs == []
    write(repo / "a" / ".gitignore", "deep/\n")
    assert pipeline.build().text.split("\n\n") == ["top", "in a"]
    assert git_runs
    git_runs.clear()
    write(repo / ".gitignore", "build/\na/\n")
    assert pipeline.build().text.split("\n\n") == ["top"]
    assert git_runs
    git_runs.clear()
    assert pipeline.build().text == "top" and git_runs == []


def test_a_gitignore_added_in_a_folder_between_the_start_and_a_deeper_level_is_seen(
    repo: Path, git_runs: list[list[str]]
) -> None:
    """a/b/deep/ is the third level of the search: a new a/.gitignore saying deep/ (neither the start folder's nor
    the level's own folders') leaves it out at the next render, in this pipeline and in a new one."""
    write(repo / "a" / "b" / "deep" / "AGENTS.md", "in b/deep\n")
    pipeline = _pipeline(repo)
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep", "in b/deep"]
    git_runs.clear()
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep", "in b/deep"]
    assert git_runs == []
    write(repo / "a" / ".gitignore", "b/deep/\n")
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep"]
    assert _pipeline(repo).build().text.split("\n\n") == ["top", "in a", "in deep"]
    write(repo / "a" / ".gitignore", "deep/\n")  # now a/deep/ as well
    assert pipeline.build().text.split("\n\n") == ["top", "in a"]


def test_an_edited_core_excludes_file_is_seen(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_runs: list[list[str]]
) -> None:
    """core.excludesFile = ~/.gitignore_global (GitHub's suggestion), outside every other input: an edit of that
    file leaves out what it now ignores at the next render; while it is unchanged no git runs."""
    home = tmp_path / "home"
    write(home / ".gitconfig", "[core]\n\texcludesFile = ~/.gitignore_global\n")
    write(home / ".gitignore_global", "")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    pipeline = _pipeline(repo)
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep"]
    git_runs.clear()
    assert pipeline.build().text.split("\n\n") == ["top", "in a", "in deep"]
    assert git_runs == []
    write(home / ".gitignore_global", "deep/\n")
    assert pipeline.build().text.split("\n\n") == ["top", "in a"]
    git_runs.clear()
    write(home / "other_ignore", "a/\n")
    write(home / ".gitconfig", "[core]\n\texcludesFile = ~/other_ignore\n")  # another file named
    assert pipeline.build().text == "top"
    assert any("config" in run for run in git_runs)


def test_abuild_gives_the_sync_render_s_text_and_events(repo: Path) -> None:
    """Off the loop or inline, one core: the same text, and the walk's events carry the render's id."""
    with capture_logs() as logs:
        render = asyncio.run(_pipeline(repo).abuild())
    assert render.text == _pipeline(repo).build().text
    searched = [e for e in logs if e["event"] == "folder_searched"]
    assert searched and {e["render_id"] for e in searched} == {render.render_id}
