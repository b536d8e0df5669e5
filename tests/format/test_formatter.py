"""The formatter stage (sections, separators, templates, the empty text), with the built-in cleaning before it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memconfig import Block, Section, TemplateFormatter
from memconfig.format.presets import PRESETS, Preset
from memconfig.process import Cleaning, ProcessorChain


class _Formatted:
    """A formatter behind the built-in cleaning of its layout, as a pipeline runs them."""

    def __init__(self, layout: Preset = PRESETS["deepagents"]) -> None:
        self.formatter = TemplateFormatter(layout)
        self.chain = ProcessorChain(Cleaning(layout.strip_html_comments).steps)

    def format(self, sections: list[Section]) -> Block:
        return self.formatter.format(self.chain(sections)[0])


def _snapshot(*pairs: tuple[str, str]) -> list[Section]:
    return [Section(key, key.upper(), key, content, f"sha-{i}") for i, (key, content) in enumerate(pairs)]


def test_deepagents_layout() -> None:
    """Each section is the path, a blank line and the content; sections are joined by a blank line."""
    formatter = _Formatted(Preset("<m>\n{agent_memory}\n</m>", **_rest("deepagents")))
    block = formatter.format(_snapshot(("a.md", "alpha\n\n"), ("b.md", "beta")))
    assert block.text == "<m>\na.md\n\nalpha\n\nb.md\n\nbeta\n</m>"


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        pytest.param("keep <!-- drop --> this", "keep  this", id="inline-comment"),
        pytest.param("a<!--\nmulti\nline\n-->b", "ab", id="multiline-comment"),
        pytest.param("text   \n\n", "text", id="trailing-space"),
        pytest.param("  leading kept", "  leading kept", id="leading-space-kept"),
    ],
)
def test_clean_strips_comments_and_trailing_space(content: str, shown: str) -> None:
    """HTML comments are removed (cleaning) and content is right-stripped (layout), as deepagents does."""
    layout = Preset("{agent_memory}", section="{content}", separator="\n", empty="-", strip_html_comments=True)
    assert _Formatted(layout).format(_snapshot(("a", content))).text == shown


def test_sources_empty_after_cleaning_are_left_out() -> None:
    """A comment-only entry produces no section; with nothing left the empty text is used."""
    formatter = _Formatted(Preset("[{agent_memory}]", **_rest("deepagents")))
    assert formatter.format(_snapshot(("a", "<!-- x -->"))).text == "[(No memory loaded)]"
    assert formatter.format(_snapshot()).text == "[(No memory loaded)]"


def test_name_slot_and_custom_separator() -> None:
    """A section can use {name}; the separator is the configured one."""
    layout = Preset(
        "{agent_memory}", section="# {name}\n{content}", separator="\n---\n", empty="", strip_html_comments=False
    )
    block = _Formatted(layout).format(_snapshot(("a", "x <!-- y -->"), ("b", "z")))
    assert block.text == "# A\nx <!-- y -->\n---\n# B\nz"


def test_plain_preset_is_just_the_contents() -> None:
    """The plain preset joins contents with a blank line and nothing else."""
    block = _Formatted(PRESETS["plain"]).format(_snapshot(("a", "one"), ("b", "two")))
    assert block.text == "one\n\ntwo"


def test_formatter_token_names_its_layout() -> None:
    """Two layouts that differ in any field have different tokens; the same layout, the same token."""
    base = PRESETS["deepagents"]
    assert TemplateFormatter(base).token == TemplateFormatter(PRESETS["deepagents"]).token
    other = Preset(base.template, base.section, "\n---\n", base.empty, base.strip_html_comments)
    assert TemplateFormatter(other).token != TemplateFormatter(base).token


@given(st.text())
def test_any_content_comes_through_verbatim(content: str) -> None:
    """Whatever a file holds (braces, slots, unicode) appears unchanged in the block."""
    layout = Preset("{{ {agent_memory} }}", section="{content}", separator="\n", empty="-", strip_html_comments=False)
    text = _Formatted(layout).format(_snapshot(("a", content + "x"))).text
    assert text == "{ " + (content + "x").removeprefix("\ufeff").rstrip() + " }"


def _rest(preset: str) -> dict[str, object]:
    layout = PRESETS[preset]
    return {
        "section": layout.section,
        "separator": layout.separator,
        "empty": layout.empty,
        "strip_html_comments": layout.strip_html_comments,
    }


class CountingFormatter(TemplateFormatter):
    """Counts the sections it lays out (rather than takes again from the call before)."""

    laid_out = 0

    def _pieces(self, item: Section) -> tuple[list[str], int]:
        self.laid_out += 1
        return super()._pieces(item)


def test_each_call_lays_out_only_the_sections_that_changed() -> None:
    """One section replaced per call: that one alone is laid out again, call after call, and the block is as fresh."""
    sections = [Section(f"/m/{i}.md", f"{i}.md", f"/m/{i}.md", f"text {i}") for i in range(6)]
    formatter = CountingFormatter()
    formatter.format(sections)
    formatter.format(sections)
    counts = []
    for turn in range(5):
        sections[turn] = sections[turn].with_text(f"edited {turn}")
        formatter.laid_out = 0
        block = formatter.format(sections)
        counts.append(formatter.laid_out)
        assert block == TemplateFormatter().format(sections)
    assert counts == [1, 1, 1, 1, 1]


@pytest.mark.parametrize(
    "text",
    [
        "trailing newline\n",
        "trailing spaces and lines  \n\n",
        "a closing tag at the end </agent_memory>\n",
        "a closing tag begun at the end </agent_mem  \n",
        "nothing to trim",
    ],
)
def test_a_section_taken_again_gives_the_block_a_fresh_formatter_gives(text: str) -> None:
    """Kept from one call to the next without its trimmed text, a section is laid out as before, escapes and all."""
    layout = PRESETS["deepagents"]
    sections = [Section(f"/m/{i}.md", f"{i}.md", f"/m/{i}.md", f"{text} {i}\n" if i else text) for i in range(3)]
    formatter = TemplateFormatter(layout)
    formatter.format(sections)
    formatter.format(sections)  # kept from the second call on
    sections[1] = sections[1].with_text("edited\n")

    assert formatter.format(sections) == TemplateFormatter(layout).format(sections)


def test_what_is_kept_between_calls_holds_a_bounded_copy_of_the_texts() -> None:
    """A trimmed text is a copy of the section's: the formatter keeps at most so many characters of such copies
    (the others keep the place of their content), so a large prompt is not held twice."""
    import tracemalloc

    from memconfig.limits import MAX_HELD_CHARS as _COPIES_HELD

    sections = [Section(f"/m/{i}.md", f"{i}.md", f"/m/{i}.md", f"{i:04d}" + "x" * 20_000 + "\n") for i in range(500)]
    texts = sum(len(s.text) for s in sections)
    assert texts > 2 * _COPIES_HELD
    formatter = TemplateFormatter()
    tracemalloc.start()
    try:
        formatter.format(sections)
        block = formatter.format(sections)  # what this call lays out is kept for the next
        held = tracemalloc.get_traced_memory()[0]
        sections[450] = sections[450].with_text("edited\n")
        again = formatter.format(sections)  # sections past the bound trimmed again, the same block
    finally:
        tracemalloc.stop()
    assert len(block.text) > texts
    assert held < len(block.text) + _COPIES_HELD + texts // 10  # the block, and at most the bound of copies
    assert again == TemplateFormatter().format(sections)
