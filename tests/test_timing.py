"""Durations in the load log: milliseconds to three places, as ``round`` gives them."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from memconfig.timing import ms_since


@given(st.floats(min_value=0, max_value=3_600))
def test_ms_since_rounds_as_round_does(seconds: float) -> None:
    before = time.perf_counter()
    found = ms_since(before - seconds)
    waited = time.perf_counter() - before  # the clock moves on while it is read: the bounds allow for it
    assert round(seconds * 1000, 3) - 0.001 <= found <= round((seconds + waited) * 1000, 3) + 0.001
    assert found == round(found, 3)  # three places, written as such in JSON
