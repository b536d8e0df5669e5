"""Loading YAML configs: defaults, validation with key paths, variables, env overrides, paths, secrets."""

from __future__ import annotations

import os
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memconfig import Config, ConfigError, MemconfigError, Pipeline, Problem, load_config
from memconfig.format.presets import PRESETS
from memconfig.interpolation import expand_vars

WriteConfig = Callable[..., Path]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No MEMCONFIG_* override from the outer environment leaks into a test."""
    for name in list(os.environ):
        if name.upper().startswith("MEMCONFIG_"):
            monkeypatch.delenv(name)
    yield


def config_error(path: Path | str) -> ConfigError:
    """Load *path*, expecting a ConfigError, and return it."""
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value


def mapping_error(data: dict[str, Any], **kwargs: Any) -> ConfigError:
    """Validate *data*, expecting a ConfigError, and return it."""
    with pytest.raises(ConfigError) as caught:
        Config.from_mapping(data, **kwargs)
    return caught.value


# -- defaults and sources ------------------------------------------------------


def test_minimal_config_has_documented_defaults(write_config: WriteConfig, tmp_path: Path) -> None:
    """``version: 1`` alone gives every documented default."""
    config = load_config(write_config({"version": 1}))

    assert config.version == 1
    assert config.sources == []
    assert config.loader.encoding == "utf-8"
    assert config.loader.on_decode_error == "skip"
    assert config.loader.max_bytes == 1 << 20
    assert config.cache.policy == "once"
    assert config.cache.state_key == "memory_contents"
    assert config.formatter.preset == "deepagents"
    assert config.formatter.layout() == PRESETS["deepagents"]
    assert config.appender.separator == "\n\n"
    assert config.appender.position == "append"
    assert (config.logging.format, config.logging.level, config.logging.file) == ("auto", "info", None)
    assert config.base_path == tmp_path
    assert config.file == str(tmp_path / "memconfig.yaml")
    assert config.template_text is None


def test_processors_are_placed_by_a_rules_name_and_rules_are_disabled_by_name(write_config: WriteConfig) -> None:
    """`processors:` entries read `before:` / `after:` (a bare name is neither); `disable:` is a list of rule names."""
    text = (
        "version: 1\n"
        "processors: [strip_bom, {name: strip_html_comments, after: frontmatter}, {name: strip_bom, before: budgets}]\n"
        "formatter: {preset: xml, disable: [escaping]}\n"
    )
    config = load_config(write_config(text))

    assert [(p.name, p.before, p.after) for p in config.processors] == [
        ("strip_bom", None, None),
        ("strip_html_comments", None, "frontmatter"),
        ("strip_bom", "budgets", None),
    ]
    layout = config.formatter.layout()
    assert (layout.disable, layout.escape) == (("escaping",), False)


def test_string_and_mapping_sources(write_config: WriteConfig) -> None:
    """A source is a URL string or a mapping; ``name`` defaults to the URL as written, ``required`` to false."""
    config = load_config(
        write_config(
            {
                "version": 1,
                "sources": [
                    "notes/AGENTS.md",
                    {"url": "memory://team.md", "name": "team", "required": True},
                    {"url": "~/x/${USER_DIR:-me}.md"},
                ],
            }
        )
    )

    first, second, third = config.sources
    assert (first.url, first.name, first.display_name, first.required) == (
        "notes/AGENTS.md",
        None,
        "notes/AGENTS.md",
        False,
    )
    assert (second.url, second.display_name, second.required) == ("memory://team.md", "team", True)
    assert third.url == third.display_name == "~/x/${USER_DIR:-me}.md"


def test_glob_source_is_kept_as_written(write_config: WriteConfig) -> None:
    """A ``glob`` source keeps its pattern as written, which is also its default name."""
    config = load_config(write_config({"version": 1, "sources": [{"glob": "rules/*.md"}]}))

    assert config.sources[0].glob == "rules/*.md"
    assert config.sources[0].url is None
    assert config.sources[0].display_name == "rules/*.md"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("version: 1\nsources:\n  # - a.md\n", [], id="sources-all-commented-out"),
        pytest.param("version: 1\nsources: []\n", [], id="sources-empty-list"),
        pytest.param("version: 1\nformatter:\n  # preset: plain\n", [], id="section-all-commented-out"),
    ],
)
def test_empty_sections_mean_defaults(write_config: WriteConfig, text: str, expected: list[Any]) -> None:
    """A section whose entries are all commented out (YAML null) counts as absent, not as an error."""
    config = load_config(write_config(text))

    assert config.sources == expected
    assert config.formatter.preset == "deepagents"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param({"name": "x"}, "sources[0]: give exactly one of 'url' or 'glob'", id="neither-url-nor-glob"),
        pytest.param({"url": "a", "glob": "b*"}, "sources[0]: give exactly one of 'url' or 'glob'", id="both"),
        pytest.param("  ", "sources[0]: the source location is empty", id="blank-url"),
        pytest.param(3, "sources[0]: must be a URL string or a mapping", id="number"),
        pytest.param(["a.md"], "sources[0]: must be a URL string or a mapping", id="nested-list"),
        pytest.param({"url": "a", "required": "maybe"}, "sources[0].required: must be a valid boolean", id="bool"),
        pytest.param({"url": "a", "timeout": 0}, "sources[0].timeout: must be greater than 0", id="timeout"),
    ],
)
def test_bad_source_entries(source: Any, message: str) -> None:
    """A malformed source entry is reported at its key path with what a valid one looks like."""
    assert message in str(mapping_error({"version": 1, "sources": [source]}))


# -- validation: key paths, all problems at once -------------------------------


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        pytest.param({"version": 1, "bogus": 1}, "bogus", "unknown key", id="top-level"),
        pytest.param(
            {"version": 1, "sources": ["a", "b", {"url": "c", "bogus": 1}]},
            "sources[2].bogus",
            "unknown key",
            id="source",
        ),
        pytest.param({"version": 1, "formatter": {"bogus": 1}}, "formatter.bogus", "unknown key", id="formatter"),
        pytest.param(
            {"version": 1, "loader": {"max_byte": 5}},
            "loader.max_byte",
            "unknown key (did you mean 'max_bytes'?)",
            id="loader-typo",
        ),
        pytest.param({"version": 1, "logging": {"path": "x"}}, "logging.path", "unknown key", id="logging"),
        pytest.param({"version": 1, "cache": {"key": "x"}}, "cache.key", "unknown key", id="cache"),
        pytest.param({"version": 1, "appender": {"sep": "x"}}, "appender.sep", "unknown key", id="appender"),
    ],
)
def test_unknown_keys_are_rejected_with_key_path(data: dict[str, Any], path: str, message: str) -> None:
    """An unknown key is an error naming its full key path, and the known key of its level it is closest to."""
    error = mapping_error(data)

    assert error.problems == (Problem(path, message),)
    assert str(error) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param({"formater": {"preset": "plain"}}, "formater: unknown key (did you mean 'formatter'?)", id="top"),
        pytest.param(
            {"sources": [{"url": "a.md", "requried": True}]},
            "sources[0].requried: unknown key (did you mean 'required'?)",
            id="source",
        ),
        pytest.param(
            {"sources": [{"discover": {"names": ["AGENTS.md"], "form": "sub"}}]},
            "sources[0].discover.form: unknown key (did you mean 'from'?)",
            id="an-alias-by-its-yaml-name",
        ),
        pytest.param(
            {"sources": [{"url": "a.md", "imports": {"max_dept": 2}}]},
            "sources[0].imports.max_dept: unknown key (did you mean 'max_depth'?)",
            id="a-model-defined-further-down",
        ),
        pytest.param(
            {"formatter": {"budget": {"max_char": 10}}},
            "formatter.budget.max_char: unknown key (did you mean 'max_chars'?)",
            id="optional-section",
        ),
        pytest.param(
            {"presets": {"mine": {"extend": "plain"}}},
            "presets.mine.extend: unknown key (did you mean 'extends'?)",
            id="under-a-name-of-yours",
        ),
        pytest.param(
            {"logging": {"format": "jsn"}},
            "logging.format: must be 'auto', 'json' or 'console' (did you mean 'json'?)",
            id="log",
        ),
        pytest.param(
            {"cache": {"policy": "revalidte"}},
            "cache.policy: must be 'once', 'revalidate', 'ttl', 'always' or 'watch' (did you mean 'revalidate'?)",
            id="choices",
        ),
        pytest.param(
            {"formatter": {"preset": "cluade"}},
            "formatter.preset: unknown preset 'cluade' (did you mean 'claude'?); built-in: claude, codex, deepagents, "
            "gemini, markdown, plain, xml; none defined under presets",
            id="preset",
        ),
        pytest.param(
            {"appender": {"format": "antropic"}},
            "appender.format: unknown format 'antropic' (did you mean 'anthropic'?); "
            "choose one of: anthropic, json, langchain, openai, text",
            id="format",
        ),
        pytest.param(
            {"sources": ["htps://example.com/AGENTS.md"]},
            "sources[0].url: unknown protocol 'htps' (did you mean 'https'?); is its fsspec package installed? "
            "(registered loaders: none)",
            id="protocol",
        ),
        pytest.param(
            {"loader": {"allowed_protocols": ["fiel"]}},
            "loader.allowed_protocols: unknown protocol 'fiel' (did you mean 'file'?) "
            "(fsspec knows e.g. file, memory, http, https, s3, zip, git)",
            id="allowed-protocol",
        ),
        pytest.param(
            {"formatter": {"disable": ["escapng"]}},
            "formatter.disable[0]: 'escapng' is no built-in rule (did you mean 'escaping'?); "
            "the rules are rules, bom, frontmatter, html_comments, escaping, budgets",
            id="rule",
        ),
        pytest.param({"cache": {"expiry": 5}}, "cache.expiry: unknown key", id="nothing-close-nothing-said"),
    ],
)
def test_an_unknown_name_gets_the_closest_known_one(data: dict[str, Any], problem: str) -> None:
    """A key, a choice, a preset, a format, a protocol or a rule name not known: the closest one of its kind."""
    error = mapping_error({"version": 1, **data})

    assert [str(p) for p in error.problems] == [problem]


def test_bad_value_is_reported_at_its_key_path() -> None:
    """A wrongly typed value names its key path, list indices included."""
    error = mapping_error({"version": 1, "sources": ["a", "b", {"url": 5}]})

    assert [p.path for p in error.problems] == ["sources[2].url"]
    assert "must be a valid string" in str(error)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "the config is empty; it needs at least 'version: 1'", id="no-version"),
        pytest.param("sources: []\n", "version: required key is missing", id="missing-version"),
        pytest.param("version: 2\n", "version: must be 1", id="version-2"),
        pytest.param("version: '2'\n", "version: must be 1", id="version-string"),
        pytest.param("version: true\n", "version: must be 1", id="version-bool"),
    ],
)
def test_version_must_be_one(write_config: WriteConfig, text: str, message: str) -> None:
    """Only schema version 1 is accepted, and the error says so."""
    assert message in str(config_error(write_config(text)))


def test_all_problems_are_reported_at_once(write_config: WriteConfig) -> None:
    """Several errors in one file are all listed in one ConfigError, each with its key path."""
    path = write_config(
        """\
version: 1
sources:
  - a.md
  - url: b.md
    bogus: 1
  - url: 3
  - a.md
formatter:
  preset: nope
  bogus: x
  template_file: missing.txt
loader:
  on_decode_error: ignore
  max_bytes: -1
appender:
  separator: ${MEMCONFIG_TEST_UNSET_VAR}
"""
    )

    error = config_error(path)

    paths = [p.path for p in error.problems]
    assert sorted(paths) == sorted(
        [
            "appender.separator",
            "sources[1].bogus",
            "sources[2].url",
            "formatter.preset",
            "formatter.bogus",
            "loader.on_decode_error",
            "loader.max_bytes",
            "sources[3]",
            "formatter.template_file",
        ]
    )
    message = error.format_message()
    assert message.startswith(f"{path}: 9 problems\n")
    assert all(f"\n  {p}" in message for p in error.problems)


def test_schema_problems_do_not_hide_disk_problems(write_config: WriteConfig, tmp_path: Path) -> None:
    """Files, protocols, credentials names and repeats are checked even when the schema or a variable fails."""
    (tmp_path / "creds.yaml").write_text("team: {key: k}\n", encoding="utf-8")
    path = write_config(
        {
            "version": 1,
            "credentials_file": "creds.yaml",
            "sources": ["a.md", "zzz://x/a.md", "a.md", {"url": "memory://c.md", "credentials": "ops"}],
            "loader": {"max_bytes": -1},
            "formatter": {"template_file": "nope.txt"},
            "appender": {"separator": "${MEMCONFIG_TEST_UNSET_VAR}"},
        }
    )

    error = config_error(path)

    assert [str(p).split(":")[0] for p in error.problems] == [
        "appender.separator",
        "loader.max_bytes",
        "sources[2]",
        "formatter.template_file",
        "sources[1].url",
        "sources[3].credentials",
    ]
    assert f"file not found: {tmp_path / 'nope.txt'}" in str(error)
    assert "unknown protocol 'zzz'" in str(error)


def test_disk_checks_see_environment_overrides_when_schema_fails(
    write_config: WriteConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a schema problem, the files checked are still those MEMCONFIG_* variables name, not the YAML's."""
    (tmp_path / "good.txt").write_text("<m>{agent_memory}</m>", encoding="utf-8")
    monkeypatch.setenv("MEMCONFIG_FORMATTER__TEMPLATE_FILE", "good.txt")
    path = write_config({"version": 1, "loader": {"max_bytes": -1}, "formatter": {"template_file": "missing.txt"}})

    assert [p.path for p in config_error(path).problems] == ["loader.max_bytes"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        pytest.param(
            {"base_dir": "${MC_UNSET_DIR}", "formatter": {"template_file": "t.txt"}}, "base_dir", id="base-dir"
        ),
        pytest.param({"formatter": {"template_file": "${MC_UNSET_FILE}"}}, "formatter.template_file", id="template"),
        pytest.param(
            {"credentials_file": "${MC_UNSET_FILE}", "sources": [{"url": "memory://a", "credentials": "team"}]},
            "credentials_file",
            id="credentials-file",
        ),
    ],
)
def test_a_value_already_wrong_is_not_read_from_disk(
    write_config: WriteConfig, tmp_path: Path, data: dict[str, Any], path: str
) -> None:
    """A path whose variable is unset is reported once, not again as a missing file."""
    (tmp_path / "t.txt").write_text("{agent_memory}", encoding="utf-8")

    assert [p.path for p in config_error(write_config({"version": 1, **data})).problems] == [path]


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        pytest.param("version: 1\nsources: [a.md\n", "3:1", "expected ',' or ']'", id="unclosed-flow-list"),
        pytest.param(
            "version: 1\nsources:\n  - a\n - b\n",
            "4:2",
            "did not find expected key; check this line's indentation",
            id="bad-indent",
        ),
        pytest.param("version: 1\nformatter:\n\tpreset: plain\n", "3:1", "'\\t' that cannot start", id="tab"),
        pytest.param("version: 1\nsources:\n  - 'a.md\n", "4:1", "unexpected end of stream", id="open-quote"),
        pytest.param("version: 1\nversion: 1\n", "2:1", "duplicate key 'version'", id="duplicate-key"),
        pytest.param("version: 1\nsources:\n  - {url: a, url: b}\n", "3:14", "duplicate key 'url'", id="dup-nested"),
    ],
)
def test_yaml_syntax_errors_give_file_line_column(
    write_config: WriteConfig, text: str, position: str, problem: str
) -> None:
    """A YAML syntax error is reported as FILE:LINE:COLUMN with what the parser expected."""
    path = write_config(text)

    message = str(config_error(path))

    assert message.startswith(f"{path}:{position}: YAML syntax error: ")
    assert problem in message


def test_yaml_merge_keys_may_be_overridden(write_config: WriteConfig) -> None:
    """A key that overrides one brought in by ``<<`` is not a duplicate."""
    config = load_config(write_config("version: 1\nformatter:\n  <<: {preset: plain, empty: x}\n  empty: y\n"))

    assert (config.formatter.preset, config.formatter.empty) == ("plain", "y")


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        pytest.param("version: 1\non: x\n", "True", 'keys must be strings (quote it: "on")', id="on"),
        pytest.param("version: 1\nyes: x\n", "True", 'keys must be strings (quote it: "yes")', id="yes"),
        pytest.param("version: 1\n1: x\n", "1", 'keys must be strings (quote it: "1")', id="int"),
        pytest.param("version: 1\nnull: x\n", "None", 'keys must be strings (quote it: "null")', id="null"),
        pytest.param(
            "version: 1\nformatter: {off: x}\n",
            "formatter.False",
            'keys must be strings (quote it: "off")',
            id="section",
        ),
        pytest.param(
            "version: 1\nsources: [{url: a.md, 2: x}]\n",
            "sources[0].2",
            'keys must be strings (quote it: "2")',
            id="source",
        ),
        pytest.param(
            "version: 1\nsources: [{url: a.md, storage_options: {headers: {on: x}}}]\n",
            "sources[0].storage_options.headers.True",
            'keys must be strings (quote it: "on")',
            id="header",
        ),
    ],
)
def test_non_string_keys_are_config_problems(write_config: WriteConfig, text: str, path: str, message: str) -> None:
    """A key YAML reads as a boolean, number or null is a problem at its key path that says how to write it."""
    error = config_error(write_config(text))

    assert error.problems == (Problem(path, message),)


def test_non_string_keys_are_listed_with_other_problems() -> None:
    """Non-string keys of a plain mapping are reported with every other problem, not raised as a TypeError."""
    error = mapping_error({"version": 1, True: "x", "loader": {1: "x", "bogus": 2}})

    assert set(error.problems) == {
        Problem("True", "keys must be strings"),
        Problem("loader.1", "keys must be strings"),
        Problem("loader.bogus", "unknown key"),
    }


# -- the config file itself --------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param(lambda p: None, "file not found", id="missing"),
        pytest.param(lambda p: p.mkdir(), "is a directory", id="directory"),
        pytest.param(lambda p: p.write_bytes(b"version: 1\n# caf\xe9\n"), "is not UTF-8 text", id="latin-1"),
        pytest.param(lambda p: p.write_text(""), "the config is empty", id="empty"),
        pytest.param(lambda p: p.write_text("# just a comment\n"), "the config is empty", id="comments-only"),
        pytest.param(lambda p: p.write_text("- a.md\n- b.md\n"), "top level must be a mapping, not a list", id="list"),
        pytest.param(lambda p: p.write_text("hello\n"), "top level must be a mapping, not a string", id="scalar"),
    ],
)
def test_unreadable_config_file_is_a_clear_config_error(
    tmp_path: Path, setup: Callable[[Path], Any], message: str
) -> None:
    """A config file that is missing, a folder, not UTF-8, empty or not a mapping is a ConfigError naming it."""
    path = tmp_path / "memconfig.yaml"
    setup(path)

    error = config_error(path)

    assert str(error).startswith(f"{path}: ")
    assert message in str(error)
    assert error.exit_code == 2


def test_load_config_accepts_str_and_pathlike(write_config: WriteConfig) -> None:
    """Both a str and a Path name the config file; the config remembers it as given."""
    path = write_config({"version": 1})

    assert load_config(str(path)).file == str(path)
    assert load_config(path).file == str(path)


def test_config_error_is_a_value_error_with_exit_code_2() -> None:
    """ConfigError is a MemconfigError and a ValueError, carrying exit code 2 and its problems."""
    error = ConfigError([Problem("a.b", "bad"), Problem("c", "worse")], file="x.yaml")

    assert isinstance(error, ValueError)
    assert isinstance(error, MemconfigError)
    assert error.exit_code == 2
    assert error.file == "x.yaml"
    assert str(error) == "x.yaml: 2 problems\n  a.b: bad\n  c: worse"
    assert str(ConfigError("just this")) == "just this"


def test_from_mapping_errors_name_no_file_unless_given() -> None:
    """Config.from_mapping reports problems without a file prefix, or with the file it was told."""
    data = {"version": 1, "formatter": {"bogus": 1}}

    assert str(mapping_error(data)) == "formatter.bogus: unknown key"
    assert str(mapping_error(data, file="agent.yaml")) == "agent.yaml: formatter.bogus: unknown key"


# -- ${VAR} expansion ----------------------------------------------------------------


def test_variables_are_expanded_in_string_values(write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """``${VAR}`` and ``${VAR:-default}`` are replaced in any string value; ``$$`` is a literal ``$``."""
    monkeypatch.setenv("MC_SEP", "<->")
    monkeypatch.delenv("MC_UNSET", raising=False)
    config = load_config(
        write_config(
            {
                "version": 1,
                "formatter": {"separator": "${MC_SEP}", "empty": "${MC_UNSET:-nothing} here", "preset": "plain"},
                "appender": {"separator": "cost: $$5 and $${MC_SEP}"},
                "cache": {"state_key": "$MC_SEP"},
            }
        )
    )

    assert config.formatter.separator == "<->"
    assert config.formatter.empty == "nothing here"
    assert config.appender.separator == "cost: $5 and ${MC_SEP}"
    assert config.cache.state_key == "$MC_SEP"


@pytest.mark.parametrize(
    ("value", "environ", "expected"),
    [
        pytest.param("${A}", {"A": "x"}, "x", id="set"),
        pytest.param("${A:-d}", {"A": "x"}, "x", id="set-with-default"),
        pytest.param("${A:-d}", {}, "d", id="unset-with-default"),
        pytest.param("${A:-d}", {"A": ""}, "d", id="empty-uses-default"),
        pytest.param("${A}", {"A": ""}, "", id="empty-without-default"),
        pytest.param("${A:-}", {}, "", id="empty-default"),
        pytest.param("${A:-a b/c:d}", {}, "a b/c:d", id="default-with-punctuation"),
        pytest.param("$$", {}, "$", id="dollar-dollar"),
        pytest.param("$${A}", {"A": "x"}, "${A}", id="escaped-reference"),
        pytest.param("$$$${A}", {"A": "x"}, "$${A}", id="two-escaped-dollars"),
        pytest.param("$$${A}", {"A": "x"}, "$x", id="escaped-dollar-then-reference"),
        pytest.param("$A and $", {"A": "x"}, "$A and $", id="bare-dollar-untouched"),
        pytest.param("${A}${B}", {"A": "1", "B": "2"}, "12", id="adjacent"),
    ],
)
def test_expand_vars(value: str, environ: dict[str, str], expected: str) -> None:
    """expand_vars follows shell rules for ``${VAR}``, ``${VAR:-default}`` and ``$$``."""
    assert expand_vars(value, environ) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("${}", id="empty-name"),
        pytest.param("${1A}", id="digit-first"),
        pytest.param("${A-B}", id="dash"),
        pytest.param("${A", id="unterminated"),
    ],
)
def test_malformed_variable_reference_is_an_error(value: str) -> None:
    """A ``${`` that is not a valid reference is an error giving the valid forms, never the text it found."""
    with pytest.raises(
        ValueError, match=r"malformed variable reference: .*\$\{NAME\}.*\$\$ for a literal \$"
    ) as caught:
        expand_vars(value, {})

    assert value not in str(caught.value)


@given(text=st.text())
def test_escaped_dollars_round_trip(text: str) -> None:
    """Any text with every ``$`` doubled expands back to itself, whatever the environment."""
    assert expand_vars(text.replace("$", "$$"), {"A": "x"}) == text


@given(text=st.text().filter(lambda s: "$" not in s))
def test_text_without_dollar_is_untouched(text: str) -> None:
    """Text without a ``$`` is never changed by expansion."""
    assert expand_vars(text, {}) == text


def test_unset_variable_is_an_error_naming_it_and_the_key(
    write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unset variable without default is a config error naming the variable and each key path using it."""
    monkeypatch.delenv("MC_NOT_SET", raising=False)
    monkeypatch.delenv("MC_ALSO_NOT_SET", raising=False)
    path = write_config(
        {
            "version": 1,
            "sources": ["${MC_NOT_SET}/AGENTS.md", {"url": "x.md", "name": "${MC_ALSO_NOT_SET}"}],
            "formatter": {"empty": "${MC_NOT_SET}"},
        }
    )

    error = config_error(path)

    assert {(p.path, p.message) for p in error.problems} == {
        (
            "sources[0].url",
            "environment variable ${MC_NOT_SET} is not set and has no default (write ${MC_NOT_SET:-default})",
        ),
        (
            "sources[1].name",
            "environment variable ${MC_ALSO_NOT_SET} is not set and has no default (write ${MC_ALSO_NOT_SET:-default})",
        ),
        (
            "formatter.empty",
            "environment variable ${MC_NOT_SET} is not set and has no default (write ${MC_NOT_SET:-default})",
        ),
    }


def test_malformed_reference_in_config_names_the_key(write_config: WriteConfig) -> None:
    """A malformed ``${`` in a config value is reported at its key path."""
    error = config_error(write_config({"version": 1, "formatter": {"empty": "${oops"}}))

    assert error.problems[0].path == "formatter.empty"
    assert error.problems[0].message.startswith("malformed variable reference: write ${NAME}")


def test_source_urls_keep_variables_as_written(write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source's url keeps ``${VAR}`` as written (its identity), while other strings are expanded."""
    monkeypatch.setenv("MC_DIR", "/srv/notes")
    config = load_config(write_config({"version": 1, "sources": ["${MC_DIR}/a.md", {"url": "${MC_DIR}/b.md"}]}))

    assert [s.url for s in config.sources] == ["${MC_DIR}/a.md", "${MC_DIR}/b.md"]


# -- MEMCONFIG_ environment overrides ------------------------------------------------


def test_an_unknown_memconfig_variable_is_a_warning_naming_the_closest(monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCONFIG_FORMATER__PRESET sets nothing: the config loads, and says so with the variable it may have meant;
    another program's MEMCONFIG_* variable is named too, with no suggestion."""
    monkeypatch.setenv("MEMCONFIG_FORMATER__PRESET", "claude")
    monkeypatch.setenv("MEMCONFIG_CHROMIUM", "/usr/bin/chromium")
    monkeypatch.setenv("MEMCONFIG_LOADER__TIMEOUT", "5")  # read: no warning
    config = Config.from_mapping({"version": 1})

    assert config.formatter.preset == "deepagents"
    assert config.loader.timeout == 5
    assert config.warnings == (
        Problem("", "environment variable MEMCONFIG_CHROMIUM names no config key ('chromium'): ignored"),
        Problem(
            "",
            "environment variable MEMCONFIG_FORMATER__PRESET names no config key ('formater'): ignored "
            "(did you mean MEMCONFIG_FORMATTER__PRESET?)",
        ),
    )


def test_a_bad_key_under_a_known_variable_is_an_error_with_the_closest(monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCONFIG_LOADER__TIMOUT reaches loader: an unknown key there, with its suggestion and its variable."""
    monkeypatch.setenv("MEMCONFIG_LOADER__TIMOUT", "5")
    error = mapping_error({"version": 1})

    assert [str(p) for p in error.problems] == [
        "loader.timout: unknown key (did you mean 'timeout'?) (set by environment variable MEMCONFIG_LOADER__TIMOUT)"
    ]


def test_a_list_item_set_by_a_variable_says_a_list_is_set_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCONFIG_SOURCES__0__URL cannot set one item of ``sources``: the error names it and how a list is set, and
    no warning about an unresolved type reaches the user (pydantic-settings warns of one while it reads variables)."""
    monkeypatch.setenv("MEMCONFIG_SOURCES__0__URL", "AGENTS.md")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        error = mapping_error({"version": 1})

    assert [str(p) for p in error.problems] == [
        "sources: must be a valid list (set by environment variable MEMCONFIG_SOURCES__0__URL: a list is set whole, "
        "as JSON, e.g. MEMCONFIG_SOURCES='[...]')"
    ]


def test_no_warning_without_memconfig_variables() -> None:
    """A config loaded with no MEMCONFIG_* variable set has no warnings."""
    assert Config.from_mapping({"version": 1}).warnings == ()


def test_environment_overrides_yaml_with_nesting(write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCONFIG_SECTION__KEY overrides the YAML value; other keys of the section keep their YAML values."""
    monkeypatch.setenv("MEMCONFIG_FORMATTER__SEPARATOR", "++")
    monkeypatch.setenv("MEMCONFIG_LOADER__MAX_BYTES", "99")
    monkeypatch.setenv("MEMCONFIG_LOGGING__LEVEL", "DEBUG")
    config = load_config(
        write_config(
            {
                "version": 1,
                "formatter": {"preset": "plain", "separator": "--"},
                "loader": {"max_bytes": 10, "on_decode_error": "replace"},
            }
        )
    )

    assert config.formatter.separator == "++"
    assert config.formatter.preset == "plain"
    assert config.loader.max_bytes == 99
    assert config.loader.on_decode_error == "replace"
    assert config.logging.level == "debug"


def test_environment_overrides_apply_to_from_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Config.from_mapping honours MEMCONFIG_* overrides too, including a JSON list of sources."""
    monkeypatch.setenv("MEMCONFIG_APPENDER__POSITION", "prepend")
    monkeypatch.setenv("MEMCONFIG_SOURCES", '["from-env.md"]')
    monkeypatch.setenv("MEMCONFIG_VERSION", "1")

    config = Config.from_mapping({"version": 1, "sources": ["from-yaml.md"]})

    assert config.appender.position == "prepend"
    assert [s.url for s in config.sources] == ["from-env.md"]


def test_a_preset_named_by_a_variable_brings_its_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``preset: ${PRESET}`` with PRESET=codex renders Codex's AGENTS.md under Codex's 32 KiB budget."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "AGENTS.md").write_text("root doc")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    monkeypatch.setenv("PRESET", "codex")

    config = Config.from_mapping({"version": 1, "formatter": {"preset": "${PRESET}"}})

    assert (config.formatter.preset, config.formatter.budget.max_bytes) == ("codex", 32768)
    assert Pipeline.from_config(config).build({}).text == "root doc"


def test_the_preset_an_environment_override_chooses_brings_its_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEMCONFIG_FORMATTER__PRESET replaces the YAML's preset with all it brings: no mix of the two."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "AGENTS.md").write_text("agents doc")
    monkeypatch.chdir(tmp_path)

    monkeypatch.setenv("MEMCONFIG_FORMATTER__PRESET", "plain")
    plain = Config.from_mapping({"version": 1, "formatter": {"preset": "codex"}}, base_dir=tmp_path)
    monkeypatch.setenv("MEMCONFIG_FORMATTER__PRESET", "codex")
    codex = Config.from_mapping({"version": 1, "formatter": {"preset": "plain"}}, base_dir=tmp_path)

    assert (plain.formatter.preset, plain.sources, plain.formatter.budget) == ("plain", [], None)
    assert Pipeline.from_config(plain).build({}).text == ""
    assert (codex.formatter.preset, codex.formatter.budget.max_bytes) == ("codex", 32768)
    assert Pipeline.from_config(codex).build({}).text == "agents doc"


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        pytest.param(
            "MEMCONFIG_LOADER__MAX_BYTES",
            "lots",
            "loader.max_bytes: must be a valid integer, unable to parse string as an integer "
            "(set by environment variable MEMCONFIG_LOADER__MAX_BYTES)",
            id="bad-value",
        ),
        pytest.param(
            "MEMCONFIG_LOADER__BOGUS",
            "1",
            "loader.bogus: unknown key (set by environment variable MEMCONFIG_LOADER__BOGUS)",
            id="unknown-key",
        ),
        pytest.param(
            "MEMCONFIG_LOADER__ON_DECODE_ERROR",
            "ignore",
            "loader.on_decode_error: must be 'skip', 'replace' or 'fail' "
            "(set by environment variable MEMCONFIG_LOADER__ON_DECODE_ERROR)",
            id="bad-literal",
        ),
    ],
)
def test_bad_environment_override_names_the_variable(
    write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    """A bad MEMCONFIG_* value is reported at its key path and names the variable, which the YAML never mentions."""
    monkeypatch.setenv(name, value)

    error = config_error(write_config({"version": 1}))

    assert [str(p) for p in error.problems] == [expected]


def test_unparsable_complex_environment_value_is_a_config_error(
    write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MEMCONFIG_* list or mapping that is not JSON is a ConfigError, not a crash."""
    monkeypatch.setenv("MEMCONFIG_SOURCES", "a.md,b.md")

    error = config_error(write_config({"version": 1}))

    assert str(error).endswith(
        "sources: environment variable MEMCONFIG_SOURCES is not valid JSON (lists and mappings must be JSON)"
    )


# -- base_dir and paths ----------------------------------------------------------------


def test_base_dir_defaults_to_the_config_folder(
    tmp_path: Path, write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without base_dir, relative paths resolve against the config file's folder, not the current one."""
    path = write_config({"version": 1})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    config = load_config(os.path.relpath(path))

    assert config.base_path == tmp_path
    assert config.resolve_path("notes/a.md") == tmp_path / "notes" / "a.md"


@pytest.mark.parametrize(
    ("base_dir", "expected"),
    [
        pytest.param("sub", lambda tmp, home: tmp / "sub", id="relative"),
        pytest.param(".", lambda tmp, home: tmp, id="dot"),
        pytest.param("/srv/agents", lambda tmp, home: Path("/srv/agents"), id="absolute"),
        pytest.param("~/agents", lambda tmp, home: home / "agents", id="tilde"),
        pytest.param("${MC_BASE}", lambda tmp, home: Path("/from/env"), id="variable"),
    ],
)
def test_explicit_base_dir(
    tmp_path: Path,
    write_config: WriteConfig,
    monkeypatch: pytest.MonkeyPatch,
    base_dir: str,
    expected: Callable[[Path, Path], Path],
) -> None:
    """base_dir may be relative to the config folder, absolute, start with ``~`` or use a variable."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MC_BASE", "/from/env")

    config = load_config(write_config({"version": 1, "base_dir": base_dir}))

    assert config.base_path == expected(tmp_path, home)


def test_resolve_path_expands_tilde_and_keeps_absolute(
    tmp_path: Path, write_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """resolve_path expands ``~`` to the home folder and leaves absolute paths alone."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = load_config(write_config({"version": 1}))

    assert config.resolve_path("~/.deepagents/AGENTS.md") == tmp_path / "home" / ".deepagents" / "AGENTS.md"
    assert config.resolve_path("/etc/agents.md") == Path("/etc/agents.md")


def test_from_mapping_base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """from_mapping resolves against the current folder by default, or against the base_dir argument."""
    monkeypatch.chdir(tmp_path)

    assert Config.from_mapping({"version": 1}).base_path == tmp_path
    assert Config.from_mapping({"version": 1}, base_dir=tmp_path / "a").base_path == tmp_path / "a"
    assert Config.from_mapping({"version": 1, "base_dir": "b"}, base_dir=tmp_path / "a").base_path == (
        tmp_path / "a" / "b"
    )


# -- formatter: presets and templates ----------------------------------------------------


@pytest.mark.parametrize("preset", [pytest.param(name, id=name) for name in sorted(PRESETS)])
def test_known_presets_load(preset: str) -> None:
    """Every shipped preset is accepted by name."""
    config = Config.from_mapping({"version": 1, "formatter": {"preset": preset}})

    assert config.formatter.layout() == PRESETS[preset]


def test_unknown_preset_lists_the_choices() -> None:
    """An unknown preset is an error listing the presets there are."""
    error = mapping_error({"version": 1, "formatter": {"preset": "langchain"}})

    assert str(error) == (
        "formatter.preset: unknown preset 'langchain'; built-in: claude, codex, deepagents, gemini, markdown, plain, "
        "xml; none defined under presets"
    )


def test_layout_overrides_preset_fields() -> None:
    """Each formatter key overrides the same field of the preset; unset ones keep the preset's."""
    config = Config.from_mapping(
        {"version": 1, "formatter": {"preset": "markdown", "separator": "\n---\n", "strip_html_comments": False}}
    )

    layout = config.formatter.layout()
    assert layout.separator == "\n---\n"
    assert layout.strip_html_comments is False
    assert layout.section == PRESETS["markdown"].section
    assert layout.template == PRESETS["markdown"].template


def test_template_file_is_read_relative_to_base_dir(tmp_path: Path, write_config: WriteConfig) -> None:
    """template_file resolves against base_dir and its text becomes the layout's template."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "memory.txt").write_text("<m>{agent_memory}</m> {{literal}}", encoding="utf-8")

    config = load_config(
        write_config({"version": 1, "base_dir": "prompts", "formatter": {"template_file": "memory.txt"}})
    )

    assert config.template_text == "<m>{agent_memory}</m> {{literal}}"
    assert config.formatter.layout(config.template_text).template == "<m>{agent_memory}</m> {{literal}}"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param(lambda p: None, "formatter.template_file: file not found: {path}", id="missing"),
        pytest.param(lambda p: p.mkdir(), "formatter.template_file: is a directory: {path}", id="directory"),
        pytest.param(
            lambda p: p.write_text("You have memory."),
            "formatter.template_file: {path}: template must contain the {{agent_memory}} slot",
            id="no-slot",
        ),
        pytest.param(
            lambda p: p.write_text("{agent_memory} {agent_memory.__class__}"),
            "formatter.template_file: {path}: slot {{agent_memory.__class__}} uses attribute or index access",
            id="attribute-access",
        ),
        pytest.param(
            lambda p: p.write_text("{agent_memory} {0}"),
            "formatter.template_file: {path}: positional slot {{0}} is not allowed",
            id="positional",
        ),
        pytest.param(
            lambda p: p.write_bytes(b"\xff{agent_memory}"),
            "formatter.template_file: {path} is not UTF-8 text",
            id="not-utf8",
        ),
    ],
)
def test_bad_template_file_is_a_config_error_naming_it(
    tmp_path: Path, write_config: WriteConfig, setup: Callable[[Path], Any], message: str
) -> None:
    """A template_file that is missing, a folder, unreadable or not a valid template is an error naming its path."""
    template = tmp_path / "memory.txt"
    setup(template)

    error = config_error(write_config({"version": 1, "formatter": {"template_file": "memory.txt"}}))

    assert message.format(path=template) in str(error)


@pytest.mark.parametrize(
    ("formatter", "message"),
    [
        pytest.param(
            {"template": "{agent_memory}", "template_file": "t.txt"},
            "formatter: give 'template' or 'template_file', not both",
            id="template-and-template-file",
        ),
        pytest.param(
            {"template": "no slot"},
            "formatter.template: template must contain the {agent_memory} slot",
            id="template-without-slot",
        ),
        pytest.param(
            {"template": "{agent_memory!r}"},
            "formatter.template: slot {agent_memory!r} has a conversion or format spec",
            id="template-conversion",
        ),
        pytest.param(
            {"template": "{agent_memory} {path}"},
            "formatter.template: unknown slot {path}; allowed: {agent_memory}",
            id="template-section-slot",
        ),
        pytest.param(
            {"section": "{path}: {agent_memory}"},
            "formatter.section: unknown slot {agent_memory}; allowed: {content}, {name}, {path}",
            id="section-memory-slot",
        ),
        pytest.param(
            {"section": "{content[0]}"},
            "formatter.section: slot {content[0]} uses attribute or index access",
            id="section-index",
        ),
        pytest.param(
            {"section": "{content} }"},
            "formatter.section: Single '}' encountered in format string (write '{{' or '}}' for a literal brace)",
            id="section-unbalanced",
        ),
    ],
)
def test_bad_inline_templates(formatter: dict[str, Any], message: str) -> None:
    """Inline template and section text is checked like a template file, at its key path."""
    assert message in str(mapping_error({"version": 1, "formatter": formatter}))


def test_section_may_omit_slots() -> None:
    """A section needs no particular slot: content alone is fine."""
    config = Config.from_mapping({"version": 1, "formatter": {"section": "{content}"}})

    assert config.formatter.layout().section == "{content}"


# -- other sections ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            {"loader": {"on_decode_error": "ignore"}},
            "loader.on_decode_error: must be 'skip', 'replace' or 'fail'",
            id="on_decode_error",
        ),
        pytest.param({"loader": {"encoding": "utf-9"}}, "loader.encoding: unknown encoding 'utf-9'", id="encoding"),
        pytest.param({"loader": {"max_bytes": 0}}, "loader.max_bytes: must be greater than 0", id="max_bytes"),
        pytest.param({"cache": {"policy": "never"}}, "cache.policy: must be", id="cache-policy"),
        pytest.param({"cache": {"state_key": ""}}, "cache.state_key:", id="empty-state-key"),
        pytest.param(
            {"appender": {"position": "middle"}}, "appender.position: must be 'append' or 'prepend'", id="pos"
        ),
        pytest.param(
            {"logging": {"format": "xml"}}, "logging.format: must be 'auto', 'json' or 'console'", id="log-format"
        ),
        pytest.param({"logging": {"level": "loud"}}, "logging.level: must be", id="log-level"),
        pytest.param({"formatter": "plain"}, "formatter: must be a mapping", id="section-not-mapping"),
        pytest.param({"storage": {"s3": "x"}}, "storage.s3: must be a mapping", id="storage-not-mapping"),
    ],
)
def test_bad_values_in_sections(data: dict[str, Any], message: str) -> None:
    """A value outside a section's allowed set is an error at its key path saying what is allowed."""
    assert message in str(mapping_error({"version": 1, **data}))


@pytest.mark.parametrize("value", [pytest.param(v, id=v) for v in ("skip", "replace", "fail")])
def test_on_decode_error_values(value: str) -> None:
    """skip, replace and fail are the accepted on_decode_error values."""
    assert Config.from_mapping({"version": 1, "loader": {"on_decode_error": value}}).loader.on_decode_error == value


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        pytest.param(["a.md", "a.md"], "sources[1]: repeats sources[0] ('a.md')", id="same-string"),
        pytest.param(["a.md", {"url": "a.md", "name": "other"}], "sources[1]: repeats sources[0]", id="renamed"),
        pytest.param(["x", "a.md", "b", {"url": "a.md"}], "sources[3]: repeats sources[1] ('a.md')", id="far-apart"),
        pytest.param([{"glob": "*.md"}, {"glob": "*.md"}], "sources[1]: repeats sources[0] ('*.md')", id="glob"),
        pytest.param(
            ["https://h/a.md?code=one", "https://h/a.md?code=two"],
            "sources[1]: repeats sources[0] ('https://h/a.md?code=***')",
            id="azure-function-key",
        ),
    ],
)
def test_duplicate_sources_are_rejected(sources: list[Any], message: str) -> None:
    """The same location written twice is an error naming both positions."""
    assert message in str(mapping_error({"version": 1, "sources": sources}))


@pytest.mark.parametrize(
    "sources",
    [
        pytest.param(["git://prompts:v1@AGENTS.md", "git://prompts:v2@AGENTS.md"], id="git-refs"),
        pytest.param(
            [
                "https://acct.blob.core.windows.net/c/a.md?sp=r&se=2030-01-01&sig=x",
                "https://acct.blob.core.windows.net/c/a.md?sp=rl&se=2031-01-01&sig=x",
            ],
            id="azure-sas-fields",
        ),
    ],
)
def test_sources_differing_in_what_is_not_secret_are_distinct(sources: list[str]) -> None:
    """Parts of a URL that hold no credential (a git ref, SAS expiry or permissions) keep sources apart."""
    config = Config.from_mapping({"version": 1, "sources": sources})

    assert [s.written for s in config.sources] == sources


def test_unknown_protocol_is_a_config_error() -> None:
    """A URL whose protocol fsspec does not know is reported at the source's key path."""
    error = mapping_error({"version": 1, "sources": ["nosuchproto://bucket/a.md"]})

    assert error.problems[0].path == "sources[0].url"
    assert "unknown protocol 'nosuchproto'" in error.problems[0].message


# -- credentials and secrets ---------------------------------------------------------------


SECRETS = ("AKIAPLANTEDKEY1", "planted-secret-value", "planted-password", "planted-token-123")


@pytest.fixture
def credentials_file(tmp_path: Path) -> Path:
    """A credentials file with one entry, ``team_s3``, holding planted secrets."""
    path = tmp_path / "secrets" / "credentials.yaml"
    path.parent.mkdir()
    path.write_text(
        f"team_s3:\n  key: {SECRETS[0]}\n  secret: {SECRETS[1]}\n  client_kwargs: {{region_name: eu-west-1}}\n",
        encoding="utf-8",
    )
    return path


def test_credentials_are_resolved_by_name(write_config: WriteConfig, credentials_file: Path) -> None:
    """A source's ``credentials:`` name picks an entry of credentials_file (relative to base_dir)."""
    config = load_config(
        write_config(
            {
                "version": 1,
                "credentials_file": "secrets/credentials.yaml",
                "sources": [{"url": "memory://team/a.md", "credentials": "team_s3"}],
            }
        )
    )

    assert config.credentials_table["team_s3"]["key"] == SECRETS[0]
    assert config.credentials_table["team_s3"]["client_kwargs"] == {"region_name": "eu-west-1"}


def test_every_value_of_a_used_credentials_entry_is_secret_and_only_those(
    write_config: WriteConfig, credentials_file: Path
) -> None:
    """The entry a source names is masked whole (its region too); an entry no source uses reaches nothing, and its
    plain words (`profile: default`) do not turn every "default" in the output into ***."""
    with credentials_file.open("a", encoding="utf-8") as extra:
        extra.write("unused:\n  profile: default\n")
    data = {"version": 1, "credentials_file": "secrets/credentials.yaml", "sources": ["default-rules.md"]}
    assert load_config(write_config(data)).secret_values == ()
    data["sources"] = ["default-rules.md", {"url": "memory://team/a.md", "credentials": "team_s3"}]
    assert set(load_config(write_config(data)).secret_values) == {SECRETS[0], SECRETS[1], "eu-west-1"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            {"credentials_file": "secrets/credentials.yaml", "sources": [{"url": "memory://a", "credentials": "ops"}]},
            "sources[0].credentials: no entry 'ops' in credentials_file",
            id="missing-entry",
        ),
        pytest.param(
            {"sources": [{"url": "memory://a", "credentials": "team_s3"}]},
            "sources[0].credentials: no credentials_file is set",
            id="no-credentials-file",
        ),
        pytest.param(
            {"credentials_file": "nowhere.yaml", "sources": [{"url": "memory://a", "credentials": "team_s3"}]},
            "credentials_file: file not found: ",
            id="credentials-file-missing",
        ),
    ],
)
def test_credentials_errors(
    write_config: WriteConfig, credentials_file: Path, data: dict[str, Any], message: str
) -> None:
    """A credentials name that cannot be resolved is an error at its key path, without any secret."""
    error = config_error(write_config({"version": 1, **data}))

    assert message in str(error)
    assert not any(secret in str(error) for secret in SECRETS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("- a\n- b\n", "must map names to storage options", id="list"),
        pytest.param(f"team_s3: {SECRETS[0]}\n", "must map names to storage options", id="entry-not-mapping"),
        pytest.param(f"team_s3:\n  key: {SECRETS[0]}\n   secret: x\n", "YAML syntax error", id="yaml-error"),
        pytest.param(
            "team_s3:\n  secret: ${MC_UNSET_SECRET}\n",
            "credentials_file: team_s3.secret: environment variable ${MC_UNSET_SECRET} is not set",
            id="unset-variable",
        ),
    ],
)
def test_bad_credentials_file(write_config: WriteConfig, tmp_path: Path, text: str, message: str) -> None:
    """A credentials file that is not a table of storage options is an error that shows no secret."""
    (tmp_path / "creds.yaml").write_text(text, encoding="utf-8")

    error = config_error(
        write_config(
            {
                "version": 1,
                "credentials_file": "creds.yaml",
                "sources": [{"url": "memory://a", "credentials": "team_s3"}],
            }
        )
    )

    assert message in str(error)
    assert not any(secret in str(error) for secret in SECRETS)


def test_non_string_key_in_credentials_file_is_a_problem(write_config: WriteConfig, tmp_path: Path) -> None:
    """A credentials entry whose option name YAML reads as a number is reported, not passed to fsspec."""
    (tmp_path / "creds.yaml").write_text(f"team_s3:\n  key: {SECRETS[0]}\n  1: x\n", encoding="utf-8")

    error = config_error(
        write_config(
            {
                "version": 1,
                "credentials_file": "creds.yaml",
                "sources": [{"url": "memory://a", "credentials": "team_s3"}],
            }
        )
    )

    assert error.problems == (Problem("credentials_file: team_s3.1", 'keys must be strings (quote it: "1")'),)


@pytest.mark.parametrize(
    ("credentials", "data", "path"),
    [
        pytest.param(
            "team_s3:\n  secret: 'Kq7${x9Lm!vT'\n", {}, "credentials_file: team_s3.secret", id="credentials-malformed"
        ),
        pytest.param(
            "team_s3: {}\n",
            {"storage": {"s3": {"client_kwargs": {"aws_secret_access_key": "Kq7${x9Lm!vT"}}}},
            "storage.s3.client_kwargs.aws_secret_access_key",
            id="storage-nested-malformed",
        ),
    ],
)
def test_dollar_brace_inside_a_secret_is_not_quoted(
    write_config: WriteConfig, tmp_path: Path, credentials: str, data: dict[str, Any], path: str
) -> None:
    """A malformed ``${`` in a secret is an error at its key path that quotes none of it and says how to write ``$``."""
    (tmp_path / "creds.yaml").write_text(credentials, encoding="utf-8")
    config: dict[str, Any] = {
        "version": 1,
        "credentials_file": "creds.yaml",
        "sources": [{"url": "memory://a", "credentials": "team_s3"}],
        **data,
    }

    error = config_error(write_config(config))

    assert error.problems == (
        Problem(path, "malformed variable reference: write ${NAME} or ${NAME:-default}, and $$ for a literal $"),
    )
    assert "x9Lm" not in str(error)


@pytest.mark.parametrize(
    ("credentials", "data", "path"),
    [
        pytest.param(
            "team_s3:\n  secret: 'Kq7${MC_UNSET_9}vT'\n", {}, "credentials_file: team_s3.secret", id="credentials"
        ),
        pytest.param(
            "team_s3: {}\n",
            {"storage": {"http": {"headers": {"Authorization": "Bearer Kq7${MC_UNSET_9}vT"}}}},
            "storage.http.headers.Authorization",
            id="storage-header",
        ),
        pytest.param(
            "team_s3: {}\n",
            {
                "sources": [
                    {"url": "memory://a", "credentials": "team_s3", "storage_options": {"token": "Kq7${MC_UNSET_9}vT"}}
                ]
            },
            "sources[0].storage_options.token",
            id="source-option",
        ),
    ],
)
def test_unset_variable_inside_a_secret_is_named(
    write_config: WriteConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    credentials: str,
    data: dict[str, Any],
    path: str,
) -> None:
    """An unset variable in a secret (``Bearer ${TOKEN}``) is named, as a name is no secret; the rest is unquoted."""
    monkeypatch.delenv("MC_UNSET_9", raising=False)
    (tmp_path / "creds.yaml").write_text(credentials, encoding="utf-8")
    config: dict[str, Any] = {
        "version": 1,
        "credentials_file": "creds.yaml",
        "sources": [{"url": "memory://a", "credentials": "team_s3"}],
        **data,
    }

    error = config_error(write_config(config))

    assert error.problems == (
        Problem(
            path, "environment variable ${MC_UNSET_9} is not set and has no default (write ${MC_UNSET_9:-default})"
        ),
    )
    assert "Kq7" not in str(error)


def test_unset_variable_that_is_a_whole_secret_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """``secret: ${NAME}`` holds nothing but the reference, so its unset variable is named as anywhere else."""
    monkeypatch.delenv("MC_UNSET_SECRET", raising=False)

    error = mapping_error({"version": 1, "storage": {"s3": {"secret": "${MC_UNSET_SECRET}"}}})

    assert error.problems == (
        Problem(
            "storage.s3.secret",
            "environment variable ${MC_UNSET_SECRET} is not set and has no default (write ${MC_UNSET_SECRET:-default})",
        ),
    )


def test_repr_masks_every_secret(
    write_config: WriteConfig, credentials_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """repr() and str() of a config mask storage-option secrets, URL user-info and signed-URL tokens as ***."""
    monkeypatch.setenv("MC_TOKEN", SECRETS[3])
    config = load_config(
        write_config(
            {
                "version": 1,
                "credentials_file": "secrets/credentials.yaml",
                "storage": {"s3": {"key": SECRETS[0], "secret": SECRETS[1], "anon": False}},
                "sources": [
                    {
                        "url": "memory://a.md",
                        "credentials": "team_s3",
                        "storage_options": {"password": SECRETS[2], "token": "${MC_TOKEN}", "region": "eu"},
                    },
                    f"https://user:{SECRETS[2]}@example.com/AGENTS.md",
                    f"https://example.com/b.md?X-Amz-Signature={SECRETS[3]}&part=1",
                ],
            }
        )
    )

    for text in (repr(config), str(config), repr(config.sources), repr(config.sources[0])):
        assert not any(secret in text for secret in SECRETS), text
        assert "***" in text
    assert "'anon': False" in repr(config)
    assert "'region': 'eu'" in repr(config)
    assert "https://***@example.com/AGENTS.md" in repr(config)
    assert "X-Amz-Signature=***&part=1" in repr(config)


def test_repr_masks_secrets_under_keys_that_do_not_look_secret() -> None:
    """repr() masks passwords in URL-valued options, cookie headers and query tokens outside the usual names."""
    config = Config.from_mapping(
        {
            "version": 1,
            "storage": {"s3": {"endpoint_url": f"https://minio:{SECRETS[2]}@minio.local:9000"}},
            "sources": [
                {
                    "url": "https://h/a.md",
                    "storage_options": {"client_kwargs": {"headers": {"Cookie": f"session={SECRETS[1]}"}}},
                },
                f"https://h/b.md?private_token={SECRETS[3]}",
            ],
        }
    )

    for text in (repr(config), repr(config.sources)):
        assert not any(secret in text for secret in SECRETS), text
    assert "'endpoint_url': 'https://***@minio.local:9000'" in repr(config)
    assert "'Cookie': '***'" in repr(config)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        pytest.param(
            {"sources": [f"https://u:{SECRETS[2]}@h/a.md", f"https://u:{SECRETS[2]}@h/a.md"]},
            "sources[1]",
            id="duplicate-url-with-userinfo",
        ),
        pytest.param(
            {"sources": [{"url": "memory://a", "storage_options": {"password": SECRETS[2]}, "timeout": -1}]},
            "sources[0].timeout",
            id="bad-value-beside-secret",
        ),
        pytest.param({"storage": {"s3": SECRETS[1]}}, "storage.s3", id="secret-in-wrong-place"),
        pytest.param({"storage": {"s3": {"secret": SECRETS[1]}}, "bogus": SECRETS[0]}, "bogus", id="unknown-key"),
        pytest.param(
            {"sources": [{"url": f"https://h/a.md?sig={SECRETS[3]}", "retries": "x"}]}, "sources[0]", id="sig"
        ),
    ],
)
def test_secrets_never_appear_in_error_messages(data: dict[str, Any], path: str) -> None:
    """A config error never echoes a secret value, wherever it sits in the config."""
    error = mapping_error({"version": 1, **data})

    assert path in str(error)
    assert not any(secret in str(error) for secret in SECRETS)


def test_duplicate_source_does_not_hide_other_problems() -> None:
    """A repeated source is reported together with every other problem of the config."""
    error = mapping_error({"version": 1, "sources": ["a.md", "a.md", {"url": "x.md", "credentials": "absent"}]})
    assert [p.path for p in error.problems] == ["sources[1]", "sources[2].credentials"]


def test_sources_differing_only_in_credentials_are_duplicates() -> None:
    """Two URLs that differ only in their password would share a key in state: an error."""
    error = mapping_error({"version": 1, "sources": ["https://u:one@h.example/a.md", "https://u:two@h.example/a.md"]})
    assert "sources[1]: repeats sources[0] ('https://***@h.example/a.md')" in str(error)
    assert "one" not in str(error) and "two" not in str(error)


def test_base_dir_cwd_is_the_process_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``<cwd>`` is ``os.getcwd()`` when the config is loaded, not ``$PWD`` and not the config's folder."""
    (tmp_path / "work" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("PWD", str(tmp_path))
    config_file = tmp_path / "elsewhere.yaml"
    config_file.write_text("version: 1\nbase_dir: <cwd>\n")
    assert load_config(config_file).base_path == tmp_path / "work"
    config_file.write_text("version: 1\nbase_dir: <cwd>/sub\n")
    assert load_config(config_file).base_path == tmp_path / "work" / "sub"


@pytest.mark.parametrize("key", ["template_file", "credentials_file"])
def test_a_fifo_named_by_the_config_is_refused_not_waited_on(tmp_path: Path, key: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    text = (
        "version: 1\nformatter: {template_file: fifo}\n"
        if key == "template_file"
        else "version: 1\ncredentials_file: fifo\nsources: [{url: 's3://b/a.md', credentials: x}]\n"
    )
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "c.yaml")
    named = f"{'formatter.' if key == 'template_file' else ''}{key}"
    refused = "is a FIFO, not a regular file: not opened (it could block, or never end)"
    assert f"{named}: {tmp_path / 'fifo'} {refused}" in str(caught.value)
