"""Hypothesis strategies for template and config tests."""

from __future__ import annotations

from hypothesis import strategies as st

SLOTS = ("agent_memory", "path", "name", "content")

#: Text that looks like a template to a careless engine: slots, positional fields, braces.
_TRICKY = st.sampled_from(
    [
        "{agent_memory}",
        "{0}",
        "{}",
        "{{",
        "}}",
        "{",
        "}",
        "{path}",
        "{name!r}",
        "{content:>10}",
        "{agent_memory.__class__}",
        "{x[0]}",
        "$",
        "${HOME}",
        "\\",
        "\x00",
        "\n",
        "é",
        "🧠",
        "\u202e",
    ]
)

#: Any string a memory file could hold, biased towards brace-heavy and non-ASCII text.
contents = st.one_of(st.text(), st.lists(st.one_of(_TRICKY, st.text(max_size=5))).map("".join))

#: Literal text with no brace in it.
plain_text = st.text().map(lambda s: s.replace("{", "").replace("}", ""))

#: A literal chunk written as a template author would: braces doubled.
literal_chunks = st.one_of(st.text(), _TRICKY).map(lambda s: s.replace("{", "{{").replace("}", "}}"))


@st.composite
def format_templates(draw: st.DrawFn, slots: tuple[str, ...] = SLOTS) -> str:
    """A template valid for both ``str.format`` and memconfig: escaped literals and named slots."""
    parts = draw(st.lists(st.one_of(literal_chunks, st.sampled_from(slots).map(lambda s: "{" + s + "}"))))
    return "".join(parts)


@st.composite
def slot_values(draw: st.DrawFn, slots: tuple[str, ...] = SLOTS) -> dict[str, str]:
    """A value for every slot, each any content at all."""
    return {slot: draw(contents) for slot in slots}


#: Strings made mostly of template syntax, valid or not.
template_soup = st.lists(
    st.one_of(
        _TRICKY,
        st.sampled_from(["{", "}", "!", ":", ".", "[", "]", "0", " "]),
        st.sampled_from(SLOTS),
        st.text(max_size=3),
    ),
    max_size=12,
).map("".join)
