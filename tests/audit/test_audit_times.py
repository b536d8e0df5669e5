"""``memconfig audit --since / --until / --at``: times as a user gives them, and event times as logs hold them.

A time out of range (a century of days ago, the year 9999 with an offset) is a
usage mistake: exit 2 and one line naming the option and the value, never a
traceback. A date alone given to ``--until`` includes that whole day. Years
before 1000 sort before later ones. An event with no timestamp is kept by the
time filters. The log is one the real CLI wrote, its timestamps set to known
times afterwards.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml
from hypothesis import given
from hypothesis import strategies as st
from support.cli import memconfig

from memconfig.audit.times import canonical_time, is_canonical
from memconfig.cli import main

FIRST_DAY = "2026-12-01T15:00:00.{:06d}Z"  # the first render's events
SECOND_DAY = "2026-12-02T09:00:00.{:06d}Z"  # the second's


def audit_json(capsys: pytest.CaptureFixture[str], log: Path, *args: str) -> Any:
    """``memconfig audit LOG ARGS --format json`` in this process, its exit code checked."""
    capsys.readouterr()
    try:
        code = main(["audit", str(log), *args, "--format", "json"])
    finally:
        structlog.reset_defaults()
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _write(log: Path, events: list[dict[str, Any]]) -> None:
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two renders by the real CLI, the first on 2026-12-01 at 15:00 UTC, the second the next morning."""
    folder = tmp_path_factory.mktemp("two_days")
    (folder / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
    config = folder / "memconfig.yaml"
    config.write_text(yaml.safe_dump({"version": 1, "sources": ["AGENTS.md"]}), encoding="utf-8")
    log = folder / "memconfig.jsonl"
    runs = []
    for _ in range(2):
        done = memconfig("render", "-c", str(config), "--log-file", str(log))
        assert done.returncode == 0, done.stderr
        runs.append(_events(log)[sum(map(len, runs)) :])
    for events, day in zip(runs, (FIRST_DAY, SECOND_DAY), strict=True):
        for n, event in enumerate(events):
            event["timestamp"] = day.format(n)
    _write(log, runs[0] + runs[1])
    return log


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--since", "99999999999d", "out of range"),
        ("--since", "999999999d", "out of range"),
        ("--at", "9999-12-31T23:59:59-05:00", "out of range"),
        ("--until", "0001-01-01T00:00:00+01:00", "out of range"),
        ("--since", "10000-01-01", "not a time"),
        ("--since", "1d  x", "not a time"),
    ],
)
def test_a_time_out_of_range_exits_2_naming_the_option_and_value(
    two_days: Path, option: str, value: str, says: str
) -> None:
    done = memconfig("audit", str(two_days), option, value)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"memconfig: error: {option} {value!r}: {says} (")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_huge_value_is_quoted_cut_in_the_message(two_days: Path) -> None:
    value = "9" * 100_000 + "s"
    done = memconfig("audit", str(two_days), "--since", value)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"memconfig: error: --since '{'9' * 60}…': out of range (")


def test_until_a_date_includes_that_whole_day(two_days: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert audit_json(capsys, two_days, "--until", "2026-12-01")["renders_total"] == 1
    assert audit_json(capsys, two_days, "--until", "2026-11-30")["renders_total"] == 0
    assert audit_json(capsys, two_days, "--until", "2026-12-02")["renders_total"] == 2
    both = audit_json(capsys, two_days, "--since", "2026-12-01", "--until", "2026-12-01")
    assert both["renders_total"] == 1 and both["last_time"].startswith("2026-12-01T15:00:00")
    assert audit_json(capsys, two_days, "--since", "2026-12-02")["renders_total"] == 1
    # a time of day is that moment, not its day's end
    assert audit_json(capsys, two_days, "--until", "2026-12-01T14:59")["renders_total"] == 0


def test_a_year_before_1000_sorts_before_later_years(two_days: Path, capsys: pytest.CaptureFixture[str]) -> None:
    until = audit_json(capsys, two_days, "--until", "0999-01-01")
    assert until["renders_total"] == 0 and until["lines"]["filtered"] == until["lines"]["lines"]
    assert audit_json(capsys, two_days, "--since", "0999-01-01")["renders_total"] == 2


def test_an_event_without_a_timestamp_is_kept_by_since_and_until(
    two_days: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _events(two_days)
    for event in events:
        if event["timestamp"].startswith("2026-12-02"):
            del event["timestamp"]
    log = tmp_path / "untimed.jsonl"
    _write(log, events)
    assert audit_json(capsys, log, "--since", "2026-12-02")["renders_total"] == 1  # only the untimed render
    assert audit_json(capsys, log, "--until", "2026-11-30")["renders_total"] == 1
    assert audit_json(capsys, log)["renders_total"] == 2


def test_an_event_time_with_an_offset_is_compared_in_utc(
    two_days: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _events(two_days)
    for event in events:  # 2026-12-01T15:00Z written as 16:00 at +01:00
        if event["timestamp"].startswith("2026-12-01"):
            event["timestamp"] = event["timestamp"].replace("T15:", "T16:").replace("Z", "+01:00")
    log = tmp_path / "offsets.jsonl"
    _write(log, events)
    assert audit_json(capsys, log, "--until", "2026-12-01T15:30")["renders_total"] == 1
    assert audit_json(capsys, log, "--until", "2026-12-01T14:30")["renders_total"] == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-12-01T08:11:45.123456Z", "2026-12-01T08:11:45.123456Z"),
        ("2026-12-01T09:11:45+01:00", "2026-12-01T08:11:45.000000Z"),
        ("0999-01-01T00:00:00", "0999-01-01T00:00:00.000000Z"),
        ("0001-01-01T00:00:00+01:00", None),  # before year 1 in UTC
        ("9999-12-31T23:59:59-05:00", None),  # after 9999 in UTC
        ("x" * 26 + "Z", None),
        ("2026-12-01 08:11:45.123456Z", "2026-12-01T08:11:45.123456Z"),  # the shape differs: parsed
        ("2026/12/01T08:11:45.123456Z", None),
        ("", None),
        (1764576705, None),
        (None, None),
    ],
)
def test_an_event_time_in_the_sortable_form_or_none(value: object, expected: str | None) -> None:
    assert canonical_time(value) == expected


@given(st.one_of(st.text(), st.text(alphabet="0123456789-:T.Z+ ", min_size=10, max_size=40)))
def test_an_event_time_never_raises_and_is_sortable(value: str) -> None:
    found = canonical_time(value)
    assert found is None or is_canonical(found)
    if found is not None and not is_canonical(value):  # parsed, not taken by its shape: a real time
        assert datetime.fromisoformat(found).year >= 1
