"""User processors: run after the built-in cleaning, may change, drop or empty sections, and key the cache."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named as _events
from support.pipelines import plain_pipeline
from support.processors import Prefix
from support.trees import write_atomically as _write

from memconfig import Config, Pipeline, Processor, Section, SkipReason
from memconfig.process import Placed, StripBOM, StripHTMLComments
from memconfig.wiring import build_stages


def _pipeline(
    root: Path, sources: Sequence[Any], processors: Sequence[Processor], *, strip: bool = False, policy: str = "once"
) -> Pipeline:
    layout = {"preset": "plain", "strip_html_comments": strip}
    return plain_pipeline(root, sources, policy, processors=processors, formatter=layout)


class Recording:
    """Passes sections through unchanged, keeping the texts it saw."""

    token = "recording"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section]:
        self.seen.append([s.text for s in sections])
        return sections


class Drop:
    """Leaves out the sections whose key is in *keys*."""

    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)
        self.token = f"drop:{sorted(self.keys)}"

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section]:
        return [s for s in sections if s.source not in self.keys]


class Blank:
    """Empties the sections whose key is in *keys*, keeping them in the list."""

    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)
        self.token = f"blank:{sorted(self.keys)}"

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section]:
        return [dataclasses.replace(s, text="") if s.source in self.keys else s for s in sections]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with three notes."""
    for name, text in {"a.md": "alpha", "b.md": "beta", "c.md": "gamma"}.items():
        _write(tmp_path / name, text)
    return tmp_path


def test_section_is_a_frozen_dataclass_that_replace_copies() -> None:
    """Section has the eight documented fields; it is frozen and `dataclasses.replace` makes a changed copy."""
    section = Section("a.md", "A", "/x/a.md", "text", "abc", None, None)
    fields = ["source", "name", "url", "text", "sha256", "parent", "via", "read_bytes"]
    assert [f.name for f in dataclasses.fields(Section)] == fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        section.text = "other"  # type: ignore[misc]
    changed = dataclasses.replace(section, text="other")
    assert (changed.text, changed.source, section.text) == ("other", "a.md", "text")
    assert section.with_text("other") == changed
    read = Section("a.md", "A", "/x/a.md", "text", "abc", None, None, 4)
    assert read.with_text("other").read_bytes is None  # the size as read no longer tells the text's


@pytest.mark.parametrize(
    ("strip", "expected"),
    [
        pytest.param(True, [StripBOM(), StripHTMLComments()], id="comments-stripped"),
        pytest.param(False, [StripBOM()], id="comments-kept"),
    ],
)
def test_user_processors_run_after_the_builtin_cleaning(project: Path, strip: bool, expected: list[Any]) -> None:
    """The chain is StripBOM, StripHTMLComments (if the layout strips them), then the user's."""
    recording = Recording()
    pipeline = _pipeline(project, ["a.md"], [recording], strip=strip)
    assert list(pipeline.processors.processors) == [*expected, recording]


def test_user_processor_sees_cleaned_text(project: Path) -> None:
    """A user processor gets text with the BOM and HTML comments gone; the formatter strips trailing space."""
    (project / "messy.md").write_bytes("\ufeffkeep <!-- note for editors -->this  \n\n".encode())
    recording = Recording()
    render = _pipeline(project, ["messy.md"], [recording], strip=True).build({})
    assert recording.seen == [["keep this  \n\n"]]
    assert render.text == "keep this"
    assert render.sources[0].chars == len("keep this")


def test_processor_changes_reach_the_block_in_order(project: Path) -> None:
    """Processors run in the order given, each on the previous one's output."""
    render = _pipeline(project, ["a.md", "b.md"], [Prefix("1:"), Prefix("2:")]).build({})
    assert render.text == "2:1:alpha\n\n2:1:beta"
    assert [r.chars for r in render.sources] == [len("2:1:alpha"), len("2:1:beta")]


def test_section_left_out_is_dropped_with_an_event_and_a_record(project: Path) -> None:
    """A section a processor leaves out logs `source_dropped` and its record is skipped as `dropped`."""
    drop = Drop("b.md")
    with capture_logs() as logs:
        render = _pipeline(project, ["a.md", "b.md", "c.md"], [drop]).build({})
    assert render.text == "alpha\n\ngamma"
    [event] = _events(logs, "source_dropped")
    assert {k: event[k] for k in ("source", "reason", "processor", "chars", "log_level")} == {
        "source": "b.md",
        "reason": "dropped",
        "processor": drop.token,
        "chars": len("beta"),
        "log_level": "warning",
    }
    record = render.sources[1]
    assert (record.source, record.status, record.reason, record.chars) == ("b.md", "skipped", SkipReason.DROPPED, 0)
    assert drop.token in record.detail
    assert (render.counts["dropped"], render.counts["sources_loaded"], render.counts["sources_skipped"]) == (1, 2, 1)
    [built] = _events(logs, "prompt_built")
    assert (built["dropped"], built["sources_loaded"], built["sources_skipped"]) == (1, 2, 1)


def test_section_emptied_is_dropped_as_empty(project: Path) -> None:
    """A section a processor leaves with no text is out of the prompt with reason `empty`."""
    blank = Blank("a.md")
    with capture_logs() as logs:
        render = _pipeline(project, ["a.md", "b.md"], [blank]).build({})
    assert render.text == "beta"
    [event] = _events(logs, "source_dropped")
    assert (event["source"], event["reason"], event["processor"]) == ("a.md", "empty", blank.token)
    assert (render.sources[0].status, render.sources[0].reason) == ("skipped", SkipReason.EMPTY)


def test_every_state_that_loads_a_dropped_source_logs_the_drop(project: Path) -> None:
    """Each render that logs `source_loaded` for a source it then drops also logs `source_dropped` for it."""
    pipeline = _pipeline(project, ["a.md", "b.md"], [Drop("b.md")])
    for _ in range(2):  # two threads' states: the second one reads the same contents
        with capture_logs() as logs:
            render = pipeline.build({})
        assert render.text == "alpha"
        assert [e["source"] for e in _events(logs, "source_loaded")] == ["a.md", "b.md"]
        assert [e["source"] for e in _events(logs, "source_dropped")] == ["b.md"]


def test_changing_a_processors_token_reads_the_state_afresh(project: Path) -> None:
    """A state made under one processor setting is read again under another (`made_for` differs)."""
    state: dict[str, Any] = {}
    assert _pipeline(project, ["a.md"], [Prefix("old:")]).render(state=state) == "old:alpha"
    made_for = state["memory_contents_meta"]["made_for"]
    _write(project / "a.md", "alpha edited")
    assert _pipeline(project, ["a.md"], [Prefix("old:")]).render(state=state) == "old:alpha"  # once: kept
    assert _pipeline(project, ["a.md"], [Prefix("new:")]).render(state=state) == "new:alpha edited"
    assert state["memory_contents_meta"]["made_for"] != made_for


def test_processor_does_not_change_what_the_state_holds(project: Path) -> None:
    """State keeps the content as read; processing happens on every block made from it."""
    state: dict[str, Any] = {}
    _pipeline(project, ["a.md"], [Prefix(">> ")]).build(state)
    assert state["memory_contents"] == {"a.md": "alpha"}


def test_processor_satisfies_the_protocol() -> None:
    """Any object with a `token` and `__call__` is a Processor."""
    assert isinstance(Prefix("x"), Processor)
    assert isinstance(Drop("a.md"), Processor)


def test_chain_names_its_rules_in_order_and_shows_them(project: Path) -> None:
    """The chain is a named list: built-in rules in their fixed order, the user's after escaping, budgets last."""
    config = {
        "version": 1,
        "base_dir": str(project),
        "sources": [{"url": "a.md", "max_chars": 3}],
        "formatter": {"preset": "xml"},
    }
    pipeline = Pipeline.from_config(config, processors=[Prefix("> ")])
    assert pipeline.processors.names == ("bom", "frontmatter", "html_comments", "escaping", "Prefix", "budgets")
    assert "bom=StripBOM()" in repr(pipeline) and "Prefix=prefix:> " in repr(pipeline)


@pytest.mark.parametrize(
    ("placed", "names", "text"),
    [
        pytest.param(
            Placed(Prefix("<!-- x -->"), before="html_comments"), ["Prefix", "html_comments"], "alpha", id="before"
        ),
        pytest.param(
            Placed(Prefix("<!-- x -->"), after="html_comments"),
            ["html_comments", "Prefix"],
            "<!-- x -->alpha",
            id="after",
        ),
    ],
)
def test_a_placed_processor_runs_where_it_is_placed(project: Path, placed: Placed, names: list[str], text: str) -> None:
    """Placed before the comment stripping, what it adds is stripped; placed after it, it stays."""
    pipeline = _pipeline(project, ["a.md"], [placed], strip=True)
    assert [n for n in pipeline.processors.names if n in names] == names
    assert pipeline.build({}).text == text


def test_placed_names_its_rule_and_refuses_an_unknown_one() -> None:
    """A name of the caller's own for a placed processor; a spot that is no built-in rule lists the rules."""
    assert Placed(Prefix("x"), before="budgets", name="quote").rule.name == "quote"
    with pytest.raises(ValueError, match="'cleaning' is no built-in rule; the rules are rules, bom"):
        Placed(Prefix("x"), after="cleaning")
    with pytest.raises(ValueError, match="exactly one of before= or after="):
        Placed(Prefix("x"))


def test_placed_by_a_disabled_rule_keeps_its_place(project: Path) -> None:
    """A layout with no tags has no escaping rule; a processor placed before it still runs before the budgets."""
    config = {
        "version": 1,
        "base_dir": str(project),
        "sources": [{"url": "a.md", "max_chars": 100}],
        "formatter": {"preset": "plain"},
    }
    pipeline = Pipeline.from_config(config, processors=[Placed(Prefix("> "), before="escaping")])
    assert pipeline.processors.names == ("bom", "Prefix", "budgets")
    assert pipeline.build({}).text == "> alpha"


def test_enabled_rules_by_name_leave_the_others_out(project: Path) -> None:
    """Rules are enabled by name (the deepagents drop-in keeps HTML comments' only): the others are not built."""
    config = Config.from_mapping({"version": 1, "base_dir": str(project), "sources": ["a.md"]})
    stages = build_stages(config, enabled=("html_comments",))
    assert [rule.name for rule in stages.rules] == ["html_comments"]
    assert [rule.name for rule in build_stages(config).rules] == ["bom", "html_comments", "escaping"]
