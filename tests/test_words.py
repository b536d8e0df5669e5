"""Counts in words: the singular for one, the plural for any other number."""

from __future__ import annotations

import pytest

from memconfig.words import counted


@pytest.mark.parametrize(
    ("n", "noun", "expected"),
    [
        pytest.param(1, "render", "1 render", id="one"),
        pytest.param(2, "render", "2 renders", id="two"),
        pytest.param(0, "source", "0 sources", id="none"),
        pytest.param(1, "match", "1 match", id="one-match"),
        pytest.param(2, "match", "2 matches", id="es"),
        pytest.param(65536, "line", "65,536 lines", id="thousands"),
    ],
)
def test_counted(n: int, noun: str, expected: str) -> None:
    """One is singular; zero, two and more are plural (``es`` after s, x, ch, sh); thousands are separated."""
    assert counted(n, noun) == expected


def test_counted_takes_an_irregular_plural() -> None:
    """A plural that is not the noun with s is given."""
    assert (counted(1, "entry", "entries"), counted(3, "entry", "entries")) == ("1 entry", "3 entries")
