"""Cache policy ``watch`` and ``render -o FILE --watch``: no file-system call when nothing changed, changes seen."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from structlog.testing import capture_logs
from support.cli import eventually, watching
from support.models import RecordingModel
from support.pipelines import plain_pipeline

from memconfig import Pipeline
from memconfig.cache.watcher import RECENT, Watching
from memconfig.install import install_hint
from memconfig.integrations.langchain import MemconfigMiddleware

HANG = 20.0  # seconds: only a hang takes this long; nothing below asserts a duration

# -- counting this thread's file-system calls ----------------------------------------------------

_COUNTING: dict[int, list[str]] = {}  # thread id: the calls seen while it counts
_AUDITED = {"open", "os.listdir", "os.scandir", "os.mkdir", "os.rename", "os.remove"}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    calls = _COUNTING.get(threading.get_ident())
    if calls is not None and event in _AUDITED:
        calls.append(event)


sys.addaudithook(_audit)  # hooks cannot be removed: it only records while a test counts


@pytest.fixture
def fs_calls(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Any]:
    """A context manager counting this thread's open/listdir/scandir (audit hook) and os.stat/lstat calls."""
    for name in ("stat", "lstat"):
        real = getattr(os, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls = _COUNTING.get(threading.get_ident())
            if calls is not None:
                calls.append(f"os.{_name}")
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, counted)

    class Counting:
        def __enter__(self) -> list[str]:
            self.calls: list[str] = []
            _COUNTING[threading.get_ident()] = self.calls
            return self.calls

        def __exit__(self, *exc: object) -> None:
            del _COUNTING[threading.get_ident()]

    return Counting


# -- the policy ------------------------------------------------------------------------------------


def _pipeline(root: Path, sources: list[Any], **cache: Any) -> Pipeline:
    """The plain pipeline over *sources* in *root* under ``watch``; *cache*: more cache settings."""
    return plain_pipeline(root, sources, "watch", cache=cache)


def _watching(pipeline: Pipeline) -> Watching:
    watching = pipeline.cache.watching  # type: ignore[attr-defined]
    assert isinstance(watching, Watching)
    return watching


def _armed(pipeline: Pipeline) -> Watching:
    """Render, wait for the watcher to be armed, and render once more (the whole check that follows arming)."""
    pipeline.build()
    watching = _watching(pipeline)
    eventually(lambda: watching.armed, "the watcher armed")
    pipeline.build()
    return watching


def _changed(pipeline: Pipeline, seen: int) -> None:
    watching = _watching(pipeline)
    eventually(lambda: watching.changes > seen, "the change reported")


def _quiet(pipeline: Pipeline) -> None:
    """Wait until no report has come for RECENT seconds (an edit's events may come in more than one batch)."""
    watching = _watching(pipeline)
    deadline = time.monotonic() + HANG
    while True:
        before = watching.changes
        time.sleep(RECENT + 0.1)
        if watching.changes == before:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"reports still coming after {HANG} s")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """50 local files and a rules/ folder of two, in tmp_path/repo."""
    root = tmp_path / "repo"
    (root / "rules").mkdir(parents=True)
    for i in range(50):
        (root / f"f{i}.md").write_text(f"file {i}\n", encoding="utf-8")
    (root / "rules" / "a.md").write_text("rule a\n", encoding="utf-8")
    (root / "rules" / "b.md").write_text("rule b\n", encoding="utf-8")
    return root


def _sources() -> list[Any]:
    return [*(f"f{i}.md" for i in range(50)), {"glob": "rules/*.md"}]


def test_a_render_with_nothing_changed_makes_no_file_system_call(tree: Path, fs_calls: Callable[[], Any]) -> None:
    """Under watch, once armed, 100 unchanged renders open, stat and list nothing; revalidate stats every file."""
    pipeline = _pipeline(tree, _sources())
    first = _armed(pipeline).changes
    with fs_calls() as calls:
        texts = {pipeline.build().text for _ in range(100)}
    assert calls == []
    assert len(texts) == 1 and "file 49" in texts.pop()
    assert _watching(pipeline).changes == first
    revalidate = _pipeline(tree, _sources(), policy="revalidate")
    revalidate.build()
    with fs_calls() as calls:
        revalidate.build()
    assert calls.count("os.stat") >= 52  # the counter sees what a policy that checks does


def test_a_change_is_seen_by_the_next_render_which_checks_only_that_source(
    tree: Path, fs_calls: Callable[[], Any]
) -> None:
    """An edit, once reported, is in the next render, which revalidates that one source (not all 51)."""
    pipeline = _pipeline(tree, _sources())
    seen = _armed(pipeline).changes
    (tree / "f7.md").write_text("file 7, edited\n", encoding="utf-8")
    _changed(pipeline, seen)
    with capture_logs() as logs, fs_calls() as calls:
        render = pipeline.build()
    assert "file 7, edited" in render.text
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert (built["revalidated"], built["refreshed"]) == (1, 1)
    assert [e["source"] for e in logs if e["event"] == "source_loaded"] == ["f7.md"]
    assert calls.count("os.stat") <= 3 and calls.count("open") == 1


def test_new_removed_and_later_created_files_are_seen(tree: Path) -> None:
    """A new glob match, a deleted source, and a source in a folder made after the first render are all seen."""
    pipeline = _pipeline(tree, [*_sources(), "later/notes.md"])
    watching = _armed(pipeline)
    seen = watching.changes
    (tree / "rules" / "c.md").write_text("rule c\n", encoding="utf-8")
    (tree / "f3.md").unlink()
    _changed(pipeline, seen)
    eventually(lambda: "rule c" in pipeline.build().text, "the new match in a render")
    with capture_logs() as logs:
        render = pipeline.build()
    assert "file 3\n" not in render.text
    assert not [e for e in logs if e["event"] == "source_loaded"]  # seen already: nothing more to read
    seen = watching.changes
    (tree / "later").mkdir()
    (tree / "later" / "notes.md").write_text("made later\n", encoding="utf-8")
    _changed(pipeline, seen)
    eventually(lambda: "made later" in pipeline.build().text, "the file in the new folder in a render")
    seen = watching.changes
    (tree / "later" / "notes.md").write_text("made later, edited\n", encoding="utf-8")  # its folder watched now
    _changed(pipeline, seen)
    eventually(lambda: "edited" in pipeline.build().text, "the edit in the new folder in a render")


def test_a_pattern_and_a_glob_ending_in_globstar_see_a_new_file_a_folder_down(tmp_path: Path) -> None:
    """A discovery pattern `notes/**` and a glob `docs/**` match files at any depth: a new file in an existing
    subfolder of each is reported, and the next render holds it (each watched as a tree, not a folder's entries)."""
    root = tmp_path / "repo"
    for folder in ("notes/sub", "docs/sub"):
        (root / folder).mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "notes" / "a.md").write_text("note a\n", encoding="utf-8")
    (root / "docs" / "a.md").write_text("doc a\n", encoding="utf-8")
    found = {"names": ["AGENTS.md"], "from": str(root), "patterns": ["notes/**"], "pick": "all"}
    pipeline = _pipeline(root, [{"discover": found}, {"glob": "docs/**"}])
    watching = _armed(pipeline)
    assert pipeline.build().text == "note a\n\ndoc a"
    for folder, text in (("notes", "note n"), ("docs", "doc n")):
        seen = watching.changes
        (root / folder / "sub" / "n.md").write_text(f"{text}\n", encoding="utf-8")
        _changed(pipeline, seen)
        assert text in pipeline.build().text
    assert pipeline.build().text == "note a\n\nnote n\n\ndoc a\n\ndoc n"


def test_a_source_reported_changed_is_checked_for_a_while_after(tree: Path, fs_calls: Callable[[], Any]) -> None:
    """For RECENT seconds after a report, renders stat that source (an edit in the watcher's delay is not missed)."""
    pipeline = _pipeline(tree, _sources())
    seen = _armed(pipeline).changes
    (tree / "f1.md").write_text("once\n", encoding="utf-8")
    _changed(pipeline, seen)
    pipeline.build()
    (tree / "f1.md").write_text("twice\n", encoding="utf-8")  # right away: the watcher may not have told yet
    assert "twice" in pipeline.build().text  # reported already, or not yet: then the recent source's stat saw it
    _changed(pipeline, seen + 1)
    _quiet(pipeline)
    pipeline.build()
    with fs_calls() as calls:
        assert "twice" in pipeline.build().text
    assert calls == []


def test_a_remote_source_is_revalidated_with_one_warning(tree: Path, memfs: Any) -> None:
    """A memory:// source under watch: source_unwatched (reason remote) once, in a render; its changes still seen."""
    memfs.pipe("/team/shared.md", b"shared v1\n")
    pipeline = _pipeline(tree, ["f0.md", "memory://team/shared.md"])
    with capture_logs() as logs:
        first = pipeline.build()
        pipeline.build()
    [warning] = [e for e in logs if e["event"] == "source_unwatched"]
    assert (warning["source"], warning["reason"]) == ("memory://team/shared.md", "remote")
    assert warning["log_level"] == "warning"
    assert warning["render_id"] == first.render_id and "revalidated on every render" in warning["detail"]
    eventually(lambda: _watching(pipeline).armed, "the watcher armed")
    memfs.pipe("/team/shared.md", b"shared v2\n")
    assert "shared v2" in pipeline.build().text  # the very next render: revalidated, no watcher involved


def test_without_watchfiles_every_source_is_revalidated_with_a_warning(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """watchfiles missing: one source_unwatched (watchfiles_missing, naming the extra) per source; edits still seen."""
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # import watchfiles now raises ImportError
    pipeline = _pipeline(tree, ["f0.md", "f1.md"])
    with capture_logs() as logs:
        pipeline.build()
    warnings = [e for e in logs if e["event"] == "source_unwatched"]
    assert sorted(e["source"] for e in warnings) == ["f0.md", "f1.md"]
    assert {e["reason"] for e in warnings} == {"watchfiles_missing"}
    assert install_hint("watch") in warnings[0]["detail"]
    (tree / "f1.md").write_text("edited\n", encoding="utf-8")
    assert "edited" in pipeline.build().text
    assert not _watching(pipeline).armed


def test_a_watcher_that_cannot_start_falls_back_to_revalidate(tree: Path) -> None:
    """watchfiles failing to start (here: a folder that is not there) turns the cache to revalidate, with warnings."""
    pipeline = _pipeline(tree, ["f0.md"])
    pipeline.build()
    watching = _watching(pipeline)
    with watching._lock:
        watching._restart({False: frozenset({str(tree / "gone")}), True: frozenset()})  # what notify refuses
    eventually(lambda: watching._failed is not None, "the watcher's failure noticed")
    with capture_logs() as logs:
        pipeline.build()
    [warning] = [e for e in logs if e["event"] == "source_unwatched"]
    assert warning["reason"] == "watch_failed" and "revalidated on every render" in warning["detail"]
    (tree / "f0.md").write_text("edited at once\n", encoding="utf-8")
    assert "edited at once" in pipeline.build().text  # no watcher: the next render stats it


def _revalidated(pipeline: Pipeline, state: dict[str, Any]) -> int:
    """How many sources a render of *state* checked on disk (prompt_built's ``revalidated``)."""
    with capture_logs() as logs:
        pipeline.build(state)
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    return int(built["revalidated"])


def test_a_state_copied_between_renders_as_a_checkpointer_does_stays_quiet(
    tree: Path, fs_calls: Callable[[], Any]
) -> None:
    """The state through json between renders (a new object each time, equal): nothing revalidated, no fs call."""
    pipeline = _pipeline(tree, _sources())
    _armed(pipeline)
    state: dict[str, Any] = {}
    pipeline.build(state)
    counts = []
    for _ in range(5):
        state = json.loads(json.dumps(state))
        counts.append(_revalidated(pipeline, state))
    assert counts == [0] * 5
    state = json.loads(json.dumps(state))
    with fs_calls() as calls:
        assert "file 49" in pipeline.build(state).text
    assert calls == []
    seen = _watching(pipeline).changes
    (tree / "f7.md").write_text("file 7, edited\n", encoding="utf-8")  # a copy still sees a change
    _changed(pipeline, seen)
    assert "file 7, edited" in pipeline.build(json.loads(json.dumps(state))).text


def test_twenty_states_used_in_turn_are_all_quiet(tree: Path) -> None:
    """An agent's twenty threads, each its own state, rendered in turn: no unchanged render revalidates."""
    pipeline = _pipeline(tree, _sources())
    _armed(pipeline)
    states: list[dict[str, Any]] = [{} for _ in range(20)]
    for state in states:
        pipeline.build(state)
    assert [_revalidated(pipeline, state) for _ in range(3) for state in states] == [0] * 60


def test_an_unknown_state_is_checked_whole(tree: Path, fs_calls: Callable[[], Any]) -> None:
    """A state holding what no state checked here held (made elsewhere, before an edit) is revalidated once."""
    other: dict[str, Any] = {}
    _pipeline(tree, _sources(), policy="revalidate").build(other)  # another process's state, same config
    (tree / "f0.md").write_text("file 0, edited\n", encoding="utf-8")
    pipeline = _pipeline(tree, _sources())
    _armed(pipeline)
    restored = json.loads(json.dumps(other))
    with fs_calls() as calls:
        assert "file 0, edited" in pipeline.build(restored).text
    assert calls.count("os.stat") >= 50
    with fs_calls() as calls:
        pipeline.build(restored)
    assert calls == []


def test_a_langchain_agent_with_a_checkpointer_revalidates_nothing_on_unchanged_turns(tmp_path: Path) -> None:
    """MemconfigMiddleware in a real create_agent with InMemorySaver: the thread's state comes back a copy each
    turn; under watch an unchanged turn checks no source, and an edit is in the next turn."""
    for i in range(20):
        (tmp_path / f"s{i}.md").write_text(f"source {i}\n", encoding="utf-8")
    config = {
        "version": 1,
        "base_dir": str(tmp_path),
        "sources": [f"s{i}.md" for i in range(20)],
        "cache": {"policy": "watch"},
        "appender": {"format": "langchain"},
    }
    middleware = MemconfigMiddleware.from_config(config)
    model = RecordingModel(messages=(AIMessage("ok") for _ in itertools.count()))
    agent = create_agent(
        model=model, tools=[], system_prompt="You help.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    thread = {"configurable": {"thread_id": "one"}}
    agent.invoke({"messages": [("user", "hi")]}, thread)
    watching = middleware.pipeline.cache.watching  # type: ignore[attr-defined]
    eventually(lambda: watching.armed, "the watcher armed")
    agent.invoke({"messages": [("user", "hi")]}, thread)
    with capture_logs() as logs:
        for _ in range(4):
            agent.invoke({"messages": [("user", "again")]}, thread)
    assert [e["revalidated"] for e in logs if e["event"] == "prompt_built"] == [0] * 4
    before = watching.changes
    (tmp_path / "s3.md").write_text("source 3, edited\n", encoding="utf-8")
    eventually(lambda: watching.changes > before, "the change reported")
    agent.invoke({"messages": [("user", "again")]}, thread)
    sent = str(model.system().content)
    assert "source 3, edited" in sent and "source 19" in sent


# -- render -o FILE --watch --------------------------------------------------------------------------


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """``memconfig render -o AGENTS.md --watch`` running in a repository of team sources (ended after)."""
    root = tmp_path / "repo"
    (root / "team").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "team" / "style.md").write_text("Use tabs.\n", encoding="utf-8")
    (root / "team" / "CLAUDE.md").write_text("See @./naming.md\n", encoding="utf-8")
    (root / "team" / "naming.md").write_text("Names say what things are.\n", encoding="utf-8")
    (root / "rules").mkdir()
    (root / "memconfig.yaml").write_text(
        "version: 1\nsources: [team/style.md, team/CLAUDE.md, {glob: 'rules/*.md'}]\nimports: {enabled: true}\n",
        encoding="utf-8",
    )
    with watching(root, "-o", "AGENTS.md") as (process, errors):
        eventually(lambda: (root / "AGENTS.md").exists() or process.poll() is not None, "the first write")
        assert process.poll() is None, errors.read_text(encoding="utf-8")
        yield root, process


def _file_has(root: Path, text: str) -> Callable[[], bool]:
    return lambda: text in (root / "AGENTS.md").read_text(encoding="utf-8")


def test_watch_rewrites_the_file_after_an_edit_of_any_source_and_ctrl_c_exits_0(
    watched: tuple[Path, subprocess.Popen[str]],
) -> None:
    """Edits to a source, a new glob match and an imported file each rewrite AGENTS.md; SIGINT exits 0."""
    root, process = watched
    assert "Use tabs." in (root / "AGENTS.md").read_text(encoding="utf-8")
    time.sleep(0.5)  # let it arm (not needed for correctness: until armed it checks every second)
    (root / "team" / "style.md").write_text("Use spaces.\n", encoding="utf-8")
    eventually(_file_has(root, "Use spaces."), "the edit written to AGENTS.md")
    (root / "rules" / "review.md").write_text("Review every change.\n", encoding="utf-8")
    eventually(_file_has(root, "Review every change."), "the new rule written to AGENTS.md")
    (root / "team" / "naming.md").write_text("Names are nouns.\n", encoding="utf-8")
    eventually(_file_has(root, "Names are nouns."), "the imported file's edit written to AGENTS.md")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=HANG) == 0
    logged = [json.loads(line) for line in (root / "log.jsonl").read_text(encoding="utf-8").splitlines()]
    writes = [e for e in logged if e["event"] == "output_written"]
    assert len(writes) >= 4 and {e["path"] for e in writes} == {"AGENTS.md"}
    assert all(e["render_id"] for e in writes)


def test_watch_stops_on_sigterm_with_exit_0(watched: tuple[Path, subprocess.Popen[str]]) -> None:
    """SIGTERM (a service manager stopping it) exits 0 too, leaving the file whole and no temporary file."""
    root, process = watched
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=HANG) == 0
    assert sorted(p.name for p in root.iterdir()) == [
        ".git",
        "AGENTS.md",
        "log.jsonl",
        "memconfig.yaml",
        "rules",
        "stderr.txt",  # the test's own record of the process's stderr
        "team",
    ]


def test_watch_needs_an_output_file(tmp_path: Path) -> None:
    """--watch without -o is a usage error (exit 2): there is no file to keep current."""
    (tmp_path / "memconfig.yaml").write_text("version: 1\nsources: [a.md]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", "memconfig.yaml", "--watch"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert done.returncode == 2
    assert "--watch keeps a file current: give it with -o FILE" in done.stderr


def test_a_discovery_from_the_working_directory_follows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fs_calls: Callable[[], Any]
) -> None:
    """A discovery without `from`, after os.chdir between renders (no file changed): the new folder's files, in
    this state and in a copy checked before the move; with the cwd unchanged, no file-system call."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for folder in ("a", "b"):
        (root / folder).mkdir()
        (root / folder / "AGENTS.md").write_text(f"in {folder}\n", encoding="utf-8")
    (root / "AGENTS.md").write_text("root\n", encoding="utf-8")
    monkeypatch.chdir(root / "a")
    pipeline = _pipeline(root, [{"discover": {"names": ["AGENTS.md"]}}])
    _armed(pipeline)
    state: dict[str, Any] = {}
    assert pipeline.build(state).text == "root\n\nin a"
    before_move = json.loads(json.dumps(state))
    with fs_calls() as calls:
        assert pipeline.build(state).text == "root\n\nin a"
    assert calls == []
    monkeypatch.chdir(root / "b")
    assert pipeline.build(state).text == "root\n\nin b"
    eventually(lambda: _watching(pipeline).armed, "the watcher armed on b/ too")
    pipeline.build(state)  # the whole check once armed
    with fs_calls() as calls:
        assert pipeline.build(state).text == "root\n\nin b"
    assert calls == []
    assert pipeline.build(before_move).text == "root\n\nin b"  # checked in a: due too
    monkeypatch.chdir(root)
    assert pipeline.build(state).text == "root"


def test_a_removed_working_directory_skips_the_discovery_as_revalidate_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder a discovery without `from` started in removed under the process (an agent's temp checkout):
    every render completes, the discovery skipped (`not_found`, as under revalidate) and one `source_unwatched`
    (reason `cwd_missing`); once the process is in a folder again its files are found, and watched."""
    (tmp_path / "keep.md").write_text("keep\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("in work\n", encoding="utf-8")
    monkeypatch.chdir(work)
    sources = ["keep.md", {"discover": {"names": ["AGENTS.md"], "root_markers": []}}]
    pipeline = _pipeline(tmp_path, sources)
    _armed(pipeline)
    assert pipeline.build().text == "keep\n\nin work"
    revalidate = Pipeline.from_config(
        {"version": 1, "base_dir": str(tmp_path), "sources": sources, "formatter": {"preset": "plain"}}
    )
    (work / "AGENTS.md").unlink()
    work.rmdir()
    with capture_logs() as logs:
        first = pipeline.build()
        second = pipeline.build()
    for result in (first, second):
        assert result.text == "keep"
        assert [(s.status, s.reason) for s in result.sources if s.source != "keep.md"] == [("skipped", "not_found")]
    [skipped] = [e for e in logs if e["event"] == "source_skipped" and e["source"].startswith("discover:")]
    assert (skipped["reason"], skipped["render_id"]) == ("not_found", first.render_id)
    [unwatched] = [e for e in logs if e["event"] == "source_unwatched"]
    assert unwatched["reason"] == "cwd_missing" and "working directory was removed" in unwatched["detail"]
    assert unwatched["render_id"] == first.render_id
    assert [(s.status, s.reason) for s in revalidate.build().sources] == [("loaded", None), ("skipped", "not_found")]
    back = tmp_path / "back"
    back.mkdir()
    (back / "AGENTS.md").write_text("in back\n", encoding="utf-8")
    monkeypatch.chdir(back)
    assert pipeline.build().text == "keep\n\nin back"
    watching = _watching(pipeline)
    eventually(lambda: watching.complete, "the discovery watched again")
    seen = watching.changes
    (back / "AGENTS.md").write_text("edited in back\n", encoding="utf-8")
    _changed(pipeline, seen)
    assert pipeline.build().text == "keep\n\nedited in back"


def test_discovered_folders_and_imported_files_are_watched(tmp_path: Path, fs_calls: Callable[[], Any]) -> None:
    """A file imported by CLAUDE.md, and an AGENTS.override.md added in a folder a discovery walked, are seen."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / "AGENTS.md").write_text("root agents\n", encoding="utf-8")
    (root / "CLAUDE.md").write_text("claude top\n@AGENTS.md\n", encoding="utf-8")
    found = {"names": ["AGENTS.override.md", "AGENTS.md"], "from": str(root / "sub")}
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "base_dir": str(root),
            "sources": ["CLAUDE.md", {"discover": found}],
            "imports": {"enabled": True},
            "cache": {"policy": "watch"},
            "formatter": {"preset": "plain"},
        }
    )
    watching = _armed(pipeline)
    with fs_calls() as calls:
        pipeline.build()
    assert calls == []
    seen = watching.changes
    (root / "AGENTS.md").write_text("root agents, edited\n", encoding="utf-8")  # imported and discovered
    _changed(pipeline, seen)
    assert "root agents, edited" in pipeline.build().text  # once: the discovered copy is a duplicate
    seen = watching.changes
    (root / "sub" / "AGENTS.override.md").write_text("sub override\n", encoding="utf-8")
    _changed(pipeline, seen)
    assert "sub override" in pipeline.build().text


def test_only_what_a_watched_folder_is_searched_for_makes_a_source_due(tmp_path: Path) -> None:
    """Files written beside sources (a log, a build output) make nothing due; candidates, matches, new folders do.

    Ten unrelated writes, then one edit of a discovered file: at most two reports (an edit's events may come
    in two batches), not one per write.
    """
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "rules").mkdir()
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "AGENTS.md").write_text("root agents\n", encoding="utf-8")
    (root / "rules" / "a.md").write_text("rule a\n", encoding="utf-8")
    (root / "docs" / "deep" / "d.md").write_text("doc d\n", encoding="utf-8")
    found = {"names": ["AGENTS.override.md", "AGENTS.md"], "from": str(root), "down": {"max_dirs": 20}}
    pipeline = _pipeline(root, [{"discover": found}, {"glob": "rules/*.md"}, {"glob": "docs/**/*.md"}])
    watching = _armed(pipeline)
    _quiet(pipeline)
    seen = watching.changes
    for i in range(10):
        for unrelated in (root / "render.log", root / "rules" / "notes.txt", root / "docs" / "deep" / "out.html"):
            unrelated.write_text(f"write {i}\n", encoding="utf-8")
        time.sleep(0.1)  # apart: each would be its own report if it counted
    (root / "AGENTS.md").write_text("root agents, edited\n", encoding="utf-8")
    _changed(pipeline, seen)
    _quiet(pipeline)
    assert watching.changes - seen <= 2
    assert "root agents, edited" in pipeline.build().text
    seen = watching.changes
    (root / "sub").mkdir()  # a folder below a downward discovery's start: searched from now on
    _changed(pipeline, seen)
    (root / "docs" / "new").mkdir()  # an empty folder in a glob's tree: nothing to match yet, no report
    seen = watching.changes
    (root / "sub" / "AGENTS.md").write_text("sub agents\n", encoding="utf-8")
    (root / "docs" / "new" / "n.md").write_text("doc n\n", encoding="utf-8")
    _changed(pipeline, seen)
    eventually(lambda: {"sub agents", "doc n"} <= set(pipeline.build().text.split("\n")), "the new files rendered")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, timeout=HANG)


def test_git_commits_and_new_empty_folders_make_no_pattern_or_glob_tree_due(tmp_path: Path) -> None:
    """A discovery's `*.md` and a glob's `**/*.md` in a real repository: five `git commit`s (new .git/objects
    folders) and `mkdir -p build/x/y` report nothing; a new .md in the repository, and one in the new folder, do."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "a@example.com")
    _git(root, "config", "user.name", "a")
    (root / "NOTES.md").write_text("notes\n", encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "d.md").write_text("doc d\n", encoding="utf-8")
    found = {"names": ["AGENTS.md"], "from": str(root), "patterns": ["*.md"]}
    pipeline = _pipeline(root, [{"discover": found}, {"glob": "docs/**/*.md"}, {"glob": str(root / "**" / "*.md")}])
    watching = _armed(pipeline)
    _quiet(pipeline)
    seen = watching.changes
    for i in range(5):
        (root / f"f{i}.txt").write_text(f"{i}\n", encoding="utf-8")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"c{i}")
    (root / "docs" / "build" / "x" / "y").mkdir(parents=True)
    (root / "build" / "x" / "y").mkdir(parents=True)
    _quiet(pipeline)
    assert watching.changes == seen  # the f*.txt files are no candidates either
    (root / "TODO.md").write_text("todo\n", encoding="utf-8")
    _changed(pipeline, seen)
    eventually(lambda: "todo" in pipeline.build().text, "the new pattern match rendered")
    seen = watching.changes
    (root / "docs" / "build" / "x" / "y" / "n.md").write_text("doc n\n", encoding="utf-8")
    _changed(pipeline, seen)
    eventually(lambda: "doc n" in pipeline.build().text, "the match in the new folder rendered")


def _renders_settled(log: Path) -> int:
    """The number of renders in *log* once no new one has come for RECENT seconds; fails if they never stop."""
    deadline = time.monotonic() + HANG
    count = -1
    while True:
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        now = text.count('"prompt_built"')
        if now == count:
            return count
        if time.monotonic() > deadline:
            pytest.fail(f"still rendering after {HANG} s ({now} renders)")
        count = now
        time.sleep(RECENT + 0.5)


def test_watch_with_its_log_in_a_discovered_folder_renders_only_on_a_change(tmp_path: Path) -> None:
    """--log-file in the folder a discovery searches, and an unrelated file there touched ten times: no render;
    an edit of the discovered file: one (or two, should its events come in two reports)."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")
    (root / "memconfig.yaml").write_text(
        "version: 1\nsources: [{discover: {names: [AGENTS.override.md, AGENTS.md]}}]\n", encoding="utf-8"
    )
    with watching(root, "-o", "GEN.md") as (process, _):
        eventually(lambda: (root / "GEN.md").exists() or process.poll() is not None, "the first write")
        before = _renders_settled(root / "log.jsonl")
        for i in range(10):
            (root / "notes.txt").write_text(f"note {i}\n", encoding="utf-8")
            time.sleep(0.1)
        (root / "AGENTS.md").write_text("Use spaces.\n", encoding="utf-8")
        eventually(lambda: "Use spaces." in (root / "GEN.md").read_text(encoding="utf-8"), "the edit written")
        assert 1 <= _renders_settled(root / "log.jsonl") - before <= 2
        assert process.poll() is None
    assert process.returncode == 0


def test_watch_keeps_going_over_a_failing_budget_and_the_file_keeps_its_last_good_text(tmp_path: Path) -> None:
    """An edit that puts the block over a `policy: fail` budget is one error line, not the end of --watch:
    the file keeps its last good content, and the next edit that fits is written."""
    (tmp_path / "a.md").write_text("short\n", encoding="utf-8")
    (tmp_path / "memconfig.yaml").write_text(
        "version: 1\nsources: [a.md]\nformatter: {preset: plain, budget: {max_chars: 50, policy: fail}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.md"
    with watching(tmp_path, "-q", "-o", "out.md") as (process, errors):
        eventually(lambda: out.exists() or process.poll() is not None, "the first write")
        good = out.read_text(encoding="utf-8")
        assert "short" in good
        (tmp_path / "a.md").write_text("x" * 200 + "\n", encoding="utf-8")
        message = "memconfig: error: the memory block is 200 characters, over formatter.budget.max_chars = 50"
        eventually(lambda: message in errors.read_text(encoding="utf-8"), "the budget failure reported")
        assert process.poll() is None
        assert out.read_text(encoding="utf-8") == good
        (tmp_path / "a.md").write_text("short again\n", encoding="utf-8")
        eventually(lambda: "short again" in out.read_text(encoding="utf-8"), "the edit that fits written")
    assert process.returncode == 0
    lines = errors.read_text(encoding="utf-8").splitlines()
    assert len([line for line in lines if line.startswith(message)]) >= 1
