""" "Did you mean …": the one function every message about an unknown name asks for what to suggest."""

from __future__ import annotations

import pytest

from memconfig.model import SkipReason
from memconfig.suggest import closest, did_you_mean

PROTOCOLS = ["file", "memory", "http", "https", "s3", "zip", "git", "hdfs"]


@pytest.mark.parametrize(
    ("word", "choices", "expected"),
    [
        pytest.param("requried", ["url", "glob", "required", "retries"], ["required"], id="transposed"),
        pytest.param("htps", PROTOCOLS, ["https"], id="only-the-closest-not-http-too"),
        pytest.param("form", ["from", "pick", "names"], ["from"], id="short-word"),
        pytest.param("JSN", ["text", "json"], ["json"], id="case-does-not-matter"),
        pytest.param("cleaning", ["bom", "escaping", "budgets"], [], id="nothing-close"),
        pytest.param("json", ["text", "json"], [], id="a-known-name-gets-none"),
        pytest.param("", ["text"], [], id="empty"),
        pytest.param("x" * 500, ["x"], [], id="too-long-to-be-a-typo"),
    ],
)
def test_closest_names_only_what_was_likely_meant(word: str, choices: list[str], expected: list[str]) -> None:
    """The names close to the word, closest first; none when nothing is close or the word is a choice."""
    assert closest(word, choices) == expected


def test_did_you_mean_is_a_phrase_to_follow_the_word_or_nothing() -> None:
    """Quoted names (or as *show* writes them), two joined with 'or'; empty when no name is close."""
    assert did_you_mean("cluade", ["claude", "codex", "plain"]) == " (did you mean 'claude'?)"
    assert did_you_mean("stat", ["state", "stats", "url"]) == " (did you mean 'stats' or 'state'?)"
    assert did_you_mean("VERSON", ["VERSION"], show=lambda n: "MEMCONFIG_" + n) == " (did you mean MEMCONFIG_VERSION?)"
    assert did_you_mean("zzz", ["claude"]) == ""


def test_an_enum_member_is_suggested_as_its_value() -> None:
    """A skip reason (a StrEnum) is written as the word a log holds, not as the member's repr."""
    assert did_you_mean("not_fond", list(SkipReason)) == " (did you mean 'not_found'?)"
