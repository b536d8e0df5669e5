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


# -- config loading --------------------------------------------------------------------------

#: The config's own keys, so that generated mappings reach past "unknown key" into each field's checks.
CONFIG_KEYS = (
    "version",
    "sources",
    "base_dir",
    "credentials_file",
    "storage",
    "loader",
    "cache",
    "formatter",
    "appender",
    "logging",
    "url",
    "glob",
    "name",
    "required",
    "storage_options",
    "credentials",
    "timeout",
    "retries",
    "encoding",
    "on_decode_error",
    "max_bytes",
    "concurrency",
    "backoff",
    "allowed_roots",
    "allowed_protocols",
    "allowed_hosts",
    "policy",
    "ttl",
    "state_key",
    "preset",
    "template",
    "template_file",
    "section",
    "separator",
    "empty",
    "strip_html_comments",
    "format",
    "position",
    "level",
    "file",
)

#: Strings a config value might hold: URLs of every kind, variables, templates, paths, junk.
config_strings = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "a.md",
            "./a.md",
            "~/x.md",
            "*.md",
            "memory://m/AGENTS.md",
            "file:///nonexistent/x.md",
            "https://h.invalid/x.md",
            "http://[::1/x.md",
            "http://h:99999/x",
            "http://h\x00/x",
            "s3://bucket/key.md",
            "zip://a.md::missing.zip",
            "git://repo:v1@AGENTS.md",
            "nosuch://x",
            "${UNSET_VARIABLE_FOR_TESTS}",
            "${HOME}",
            "${HOME:-x}",
            "${",
            "$$",
            "{agent_memory}",
            "{content}",
            "{agent_memory.__class__}",
            "{x[0]}",
            "{0}",
            "utf-8",
            "no-such-codec",
            "skip",
            "replace",
            "fail",
            "once",
            "revalidate",
            "ttl",
            "always",
            "deepagents",
            "plain",
            "markdown",
            "text",
            "append",
            "prepend",
            "json",
            "console",
            "INFO",
            "",
            " ",
        ]
    ),
)

#: Scalars as YAML gives them, awkward ones included.
config_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    config_strings,
)

#: Any nested data YAML could produce, keyed mostly by the config's own names (and some that are not strings).
config_trees = st.recursive(
    config_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(CONFIG_KEYS), st.text(max_size=8), st.integers(), st.booleans(), st.none()),
            children,
            max_size=5,
        ),
    ),
    max_leaves=30,
)


@st.composite
def config_mappings(draw: st.DrawFn) -> dict[object, object]:
    """A top-level mapping that usually says ``version: 1`` and fills real sections with any data."""
    data = draw(st.dictionaries(st.sampled_from(CONFIG_KEYS[:10]), config_trees, max_size=6))
    if draw(st.booleans()):
        data["version"] = 1
    if draw(st.booleans()):
        data["sources"] = draw(st.lists(st.one_of(config_strings, config_trees), max_size=4))
    return data


#: YAML syntax and tricks: anchors, aliases, merge keys, tags, flow and block collections, variables.
_YAML_PIECES = st.sampled_from(
    [
        "version: 1\n",
        "sources:\n",
        "  - ",
        "- ",
        "a.md\n",
        "url: ",
        "glob: ",
        "formatter:\n",
        "  preset: ",
        "loader: {",
        "cache: {policy: ",
        "}",
        "{",
        "[",
        "]",
        ": ",
        ", ",
        "\n",
        "  ",
        "\t",
        "&a ",
        "*a",
        "<<: *a\n",
        "!!str ",
        "!!binary ",
        "!!python/object:os.system ",
        "!!set {a, b}",
        "!custom ",
        "? ",
        "|\n  ",
        ">-\n  ",
        "'",
        '"',
        '"\\x00"',
        '"\\ud800"',
        "#",
        "---\n",
        "...\n",
        "%YAML 1.1\n",
        "${HOME}",
        "${UNSET_VARIABLE_FOR_TESTS}",
        "~",
        "null",
        "yes",
        "on",
        "0x1F",
        "1e400",
        ".nan",
        "2001-12-14",
        "\ufeff",
        "\x00",
        "\x85",
        "\u2028",
    ]
)

#: Text for a YAML config file: mostly YAML-shaped, sometimes anything at all.
yaml_texts = st.one_of(
    st.lists(st.one_of(_YAML_PIECES, config_strings), max_size=40).map("".join),
    st.text(max_size=200),
)


# -- source content --------------------------------------------------------------------------

#: Bytes a memory file could hold: text, BOMs, comments, trailing whitespace, invalid UTF-8, NUL.
_CONTENT_PIECES = st.sampled_from(
    [
        b"\xef\xbb\xbf",
        b"<!--",
        b"-->",
        b"<!-- note -->",
        b"<",
        b" ",
        b"\n",
        b"\r\n",
        b"\t",
        b"\x0b\x0c",
        b"\x00",
        b"\xff",
        b"\xc3",
        b"\xed\xa0\x80",  # an encoded surrogate: not valid UTF-8
        "é".encode(),
        "\u2028".encode(),
        "\x85".encode(),
        "\u3000".encode(),
        b"\x1c\x1d\x1e\x1f",
        b"{agent_memory}",
        b"{path}",
        b"{{",
        b"}",
    ]
)

#: The bytes of one source file.
content_bytes = st.one_of(
    st.lists(
        st.one_of(_CONTENT_PIECES, contents.map(str.encode), st.binary(max_size=6)),
        max_size=12,
    ).map(b"".join),
    st.binary(max_size=64),
)
