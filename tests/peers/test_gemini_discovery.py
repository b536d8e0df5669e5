"""Gemini CLI's own memoryDiscovery tests, ported to ``preset: gemini``: which files, in which order, in which markers.

Source: google-gemini/gemini-cli, packages/core/src/utils/memoryDiscovery.test.ts,
at 63b4bbfb5d (2026-05-13, the last version with ``loadServerHierarchicalMemory``:
the start-up load, its downward scan and its text) and at 5411f113 (2026-08-21:
``getEnvironmentMemoryPaths``, ``loadJitSubdirectoryMemory``). Each test names the
case it ports. Gemini's tree is kept: ``project/`` holding the working folder
``src/``, the home folder ``userhome/`` beside it (HOME points there).

How the cases are read here:

- What is compared is the text of one part, as ``concatenateInstructions`` writes it
  (each file between ``--- Context from: P ---`` and ``--- End of Context from: P ---``,
  ``\\n\\n`` between): the ``--- Global ---`` / ``--- Project ---`` headings of Gemini's
  expected strings come from ``flattenMemory``, a display form (the model gets each
  part in ``<global_context>`` / ``<project_context>`` tags, prompts/snippets.ts).
- Gemini's 63b4bbfb5d trees have no ``.git``: that version then climbed to the home
  folder's parent. The later Gemini stops at the working folder ("should fall back to
  trusted root as ceiling when no .git exists", ported below), as memconfig does; so
  the cases about climbing get a ``git init`` where their files need a root.
- The downward scan (``maxDirs``, 200) is ``down: {max_dirs: 200}``, as the row
  "folders below the working folder" of docs/discovery.md says; context.fileName is the discovery's ``names``.
- A ``loadJitSubdirectoryMemory`` case is a discovery ``from:`` the target's folder.

Not ported:
- 'does not load context files from untrusted workspaces', 'loads context from outside the untrusted workspace',
  'should skip JIT memory when target is outside trusted roots': folder trust is Gemini's setting, not memconfig's.
- 'should load extension context file paths', getExtensionMemoryPaths (2), 'refreshServerHierarchicalMemory should
  refresh memory and update config', 'should include MCP instructions in user memory': extensions, MCP, Config.
- getUserProjectMemoryPaths (4): Gemini's private MEMORY.md of its own memory tool, no discovery.
- 'readGeminiMdFiles returns null content …', 'should not crash when fs.realpathSync throws EISDIR on virtual drive
  roots': an internal function; a mocked Windows realpath.
- 'should preserve order and prevent duplicates when processing multiple directories', 'should deduplicate paths
  when same root is trusted multiple times', 'should skip already loaded paths': one file reached by two discoveries
  (the `duplicate` skip being implemented separately).
- 'should deduplicate files in JIT memory loading (same inode)': the same hard link case as the start-up one, ported.
- 'should resolve file target to its parent directory for traversal', 'should handle non-existent file target by
  using parent directory': a file target made a folder; memconfig's ``from:`` is a folder.
- 'should disable parent traversal when boundary markers array is empty': its ceiling is the trusted root above the
  target, a notion memconfig has not (``root_markers: []`` reads the start folder only).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.trees import git_init, write

from memconfig import Pipeline

GLOBAL = "docs/discovery.md, gemini: ~/.gemini/GEMINI.md — not part of the preset: declare url: ~/.gemini/GEMINI.md"
GLOBAL_PATH = "docs/discovery.md, gemini: ~/.gemini/GEMINI.md — differs in its markers when declared as ~/…"


@dataclass(frozen=True)
class Tree:
    """Gemini's beforeEach: testRootDir, project/, its working folder src/, and userhome/."""

    root: Path
    project: Path
    cwd: Path
    home: Path


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    root = tmp_path.resolve()
    made = Tree(root, root / "project", root / "project" / "src", root / "userhome")
    made.cwd.mkdir(parents=True)
    made.home.mkdir()
    monkeypatch.setenv("HOME", str(made.home))
    monkeypatch.chdir(made.cwd)
    return made


def _discover(*names: str, **more: Any) -> dict[str, Any]:
    """The preset's discovery, with Gemini's context.fileName as names and *more* (down, from, root_markers)."""
    return {"discover": {"names": list(names or ("GEMINI.md",)), "pick": "all", **more}}


def _gemini(*sources: Any) -> str:
    """What ``preset: gemini`` renders in the working folder (its own sources, or *sources*)."""
    config: dict[str, Any] = {"version": 1, "formatter": {"preset": "gemini"}}
    if sources:
        config["sources"] = list(sources)
    with capture_logs():
        return Pipeline.from_config(config).build({}).text


def _part(*files: tuple[Path, str]) -> str:
    """One part of Gemini's memory, as concatenateInstructions writes it."""
    return "\n\n".join(f"--- Context from: {p} ---\n{c}\n--- End of Context from: {p} ---" for p, c in files)


# loadServerHierarchicalMemory (63b4bbfb5d)


def test_should_return_empty_memory_if_no_context_files_are_found(tree: Tree) -> None:
    """'should return empty memory and count if no context files are found'."""
    assert _gemini() == ""


@pytest.mark.xfail(strict=True, reason=GLOBAL)
def test_should_find_global_memory_file_if_it_exists(tree: Tree) -> None:
    """getGlobalMemoryPaths 'should find global memory file if it exists': the preset alone."""
    write(tree.home / ".gemini" / "GEMINI.md", "Global memory content")
    assert "Global memory content" in _gemini()


@pytest.mark.xfail(strict=True, reason=GLOBAL_PATH)
@pytest.mark.parametrize("name", ["GEMINI.md", "CUSTOM_AGENTS.md"])
def test_should_load_only_the_global_context_file_if_present(tree: Tree, name: str) -> None:
    """'should load only the global context file if present and others are not (default filename)', and '… custom
    context file if present and filename is changed': declared as docs/discovery.md says, before the discovery."""
    path = write(tree.home / ".gemini" / name, "default context content")
    assert _gemini({"url": f"~/.gemini/{name}"}, _discover(name)) == _part((path, "default context content"))


def test_should_load_context_files_by_upward_traversal_with_custom_filename(tree: Tree) -> None:
    """'should load context files by upward traversal with custom filename' (PROJECT_CONTEXT.md)."""
    git_init(tree.project)
    root = write(tree.project / "PROJECT_CONTEXT.md", "project context content")
    cwd = write(tree.cwd / "PROJECT_CONTEXT.md", "cwd context content")
    expected = _part((root, "project context content"), (cwd, "cwd context content"))
    assert _gemini(_discover("PROJECT_CONTEXT.md")) == expected


def test_should_load_context_files_by_downward_traversal_with_custom_filename(tree: Tree) -> None:
    """'should load context files by downward traversal with custom filename' (LOCAL_CONTEXT.md): cwd, then below."""
    sub = write(tree.cwd / "subdir" / "LOCAL_CONTEXT.md", "Subdir custom memory")
    cwd = write(tree.cwd / "LOCAL_CONTEXT.md", "CWD custom memory")
    expected = _part((cwd, "CWD custom memory"), (sub, "Subdir custom memory"))
    assert _gemini(_discover("LOCAL_CONTEXT.md", down={"max_dirs": 200})) == expected


def test_should_load_gemini_md_files_by_upward_traversal_from_cwd_to_project_root(tree: Tree) -> None:
    """'should load ORIGINAL_GEMINI_MD_FILENAME files by upward traversal from CWD to project root'."""
    git_init(tree.project)
    root = write(tree.project / "GEMINI.md", "Project root memory")
    cwd = write(tree.cwd / "GEMINI.md", "Src directory memory")
    assert _gemini() == _part((root, "Project root memory"), (cwd, "Src directory memory"))


def test_should_load_gemini_md_files_by_downward_traversal_from_cwd(tree: Tree) -> None:
    """'should load ORIGINAL_GEMINI_MD_FILENAME files by downward traversal from CWD'."""
    sub = write(tree.cwd / "subdir" / "GEMINI.md", "Subdir memory")
    cwd = write(tree.cwd / "GEMINI.md", "CWD memory")
    assert _gemini(_discover(down={"max_dirs": 200})) == _part((cwd, "CWD memory"), (sub, "Subdir memory"))


@pytest.mark.xfail(strict=True, reason=GLOBAL_PATH)
def test_should_load_and_correctly_order_global_upward_and_downward_files(tree: Tree) -> None:
    """'should load and correctly order global, upward, and downward ORIGINAL_GEMINI_MD_FILENAME files'.

    Its root file sits in testRootDir, above project/: the repository is made there.
    """
    git_init(tree.root)
    default = write(tree.home / ".gemini" / "GEMINI.md", "default context content")
    root = write(tree.root / "GEMINI.md", "Project parent memory")
    project = write(tree.project / "GEMINI.md", "Project root memory")
    cwd = write(tree.cwd / "GEMINI.md", "CWD memory")
    sub = write(tree.cwd / "sub" / "GEMINI.md", "Subdir memory")
    global_part = _part((default, "default context content"))
    project_part = _part(
        (root, "Project parent memory"), (project, "Project root memory"), (cwd, "CWD memory"), (sub, "Subdir memory")
    )
    text = _gemini({"url": "~/.gemini/GEMINI.md"}, _discover(down={"max_dirs": 200}))
    assert text == global_part + "\n\n" + project_part


def test_should_ignore_specified_directories_during_downward_scan(tree: Tree) -> None:
    """'should ignore specified directories during downward scan': .gitignore's node_modules (a real repository)."""
    git_init(tree.project)
    write(tree.project / ".gitignore", "node_modules")
    write(tree.cwd / "node_modules" / "GEMINI.md", "Ignored memory")
    mine = write(tree.cwd / "my_code" / "GEMINI.md", "My code memory")
    assert _gemini(_discover(down={"max_dirs": 200})) == _part((mine, "My code memory"))


def test_should_respect_the_max_dirs_parameter_during_downward_scan(tree: Tree) -> None:
    """'should respect the maxDirs parameter during downward scan': two empty folders, a limit of 1, nothing found."""
    for i in range(2):
        (tree.cwd / f"deep_dir_{i}").mkdir()
    assert _gemini(_discover(down={"max_dirs": 1})) == ""


def test_should_load_memory_from_included_directories(tree: Tree) -> None:
    """'should load memory from included directories': an included folder is a discovery ``from:`` it."""
    included = write(tree.root / "included" / "GEMINI.md", "included directory memory")
    text = _gemini(_discover(), _discover(**{"from": str(included.parent)}))
    assert text == _part((included, "included directory memory"))


def test_should_handle_multiple_directories_and_files_in_parallel_correctly(tree: Tree) -> None:
    """'should handle multiple directories and files in parallel correctly': five included folders, each file once."""
    files = [write(tree.root / f"project-{i}" / "GEMINI.md", f"Content from project {i}") for i in range(5)]
    text = _gemini(*(_discover(**{"from": str(f.parent)}) for f in files))
    for i, path in enumerate(files):
        assert text.count(f"Content from project {i}") == 1 and f"--- Context from: {path} ---" in text


def test_ignores_a_gemini_md_directory_and_returns_empty_memory(tree: Tree) -> None:
    """'loadServerHierarchicalMemory ignores a GEMINI.md directory and returns empty memory'."""
    (tree.cwd / "GEMINI.md").mkdir()
    assert _gemini() == ""


def test_falls_back_to_a_real_gemini_md_higher_up_when_a_directory_shadows_it(tree: Tree) -> None:
    """'falls back to a real GEMINI.md file at a higher level when a directory shadows the same name lower …'."""
    git_init(tree.project)
    (tree.cwd / "GEMINI.md").mkdir()
    root = write(tree.project / "GEMINI.md", "Project root memory content")
    assert _gemini() == _part((root, "Project root memory content"))


def test_silently_skips_a_gemini_md_symlink_that_points_to_a_directory(tree: Tree) -> None:
    """'silently skips a GEMINI.md symlink that points to a directory'."""
    (tree.cwd / ".geminimd-target").mkdir()
    os.symlink(tree.cwd / ".geminimd-target", tree.cwd / "GEMINI.md", target_is_directory=True)
    assert _gemini() == ""


def test_should_deduplicate_files_that_point_to_the_same_inode(tree: Tree) -> None:
    """'should deduplicate files that point to the same inode (same physical file)': GEMINI.md a hard link."""
    git_init(tree.project)
    write(tree.project / "gemini.md", "Project root memory")
    os.link(tree.project / "gemini.md", tree.project / "GEMINI.md")
    assert _gemini(_discover("GEMINI.md", "gemini.md")).count("Project root memory") == 1


def test_should_deduplicate_multiple_paths_pointing_to_same_file(tree: Tree) -> None:
    """'should deduplicate multiple paths pointing to same file (3+ duplicates)'."""
    git_init(tree.project)
    write(tree.project / "gemini.md", "Project root memory")
    os.link(tree.project / "gemini.md", tree.project / "GEMINI.md")
    os.link(tree.project / "gemini.md", tree.project / "Gemini.md")
    assert _gemini(_discover("gemini.md", "GEMINI.md", "Gemini.md")).count("Project root memory") == 1


def test_should_handle_case_where_files_have_different_inodes(tree: Tree) -> None:
    """'should handle case where files have different inodes (different files)': both kept."""
    git_init(tree.project)
    write(tree.project / "gemini.md", "Lowercase file content")
    write(tree.project / "GEMINI.md", "Uppercase file content")
    text = _gemini(_discover("GEMINI.md", "gemini.md"))
    assert "Lowercase file content" in text and "Uppercase file content" in text


def test_should_handle_files_that_cannot_be_statd(tree: Tree) -> None:
    """ "should handle files that cannot be stat'd (missing files)": the missing name is passed over."""
    git_init(tree.project)
    path = write(tree.project / "gemini.md", "Valid file content")
    assert _gemini(_discover("gemini.md", "missing.md")) == _part((path, "Valid file content"))


# getEnvironmentMemoryPaths (5411f113)


def test_should_traverse_upward_from_trusted_root_to_git_root(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should traverse upward from trusted root to git root': not the file above the repository."""
    repo = git_init(tree.root / "parent" / "repo")
    write(tree.root / "parent" / "GEMINI.md", "Parent content")
    repo_file = write(repo / "GEMINI.md", "Repo content")
    src_file = write(repo / "src" / "GEMINI.md", "Src content")
    monkeypatch.chdir(repo / "src")
    assert _gemini() == _part((repo_file, "Repo content"), (src_file, "Src content"))


def test_should_fall_back_to_trusted_root_as_ceiling_when_no_git_exists(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'should fall back to trusted root as ceiling when no .git exists': the working folder alone."""
    write(tree.home / "GEMINI.md", "Home content")
    docs = write(tree.home / "docs" / "GEMINI.md", "Docs content")
    (tree.home / "docs" / "notes").mkdir()
    monkeypatch.chdir(tree.home / "docs" / "notes")
    assert _gemini() == ""
    monkeypatch.chdir(tree.home / "docs")
    assert _gemini() == _part((docs, "Docs content"))


def test_should_preserve_case_distinct_files(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should preserve case-distinct files before identity deduplication' (on a case-sensitive file system)."""
    upper = write(tree.root / "case-root" / "GEMINI.md", "upper")
    lower = write(tree.root / "case-root" / "gemini.md", "lower")
    monkeypatch.chdir(tree.root / "case-root")
    assert _gemini(_discover("GEMINI.md", "gemini.md")) == _part((upper, "upper"), (lower, "lower"))


def test_should_recognize_git_as_a_file(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should recognize .git as a file (submodules/worktrees)'."""
    repo = tree.root / "worktree_repo"
    write(repo / ".git", "gitdir: /some/other/path/.git/worktrees/worktree_repo")
    repo_file = write(repo / "GEMINI.md", "Repo content")
    src_file = write(repo / "src" / "GEMINI.md", "Src content")
    monkeypatch.chdir(repo / "src")
    assert _gemini() == _part((repo_file, "Repo content"), (src_file, "Src content"))


def test_should_keep_multiple_memory_files_from_the_same_directory_adjacent_and_in_order(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'should keep multiple memory files from the same directory adjacent and in order' (PRIMARY.md, SECONDARY.md)."""
    folder = git_init(tree.root / "multi_file_dir")
    primary = write(folder / "PRIMARY.md", "Primary content")
    secondary = write(folder / "SECONDARY.md", "Secondary content")
    monkeypatch.chdir(folder)
    expected = _part((primary, "Primary content"), (secondary, "Secondary content"))
    assert _gemini(_discover("PRIMARY.md", "SECONDARY.md")) == expected


# loadJitSubdirectoryMemory (5411f113): a discovery from the target's folder


def test_should_load_jit_memory_when_target_is_inside_a_trusted_root(tree: Tree) -> None:
    """'should load JIT memory when target is inside a trusted root'."""
    root = git_init(tree.root / "jit_root")
    sub = write(root / "subdir" / "GEMINI.md", "Subdir JIT content")
    assert _gemini(_discover(**{"from": str(sub.parent)})) == _part((sub, "Subdir JIT content"))


def test_should_use_the_deepest_trusted_root_when_multiple_nested_roots_exist(tree: Tree) -> None:
    """'should use the deepest trusted root when multiple nested roots exist': up to the git root, both found."""
    outer = git_init(tree.root / "outer")
    outer_file = write(outer / "GEMINI.md", "Outer content")
    inner_file = write(outer / "inner" / "GEMINI.md", "Inner content")
    text = _gemini(_discover(**{"from": str(inner_file.parent)}))
    assert text == _part((outer_file, "Outer content"), (inner_file, "Inner content"))


def test_should_fall_back_to_trusted_root_as_ceiling_when_no_git_root_exists(tree: Tree) -> None:
    """'should fall back to trusted root as ceiling when no git root exists'."""
    sub = write(tree.root / "jit_no_git" / "subdir" / "GEMINI.md", "Content without git")
    assert _gemini(_discover(**{"from": str(sub.parent)})) == _part((sub, "Content without git"))


def test_should_stop_at_a_custom_boundary_marker_instead_of_git(tree: Tree) -> None:
    """'should stop at a custom boundary marker instead of .git' (memoryBoundaryMarkers: [.monorepo-root])."""
    root = tree.root / "custom_marker"
    write(root / ".monorepo-root", "")
    root_file = write(root / "GEMINI.md", "Root rules")
    app_file = write(root / "packages" / "app" / "GEMINI.md", "App rules")
    source = _discover(root_markers=[".monorepo-root"], **{"from": str(app_file.parent)})
    assert _gemini(source) == _part((root_file, "Root rules"), (app_file, "App rules"))


def test_should_support_multiple_boundary_markers(tree: Tree) -> None:
    """'should support multiple boundary markers' ([.git, package.json])."""
    root = tree.root / "multi_marker"
    write(root / "package.json", "{}")
    root_file = write(root / "GEMINI.md", "Root content")
    (root / "src").mkdir()
    source = _discover(root_markers=[".git", "package.json"], **{"from": str(root / "src")})
    assert _gemini(source) == _part((root_file, "Root content"))
