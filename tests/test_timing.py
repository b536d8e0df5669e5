"""Durations in the load log: milliseconds to three places, as ``round`` gives them."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from memconfig.timing import ms_since


@given(st.floats(min_value=0, max_value=3_600))
def test_ms_since_rounds_as_round_does(seconds: float) -> None:
    now = time.perf_counter()
    found = ms_since(now - seconds)
    assert abs(found - round(seconds * 1000, 3)) <= 0.0011  # the clock moved on by a microsecond at most
    assert found == round(found, 3)  # three places, written as such in JSON
