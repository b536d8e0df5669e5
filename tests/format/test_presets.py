"""Presets as data: the built-ins' exact layouts, presets defined in YAML, titles, and frontmatter stripping."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs
from support.pipelines import events_named

from memconfig import Pipeline
from memconfig.format import TemplateFormatter
from memconfig.format.presets import DEFAULT_TEMPLATE, PRESETS
from memconfig.process import StripFrontmatter

WriteConfig = Callable[..., Path]

DEEPAGENTS_HEAD, DEEPAGENTS_TAIL = DEFAULT_TEMPLATE.split("{agent_memory}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two memory files, the second with an HTML comment."""
    (tmp_path / "a.md").write_text("Alpha.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("Beta <!-- note --> text.\n\n", encoding="utf-8")
    return tmp_path


def _build(root: Path, sources: list[Any], formatter: dict[str, Any] | None = None, **extra: Any) -> str:
    config = {"version": 1, "base_dir": str(root), "sources": sources, "formatter": formatter or {}, **extra}
    return Pipeline.from_config(config).build({}).text


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memconfig", "validate", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _problems(done: subprocess.CompletedProcess[str], path: Path) -> dict[str, str]:
    """The problems `validate` listed, by key path."""
    lines = done.stderr.splitlines()
    listed = lines[1:] if len(lines) > 1 else [lines[0].removeprefix(f"memconfig: error: {path}: ")]
    return dict(line.strip().split(": ", 1) for line in listed)  # type: ignore[misc]


# -- the built-ins ------------------------------------------------------------------------------------------------

BUILT_INS = [
    pytest.param(
        "deepagents",
        DEEPAGENTS_HEAD + "a.md\n\nAlpha.\n\nb.md\n\nBeta  text." + DEEPAGENTS_TAIL,
        DEEPAGENTS_HEAD + "(No memory loaded)" + DEEPAGENTS_TAIL,
        id="deepagents",
    ),
    pytest.param(
        "xml",
        '<agent_memory>\n<source name="a.md" path="a.md">\nAlpha.\n</source>\n'
        '<source name="b.md" path="b.md">\nBeta  text.\n</source>\n</agent_memory>',
        "<agent_memory>\n\n</agent_memory>",
        id="xml",
    ),
    pytest.param("markdown", "## a.md\n\nAlpha.\n\n## b.md\n\nBeta  text.", "", id="markdown"),
    pytest.param("plain", "Alpha.\n\nBeta <!-- note --> text.", "", id="plain"),
]


def test_deepagents_template_puts_the_memory_inside_agent_memory() -> None:
    """The deepagents preset's template opens <agent_memory> right before the slot and closes it after."""
    assert DEEPAGENTS_HEAD == "<agent_memory>\n"
    assert DEEPAGENTS_TAIL.startswith("\n\n</agent_memory>\n\n<memory_notes>\n")


@pytest.mark.parametrize(("preset", "two", "none"), BUILT_INS)
def test_builtin_preset_lays_out_two_files_and_none(project: Path, preset: str, two: str, none: str) -> None:
    """Each built-in preset's exact block for two files, and for no file at all."""
    assert _build(project, ["a.md", "b.md"], {"preset": preset}) == two
    assert _build(project, ["missing.md"], {"preset": preset}) == none
    assert _build(project, [], {"preset": preset}) == none


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_user_preset_with_a_builtins_fields_lays_out_the_same_bytes(project: Path, preset: str) -> None:
    """No code looks at a preset's name: the same fields, under another name and base, give the same block."""
    fields = asdict(PRESETS[preset])
    copy = {"extends": "plain" if preset != "plain" else "deepagents", **fields}
    mine = _build(project, ["a.md", "b.md"], {"preset": "copy"}, presets={"copy": copy})
    assert mine == _build(project, ["a.md", "b.md"], {"preset": preset})


def test_presets_table_is_read_only() -> None:
    """The built-in table cannot be changed at run time."""
    with pytest.raises(TypeError):
        PRESETS["mine"] = PRESETS["plain"]  # type: ignore[index]


# -- presets defined in the config -------------------------------------------------------------------------------


def test_user_presets_extend_builtins_and_each_other(project: Path) -> None:
    """A preset extends a built-in or another user preset; each replaces only the fields it sets."""
    presets = {
        "tight": {"extends": "xml", "separator": "\n\n"},
        "tighter": {"extends": "tight", "section": "<note of='{name}'>\n{content}\n</note>"},
    }
    text = _build(project, ["a.md", "b.md"], {"preset": "tighter"}, presets=presets)
    assert text == (
        "<agent_memory>\n<note of='a.md'>\nAlpha.\n</note>\n\n<note of='b.md'>\nBeta  text.\n</note>\n</agent_memory>"
    )


def test_formatter_fields_override_a_user_preset(project: Path) -> None:
    """formatter.* keys override the chosen user preset as they do a built-in."""
    presets = {"mine": {"extends": "markdown", "section": "# {title}\n{content}"}}
    text = _build(project, ["a.md", "b.md"], {"preset": "mine", "separator": "\n---\n"}, presets=presets)
    assert text == "# a.md\nAlpha.\n---\n# b.md\nBeta  text."


def test_a_user_preset_defaults_to_extending_plain(project: Path) -> None:
    """Without `extends`, a preset starts from `plain`."""
    text = _build(project, ["a.md", "b.md"], {"preset": "mine"}, presets={"mine": {"separator": " | "}})
    assert text == "Alpha. | Beta <!-- note --> text."


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(
            {"presets": {"a": {"extends": "b"}, "b": {"extends": "a"}}, "formatter": {"preset": "a"}},
            {"presets.b.extends": "presets extend each other in a cycle: a → b → a"},
            id="cycle",
        ),
        pytest.param(
            {"presets": {"me": {"extends": "me"}}},
            {"presets.me.extends": "presets extend each other in a cycle: me → me"},
            id="self-cycle",
        ),
        pytest.param(
            {"presets": {"mine": {"extends": "html"}}},
            {
                "presets.mine.extends": "cannot extend unknown preset 'html'; built-in: claude, codex, deepagents, "
                "gemini, markdown, plain, xml; defined under presets: mine"
            },
            id="unknown-base",
        ),
        pytest.param(
            {"presets": {"xml": {"separator": "\n"}}},
            {"presets.xml": "'xml' is a built-in preset; give yours another name (it may extend it)"},
            id="shadows-a-builtin",
        ),
        pytest.param(
            {"presets": {"mine": {}, "yours": {}}, "formatter": {"preset": "ours"}},
            {
                "formatter.preset": "unknown preset 'ours' (did you mean 'yours'?); built-in: claude, codex, "
                "deepagents, gemini, markdown, plain, xml; defined under presets: mine, yours"
            },
            id="unknown-preset",
        ),
        pytest.param(
            {"presets": {"mine": {"template": "no slot here"}}},
            {"presets.mine.template": "template must contain the {agent_memory} slot"},
            id="template-without-slot",
        ),
        pytest.param(
            {"presets": {"mine": {"section": "{path.__class__}"}}},
            {
                "presets.mine.section": "slot {path.__class__} uses attribute or index access;"
                " only plain names are allowed"
            },
            id="section-attribute-access",
        ),
        pytest.param(
            {"presets": {"mine": {"section": "{heading}"}}},
            {"presets.mine.section": "unknown slot {heading}; allowed: {content}, {name}, {path}, {title}"},
            id="section-unknown-slot",
        ),
        pytest.param(
            {"presets": {"mine": {"escape": "sometimes"}}},
            {"presets.mine.escape": "must be a valid boolean, unable to interpret input"},
            id="bad-rule",
        ),
    ],
)
def test_preset_errors_are_reported_at_their_key_path(
    write_config: WriteConfig, config: dict[str, Any], expected: dict[str, str]
) -> None:
    """`memconfig validate` exits 2 naming each preset problem at its key path."""
    path = write_config({"version": 1, **config})
    done = _validate(path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert _problems(done, path) == expected


def test_unknown_preset_is_listed_with_the_other_problems(write_config: WriteConfig) -> None:
    """An unknown formatter.preset is reported together with the config's other mistakes."""
    path = write_config({"version": 1, "presets": {"mine": {}}, "formatter": {"preset": "nope"}, "loader": {"x": 1}})
    done = _validate(path)
    assert done.returncode == 2
    assert set(_problems(done, path)) == {"formatter.preset", "loader.x"}


def test_a_user_preset_validates(write_config: WriteConfig, project: Path) -> None:
    """A config choosing a preset it defines validates (exit 0)."""
    (project / "memconfig.yaml").unlink(missing_ok=True)
    path = write_config({"version": 1, "presets": {"mine": {"extends": "xml"}}, "formatter": {"preset": "mine"}})
    done = _validate(path)
    assert done.returncode == 0, done.stderr


# -- titles ------------------------------------------------------------------------------------------------------


def test_markdown_headings_use_the_title_else_the_name_else_the_path(project: Path) -> None:
    """`## {title}`: a source's title, by default its name, by default the location as written."""
    (project / "c.md").write_text("Gamma.", encoding="utf-8")
    sources = [{"url": "a.md", "title": "Team rules"}, {"url": "b.md", "name": "bee"}, "c.md"]
    text = _build(project, sources, {"preset": "markdown"})
    assert text == "## Team rules\n\nAlpha.\n\n## bee\n\nBeta  text.\n\n## c.md\n\nGamma."


def test_glob_matches_are_titled_with_their_own_names(project: Path) -> None:
    """A glob's title is not given to its matches: each is headed by its own name."""
    (project / "rules").mkdir()
    (project / "rules" / "one.md").write_text("One.", encoding="utf-8")
    (project / "rules" / "two.md").write_text("Two.", encoding="utf-8")
    text = _build(project, [{"glob": "rules/*.md", "title": "Rules"}], {"preset": "markdown"})
    assert text == "## rules/one.md\n\nOne.\n\n## rules/two.md\n\nTwo."


def test_xml_preset_carries_the_title_in_its_name_attribute(project: Path) -> None:
    """The xml preset's source element is named with the title, and keeps the path."""
    text = _build(project, [{"url": "a.md", "title": "Team rules"}], {"preset": "xml"})
    assert text == '<agent_memory>\n<source name="Team rules" path="a.md">\nAlpha.\n</source>\n</agent_memory>'


def test_a_title_change_is_a_new_layout() -> None:
    """Two formatters whose titles differ have different tokens (a memoised block is not reused)."""
    layout = PRESETS["markdown"]
    assert TemplateFormatter(layout, {"a.md": "A"}).token != TemplateFormatter(layout, {"a.md": "B"}).token
    assert TemplateFormatter(layout, {"a.md": "A"}).token == TemplateFormatter(layout, {"a.md": "A"}).token


@pytest.mark.parametrize("field", ["strip_frontmatter", "escape", "strip_html_comments", "separator"])
def test_every_rule_is_part_of_the_formatter_token(field: str) -> None:
    """Changing any field of a layout, its rules included, changes the formatter's token."""
    layout = PRESETS["xml"]
    value = getattr(layout, field)
    changed = type(layout)(**{**asdict(layout), field: (not value) if isinstance(value, bool) else value + "!"})
    assert TemplateFormatter(changed).token != TemplateFormatter(layout).token


# -- frontmatter -------------------------------------------------------------------------------------------------

STRIPPED = [
    pytest.param(
        "---\ndescription: TypeScript conventions\nglobs: *.ts,*.tsx\nalwaysApply: false\n---\n- Use strict mode.\n",
        "- Use strict mode.\n",
        id="cursor-mdc",
    ),
    pytest.param(
        '---\npaths:\n  - "src/api/**/*.ts"\n---\n\n# API rules\n\nValidate input.\n',
        "# API rules\n\nValidate input.\n",
        id="claude-code-rule",
    ),
    pytest.param("---\r\ntitle: x\r\n---\r\n\r\nBody\r\n", "Body\r\n", id="crlf"),
    pytest.param("\ufeff---\ntitle: x\n---\nBody", "Body", id="bom"),
    pytest.param("---\ntitle: x\n...\nBody", "Body", id="dots-end"),
    pytest.param("---  \ntitle: x\n---\t\nBody", "Body", id="spaces-after-fences"),
    pytest.param("---\n---\nBody", "Body", id="empty-block"),
    pytest.param("---\n# a comment\nkey: value\n---\nBody", "Body", id="comment-first"),
    pytest.param('---\n"quoted key": 1\n---\nBody', "Body", id="quoted-key"),
    pytest.param("---\ntitle: x\n---\n  indented body", "  indented body", id="indentation-kept"),
]

KEPT = [
    pytest.param("---\ntitle: never closed\nBody\n", id="unterminated"),
    pytest.param("---\n", id="only-a-fence"),
    pytest.param("---\nThis is prose after a rule.\n---\nMore.", id="horizontal-rule-and-prose"),
    pytest.param("\n---\ntitle: x\n---\nBody", id="not-at-the-start"),
    pytest.param("--- not a fence\ntitle: x\n---\nBody", id="text-after-the-fence"),
    pytest.param("----\ntitle: x\n----\nBody", id="four-dashes"),
    pytest.param("Body\n---\ntitle: x\n---\n", id="later-block"),
]


@pytest.mark.parametrize(("text", "left"), STRIPPED)
def test_frontmatter_is_stripped(text: str, left: str) -> None:
    """A leading YAML block (BOM, CRLF, `...`, comments, quoted keys) goes, with the blank lines after it."""
    assert StripFrontmatter().clean(text) == left


@pytest.mark.parametrize("text", KEPT)
def test_what_is_not_surely_frontmatter_is_kept(text: str) -> None:
    """Unterminated blocks, rules followed by prose, blocks not at the very start: content, kept as it is."""
    assert StripFrontmatter().clean(text) is text


def _rules(root: Path) -> Path:
    (root / "rule.mdc").write_text("---\ndescription: x\nalwaysApply: true\n---\nUse tabs.\n", encoding="utf-8")
    (root / "only.md").write_text("---\npaths:\n  - src/**\n---\n\n", encoding="utf-8")
    (root / "open.md").write_text("---\ntitle: no end\nKeep me.\n", encoding="utf-8")
    return root


def test_markdown_strips_frontmatter_and_skips_files_that_are_only_frontmatter(project: Path) -> None:
    """Under a layout that strips frontmatter, a rule file shows its body; one that is only frontmatter is `empty`."""
    _rules(project)
    config = {"version": 1, "base_dir": str(project), "sources": ["rule.mdc", "only.md", "open.md"]}
    with capture_logs() as logs:
        render = Pipeline.from_config({**config, "formatter": {"preset": "markdown"}}).build({})
    assert render.text == "## rule.mdc\n\nUse tabs.\n\n## open.md\n\n---\ntitle: no end\nKeep me."
    [skipped] = events_named(logs, "source_skipped")
    assert (skipped["source"], skipped["reason"]) == ("only.md", "empty")
    assert events_named(logs, "source_dropped") == []


def test_deepagents_keeps_frontmatter_unless_a_source_asks(project: Path) -> None:
    """The deepagents layout keeps frontmatter, as deepagents does; `sources[i].strip_frontmatter` strips it there."""
    _rules(project)
    kept = _build(project, ["rule.mdc"], {"preset": "deepagents"})
    assert "alwaysApply: true" in kept
    stripped = _build(project, [{"url": "rule.mdc", "strip_frontmatter": True}, "a.md"], {"preset": "deepagents"})
    assert stripped == DEEPAGENTS_HEAD + "rule.mdc\n\nUse tabs.\n\na.md\n\nAlpha." + DEEPAGENTS_TAIL


def test_a_source_can_keep_its_frontmatter_under_a_stripping_layout(project: Path) -> None:
    """`strip_frontmatter: false` on one source keeps its block; the others are still stripped."""
    _rules(project)
    (project / "copy.mdc").write_bytes((project / "rule.mdc").read_bytes())
    sources = [{"url": "rule.mdc", "strip_frontmatter": False}, "copy.mdc"]
    text = _build(project, sources, {"preset": "plain", "strip_frontmatter": True})
    assert text == "---\ndescription: x\nalwaysApply: true\n---\nUse tabs.\n\nUse tabs."


def test_glob_matches_inherit_their_globs_frontmatter_rule(project: Path) -> None:
    """A glob with `strip_frontmatter: true` strips it from every match; a file that is only frontmatter is left out."""
    (project / "rules").mkdir()
    _rules(project / "rules")
    sources = [{"glob": "rules/*", "strip_frontmatter": True}, "b.md"]
    with capture_logs() as logs:
        render = Pipeline.from_config(
            {"version": 1, "base_dir": str(project), "sources": sources, "formatter": {"preset": "markdown"}}
        ).build({})
    # b.md's own layout rule strips too: every source agrees, so the loader skips only.md.
    assert render.text == (
        "## rules/open.md\n\n---\ntitle: no end\nKeep me.\n\n## rules/rule.mdc\n\nUse tabs.\n\n## b.md\n\nBeta  text."
    )
    assert [(e["source"], e["reason"]) for e in events_named(logs, "source_skipped")] == [("rules/only.md", "empty")]


def test_when_sources_disagree_a_file_of_only_frontmatter_is_dropped_as_empty(project: Path) -> None:
    """One source strips and another does not: the frontmatter-only file is read, then dropped as `empty`."""
    _rules(project)
    sources = [{"url": "only.md", "strip_frontmatter": True}, "a.md"]
    with capture_logs() as logs:
        render = Pipeline.from_config(
            {"version": 1, "base_dir": str(project), "sources": sources, "formatter": {"preset": "plain"}}
        ).build({})
    assert render.text == "Alpha."
    [dropped] = events_named(logs, "source_dropped")
    assert (dropped["source"], dropped["reason"]) == ("only.md", "empty")
    assert dropped["processor"].startswith("StripFrontmatter(")
    [record] = [r for r in render.sources if r.source == "only.md"]
    assert (record.status, record.reason) == ("skipped", "empty")


def test_changing_the_frontmatter_rule_rereads_a_state(project: Path) -> None:
    """A state made under another rule is not reused: a file skipped as `empty` there is read again."""
    _rules(project)
    config: dict[str, Any] = {"version": 1, "base_dir": str(project), "sources": ["only.md"]}
    state: dict[str, Any] = {}
    stripping = Pipeline.from_config({**config, "formatter": {"preset": "plain", "strip_frontmatter": True}})
    assert stripping.build(state).text == ""
    keeping = Pipeline.from_config({**config, "formatter": {"preset": "plain"}})
    assert keeping.build(state).text == "---\npaths:\n  - src/**\n---"


def test_changing_the_preset_rereads_a_state(project: Path) -> None:
    """A state made under one preset, rendered under another, is laid out by the new one."""
    state: dict[str, Any] = {}
    config: dict[str, Any] = {"version": 1, "base_dir": str(project), "sources": ["a.md"]}
    assert Pipeline.from_config({**config, "formatter": {"preset": "plain"}}).build(state).text == "Alpha."
    xml = Pipeline.from_config({**config, "formatter": {"preset": "xml"}}).build(state).text
    assert xml == '<agent_memory>\n<source name="a.md" path="a.md">\nAlpha.\n</source>\n</agent_memory>'


def test_user_preset_rules_apply(project: Path, write_config: WriteConfig) -> None:
    """A user preset's rules (frontmatter, comments) work as a built-in's, through the CLI too."""
    _rules(project)
    presets = {"rules": {"extends": "plain", "strip_frontmatter": True, "strip_html_comments": True}}
    path = write_config(
        yaml.safe_dump(
            {"version": 1, "sources": ["rule.mdc", "b.md"], "presets": presets, "formatter": {"preset": "rules"}}
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Use tabs.\n\nBeta  text."


@pytest.mark.parametrize("preset", ["codex", "gemini"])
def test_sources_with_every_entry_commented_out_keep_the_tool_presets_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preset: str
) -> None:
    """`sources:` whose entries are all commented out is YAML's null: absent, so the preset's discovery stays.

    It used to replace the preset's sources with none: an empty block, no warning.
    """
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    name = {"codex": "AGENTS.md", "gemini": "GEMINI.md"}[preset]
    (tmp_path / name).write_text("Project notes.\n", encoding="utf-8")
    text = f"version: 1\nformatter: {{preset: {preset}}}\nsources:\n  # - notes.md\n  # - more.md\nloader:\n"
    config = yaml.safe_load(text)
    assert config["sources"] is None and config["loader"] is None
    monkeypatch.chdir(tmp_path)

    with capture_logs() as logs:
        render = Pipeline.from_config({**config, "base_dir": str(tmp_path)}).build({})

    assert "Project notes." in render.text
    assert [r.source for r in render.sources if r.via == "discover"] == [str(tmp_path / name)]
    [built] = events_named(logs, "prompt_built")
    assert built["sources_loaded"] == 1


def test_a_null_number_under_a_tool_preset_is_a_value_not_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`formatter.budget.max_bytes: null` turns codex's 32 KiB budget off: a null number is not a missing one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "AGENTS.md").write_text("x" * 40000, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load("version: 1\nformatter:\n  preset: codex\n  budget: {max_bytes: null}\n")

    render = Pipeline.from_config({**config, "base_dir": str(tmp_path)}).build({})

    assert render.text == "x" * 40000
