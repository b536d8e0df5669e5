"""Imports: ``@path`` tokens replaced by the files they name, each imported file a child source of its importer."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named, plain_pipeline

from memconfig import Config, ConfigError, Pipeline, SkipReason


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """A git repository in *tmp_path* holding *files* (the project root imports must stay in)."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _pipeline(root: Path, sources: list[Any], policy: str = "once", **imports: Any) -> Pipeline:
    return plain_pipeline(root, sources, policy, imports=imports or True)


def _config(data: dict[str, Any], root: Path) -> Config:
    return Config.from_mapping(data, base_dir=root)


def _skips(logs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(source, reason, level) of each ``source_skipped``."""
    return [(e["source"], e["reason"], e["log_level"]) for e in events_named(logs, "source_skipped")]


def test_claude_md_importing_agents_md_renders_it_in_place(tmp_path: Path) -> None:
    """``@AGENTS.md`` in CLAUDE.md is replaced by AGENTS.md's text, where the token was; the record says so."""
    root = _repo(tmp_path, {"CLAUDE.md": "Claude notes.\n\n@AGENTS.md\n\nMore.\n", "AGENTS.md": "Agent rules.\n"})

    render = _pipeline(root, ["CLAUDE.md"]).build()

    assert render.text == "Claude notes.\n\nAgent rules.\n\nMore."
    child = render.sources[1]
    assert (child.source, child.name, child.parent, child.via, child.status) == (
        "CLAUDE.md::@AGENTS.md",
        "AGENTS.md",
        "CLAUDE.md",
        "import",
        "loaded",
    )
    assert child.url == str(root / "AGENTS.md")


def test_trailing_punctuation_is_not_part_of_the_path(tmp_path: Path) -> None:
    """``See @AGENTS.md.`` imports AGENTS.md and keeps the full stop (Claude Code misses the file: claude-code 86060).

    An ``@`` after anything but whitespace (``(@b.md)``) is no token.
    """
    root = _repo(
        tmp_path, {"CLAUDE.md": "See @AGENTS.md. And @b.md, then @c.md: (@b.md)\n", "AGENTS.md": "A", "b.md": "B"}
    )
    (root / "c.md").write_text("C\n")

    assert _pipeline(root, ["CLAUDE.md"]).build().text == "See A. And B, then C: (@b.md)"


def test_imports_nest_down_to_max_depth_and_the_next_stays_text(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """Files at depths 1 to 5 are inlined; the token in the depth-5 file stays text, logged once as ``import_depth``."""
    files = {"top.md": "0 @d1.md"} | {f"d{i}.md": f"{i} @d{i + 1}.md" for i in range(1, 7)}
    root = _repo(tmp_path, files)
    pipeline = _pipeline(root, ["top.md"])

    render = pipeline.build()
    pipeline.build()

    assert render.text == "0 1 2 3 4 5 @d6.md"
    deep = "top.md" + "".join(f"::@d{i}.md" for i in range(1, 7))
    assert _skips(logs) == [(deep, "import_depth", "warning")]
    assert render.sources[-1].reason == SkipReason.IMPORT_DEPTH
    assert "depth 5" in render.sources[-1].detail


def test_max_depth_is_configurable(tmp_path: Path) -> None:
    """``imports.max_depth: 1`` inlines only what the top file imports."""
    root = _repo(tmp_path, {"top.md": "0 @a.md", "a.md": "1 @b.md", "b.md": "2"})

    assert _pipeline(root, ["top.md"], max_depth=1).build().text == "0 1 @b.md"


def test_a_cycle_is_skipped_with_its_chain(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """a.md → b.md → a.md: the second a.md is ``import_cycle`` (its token stays text), named with the chain."""
    root = _repo(tmp_path, {"a.md": "A @b.md", "b.md": "B @a.md"})

    render = _pipeline(root, ["a.md"]).build()

    assert render.text == "A B @a.md"
    assert _skips(logs) == [("a.md::@b.md::@a.md", "import_cycle", "warning")]
    real = os.path.realpath(root)
    assert render.sources[-1].detail == f"already on the import chain: {real}/a.md → {real}/b.md → {real}/a.md"


def test_siblings_may_import_the_same_file_once(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """Two files importing c.md: it goes in at the first; the second is a ``duplicate`` (``info``: c.md is in the
    prompt), its token left as text."""
    root = _repo(tmp_path, {"top.md": "@a.md\n@b.md", "a.md": "A @c.md", "b.md": "B @c.md", "c.md": "C"})

    render = _pipeline(root, ["top.md"]).build()

    assert render.text == "A C\nB @c.md"
    assert _skips(logs) == [("top.md::@b.md::@c.md", "duplicate", "info")]
    assert render.sources[-1].detail == "the same file as 'top.md::@a.md::@c.md'; 2 imports of it, in the prompt once"


def test_a_diamond_of_imports_warns_of_nothing_and_counts_each_shared_files_importers(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    """3 levels of 4 files, each importing every file of the next level: each shared file is in once.

    Each repeat is a ``duplicate`` of its own (the audit reads one per source not in the prompt), at ``info``,
    naming the first import and how many there are of that file; no warning, where there were one per repeat.
    The repeats' own imports are dropped with them, unlogged and uncounted.
    """
    files = {"top.md": " ".join(f"@a{j}.md" for j in range(4))}
    for level, below in (("a", "b"), ("b", "c")):
        files |= {f"{level}{j}.md": f"{level}{j} " + " ".join(f"@{below}{m}.md" for m in range(4)) for j in range(4)}
    files |= {f"c{j}.md": f"c{j}" for j in range(4)}
    root = _repo(tmp_path, files)

    render = _pipeline(root, ["top.md"]).build()

    assert render.text.split() == [
        *("a0", "b0", "c0", "c1", "c2", "c3", "b1", "@c0.md", "@c1.md", "@c2.md", "@c3.md"),
        *("b2", "@c0.md", "@c1.md", "@c2.md", "@c3.md", "b3", "@c0.md", "@c1.md", "@c2.md", "@c3.md"),
        *("a1", "@b0.md", "@b1.md", "@b2.md", "@b3.md", "a2", "@b0.md", "@b1.md", "@b2.md", "@b3.md"),
        *("a3", "@b0.md", "@b1.md", "@b2.md", "@b3.md"),
    ]
    skips = events_named(logs, "source_skipped")
    assert [e for e in logs if e["log_level"] == "warning"] == []
    assert len(skips) == 3 * 4 + 3 * 4 == sum(r.reason == "duplicate" for r in render.sources)
    assert {(e["reason"], e["log_level"]) for e in skips} == {("duplicate", "info")}
    shared = {e["detail"] for e in skips if e["source"].endswith("@c0.md")}
    assert shared == {"the same file as 'top.md::@a0.md::@b0.md::@c0.md'; 4 imports of it, in the prompt once"}


def test_a_missing_import_is_a_warning_naming_it_and_an_optional_one_is_info(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    """``@gone.md`` missing: a warning naming it; ``@maybe.md?`` missing: info. Both tokens stay as written."""
    root = _repo(tmp_path, {"CLAUDE.md": "x @gone.md y @maybe.md? z\n"})

    render = _pipeline(root, ["CLAUDE.md"]).build()

    assert render.text == "x @gone.md y @maybe.md? z"
    assert _skips(logs) == [
        ("CLAUDE.md::@gone.md", "not_found", "warning"),
        ("CLAUDE.md::@maybe.md", "not_found", "info"),
    ]
    gone = events_named(logs, "source_skipped")[0]
    assert (gone["name"], gone["parent"], gone["via"], gone["url"]) == (
        "gone.md",
        "CLAUDE.md",
        "import",
        str(root / "gone.md"),
    )


def test_an_optional_import_that_exists_is_inlined(tmp_path: Path) -> None:
    """``@here.md?`` with the file present is an import like any other (the ``?`` goes with the token)."""
    root = _repo(tmp_path, {"CLAUDE.md": "x @here.md? y", "here.md": "H"})

    assert _pipeline(root, ["CLAUDE.md"]).build().text == "x H y"


CODE = """\
`@a.md` and ``a `@a.md` b`` stay.
```
@a.md in a fence
```
~~~~ text
@a.md in a tilde fence
```
~~~~
<!-- @a.md commented out -->
- item
  ```
  @a.md in a list's fence
  ```
But ` unmatched, then @a.md
"""


def test_code_spans_fences_and_comments_are_not_expanded(tmp_path: Path) -> None:
    """Tokens in code spans, ``` and ~~~ fences (indented, or closed only by their own kind) and comments stay text."""
    root = _repo(tmp_path, {"top.md": CODE, "a.md": "IMPORTED"})

    text = _pipeline(root, ["top.md"]).build().text

    assert text == CODE.rstrip().replace("then @a.md", "then IMPORTED")


def test_an_unclosed_fence_runs_to_the_end(tmp_path: Path) -> None:
    """A fence never closed holds the rest of the file: nothing after it is an import."""
    root = _repo(tmp_path, {"top.md": "@a.md\n```\n@a.md\n", "a.md": "A"})

    assert _pipeline(root, ["top.md"]).build().text == "A\n```\n@a.md"


@pytest.mark.parametrize(
    "prose",
    [
        pytest.param("Install @scope/pkg first.", id="scoped-package"),
        pytest.param("Thanks @user for this.", id="handle"),
        pytest.param("Mail alice@example.com or bob@x.md now.", id="e-mail"),
        pytest.param("See @1.md and @_x.md and @@a.md.", id="not-a-letter"),
        pytest.param("Ping @alice@example.com on Mastodon.", id="fediverse-handle"),
        pytest.param("Version @v1.2 ships.", id="no-extension"),
    ],
)
def test_prose_that_is_not_an_import_is_left_as_text(tmp_path: Path, logs: list[dict[str, Any]], prose: str) -> None:
    """Package names, handles, e-mail addresses and non-paths stay as written, and nothing is logged for them."""
    root = _repo(tmp_path, {"top.md": prose, "x.md": "X"})

    render = _pipeline(root, ["top.md"]).build()

    assert render.text == prose
    assert _skips(logs) == []
    assert len(render.sources) == 1


def test_a_bare_name_is_an_import_when_the_file_exists(tmp_path: Path) -> None:
    """``@README`` (no extension) imports README next to the importing file; ``@nothing`` stays text."""
    root = _repo(tmp_path, {"top.md": "@README and @nothing", "README": "Read me"})

    assert _pipeline(root, ["top.md"]).build().text == "Read me and @nothing"


def test_imports_resolve_relative_to_the_importing_file(tmp_path: Path) -> None:
    """docs/a.md's ``@b.md`` is docs/b.md, not the top file's b.md."""
    root = _repo(tmp_path, {"top.md": "@docs/a.md", "docs/a.md": "A @b.md", "docs/b.md": "docs B", "b.md": "root B"})

    assert _pipeline(root, ["top.md"]).build().text == "A docs B"


def test_an_escape_by_dotdot_is_outside_root(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """``@../secret.md`` leaving the project root (the folder with .git) is refused as ``outside_root``."""
    root = _repo(tmp_path, {"CLAUDE.md": "@../secret.md"})
    (tmp_path / "secret.md").write_text("SECRET")

    render = _pipeline(root, ["CLAUDE.md"]).build()

    assert render.text == "@../secret.md"
    assert _skips(logs) == [("CLAUDE.md::@../secret.md", "outside_root", "warning")]
    assert "outside the project root" in render.sources[-1].detail


def test_an_escape_by_symlink_is_outside_root(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """A link inside the project pointing out of it is refused, its target named."""
    root = _repo(tmp_path, {"CLAUDE.md": "@link.md"})
    (tmp_path / "secret.md").write_text("SECRET")
    (root / "link.md").symlink_to(tmp_path / "secret.md")

    render = _pipeline(root, ["CLAUDE.md"]).build()

    assert "SECRET" not in render.text
    assert _skips(logs) == [("CLAUDE.md::@link.md", "outside_root", "warning")]
    assert f"resolves to {os.path.realpath(tmp_path / 'secret.md')}" in render.sources[-1].detail


def test_a_discoverys_root_markers_are_the_import_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logs: list[dict[str, Any]]
) -> None:
    """In a Mercurial project (``root_markers: [.hg]``), a discovered sub/CLAUDE.md imports ``@../AGENTS.md``.

    The import root is the one the discovery found (the folder holding ``.hg``), not a ``.git`` looked for
    anew; without the discovery's markers the file's own folder was the root and the import ``outside_root``.
    """
    (tmp_path / ".hg").mkdir()
    (tmp_path / "AGENTS.md").write_text("shared")
    (tmp_path / "sub").mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    (tmp_path / "sub" / "CLAUDE.md").write_text(f"sub\n@../AGENTS.md\n@{outside}")
    outside.write_text("OUTSIDE")
    monkeypatch.chdir(tmp_path / "sub")
    discovery = {"discover": {"names": ["CLAUDE.md"], "root_markers": [".hg"], "pick": "all"}}

    render = _pipeline(tmp_path, [discovery]).build()

    assert render.text == f"sub\nshared\n@{outside}"
    assert _skips(logs) == [(f"{tmp_path / 'sub' / 'CLAUDE.md'}::@{outside}", "outside_root", "warning")]
    assert f"outside the project root {os.path.realpath(tmp_path)}" in render.sources[-1].detail


def test_an_absolute_path_inside_the_project_is_imported(tmp_path: Path) -> None:
    """``@/abs/path`` within the project root is an import (Gemini refuses every absolute one)."""
    root = _repo(tmp_path, {"a.md": "A"})
    (root / "top.md").write_text(f"@{root}/a.md")

    assert _pipeline(root, ["top.md"]).build().text == "A"


def test_allowed_roots_confine_imports_too(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """An import inside the project but outside ``loader.allowed_roots`` is refused by the loader, as any source."""
    root = _repo(tmp_path, {"top/CLAUDE.md": "@../other/x.md", "other/x.md": "X"})
    config = {
        "version": 1,
        "sources": ["top/CLAUDE.md"],
        "imports": True,
        "loader": {"allowed_roots": ["top"]},
        "formatter": {"preset": "plain"},
    }

    render = Pipeline.from_config(_config(config, root)).build()

    assert render.text == "@../other/x.md"
    assert render.sources[-1].reason == SkipReason.OUTSIDE_ROOT
    assert "loader.allowed_roots" in render.sources[-1].detail


def test_a_url_is_not_imported(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """``@https://…`` is one ``protocol_not_allowed`` skip: imports are files."""
    root = _repo(tmp_path, {"top.md": "@https://example.com/a.md"})

    render = _pipeline(root, ["top.md"]).build()

    assert render.text == "@https://example.com/a.md"
    assert _skips(logs) == [("top.md::@https://example.com/a.md", "protocol_not_allowed", "warning")]


SECRET_URL = "@https://bob:hunter2@git.example.com/raw/x.md"


def test_a_urls_password_never_reaches_the_log(tmp_path: Path) -> None:
    """The skip and the expansion name the URL with its credentials masked; the file's text is left as written."""
    root = _repo(tmp_path, {"CLAUDE.md": f"see {SECRET_URL}"})

    with capture_logs() as logs:
        render = _pipeline(root, ["CLAUDE.md"]).build()

    assert render.text == f"see {SECRET_URL}"
    assert "hunter2" not in repr(logs)
    [skip] = events_named(logs, "source_skipped")
    masked = "https://***@git.example.com/raw/x.md"
    assert (skip["source"], skip["name"], skip["url"]) == (f"CLAUDE.md::@{masked}", masked, masked)
    assert events_named(logs, "source_expanded")[0]["matches"] == [f"CLAUDE.md::@{masked}"]


def test_a_urls_password_is_masked_in_the_cli_log_and_gemini_markers(tmp_path: Path) -> None:
    """`memconfig render`: no password on stderr; a failed-import marker names the masked URL."""
    root = _repo(tmp_path, {"GEMINI.md": f"see {SECRET_URL}"})
    (root / "c.yaml").write_text(
        "version: 1\nsources: [GEMINI.md]\nimports: {markers: comments}\nformatter: {preset: plain}\n"
    )

    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", str(root / "c.yaml"), "--log-level", "debug"],
        capture_output=True,
        text=True,
        check=True,
    )

    assert "protocol_not_allowed" in done.stderr and "hunter2" not in done.stderr
    assert "https://***@git.example.com/raw/x.md" in done.stdout and "hunter2" not in done.stdout


def test_home_imports_need_allow_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``@~/x.md`` is text by default, and the home file with ``allow_home: true``."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "prefs.md").write_text("PREFS")
    monkeypatch.setenv("HOME", str(home))
    root = _repo(tmp_path, {"CLAUDE.md": "@~/prefs.md"})

    assert _pipeline(root, ["CLAUDE.md"]).build().text == "@~/prefs.md"
    assert _pipeline(root, ["CLAUDE.md"], allow_home=True).build().text == "PREFS"


def test_revalidate_sees_an_edit_to_an_imported_file(tmp_path: Path) -> None:
    """Under ``revalidate`` an edit to the imported file is in the next render; an unchanged turn reads nothing."""
    root = _repo(tmp_path, {"CLAUDE.md": "@AGENTS.md", "AGENTS.md": "old"})
    pipeline = _pipeline(root, ["CLAUDE.md"], policy="revalidate")
    assert pipeline.build().text == "old"

    again = pipeline.build()
    agents = root / "AGENTS.md"
    agents.write_text("new text")
    os.utime(agents, ns=(agents.stat().st_mtime_ns + 10**9,) * 2)

    assert (again.text, again.counts["loaded"], again.counts["refreshed"]) == ("old", 0, 0)
    edited = pipeline.build()
    assert (edited.text, edited.counts["refreshed"]) == ("new text", 1)


def test_cache_counts_count_each_imported_file_once(tmp_path: Path) -> None:
    """An imported file is counted like any file: a miss on the first render, a cache hit when held unchanged.

    ``loaded + refreshed + stale + cache_hits`` is the number of files in the block, never a negative hit count.
    """
    root = _repo(tmp_path, {"CLAUDE.md": "top @a.md @b.md", "a.md": "A", "b.md": "B"})
    pipeline = _pipeline(root, ["CLAUDE.md"], policy="revalidate")

    first = pipeline.build()
    again = pipeline.build()
    (root / "b.md").write_text("B2")
    os.utime(root / "b.md", ns=((root / "b.md").stat().st_mtime_ns + 10**9,) * 2)
    edited = pipeline.build()

    def counts(render: Any) -> tuple[int, ...]:
        return tuple(render.counts[k] for k in ("sources_loaded", "loaded", "refreshed", "cache_hits"))

    assert (first.text, counts(first)) == ("top A B", (1, 3, 0, 0))
    assert counts(again) == (1, 0, 0, 3)
    assert (edited.text, counts(edited)) == ("top A B2", (1, 0, 1, 2))


def test_many_imports_never_make_cache_hits_negative(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """1,000 imports in one file: the first render counts 1,001 misses and no hit; the next, 1,001 hits."""
    files = {f"f{i}.md": f"file {i}" for i in range(1000)}
    root = _repo(tmp_path, {"top.md": "\n".join(f"@f{i}.md" for i in range(1000)), **files})
    pipeline = _pipeline(root, ["top.md"], policy="revalidate")

    first, second = pipeline.build(), pipeline.build()

    built = events_named(logs, "prompt_built")
    assert [(e["loaded"], e["cache_hits"]) for e in built] == [(1001, 0), (0, 1001)]
    assert (first.counts["cache_hits"], second.counts["cache_hits"]) == (0, 1001)


def test_revalidate_sees_a_missing_import_appear(tmp_path: Path) -> None:
    """A missing import that is created later is in the next render under ``revalidate``."""
    root = _repo(tmp_path, {"CLAUDE.md": "x @later.md"})
    pipeline = _pipeline(root, ["CLAUDE.md"], policy="revalidate")
    assert pipeline.build().text == "x @later.md"

    (root / "later.md").write_text("LATER")

    assert pipeline.build().text == "x LATER"


def test_sync_and_async_renders_agree(tmp_path: Path) -> None:
    """``build`` and ``abuild`` give the same block and the same records."""
    root = _repo(tmp_path, {"top.md": "0 @a.md @gone.md", "a.md": "1 @b.md", "b.md": "2"})

    sync = _pipeline(root, ["top.md"]).build()
    async_ = asyncio.run(_pipeline(root, ["top.md"]).abuild())

    assert (async_.text, async_.sources) == (sync.text, sync.sources)
    assert sync.text == "0 1 2 @gone.md"


def test_an_imported_file_also_declared_goes_in_once(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """CLAUDE.md imports AGENTS.md, which is also declared after it: the declared one is a ``duplicate``, logged."""
    root = _repo(tmp_path, {"CLAUDE.md": "C @AGENTS.md", "AGENTS.md": "A"})

    render = _pipeline(root, ["CLAUDE.md", "AGENTS.md"]).build()

    assert render.text == "C A"
    assert _skips(logs) == [("AGENTS.md", "duplicate", "warning")]
    assert events_named(logs, "source_skipped")[0]["detail"] == "the same file as 'CLAUDE.md::@AGENTS.md'"


def test_a_declared_file_first_makes_its_import_the_duplicate(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """AGENTS.md declared before CLAUDE.md: it keeps its place; the import is the ``duplicate``, its token text.

    An import of a file already in the prompt loses nothing: ``info``, where a declared repeat is a ``warning``.
    """
    root = _repo(tmp_path, {"CLAUDE.md": "C @AGENTS.md", "AGENTS.md": "A"})

    render = _pipeline(root, ["AGENTS.md", "CLAUDE.md"]).build()

    assert render.text == "A\n\nC @AGENTS.md"
    assert _skips(logs) == [("CLAUDE.md::@AGENTS.md", "duplicate", "info")]


def test_a_source_may_turn_imports_off(tmp_path: Path) -> None:
    """A source's own ``imports: false`` wins over the config's."""
    root = _repo(tmp_path, {"a.md": "@b.md", "c.md": "@b.md too", "b.md": "B"})

    render = _pipeline(root, ["a.md", {"url": "c.md", "imports": False}]).build()

    assert render.text == "B\n\n@b.md too"
    assert [s.source for s in render.sources] == ["a.md", "a.md::@b.md", "c.md"]


def test_imports_are_off_unless_configured(tmp_path: Path) -> None:
    """Without ``imports``, ``@b.md`` is plain text."""
    root = _repo(tmp_path, {"a.md": "@b.md", "b.md": "B"})
    config = {"version": 1, "sources": ["a.md"], "formatter": {"preset": "plain"}}

    assert Pipeline.from_config(_config(config, root)).build().text == "@b.md"


# Gemini CLI's tested strings (packages/core/src/utils/memoryImportProcessor.test.ts).
GEMINI_IMPORTED = "# Imported Content\nThis is imported."


def test_gemini_markers_are_byte_exact(tmp_path: Path) -> None:
    """``markers: comments`` writes Gemini CLI's begin/end comments around an import, and its failure comment."""
    root = _repo(tmp_path, {"GEMINI.md": "Some content @./test.md more content @./nonexistent.md", "test.md": ""})
    (root / "test.md").write_text(GEMINI_IMPORTED + "\n")

    text = _pipeline(root, ["GEMINI.md"], markers="comments").build().text

    assert text == (
        "Some content <!-- Imported from: ./test.md -->\n# Imported Content\nThis is imported.\n"
        "<!-- End of import from: ./test.md --> more content <!-- Import failed: ./nonexistent.md - not_found -->"
    )


def test_gemini_markers_nest_and_name_each_failure(tmp_path: Path) -> None:
    """Nested imports are each wrapped; a cycle and the depth limit leave their own failure comments."""
    files = {"main.md": "Main @./nested.md", "nested.md": "Nested @./inner.md @./main.md", "inner.md": "I @./x.md"}
    root = _repo(tmp_path, files | {"x.md": "X"})

    text = _pipeline(root, ["main.md"], markers="comments", max_depth=2).build().text

    assert text == (
        "Main <!-- Imported from: ./nested.md -->\n"
        "Nested <!-- Imported from: ./inner.md -->\nI <!-- Import failed: ./x.md - import_depth -->\n"
        "<!-- End of import from: ./inner.md --> <!-- Import failed: ./main.md - import_cycle -->\n"
        "<!-- End of import from: ./nested.md -->"
    )


@pytest.mark.parametrize(
    ("imports", "path"),
    [
        pytest.param({"max_depth": -1}, "imports.max_depth", id="depth"),
        pytest.param({"markers": "xml"}, "imports.markers", id="markers"),
        pytest.param({"depth": 3}, "imports.depth", id="unknown-key"),
    ],
)
def test_bad_import_settings_name_their_key_path(tmp_path: Path, imports: dict[str, Any], path: str) -> None:
    """A bad ``imports`` setting, top level or per source, is a config error at its key path."""
    for data, where in (
        ({"version": 1, "imports": imports}, path),
        ({"version": 1, "sources": [{"url": "a.md", "imports": imports}]}, f"sources[0].{path}"),
    ):
        with pytest.raises(ConfigError) as caught:
            _config(data, tmp_path)
        assert where in [p.path for p in caught.value.problems]


def test_markers_under_a_layout_that_strips_comments_are_a_config_error(tmp_path: Path) -> None:
    """``markers: comments`` with the default layout (which strips HTML comments) is refused, naming both settings."""
    with pytest.raises(ConfigError) as caught:
        _config({"version": 1, "imports": {"markers": "comments"}}, tmp_path)

    problem = caught.value.problems[0]
    assert problem.path == "imports.markers"
    assert "strip_html_comments" in problem.message
    config = {"version": 1, "imports": {"markers": "comments"}, "formatter": {"strip_html_comments": False}}
    assert _config(config, tmp_path).imports is not None
