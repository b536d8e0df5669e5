"""Conditional rules: `rules: frontmatter` applies each rule file by its frontmatter and the render's paths in play."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from structlog.testing import capture_logs
from support.models import RecordingModel

from memconfig import Pipeline, load_config
from memconfig.integrations.langchain import MemconfigMiddleware
from memconfig.process.rules import read_rule, split_patterns

TS_RULE = """---
description: TypeScript conventions
globs: src/**/*.ts
alwaysApply: false
---

Use strict TypeScript.
"""


def _rule(project: Path, name: str, text: str) -> Path:
    path = project / ".cursor" / "rules" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _config(project: Path, pattern: str = ".cursor/rules/*.mdc", **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "base_dir": str(project),
        "sources": [{"glob": pattern, "rules": "frontmatter"}],
        "cache": {"policy": extra.pop("policy", "revalidate")},
        "formatter": {"preset": "plain", "section": "[{path}] {content}"},
        **extra,
    }


def _skips(logs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["source"]: e for e in logs if e["event"] == "source_skipped"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with one Cursor rule for `src/**/*.ts`."""
    _rule(tmp_path, "ts.mdc", TS_RULE)
    return tmp_path


# -- the decision, through Pipeline.build(paths=) --------------------------------------------------


def test_a_glob_rule_applies_only_when_a_matching_path_is_in_play(project: Path) -> None:
    """`globs: src/**/*.ts`: in with src/app/main.ts; out with README.md or no paths (debug, not_applicable)."""
    pipeline = Pipeline.from_config(_config(project))
    assert pipeline.build(paths=[project / "src/app/main.ts"]).text == "[.cursor/rules/ts.mdc] Use strict TypeScript."
    with capture_logs() as logs:
        render = pipeline.build(paths=[project / "README.md"])
    assert render.text == ""
    skipped = _skips(logs)[".cursor/rules/ts.mdc"]
    assert (skipped["reason"], skipped["log_level"], skipped["via"]) == ("not_applicable", "debug", "glob")
    assert "src/**/*.ts" in skipped["detail"] and skipped["required"] is False
    [record] = [r for r in render.sources if r.source == ".cursor/rules/ts.mdc"]
    assert (record.status, record.reason) == ("skipped", "not_applicable")
    assert pipeline.build().text == ""  # no paths in play: a glob rule does not apply
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert (built["sources_skipped"], built["dropped"]) == (1, 0)  # skipped, not a processor's drop


def test_relative_paths_are_taken_against_the_working_folder(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path in play is the working folder's; a path outside base_dir matches no relative pattern."""
    pipeline = Pipeline.from_config(_config(project))
    monkeypatch.chdir(project / ".cursor")
    assert pipeline.build(paths=["../src/a.ts"]).text != ""
    assert pipeline.build(paths=["src/a.ts"]).text == ""  # .cursor/src/a.ts
    monkeypatch.chdir(project.parent)
    assert pipeline.build(paths=[f"other/{project.name}/src/a.ts"]).text == ""


def test_patterns_are_relative_to_the_project_root_not_the_configs_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Config in configs/, rules under the repository: `src/**/*.ts` matches src/a.ts of the root, as in Cursor."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "configs").mkdir()
    (project / "configs" / "memory.yaml").write_text(
        "version: 1\n"
        "sources:\n  - {glob: ../.cursor/rules/*.mdc, rules: frontmatter}\n"
        "formatter: {preset: plain, section: '{content}'}\n"
    )
    monkeypatch.chdir(project)
    config = project / "configs" / "memory.yaml"

    pipeline = Pipeline.from_config(load_config(config))
    assert pipeline.build(paths=["src/a.ts"]).text == "Use strict TypeScript."
    assert pipeline.build(paths=["configs/src/a.ts"]).text == ""

    cli = [sys.executable, "-m", "memconfig", "render", "-c", str(config), "--log-level", "error"]
    shown = subprocess.run([*cli, "--path", "src/a.ts"], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "Use strict TypeScript."


@pytest.mark.parametrize("name", ["r%20x", "r#x"])
def test_a_project_folder_named_like_an_encoded_url_keeps_its_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A repository in `r%20x/` (or `r#x/`): its rules are matched against it, the folder's name read as it is.

    A glob's match is a ``file://`` URL that is not percent-encoded; decoding it looked for `.git` under `r x/`,
    found none, and the rule silently never applied.
    """
    project = tmp_path / name
    _rule(project, "ts.mdc", TS_RULE)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "configs").mkdir()
    (project / "configs" / "c.yaml").write_text(
        "version: 1\n"
        "sources:\n  - {glob: ../.cursor/rules/*.mdc, rules: frontmatter}\n"
        "formatter: {preset: plain, section: '{content}'}\n"
    )
    monkeypatch.chdir(project)

    pipeline = Pipeline.from_config(load_config(project / "configs" / "c.yaml"))

    assert pipeline.build(paths=["src/a.ts"]).text == "Use strict TypeScript."
    assert pipeline.build(paths=["src/a.js"]).text == ""


def test_a_rules_file_outside_any_project_is_matched_against_base_dir(project: Path) -> None:
    """No `.git` above the rules: patterns stay relative to the config's base_dir (here the project folder)."""
    pipeline = Pipeline.from_config(_config(project))
    assert pipeline.build(paths=[project / "src" / "a.ts"]).text == "[.cursor/rules/ts.mdc] Use strict TypeScript."


def test_a_discovered_rules_file_in_no_project_is_matched_from_the_working_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `.git`: a discovery of `.cursor/rules/*.mdc` from the working folder matches `src/**/*.ts` relative to
    the folder holding `.cursor` (the working folder), not to the rule's own folder; a path elsewhere is outside."""
    config = _config(project)
    config["sources"] = [{"discover": {"patterns": [".cursor/rules/*.mdc"], "pick": "all"}, "rules": "cursor"}]
    config["base_dir"] = str(project.parent)
    monkeypatch.chdir(project)
    pipeline = Pipeline.from_config(config)
    rule = project / ".cursor" / "rules" / "ts.mdc"
    assert pipeline.build(paths=["src/a.ts"]).text == f"[{rule}] Use strict TypeScript."
    with capture_logs() as logs:
        assert pipeline.build(paths=[project.parent / "src" / "a.ts"]).text == ""
    (skip,) = _skips(logs).values()
    assert skip["detail"] == (
        f"no path in play matches its patterns (src/**/*.ts): the one given is outside its project root {project}"
    )


@pytest.mark.parametrize(
    ("frontmatter", "applies", "misses"),
    [
        pytest.param("alwaysApply: true", ["README.md"], [], id="always-apply"),
        pytest.param("alwaysApply: true\nglobs: lib/*.py", ["README.md"], [], id="always-apply-beats-globs"),
        pytest.param("globs: src/*.ts, docs/**/*.md", ["src/a.ts", "docs/x/y.md"], ["src/b/a.ts"], id="comma-string"),
        pytest.param("globs:\n  - src/*.ts\n  - '*.md'", ["src/a.ts", "README.md"], ["a/b.md"], id="list"),
        pytest.param("globs: src/**/*.{ts,tsx}", ["src/a.tsx", "src/x/a.ts"], ["src/a.js"], id="braces"),
        pytest.param("globs: src/**/*.{ts,tsx}, lib/*", ["src/a.tsx", "lib/x"], ["src/a.js"], id="braces-in-a-list"),
        pytest.param("globs: ['src/**/*.ts', '!**/*.test.ts']", ["src/a.ts"], ["src/a.test.ts"], id="negation"),
        pytest.param("globs: '!**/*.test.ts'", ["src/a.ts"], ["src/a.test.ts"], id="negation-only"),
        pytest.param("globs: '**/*.yml'", [".github/ci.yml"], ["ci.yaml"], id="dot-folders"),
        pytest.param('paths:\n  - "src/api/**/*.ts"', ["src/api/v1/a.ts"], ["src/a.ts"], id="claude-paths"),
        pytest.param("paths: src/**/*.{ts,tsx}", ["src/a.tsx"], ["lib/a.tsx"], id="claude-paths-string"),
        pytest.param("globs: ''\nalwaysApply: true", ["x"], [], id="empty-globs"),
    ],
)
def test_frontmatter_decides_which_paths_a_rule_applies_to(
    project: Path, frontmatter: str, applies: list[str], misses: list[str]
) -> None:
    """Each path in *applies* brings the rule in, alone; each in *misses* leaves it out."""
    _rule(project, "ts.mdc", f"---\n{frontmatter}\n---\nThe rule.\n")
    pipeline = Pipeline.from_config(_config(project))
    for path in applies:
        assert pipeline.build(paths=[path if path.startswith("/") else project / path]).text != "", path
    for path in misses:
        assert pipeline.build(paths=[project / path]).text == "", path


def test_one_matching_path_among_several_is_enough(project: Path) -> None:
    """The rule applies when any path in play matches."""
    pipeline = Pipeline.from_config(_config(project))
    assert pipeline.build(paths=[project / "README.md", project / "src/x.ts"]).text != ""


def test_a_rule_without_conditions_always_applies_as_claude_code_does(project: Path) -> None:
    """No frontmatter, or frontmatter without alwaysApply, globs, paths or description: always in."""
    claude = project / ".claude" / "rules"
    claude.mkdir(parents=True)
    (claude / "plain.md").write_text("No frontmatter.\n", encoding="utf-8")
    (claude / "other.md").write_text("---\nowner: team\n---\nOther keys only.\n", encoding="utf-8")
    render = Pipeline.from_config(_config(project, ".claude/rules/*.md")).build()
    assert render.text == "[.claude/rules/other.md] Other keys only.\n\n[.claude/rules/plain.md] No frontmatter."


def test_a_description_only_rule_is_not_applied_and_its_description_is_logged(project: Path) -> None:
    """Cursor's "agent requested" rule: memconfig has no agent to choose, so it stays out, saying why."""
    _rule(project, "db.mdc", "---\ndescription: Database migrations\nalwaysApply: false\n---\nMigrate.\n")
    _rule(project, "manual.mdc", "---\nalwaysApply: false\n---\nManual.\n")
    with capture_logs() as logs:
        render = Pipeline.from_config(_config(project)).build(paths=[project / "src/a.ts"])
    assert render.text == "[.cursor/rules/ts.mdc] Use strict TypeScript."
    skips = _skips(logs)
    assert "Database migrations" in skips[".cursor/rules/db.mdc"]["detail"]
    assert "applied only on request" in skips[".cursor/rules/manual.mdc"]["detail"]
    assert {e["log_level"] for e in skips.values()} == {"debug"}


# -- malformed frontmatter -----


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        pytest.param("---\nglobs: [src/**\nalwaysApply: true\n---\nBody.\n", 3, "not valid YAML", id="bad-yaml"),
        pytest.param("---\ndescription: x\nalwaysApply: 'true'\n---\nBody.\n", 3, "the string 'true'", id="bool"),
        pytest.param("---\nglobs: {a: 1}\n---\nBody.\n", 2, "globs must be a pattern", id="globs-mapping"),
        pytest.param("---\n\npaths:\n  - 3\n---\nBody.\n", 3, "paths must be", id="paths-number"),
        pytest.param("---\ndescription: [a]\n---\nBody.\n", 2, "description must be text", id="description-list"),
        pytest.param("---\nglobs: a, a\nglobs: b\n---\nBody.\n", 3, "duplicate key", id="repeated-key"),
    ],
)
def test_malformed_frontmatter_is_a_warning_naming_file_and_line_and_the_rule_applies(
    project: Path, text: str, line: int, words: str
) -> None:
    """Never a silent skip: one `frontmatter_invalid` warning (file:line), the rule applied, its block not shown."""
    _rule(project, "bad.mdc", text)
    pipeline = Pipeline.from_config(_config(project))
    with capture_logs() as logs:
        render = pipeline.build(paths=[project / "README.md"])
    assert render.text == "[.cursor/rules/bad.mdc] Body."
    [warning] = [e for e in logs if e["event"] == "frontmatter_invalid"]
    assert (warning["log_level"], warning["source"], warning["line"]) == ("warning", ".cursor/rules/bad.mdc", line)
    assert warning["detail"].startswith(f".cursor/rules/bad.mdc:{line}: ") and words in warning["detail"]
    [record] = [r for r in render.sources if r.source == ".cursor/rules/bad.mdc"]
    assert (record.status, record.notes) == ("loaded", ("frontmatter_invalid",))


CURSOR_RULE = "---\ndescription: \nglobs: *.ts,*.tsx\nalwaysApply: false\n---\n\nTypeScript only.\n"
"""A rule as Cursor's rule editor saves it: the globs unquoted, which YAML reads as an alias."""


def test_cursors_unquoted_globs_are_read_as_cursor_reads_them(project: Path) -> None:
    """`globs: *.ts,*.tsx` is two patterns (no warning): the rule applies to a .tsx path, not to a .py one."""
    _rule(project, "cursor.mdc", CURSOR_RULE)
    pipeline = Pipeline.from_config(_config(project))

    with capture_logs() as logs:
        tsx = pipeline.build(paths=[project / "app.tsx"])
        py = pipeline.build(paths=[project / "tool.py"])

    assert "[.cursor/rules/cursor.mdc] TypeScript only." in tsx.text
    assert "cursor.mdc" not in py.text
    assert [e for e in logs if e["event"] == "frontmatter_invalid"] == []
    assert read_rule(CURSOR_RULE).patterns == ("*.ts", "*.tsx")


CURSOR_DESCRIBED = (
    "---\ndescription: API handlers: validation and errors\nglobs: src/api/**/*.ts\nalwaysApply: false\n---\nAPI RULE"
)
"""Cursor's editor writes the description unquoted too: its colon makes the line not YAML."""


def test_a_colon_in_cursors_unquoted_description_keeps_the_rule_conditional(project: Path) -> None:
    """`description: API handlers: validation and errors` is one sentence: the rule applies only to src/api/ paths.

    Read as YAML the block is invalid, which would apply the rule to every render; no ``frontmatter_invalid``.
    """
    _rule(project, "api.mdc", CURSOR_DESCRIBED)
    pipeline = Pipeline.from_config(_config(project))

    with capture_logs() as logs:
        api = pipeline.build(paths=[project / "src" / "api" / "users.ts"])
        readme = pipeline.build(paths=[project / "README.md"])
        none = pipeline.build()

    assert "[.cursor/rules/api.mdc] API RULE" in api.text
    assert "API RULE" not in readme.text and "API RULE" not in none.text
    assert [e for e in logs if e["event"] == "frontmatter_invalid"] == []
    assert _skips(logs)[".cursor/rules/api.mdc"]["reason"] == "not_applicable"
    rule = read_rule(CURSOR_DESCRIBED)
    assert (rule.description, rule.patterns, rule.always) == (
        "API handlers: validation and errors",
        ("src/api/**/*.ts",),
        False,
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("---\nglobs: *.ts\nalwaysApply: a: b\n---\nBody.\n", 3, id="another-line-broken"),
        pytest.param("---\ntitle: *anchor\nglobs: *.ts\n---\nBody.\n", 2, id="alias-elsewhere"),
        pytest.param("---\ndescription: a: b\n  more: c\nglobs: *.ts\n---\nBody.\n", 3, id="description-goes-on"),
    ],
)
def test_frontmatter_broken_elsewhere_still_warns_with_its_line(project: Path, text: str, line: int) -> None:
    """Raw values fix only their own line: a block still not YAML is a warning naming file and line, rule applied."""
    _rule(project, "bad.mdc", text)
    with capture_logs() as logs:
        render = Pipeline.from_config(_config(project)).build(paths=[project / "README.md"])
    assert render.text == "[.cursor/rules/bad.mdc] Body."
    [warning] = [e for e in logs if e["event"] == "frontmatter_invalid"]
    assert (warning["source"], warning["line"]) == (".cursor/rules/bad.mdc", line)
    assert warning["detail"].startswith(f".cursor/rules/bad.mdc:{line}: not valid YAML")


def test_an_unclosed_block_is_a_warning_and_is_shown_as_content(project: Path) -> None:
    """`---` and a key with no closing line: content (nothing is lost), and a warning at line 1."""
    _rule(project, "open.mdc", "---\nglobs: src/*.ts\nBody.\n")
    with capture_logs() as logs:
        render = Pipeline.from_config(_config(project)).build()
    assert render.text == "[.cursor/rules/open.mdc] ---\nglobs: src/*.ts\nBody."
    [warning] = [e for e in logs if e["event"] == "frontmatter_invalid"]
    assert warning["line"] == 1 and "never closed" in warning["detail"]


# -- the prompt's text -----------------------------------------------------------------------------------------


def test_frontmatter_is_stripped_from_the_prompt_whatever_the_layout(project: Path) -> None:
    """The plain preset keeps frontmatter elsewhere; a rule file's block never reaches the model."""
    (project / "NOTES.md").write_text("---\ntitle: kept\n---\nNotes.\n", encoding="utf-8")
    config = _config(project)
    config["sources"].append("NOTES.md")
    render = Pipeline.from_config(config).build(paths=[project / "src/a.ts"])
    assert render.text == "[.cursor/rules/ts.mdc] Use strict TypeScript.\n\n[NOTES.md] ---\ntitle: kept\n---\nNotes."


def test_a_single_rule_file_source_works_as_a_glob_does(project: Path) -> None:
    """`{url: FILE, rules: frontmatter}`: the same decision for one declared file."""
    config = _config(project)
    config["sources"] = [{"url": ".cursor/rules/ts.mdc", "rules": "frontmatter"}]
    pipeline = Pipeline.from_config(config)
    assert pipeline.build(paths=[project / "src/a.ts"]).text == "[.cursor/rules/ts.mdc] Use strict TypeScript."
    assert pipeline.build(paths=[project / "a.py"]).text == ""


# -- memo and reads -----


def test_other_paths_never_reuse_a_block_and_read_nothing(project: Path) -> None:
    """Paths A, B, A: each block is its paths'; B and the second A read no file; the second A comes from the memo."""
    pipeline = Pipeline.from_config(_config(project, policy="once"))
    state: dict[str, Any] = {}
    first = pipeline.build(state, paths=[project / "src/a.ts"])
    with capture_logs() as logs:
        other = pipeline.build(state, paths=[project / "README.md"])
        again = pipeline.build(state, paths=[project / "src/a.ts"])
    assert first.text != "" and other.text == "" and again.text == first.text
    assert (first.memo, other.memo, again.memo) == (False, False, True)
    assert not [e for e in logs if e["event"] == "source_loaded"]
    assert all(e["loaded"] == 0 for e in logs if e["event"] == "prompt_built")


def test_paths_alone_change_no_read_under_revalidate(project: Path) -> None:
    """Under revalidate, a render with new paths only checks the files; nothing is read again."""
    pipeline = Pipeline.from_config(_config(project))
    state: dict[str, Any] = {}
    pipeline.build(state, paths=[project / "src/a.ts"])
    with capture_logs() as logs:
        render = pipeline.build(state, paths=[project / "README.md"])
    assert render.text == "" and render.counts["loaded"] == 0 and render.counts["refreshed"] == 0
    assert [e["cache"] for e in logs if e["event"] == "source_loaded"] == []


def test_an_edited_rule_is_decided_again(project: Path) -> None:
    """A rule whose globs change between two renders is decided by its new frontmatter."""
    pipeline = Pipeline.from_config(_config(project))
    assert pipeline.build(paths=[project / "README.md"]).text == ""
    _rule(project, "ts.mdc", "---\nglobs: '*.md'\n---\nNow for Markdown, a longer body.\n")
    assert (
        pipeline.build(paths=[project / "README.md"]).text == "[.cursor/rules/ts.mdc] Now for Markdown, a longer body."
    )


def test_without_rules_paths_change_nothing(project: Path) -> None:
    """A config with no rules source gives the same block, from the memo, whatever the paths."""
    (project / "AGENTS.md").write_text("agents", encoding="utf-8")
    pipeline = Pipeline.from_config({**_config(project), "sources": ["AGENTS.md"]})
    assert not pipeline.takes_paths
    assert pipeline.build(paths=["a"]).text == "[AGENTS.md] agents"
    assert pipeline.build(paths=["b"]).memo


async def _abuild(pipeline: Pipeline, path: Path) -> str:
    return (await pipeline.abuild(paths=[path])).text


def test_abuild_render_and_arender_take_paths(project: Path) -> None:
    """The async build and both render entry points decide with their paths."""
    pipeline = Pipeline.from_config(_config(project))
    assert asyncio.run(_abuild(pipeline, project / "src/a.ts")) != ""
    assert pipeline.render("You help.", paths=[project / "README.md"]) == "You help."  # nothing to add
    shown = asyncio.run(pipeline.arender("You help.", paths=project / "src/a.ts"))
    assert shown.endswith("Use strict TypeScript.")


# -- the CLI -----


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (project / "memconfig.yaml").write_text(
        "version: 1\nsources:\n  - {glob: '.cursor/rules/*.mdc', rules: frontmatter}\nformatter: {preset: plain}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", "memconfig.yaml", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def test_cli_path_brings_in_the_rules_that_match(project: Path) -> None:
    """`--path src/app/main.ts` shows the TypeScript rule; `--path README.md` does not; --path repeats."""
    matched = _cli(project, "--path", "src/app/main.ts")
    assert (matched.returncode, matched.stdout) == (0, "Use strict TypeScript.")
    missed = _cli(project, "--path", "README.md")
    assert (missed.returncode, missed.stdout) == (0, "")
    both = _cli(project, "--path", "README.md", "--path", "src/x.ts")
    assert both.stdout == "Use strict TypeScript."


# -- the LangChain middleware -----


@tool
def open_file(path: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Open a file: it is now in play."""
    return Command(update={"memconfig_paths": [path], "messages": [ToolMessage("opened", tool_call_id=tool_call_id)]})


def _system_text(model: RecordingModel, call: int) -> str:
    system = model.system(call)
    assert isinstance(system, SystemMessage)
    return "".join(block["text"] for block in system.content_blocks if block["type"] == "text")


def test_middleware_takes_the_paths_from_its_state_key(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`memconfig_paths` in the input decides the first call; a tool that sets it changes the next call's block."""
    monkeypatch.chdir(project)
    script = [
        AIMessage("", tool_calls=[{"name": "open_file", "args": {"path": "README.md"}, "id": "call-1"}]),
        AIMessage("done"),
    ]
    model = RecordingModel(messages=iter(script))
    middleware = MemconfigMiddleware.from_config(_config(project))
    agent = create_agent(
        model=model, tools=[open_file], system_prompt="You help.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    turn = {"messages": [HumanMessage("edit main.ts")], "memconfig_paths": ["src/app/main.ts"]}
    with capture_logs() as logs:
        agent.invoke(turn, {"configurable": {"thread_id": "t"}})
    assert "Use strict TypeScript." in _system_text(model, 0)
    assert "Use strict TypeScript." not in _system_text(model, 1)
    assert [e["cache"] for e in logs if e["event"] == "source_loaded"] == ["miss"]  # the second call read nothing
    assert agent.get_state({"configurable": {"thread_id": "t"}}).values["memconfig_paths"] == ["README.md"]


def test_middleware_without_paths_leaves_glob_rules_out(project: Path) -> None:
    """No paths in the state: only the rules that apply without paths are in."""
    _rule(project, "always.mdc", "---\nalwaysApply: true\n---\nAlways.\n")
    model = RecordingModel(messages=(AIMessage("ok") for _ in itertools.count()))
    agent = create_agent(model=model, middleware=[MemconfigMiddleware.from_config(_config(project))])
    agent.invoke({"messages": [HumanMessage("hi")]})
    text = _system_text(model, 0)
    assert "Always." in text and "Use strict TypeScript." not in text


# -- the pieces -----


@pytest.mark.parametrize(
    ("value", "parts"),
    [
        pytest.param("a, b", ["a", "b"], id="two"),
        pytest.param("src/*.{ts,tsx}, lib/*", ["src/*.{ts,tsx}", "lib/*"], id="braces-kept"),
        pytest.param(" , a,", ["a"], id="empties-dropped"),
        pytest.param("{a,{b,c}},d", ["{a,{b,c}}", "d"], id="nested"),
    ],
)
def test_split_patterns_splits_at_commas_outside_braces(value: str, parts: list[str]) -> None:
    """Cursor's comma-separated globs, with Claude Code's brace patterns kept whole."""
    assert split_patterns(value) == parts


def test_read_rule_strips_the_block_and_keeps_a_horizontal_rule() -> None:
    """The body is the text after the block; a file starting with a Markdown rule and prose has no frontmatter."""
    assert read_rule(TS_RULE).body == "Use strict TypeScript.\n"
    assert read_rule("---\nJust prose.\n---\n").body == "---\nJust prose.\n---\n"
    assert read_rule("\ufeff---\nalwaysApply: true\n---\nX").always is True
