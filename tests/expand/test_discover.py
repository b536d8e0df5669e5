"""Discovery: files found by name from the project root down to a folder, against real trees and git repositories."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.cli import eventually, memconfig
from support.pipelines import plain_pipeline
from support.trees import git_init as _git_init
from support.trees import write as _write

from memconfig import ConfigError, Pipeline
from memconfig.expand import EXPANDERS
from memconfig.expand.discover import walk
from memconfig.model import DiscoverSpec
from memconfig.sources import build_sources


def _pipeline(discover: dict[str, Any], base: Path, **more: Any) -> Pipeline:
    """The plain pipeline whose one source is the search *discover*, from *base*; *more*: other config parts."""
    return plain_pipeline(base, [{"discover": discover}], **more)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with AGENTS.md at its root and in a/b, nothing in a."""
    root = _git_init(tmp_path / "repo")
    _write(root / "AGENTS.md", "root rules")
    _write(root / "a" / "b" / "AGENTS.md", "b rules")
    return root


def test_files_come_root_first_down_to_the_start_folder(repo: Path) -> None:
    """Root → start order, one child per folder, each `via: discover` with the discovery as parent."""
    pipeline = _pipeline({"names": ["AGENTS.md"], "from": "a/b"}, repo)
    with capture_logs() as logs:
        render = pipeline.build({})
    assert render.text == "root rules\n\nb rules"
    loaded = [e for e in logs if e["event"] == "source_loaded"]
    assert [e["source"] for e in loaded] == [str(repo / "AGENTS.md"), str(repo / "a" / "b" / "AGENTS.md")]
    assert {(e["via"], e["parent"], e["log_level"]) for e in loaded} == {
        ("discover", "discover:first:AGENTS.md@a/b", "info")
    }
    searched = [e for e in logs if e["event"] == "folder_searched"]
    assert [e["folder"] for e in searched] == [str(repo), str(repo / "a"), str(repo / "a" / "b")]
    assert {e["root"] for e in searched} == {str(repo)} and {e["log_level"] for e in searched} == {"debug"}


def test_default_start_is_the_working_directory_at_render_time(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `from`, the folder is the process's working directory when the render runs, not when built."""
    pipeline = _pipeline({"names": ["AGENTS.md"]}, repo, cache={"policy": "revalidate"})
    monkeypatch.chdir(repo)
    assert pipeline.build({}).text == "root rules"
    monkeypatch.chdir(repo / "a" / "b")
    assert pipeline.build({}).text == "root rules\n\nb rules"


def test_without_a_marker_only_the_start_folder(tmp_path: Path) -> None:
    """No `.git` above: only the start folder is searched (the parent's file is not taken)."""
    _write(tmp_path / "AGENTS.md", "parent")
    _write(tmp_path / "work" / "AGENTS.md", "here")
    assert _pipeline({"names": ["AGENTS.md"], "from": "work"}, tmp_path).build({}).text == "here"


def test_empty_root_markers_search_only_the_start_folder(repo: Path) -> None:
    """`root_markers: []` disables the walk up even inside a repository."""
    found = _pipeline({"names": ["AGENTS.md"], "from": "a/b", "root_markers": []}, repo)
    assert found.build({}).text == "b rules"


def test_a_git_file_marks_a_worktree_root(tmp_path: Path) -> None:
    """A `.git` *file* (worktree, submodule) is a root marker like a folder."""
    _write(tmp_path / "outer" / "AGENTS.md", "outer")
    _write(tmp_path / "outer" / "wt" / ".git", "gitdir: /somewhere/else\n")
    _write(tmp_path / "outer" / "wt" / "AGENTS.md", "worktree")
    _write(tmp_path / "outer" / "wt" / "src" / "AGENTS.md", "src")
    found = _pipeline({"names": ["AGENTS.md"], "from": "outer/wt/src"}, tmp_path)
    assert found.build({}).text == "worktree\n\nsrc"


def test_custom_root_markers(tmp_path: Path) -> None:
    """A configured marker makes its folder the root, as Codex's `project_root_markers`."""
    _write(tmp_path / ".codex-root", "")
    _write(tmp_path / "AGENTS.md", "parent doc")
    _git_init(tmp_path / "dir1")
    _write(tmp_path / "dir1" / "AGENTS.md", "child doc")
    found = _pipeline({"names": ["AGENTS.md"], "from": "dir1", "root_markers": [".codex-root"]}, tmp_path)
    assert found.build({}).text == "parent doc\n\nchild doc"


def test_pick_first_passes_over_directories_fifos_loops_and_blank_files(repo: Path) -> None:
    """Each candidate passed over is a debug `candidate_passed` with its reason; the next candidate is taken."""
    folder = repo / "a" / "b"
    (folder / "ONE.md").mkdir()
    os.mkfifo(folder / "TWO.md")  # never opened: discovery would hang on it
    os.symlink("LOOP.md", folder / "LOOP.md")
    _write(folder / "BLANK.md", " \n\t\n")
    names = ["ONE.md", "TWO.md", "LOOP.md", "BLANK.md", "GONE.md", "AGENTS.md"]
    with capture_logs() as logs:
        render = _pipeline({"names": names, "from": "a/b", "root_markers": []}, repo).build({})
    assert render.text == "b rules"
    passed = {e["candidate"].rsplit("/", 1)[1]: e for e in logs if e["event"] == "candidate_passed"}
    assert {name: (e["reason"], e["log_level"]) for name, e in passed.items()} == {
        "ONE.md": ("not_regular_file", "debug"),
        "TWO.md": ("not_regular_file", "debug"),
        "LOOP.md": ("not_regular_file", "debug"),
        "BLANK.md": ("blank", "debug"),
        "GONE.md": ("missing", "debug"),
    }
    assert passed["TWO.md"]["detail"] == "is a FIFO, not a regular file"
    assert passed["LOOP.md"]["detail"] == "a symlink loop"


def test_skip_blank_false_lets_a_blank_file_end_the_folder(repo: Path) -> None:
    """`skip_blank: false`: the blank first candidate is taken (then left out as `empty`), the next is not looked at."""
    _write(repo / "a" / "b" / "LOCAL.md", "\n")
    found = {"names": ["LOCAL.md", "AGENTS.md"], "from": "a/b", "root_markers": [], "skip_blank": False}
    with capture_logs() as logs:
        render = _pipeline(found, repo).build({})
    assert render.text == ""
    [skipped] = [e for e in logs if e["event"] == "source_skipped"]
    assert (skipped["source"], skipped["reason"]) == (str(repo / "a" / "b" / "LOCAL.md"), "empty")


def test_pick_all_takes_every_candidate_present(repo: Path) -> None:
    """`pick: all` (Gemini CLI): every name found in each folder, in the order of `names`."""
    _write(repo / "GEMINI.md", "root gemini")
    found = _pipeline({"names": ["GEMINI.md", "AGENTS.md"], "pick": "all", "from": "a/b"}, repo)
    assert found.build({}).text == "root gemini\n\nroot rules\n\nb rules"


def test_nothing_found_is_one_skip_saying_so(tmp_path: Path) -> None:
    """A discovery that finds no file is `source_skipped`, reason not_found, at info."""
    with capture_logs() as logs:
        _pipeline({"names": ["AGENTS.md"], "root_markers": [], "from": "."}, tmp_path).build({})
    [skipped] = [e for e in logs if e["event"] == "source_skipped"]
    assert (skipped["reason"], skipped["detail"], skipped["log_level"]) == (
        "not_found",
        "discovery found no file",
        "info",
    )


def test_a_file_created_between_renders_is_seen_under_revalidate(repo: Path) -> None:
    """An AGENTS.override.md added after the first render is in the next one (cache policy revalidate)."""
    pipeline = _pipeline(
        {"names": ["AGENTS.override.md", "AGENTS.md"], "from": "a/b"}, repo, cache={"policy": "revalidate"}
    )
    state: dict[str, Any] = {}
    assert pipeline.build(state).text == "root rules\n\nb rules"
    _write(repo / "a" / "b" / "AGENTS.override.md", "local override")
    assert pipeline.build(state).text == "root rules\n\nlocal override"


def test_confinement_applies_to_every_discovered_file(repo: Path, tmp_path: Path) -> None:
    """A discovered file that resolves outside loader.allowed_roots is skipped as outside_root, loudly."""
    _write(tmp_path / "secret.md", "do not read")
    os.symlink(tmp_path / "secret.md", repo / "a" / "b" / "LINK.md")
    found = {"names": ["LINK.md"], "from": "a/b"}
    with capture_logs() as logs:
        render = _pipeline(found, repo, loader={"allowed_roots": [str(repo / "a")]}).build({})
    assert "do not read" not in render.text
    [skipped] = [e for e in logs if e["event"] == "source_skipped"]
    assert (skipped["reason"], skipped["log_level"]) == ("outside_root", "warning")


def test_downward_search_is_breadth_first_bounded_and_respects_gitignore(repo: Path) -> None:
    """`down`: folders below the start, by level, without .git, ignored folders or more than max_dirs."""
    _write(repo / ".gitignore", "build/\n")
    _write(repo / "build" / "AGENTS.md", "ignored")
    _write(repo / "z" / "AGENTS.md", "z rules")
    _write(repo / "a" / "c" / "AGENTS.md", "c rules")
    down = _pipeline({"names": ["AGENTS.md"], "from": ".", "down": {"max_dirs": 10}}, repo)
    assert down.build({}).text == "root rules\n\nz rules\n\nb rules\n\nc rules"
    bounded = _pipeline({"names": ["AGENTS.md"], "from": ".", "down": {"max_dirs": 2}}, repo)
    assert bounded.build({}).text == "root rules\n\nz rules"  # a and z: the two folders looked at below
    unfiltered = {"names": ["AGENTS.md"], "from": ".", "down": {"max_dirs": 10, "respect_gitignore": False}}
    assert "ignored" in _pipeline(unfiltered, repo).build({}).text


def test_a_downward_search_cut_at_max_dirs_says_so(repo: Path) -> None:
    """One `search_limited` info with the limit and the count searched when folders are left; none when all fit."""
    _write(repo / "z" / "AGENTS.md", "z rules")  # below the repo: a, a/b, z

    def limited(max_dirs: int) -> tuple[str, list[dict[str, Any]]]:
        with capture_logs() as logs:
            text = _pipeline({"names": ["AGENTS.md"], "from": ".", "down": {"max_dirs": max_dirs}}, repo).build({}).text
        return text, [e for e in logs if e["event"] == "search_limited"]

    text, [cut] = limited(2)
    assert text == "root rules\n\nz rules"  # a and z searched; a/b, with its AGENTS.md, is not
    assert (cut["log_level"], cut["source"], cut["via"]) == ("info", "discover:first:AGENTS.md@.", "discover")
    assert (cut["folder"], cut["max_dirs"], cut["folders"]) == (os.path.realpath(repo), 2, 2)
    assert limited(3) == ("root rules\n\nz rules\n\nb rules", [])  # an exact fit: nothing left out
    assert limited(10)[1] == []


def test_the_folders_walked_are_exposed_for_a_watcher(repo: Path) -> None:
    """`last_walk()` keeps each walk (folders looked at, files taken); `watched()` gives what it looks for there.

    Each candidate name and root marker in each folder walked, as a file spot: nothing else written in those
    folders (a log, the output of ``render -o``) makes the discovery due.
    """
    config = Pipeline.from_config(
        {"version": 1, "base_dir": str(repo), "sources": [{"discover": {"names": ["AGENTS.md"], "from": "a/b"}}]}
    ).config
    assert config is not None
    [source] = build_sources(config)
    expander = EXPANDERS["discover"]
    assert expander.last_walk(source) is None  # type: ignore[attr-defined]
    expander.expand(source)
    walk = expander.last_walk(source)  # type: ignore[attr-defined]
    assert walk.folders == (str(repo), str(repo / "a"), str(repo / "a" / "b"))
    assert walk.root == str(repo) and [f for f, _ in walk.files] == [str(repo), str(repo / "a" / "b")]
    spots = expander.watched(source)  # type: ignore[attr-defined]
    wanted = {(os.path.join(folder, name), "file") for folder in walk.folders for name in ("AGENTS.md", ".git")}
    assert {(s.path, s.kind) for s in spots} == wanted


@pytest.mark.parametrize(
    ("discover", "message"),
    [
        pytest.param({"names": []}, "sources[0].discover.names: List should have at least 1 item", id="no-names"),
        pytest.param({"names": [""]}, "sources[0].discover.names: a name must not be empty", id="empty"),
        pytest.param({"names": ["a/b.md"]}, "is not a file name", id="slash"),
        pytest.param({"names": [".."]}, "is not a file name", id="dotdot"),
        pytest.param({"names": ["A.md"], "pick": "some"}, "sources[0].discover.pick", id="pick"),
        pytest.param({"names": ["A.md"], "down": {"max_dirs": -1}}, "sources[0].discover.down.max_dirs", id="neg"),
        pytest.param({"names": ["A.md"], "wat": 1}, "sources[0].discover.wat", id="unknown-key"),
        pytest.param(
            {"names": ["A.md"], "fallbacks": {"B.md": ["C.md"]}}, "fallbacks: 'B.md' is not one of", id="fb-unknown"
        ),
        pytest.param({"names": ["A.md"], "fallbacks": {"A.md": ["A.md"]}}, "listed twice", id="fb-itself"),
        pytest.param(
            {"names": ["A.md", "B.md"], "fallbacks": {"A.md": ["B.md"]}}, "'B.md' is listed twice", id="fb-a-name"
        ),
        pytest.param({"names": ["A.md"], "fallbacks": {"A.md": ["x/B.md"]}}, "is not a file name", id="fb-slash"),
    ],
)
def test_bad_discovery_settings_are_config_errors_at_their_key_path(discover: dict[str, Any], message: str) -> None:
    """Each bad value is a ConfigError naming its key path."""
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config({"version": 1, "sources": [{"discover": discover}]})
    assert message in str(caught.value)


def test_memconfig_validate_exits_2_for_a_bad_discovery(tmp_path: Path) -> None:
    """The CLI says where the problem is, with exit code 2 and no traceback."""
    config = _write(tmp_path / "memconfig.yaml", "version: 1\nsources:\n  - discover: {names: [../AGENTS.md]}\n")
    done = memconfig("validate", "-c", str(config))
    assert done.returncode == 2
    assert "sources[0].discover.names" in done.stderr and "Traceback" not in done.stderr


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    """A git repository with a deep node_modules tree (200 .md files), rules in src/*/rules, and a start a/b/c."""
    root = _git_init(tmp_path / "repo")
    for i in range(200):
        _write(root / "node_modules" / f"p{i % 10}" / "docs" / "deep" / f"r{i}.md", "not a rule\n")
    _write(root / "NOTES.md", "notes\n")
    _write(root / "a" / "b" / "c" / "HERE.md", "here\n")
    _write(root / "src" / "x" / "rules" / "r.md", "rule x\n")
    _write(root / "src" / "x" / "other" / "o.md", "other\n")
    _write(root / "src" / "y" / "rules" / "s.md", "rule y\n")
    _write(root / "a" / "x.md", "a x\n")
    _write(root / "b" / "y.md", "b y\n")
    return root


def _listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders os.scandir is asked to list from now on (the real call still made)."""
    listed: list[str] = []
    real = os.scandir

    def counted(path: Any = ".") -> Any:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counted)
    return listed


def test_a_pattern_walk_lists_only_the_folders_the_pattern_can_reach(
    deep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`*.md` lists each walked folder once and nothing below it (not node_modules, not .git); `src/*/rules/*.md`
    enters src's folders and their rules/ only; `**/*.md` goes anywhere but .git; braces keep their matches."""
    start = deep / "a" / "b" / "c"
    listed = _listed(monkeypatch)
    found = walk(DiscoverSpec(names=("NONE.md",), pick="all", patterns=("*.md",), start=str(start)))
    assert [path for _, path in found.files] == [
        str(deep / "NOTES.md"),
        str(deep / "a" / "x.md"),
        str(start / "HERE.md"),
    ]
    assert listed == [str(deep), str(deep / "a"), str(deep / "a" / "b"), str(start)]

    listed.clear()
    found = walk(DiscoverSpec(names=("NONE.md",), pick="all", patterns=("src/*/rules/*.md",), start=str(deep)))
    assert [path for _, path in found.files] == [
        str(deep / "src" / f / "rules" / n) for f, n in (("x", "r.md"), ("y", "s.md"))
    ]
    assert sorted(listed) == [str(deep / "src" / p) for p in ("", "x", "x/rules", "y", "y/rules")]

    listed.clear()
    found = walk(DiscoverSpec(names=("NONE.md",), pick="all", patterns=("**/*.md",), start=str(deep), max_matches=5000))
    assert len(found.files) == 207 and not [p for p in listed if "/.git" in p]
    assert str(deep / "node_modules" / "p0" / "docs" / "deep") in listed

    listed.clear()
    found = walk(DiscoverSpec(names=("NONE.md",), pick="all", patterns=("{a,b}/*.md",), start=str(deep)))
    assert [path for _, path in found.files] == [str(deep / "a" / "x.md"), str(deep / "b" / "y.md")]
    assert max(p.count("/") for p in listed) == str(deep).count("/") + 1  # as deep as the pattern, no deeper


def test_a_patterns_watched_folder_is_its_entries_when_only_the_last_part_has_magic(repo: Path) -> None:
    """`*.md` watches each walked folder's entries (a "folder" spot); `.claude/rules/**/*.md` the rules tree, and
    `notes/**` (a last part `**`: files at any depth) the notes tree."""
    config = Pipeline.from_config(
        {
            "version": 1,
            "base_dir": str(repo),
            "sources": [
                {
                    "discover": {
                        "names": ["AGENTS.md"],
                        "from": ".",
                        "patterns": ["*.md", ".claude/rules/**/*.md", "notes/**"],
                    }
                }
            ],
        }
    ).config
    assert config is not None
    [source] = build_sources(config)
    expander = EXPANDERS["discover"]
    expander.expand(source)
    spots = {(s.path, s.kind) for s in expander.watched(source) if s.kind != "file"}  # type: ignore[attr-defined]
    assert (str(repo), "folder") in spots and (str(repo / ".claude" / "rules"), "tree") in spots
    assert (str(repo / "notes"), "tree") in spots and (str(repo / "notes"), "folder") not in spots
    assert (str(repo), "tree") not in spots


def test_a_brace_is_a_wildcard_in_a_discovery_pattern_and_a_plain_character_in_a_glob(tmp_path: Path) -> None:
    """One reading of where a pattern's literal folder ends (memconfig.sources.urls.first_magic): a discovery's
    `{a,b}/*.md` expands its braces (wcmatch) and walks from the folder itself; a glob's `x{1}/*.md` names the
    folder `x{1}` (fsspec reads `{` as itself), whose entries it watches and whose matches keep that name."""
    _write(tmp_path / "a" / "x.md", "a x\n")
    _write(tmp_path / "b" / "y.md", "b y\n")
    _write(tmp_path / "x{1}" / "z.md", "brace folder\n")
    discovery = {"names": ["NONE.md"], "from": ".", "pick": "all", "patterns": ["{a,b}/*.md"], "root_markers": []}
    assert _pipeline(discovery, tmp_path).build({}).text == "a x\n\nb y"
    config = {"version": 1, "base_dir": str(tmp_path), "sources": [{"glob": "x{1}/*.md"}]}
    pipeline = Pipeline.from_config({**config, "formatter": {"preset": "plain"}})
    with capture_logs() as logs:
        assert pipeline.build({}).text == "brace folder"
    assert [e["source"] for e in logs if e["event"] == "source_loaded"] == ["x{1}/z.md"]
    assert pipeline.config is not None
    [source] = build_sources(pipeline.config)
    [spot] = EXPANDERS["glob"].watched(source)  # type: ignore[attr-defined]
    assert (spot.path, spot.kind) == (str(tmp_path / "x{1}"), "folder")


def test_a_fallback_is_taken_only_in_a_folder_without_the_name_it_stands_in_for(repo: Path) -> None:
    """`fallbacks: {CLAUDE.md: [AGENTS.md]}`: the root's CLAUDE.md hides its AGENTS.md; a/b has only AGENTS.md."""
    _write(repo / "CLAUDE.md", "root claude")
    _write(repo / "a" / "b" / "CLAUDE.local.md", "b local")
    discover = {
        "names": ["CLAUDE.md", "CLAUDE.local.md"],
        "fallbacks": {"CLAUDE.md": ["AGENTS.md"]},
        "pick": "all",
        "from": "a/b",
    }
    with capture_logs() as logs:
        text = _pipeline(discover, repo).render()
    assert text == "root claude\n\nb rules\n\nb local"
    (expanded,) = [e for e in logs if e["event"] == "source_expanded"]
    assert expanded["source"] == "discover:all:CLAUDE.md|AGENTS.md,CLAUDE.local.md@a/b"
    assert expanded["matches"] == [
        str(repo / "CLAUDE.md"),
        str(repo / "a/b/AGENTS.md"),
        str(repo / "a/b/CLAUDE.local.md"),
    ]


def test_explain_says_why_a_fallback_is_not_needed(repo: Path) -> None:
    _write(repo / "CLAUDE.md", "root claude")
    config = _write(
        repo / "memconfig.yaml",
        "version: 1\nsources:\n  - discover:\n"
        "      {names: [CLAUDE.md], fallbacks: {CLAUDE.md: [AGENTS.md]}, pick: all, from: a/b}\n",
    )
    done = memconfig("explain", "-c", str(config))
    assert done.returncode == 0, done.stderr
    assert f"{repo / 'AGENTS.md'}: not_needed (it stands in for CLAUDE.md, which is taken)" in done.stdout
    assert f"{repo / 'a/b/AGENTS.md'}: taken" in done.stdout


def test_a_new_file_of_the_name_replaces_its_fallback_under_watch(repo: Path) -> None:
    """The stand-in's folder is watched for the name too: writing a/b/CLAUDE.md takes it in AGENTS.md's place."""
    discover = {"names": ["CLAUDE.md"], "fallbacks": {"CLAUDE.md": ["AGENTS.md"]}, "pick": "all", "from": "a/b"}
    pipeline = _pipeline(discover, repo, cache={"policy": "watch"})
    state: dict[str, Any] = {}
    try:
        assert pipeline.render(state=state) == "root rules\n\nb rules"
        eventually(lambda: pipeline.cache.watching.armed, "the watcher armed")  # type: ignore[attr-defined]
        _write(repo / "a" / "b" / "CLAUDE.md", "b claude")
        eventually(lambda: pipeline.render(state=state) == "root rules\n\nb claude", "CLAUDE.md taken instead")
    finally:
        pipeline.close()
