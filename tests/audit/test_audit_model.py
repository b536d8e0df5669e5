"""The audit's states of a source: one enum, the render's own values where they meet, written as its values.

``SourceState`` takes ``loaded`` / ``skipped`` / ``stale`` from the render's
``Status`` (so the two cannot drift) and adds the audit's own ``dropped`` and
``removed``. Every summary and ``--at`` row holds a member, and the table, the
JSON and the HTML page write its value, never the member's name.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
import structlog

from memconfig import Pipeline
from memconfig.audit import SourceState
from memconfig.audit.aggregate import Aggregator, Filters
from memconfig.audit.html import render_html
from memconfig.audit.inputs import line_pieces
from memconfig.audit.model import STATUSES, Audit, InputSummary
from memconfig.audit.output import audit_data, audit_tables
from memconfig.cli import main
from memconfig.cli.logs import configure_cli_logging
from memconfig.config import Config
from memconfig.model import Status


def test_the_states_a_render_also_has_take_its_status_values() -> None:
    """loaded, skipped and stale are the render's Status values; dropped and removed are the audit's alone."""
    shared = {state.name for state in SourceState} & {status.name for status in Status}
    assert shared == {"LOADED", "SKIPPED", "STALE"}
    for name in shared:
        assert SourceState[name] == Status[name] and SourceState[name].value == Status[name].value
        assert SourceState[name].in_prompt == Status[name].in_prompt
    assert {SourceState.DROPPED, SourceState.REMOVED}.isdisjoint(set(Status))
    assert not SourceState.DROPPED.in_prompt and not SourceState.REMOVED.in_prompt
    assert STATUSES == ("loaded", "skipped", "stale", "dropped", "removed")
    assert all(type(name) is str for name in STATUSES)  # argparse's choices: an error lists them as plain words


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Two runs of one config: a.md in, gone.md missing, big.md over budget, rules/b.md deleted before the second."""
    (tmp_path / "a.md").write_text("a\n", encoding="utf-8")
    (tmp_path / "big.md").write_text("big " * 300 + "\n", encoding="utf-8")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "b.md").write_text("Rule B.\n", encoding="utf-8")
    sources = ["a.md", "gone.md", {"glob": "rules/*.md"}, "big.md"]
    formatter = {"budget": {"max_chars": 600, "policy": "drop"}}
    config = Config.from_mapping({"version": 1, "sources": sources, "formatter": formatter}, base_dir=tmp_path)
    log = tmp_path / "log.jsonl"
    with open(log, "ab") as stream:
        configure_cli_logging("json", "info", stream)
        try:
            Pipeline.from_config(config).render()
            (tmp_path / "rules" / "b.md").unlink()
            Pipeline.from_config(config).render()  # a run of its own, as the next scheduled one
        finally:
            structlog.reset_defaults()
    return log


def audited(log: Path) -> Audit:
    """The audit of *log*, ``--at`` its last event."""
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["timestamp"]
    aggregator = Aggregator(Filters(at=last))
    with open(log, "rb") as stream:
        aggregator.feed(line_pieces(stream), InputSummary(str(log)))
    return aggregator.finish()


EXPECTED = {
    "a.md": SourceState.LOADED,
    "gone.md": SourceState.SKIPPED,
    "rules/*.md": SourceState.SKIPPED,  # the glob, its one match gone
    "big.md": SourceState.DROPPED,
    "rules/b.md": SourceState.REMOVED,
}


def test_every_source_s_state_is_a_member(log: Path) -> None:
    """The summaries and the ``--at`` rows hold SourceState members, so the audit compares them by identity."""
    found = audited(log)
    states = {s.source: s.last_status for s in found.sources}
    assert states == EXPECTED
    assert all(type(state) is SourceState for state in states.values())
    assert found.at is not None
    held = {row.source: row.status for row in found.at.sources}
    assert held == {key: state for key, state in EXPECTED.items() if state is not SourceState.REMOVED}
    assert all(type(state) is SourceState for state in held.values())
    assert [row.source for row in found.at.sources if row.in_prompt] == ["a.md"]


def test_the_table_json_and_page_write_each_state_as_its_value(log: Path) -> None:
    """``loaded`` … ``removed`` in every output, never ``SourceState.…``."""
    found = audited(log)
    data = orjson.dumps(audit_data(found))
    assert b"SourceState" not in data
    listed = {s["source"]: s["last_status"] for s in json.loads(data)["sources"]}
    assert {key: listed[key] for key in EXPECTED} == {key: state.value for key, state in EXPECTED.items()}
    tables = {table.title: table for table in audit_tables(found)}
    rows = {row[0]: row for row in tables["Sources"].rows}
    assert {key: str(rows[key][1]) for key in EXPECTED} == {key: state.value for key, state in EXPECTED.items()}
    at = next(table for title, table in tables.items() if title.startswith("Prompt at"))
    assert [(str(row[0]), row[1], str(row[2])) for row in at.rows] == [
        ("a.md", "yes", "loaded"),
        ("gone.md", "no", "skipped"),
        ("rules/*.md", "no", "skipped"),
        ("big.md", "no", "dropped"),
    ]
    page = render_html(found)
    assert "SourceState" not in page
    for state in ("skipped", "dropped", "removed"):
        assert f'<span class="badge {state}">{state}</span>' in page


@pytest.mark.parametrize("state", [pytest.param(s.value, id=s.value) for s in SourceState])
def test_status_filters_by_each_state(state: str, log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--status STATE`` takes every state and lists exactly the sources last in it."""
    capsys.readouterr()
    try:
        assert main(["audit", str(log), "--status", state, "--format", "json"]) == 0
    finally:
        structlog.reset_defaults()
    shown = {s["source"] for s in json.loads(capsys.readouterr().out)["sources"]}
    assert shown == {key for key, expected in EXPECTED.items() if expected == state}
