"""The safe template engine: named slots only, str.format's brace rules, content verbatim."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import SLOTS, contents, format_templates, plain_text, slot_values, template_soup

from memconfig.templates import Template, TemplateError

MEMORY = {"agent_memory"}


def escape(text: str) -> str:
    """Write *text* as a template literal (the way str.format wants it)."""
    return text.replace("{", "{{").replace("}", "}}")


# -- rendering ---------------------------------------------------------------


def test_named_slot_is_substituted() -> None:
    """A named slot is replaced by its value and the literal text around it is kept."""
    template = Template("<m>\n{agent_memory}\n</m>", MEMORY, ["agent_memory"])

    assert template.render({"agent_memory": "notes"}) == "<m>\nnotes\n</m>"


def test_repeated_and_several_slots() -> None:
    """Every occurrence of every slot is filled, in place."""
    template = Template("{path}|{name}|{path}|{content}", {"path", "name", "content"})

    assert template.render({"path": "p", "name": "n", "content": "c"}) == "p|n|p|c"
    assert template.slots == frozenset({"path", "name", "content"})


def test_unused_allowed_slots_are_optional() -> None:
    """Allowed slots need not appear; only required ones must."""
    template = Template("{content}", {"path", "name", "content"})

    assert template.slots == frozenset({"content"})
    assert template.render({"content": "x"}) == "x"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("{{agent_memory}} {agent_memory}", "{agent_memory} M", id="escaped-slot-name"),
        pytest.param("{{{agent_memory}}}", "{M}", id="slot-inside-literal-braces"),
        pytest.param("}}{{ {agent_memory} {{}}", "}{ M {}", id="reversed-and-empty-braces"),
        pytest.param('{{"json": true}}\n{agent_memory}', '{"json": true}\nM', id="json-example"),
        pytest.param("{agent_memory:}", "M", id="empty-format-spec-like-str-format"),
    ],
)
def test_double_braces_are_literal_like_str_format(text: str, expected: str) -> None:
    """``{{`` and ``}}`` render as single braces, exactly as str.format renders them."""
    rendered = Template(text, MEMORY, ["agent_memory"]).render({"agent_memory": "M"})

    assert rendered == expected
    assert rendered == text.format(agent_memory="M")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("{agent_memory}", id="own-slot"),
        pytest.param("{0}", id="positional"),
        pytest.param("{{ and }}", id="double-braces"),
        pytest.param("{", id="lone-brace"),
        pytest.param("{agent_memory.__class__.__init__.__globals__}", id="attribute-chain"),
        pytest.param("${HOME} %s %(x)s", id="other-placeholders"),
        pytest.param("日本語 🧠 \u202e", id="unicode"),
    ],
)
def test_values_are_inserted_verbatim(value: str) -> None:
    """A slot's value is never parsed as a template, whatever braces it holds."""
    template = Template("[{agent_memory}]", MEMORY, ["agent_memory"])

    assert template.render({"agent_memory": value}) == f"[{value}]"


def test_text_repr_and_equality() -> None:
    """A template keeps its text, shows it in its repr, and equals a template parsed from the same text."""
    template = Template("a {agent_memory}", MEMORY)

    assert template.text == "a {agent_memory}"
    assert repr(template) == "Template('a {agent_memory}')"
    assert template == Template("a {agent_memory}", MEMORY)
    assert hash(template) == hash(Template("a {agent_memory}", MEMORY))
    assert template != Template("b {agent_memory}", MEMORY)


# -- errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{agent_memory.__class__}", "attribute or index access", id="attribute"),
        pytest.param("{agent_memory[0]}", "attribute or index access", id="index"),
        pytest.param("{0.__class__}", "attribute or index access", id="positional-attribute"),
        pytest.param("{agent_memory!r}", "conversion or format spec", id="conversion-r"),
        pytest.param("{agent_memory!s}", "conversion or format spec", id="conversion-s"),
        pytest.param("{agent_memory:>10}", "conversion or format spec", id="format-spec"),
        pytest.param("{agent_memory:{agent_memory}}", "conversion or format spec", id="nested-spec"),
        pytest.param("{agent_memory} {0}", "positional slot {0}", id="positional-index"),
        pytest.param("{agent_memory} {}", "positional slot {}", id="positional-auto"),
        pytest.param("{agent_memory} {secret}", "unknown slot {secret}; allowed: {agent_memory}", id="unknown-name"),
        pytest.param("{agent_memory} { agent_memory }", "not a plain name", id="spaces-in-name"),
        pytest.param("{agent_memory} {agent-memory}", "not a plain name", id="dash-in-name"),
        pytest.param("{agent_memory} {", "literal brace", id="lone-open-brace"),
        pytest.param("{agent_memory} }", "literal brace", id="lone-close-brace"),
        pytest.param("{agent_memory}}", "literal brace", id="extra-close-brace"),
        pytest.param("{agent_memory", "literal brace", id="unclosed-slot"),
        pytest.param("no slot here", "must contain the {agent_memory} slot", id="missing-required"),
        pytest.param("{{agent_memory}}", "must contain the {agent_memory} slot", id="escaped-required"),
        pytest.param("", "must contain the {agent_memory} slot", id="empty"),
    ],
)
def test_invalid_templates_are_rejected(text: str, message: str) -> None:
    """Anything but plain named allowed slots and balanced braces is a TemplateError saying what is wrong."""
    with pytest.raises(TemplateError) as caught:
        Template(text, MEMORY, ["agent_memory"])

    assert message in str(caught.value)


def test_template_error_is_a_value_error() -> None:
    """TemplateError subclasses ValueError, so config validation reports it like any bad value."""
    assert issubclass(TemplateError, ValueError)


def test_error_names_the_offending_slot_as_written() -> None:
    """The message shows the slot with its conversion and spec, so the user can find it."""
    with pytest.raises(TemplateError, match=r"\{agent_memory!r:>5\}"):
        Template("{agent_memory!r:>5}", MEMORY)


# -- properties ----------------------------------------------------------------


@given(prefix=plain_text, suffix=plain_text, content=contents)
def test_any_content_comes_through_verbatim(prefix: str, suffix: str, content: str) -> None:
    """Whatever a memory file holds ({agent_memory}, {0}, {{, }}, unicode), it is rendered unchanged."""
    template = Template(escape(prefix) + "{agent_memory}" + escape(suffix), MEMORY, ["agent_memory"])

    assert template.render({"agent_memory": content}) == prefix + content + suffix


@given(text=format_templates(), values=slot_values())
def test_str_format_templates_render_like_str_format(text: str, values: dict[str, str]) -> None:
    """A template written for str.format with the allowed slots renders exactly as str.format does."""
    assert Template(text, SLOTS).render(values) == text.format(**values)


@given(text=st.text())
def test_escaped_literal_round_trips(text: str) -> None:
    """Any text, with its braces doubled, parses to a slot-free template that renders back to the text."""
    template = Template(escape(text), ())

    assert template.slots == frozenset()
    assert template.render({}) == text


@given(text=format_templates(), values=slot_values())
def test_parse_is_stable(text: str, values: dict[str, str]) -> None:
    """Parsing keeps the text as written; parsing it again gives an equal template that renders the same."""
    template = Template(text, SLOTS)
    again = Template(template.text, SLOTS)

    assert template.text == text
    assert again == template
    assert again.render(values) == template.render(values)


@given(text=template_soup, values=slot_values())
def test_any_text_is_rejected_or_agrees_with_str_format(text: str, values: dict[str, str]) -> None:
    """For any text the engine either raises TemplateError or renders what str.format would; nothing else."""
    try:
        template = Template(text, SLOTS)
    except TemplateError:
        return
    assert template.render(values) == text.format(**values)
