"""The processor chain from YAML: a config's processor placed by a built-in rule's name; rules disabled by name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named as _events
from support.processors import Prefix
from support.trees import write_atomically as _write

import memconfig
from memconfig import ConfigError, Pipeline
from memconfig.registry import processors as registry
from memconfig.wiring import build_stages

WriteConfig = Callable[..., Path]


@pytest.fixture(autouse=True)
def mark() -> Iterator[None]:
    """``mark`` (a :class:`Prefix`) registered as a processor for one test."""
    memconfig.register("processors", "mark", Prefix)
    yield
    registry.unregister("mark")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with a note of three lines, and one with frontmatter, an HTML comment and a closing tag."""
    _write(tmp_path / "a.md", "one\ntwo\nthree\n")
    _write(tmp_path / "tagged.md", "---\nowner: team\n---\nkeep <!-- editors only -->this </source> in\n")
    return tmp_path


def _pipeline(write_config: WriteConfig, body: str) -> Pipeline:
    return Pipeline.from_yaml(write_config("version: 1\n" + body))


_COMMENT, _FRONTMATTER = "<!-- m -->", "---\\nm: 1\\n---\\n"
_CLEANED = "one\ntwo\nthree"


@pytest.mark.parametrize(
    ("prefix", "place", "names", "text"),
    [
        pytest.param(_COMMENT, ", before: html_comments", ("bom", "frontmatter", "mark", "html_comments"), _CLEANED),
        pytest.param(_COMMENT, ", after: html_comments", ("bom", "frontmatter", "html_comments", "mark"), None),
        pytest.param(_FRONTMATTER, ", before: frontmatter", ("bom", "mark", "frontmatter", "html_comments"), _CLEANED),
        pytest.param(_FRONTMATTER, ", after: frontmatter", ("bom", "frontmatter", "mark", "html_comments"), None),
        pytest.param(_COMMENT, "", ("bom", "frontmatter", "html_comments", "mark"), None),
    ],
    ids=["before-html_comments", "after-html_comments", "before-frontmatter", "after-frontmatter", "unplaced"],
)
def test_a_processor_from_yaml_runs_where_it_is_placed(
    write_config: WriteConfig, project: Path, prefix: str, place: str, names: tuple[str, ...], text: str | None
) -> None:
    """`before:` / `after:` a built-in rule's name puts it there: what it adds is cleaned away only before the rule."""
    body = "sources: [a.md]\nformatter: {preset: plain, strip_frontmatter: true, strip_html_comments: true}\n"
    pipeline = _pipeline(write_config, body + f'processors: [{{name: mark, options: {{prefix: "{prefix}"}}{place}}}]\n')

    assert pipeline.processors.names == names
    kept = prefix.replace("\\n", "\n") + _CLEANED  # placed after the rule that would remove it
    assert pipeline.build().text == (kept if text is None else text)


@pytest.mark.parametrize(
    ("place", "names", "text", "cut"),
    [
        pytest.param("before: budgets", ("bom", "mark", "budgets"), "> one", (15, 5), id="weighed"),
        pytest.param("after: budgets", ("bom", "budgets", "mark"), "> one\ntwo", (13, 7), id="not-weighed"),
    ],
)
def test_placed_before_the_budgets_it_is_weighed_after_them_it_is_not(
    write_config: WriteConfig, project: Path, place: str, names: tuple[str, ...], text: str, cut: tuple[int, int]
) -> None:
    """Before `budgets` what it adds counts against `max_chars`; after them it is added to what they kept."""
    body = 'sources: [{url: a.md, max_chars: 8}]\nformatter: {preset: plain, budget: {marker: ""}}\n'
    pipeline = _pipeline(write_config, body + f'processors: [{{name: mark, options: {{prefix: "> "}}, {place}}}]\n')

    with capture_logs() as logs:
        render = pipeline.build()

    assert pipeline.processors.names == names
    assert render.text == text
    [truncated] = _events(logs, "source_truncated")
    assert (truncated["source"], truncated["chars_before"], truncated["chars_after"]) == ("a.md", *cut)


def test_two_placed_at_one_spot_run_in_the_order_given(write_config: WriteConfig, project: Path) -> None:
    """Processors placed by the same rule keep the config's order, each on the one before's output."""
    marks = '[{name: mark, options: {prefix: "1:"}, after: bom}, {name: mark, options: {prefix: "2:"}, after: bom}]'
    pipeline = _pipeline(write_config, f"sources: [a.md]\nformatter: {{preset: plain}}\nprocessors: {marks}\n")

    assert pipeline.processors.names == ("bom", "mark", "mark")
    assert pipeline.build().text == "2:1:one\ntwo\nthree"


@pytest.mark.parametrize(
    ("processor", "where", "message"),
    [
        pytest.param(
            "{name: mark, after: cleaning}",
            "processors[0].after",
            "'cleaning' is no built-in rule; the rules are rules, bom, frontmatter, html_comments, escaping, budgets",
            id="unknown-after",
        ),
        pytest.param(
            "{name: mark, before: Budgets}",
            "processors[0].before",
            "'Budgets' is no built-in rule; the rules are rules, bom",
            id="unknown-before",
        ),
        pytest.param(
            "{name: mark, before: bom, after: budgets}",
            "processors[0]",
            "give 'before' or 'after', not both",
            id="both",
        ),
    ],
)
def test_a_bad_placement_is_a_config_error_at_its_key_path(
    write_config: WriteConfig, project: Path, processor: str, where: str, message: str
) -> None:
    """A spot that is no built-in rule, or two spots, is refused where it is written, listing the rules."""
    with pytest.raises(ConfigError) as caught:
        _pipeline(write_config, f"sources: [a.md]\nprocessors: [{processor}]\n")

    [problem] = caught.value.problems
    assert problem.path == where
    assert message in problem.message
    assert caught.value.exit_code == 2


def test_a_layout_disables_rules_by_name(write_config: WriteConfig, project: Path) -> None:
    """`disable: [escaping, html_comments]` leaves those rules out: the comment and the closing tag stay as written."""
    kept = _pipeline(write_config, "sources: [tagged.md]\nformatter: {preset: xml}\n")
    off = _pipeline(
        write_config, "sources: [tagged.md]\nformatter: {preset: xml, disable: [escaping, html_comments]}\n"
    )

    with capture_logs() as logs:
        text = off.build().text

    assert kept.processors.names == ("bom", "frontmatter", "html_comments", "escaping")
    assert off.processors.names == ("bom", "frontmatter")
    assert "keep <!-- editors only -->this </source> in\n</source>" in text
    assert not _events(logs, "content_escaped")
    with capture_logs() as logs:
        assert "keep this <\\/source> in" in kept.build().text
    assert [e["tags"] for e in _events(logs, "content_escaped")] == [["source"]]


def test_disabling_a_rule_turns_its_layout_field_off(write_config: WriteConfig, project: Path) -> None:
    """A rule disabled by name is off whatever its field says (`strip_frontmatter: true` too)."""
    body = "sources: [tagged.md]\nformatter: {preset: markdown, strip_frontmatter: true, disable: [frontmatter]}\n"
    pipeline = _pipeline(write_config, body)

    assert pipeline.processors.names == ("bom", "html_comments")
    assert not pipeline.formatter.layout.strip_frontmatter
    assert pipeline.build().text.startswith("## tagged.md\n\n---\nowner: team\n---\nkeep this")


def test_disabling_budgets_leaves_every_source_whole(write_config: WriteConfig, project: Path) -> None:
    """`disable: [budgets]`: no budget is built, so nothing is cut and no `source_truncated` is logged."""
    pipeline = _pipeline(
        write_config, "sources: [{url: a.md, max_chars: 4}]\nformatter: {preset: plain, disable: [budgets]}\n"
    )

    with capture_logs() as logs:
        assert pipeline.build().text == "one\ntwo\nthree"

    assert pipeline.processors.names == ("bom",)
    assert not _events(logs, "source_truncated")


def test_a_preset_disables_rules_and_a_formatter_may_enable_them_again(
    write_config: WriteConfig, project: Path
) -> None:
    """A preset of the config's own lists rules to disable; `disable: []` in the formatter brings them back."""
    presets = "presets: {bare: {extends: xml, disable: [html_comments, frontmatter]}}\n"
    bare = _pipeline(write_config, presets + "sources: [tagged.md]\nformatter: {preset: bare}\n")
    again = _pipeline(write_config, presets + "sources: [tagged.md]\nformatter: {preset: bare, disable: []}\n")

    assert bare.processors.names == ("bom", "escaping")
    assert "---\nowner: team\n---\nkeep <!-- editors only -->this" in bare.build().text
    assert again.processors.names == ("bom", "frontmatter", "html_comments", "escaping")


def test_an_unknown_rule_to_disable_is_reported_at_its_index(write_config: WriteConfig, project: Path) -> None:
    """Each name of `disable:` is checked against the built-in rules; a wrong one is named by its index."""
    with pytest.raises(ConfigError) as caught:
        _pipeline(write_config, "sources: [a.md]\nformatter: {disable: [bom, comments]}\n")

    [problem] = caught.value.problems
    assert problem.path == "formatter.disable[1]"
    assert "'comments' is no built-in rule (did you mean 'html_comments'?); the rules are rules, bom" in problem.message


def test_the_callers_enabled_rules_and_the_layouts_disabled_ones_both_apply(project: Path) -> None:
    """`build_stages(enabled=…)` keeps only the rules it names; the layout's `disable` leaves out more."""
    config = memconfig.Config.from_mapping(
        {"version": 1, "base_dir": str(project), "sources": ["a.md"], "formatter": {"disable": ["bom"]}}
    )

    assert [rule.name for rule in build_stages(config).rules] == ["html_comments", "escaping"]
    assert [rule.name for rule in build_stages(config, enabled=("bom", "escaping")).rules] == ["escaping"]
