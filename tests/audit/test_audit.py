"""``memconfig audit``: logs the real CLI wrote, over real files across runs, read back from anywhere.

The history: four ``memconfig render`` runs over a folder, each a process of
its own, appending to one log: a file edited between runs, one deleted, a
glob gaining a match, then a run of another config whose required source is
missing (a failed render). The audit of that log is asserted as the user sees
it (table text, JSON data, exit codes, messages), and the same log is read
gzipped, bz2- and xz-compressed, from moto's S3, over HTTP and from standard
input. Malformed logs (``tests/audit/bad_logs/`` and a 50 MB line) are counted,
never shown, never a crash.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog
import yaml
from support.cli import ROOT
from support.servers import Bucket, WebServer
from support.terminal import CSI, on_terminal, piped

from memconfig import Pipeline
from memconfig.audit.aggregate import Aggregator
from memconfig.audit.inputs import MAX_LINE_BYTES, line_pieces
from memconfig.audit.model import InputSummary, LineCounts
from memconfig.cli import main
from memconfig.cli.logs import configure_cli_logging
from memconfig.config import Config
from memconfig.events import EVENTS

BAD_LOGS = Path(__file__).parent / "bad_logs"
HANG = 120  # seconds: only detects a hang; nothing here is timed


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def audit(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    """``memconfig audit ARGS`` in this process."""
    capsys.readouterr()
    try:
        code = main(["audit", *args])
    finally:
        structlog.reset_defaults()
    out, err = capsys.readouterr()
    return Run(code, out, err)


def audit_process(*args: str, stdin: bytes | None = None) -> Run:
    """``python -m memconfig audit ARGS`` as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "audit", *args],
        input=stdin,
        capture_output=True,
        timeout=HANG,
        cwd=ROOT,
        check=False,
    )
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


def render(config: Path, log: Path) -> subprocess.CompletedProcess[str]:
    """``memconfig render`` in a process of its own, as a scheduled agent run would be."""
    return subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", str(config), "--log-file", str(log)],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=config.parent,
        check=False,
    )


def events_of(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@dataclass
class History:
    folder: Path
    log: Path
    config: Path
    runs: list[list[dict[str, Any]]]  # each run's events

    def time(self, run: int) -> str:
        """When run *run* (0-based) finished: its prompt_built / prompt_failed timestamp."""
        return str(self.runs[run][-1]["timestamp"])

    def sha(self, run: int, source: str) -> str:
        return next(e["sha256"] for e in self.runs[run] if e["event"] == "source_loaded" and e["source"] == source)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """Five runs appending to one log: edit, delete, a new glob match, then a failed render."""
    folder = tmp_path_factory.mktemp("history")
    (folder / "AGENTS.md").write_text("# Agents\nBe careful.\n", encoding="utf-8")
    (folder / "notes.md").write_text("Notes for the team.\n", encoding="utf-8")
    (folder / "rules").mkdir()
    (folder / "rules" / "a.md").write_text("Rule A.\n", encoding="utf-8")
    config = folder / "memconfig.yaml"
    sources = ["AGENTS.md", "notes.md", {"glob": "rules/*.md"}, "missing.md"]
    config.write_text(yaml.safe_dump({"version": 1, "sources": sources}), encoding="utf-8")
    strict = folder / "strict.yaml"
    strict.write_text(
        yaml.safe_dump({"version": 1, "sources": ["AGENTS.md", {"url": "required.md", "required": True}]}),
        encoding="utf-8",
    )
    log = folder / "memconfig.jsonl"
    runs: list[list[dict[str, Any]]] = []

    def run(which: Path, code: int = 0) -> None:
        before = len(events_of(log)) if log.exists() else 0
        done = render(which, log)
        assert done.returncode == code, done.stderr
        runs.append(events_of(log)[before:])

    run(config)
    (folder / "AGENTS.md").write_text("# Agents\nBe careful.\nAsk before deleting.\n", encoding="utf-8")
    run(config)
    (folder / "notes.md").unlink()
    run(config)
    (folder / "rules" / "b.md").write_text("Rule B, a longer rule.\n", encoding="utf-8")
    run(config)
    run(strict, code=1)
    return History(folder, log, config, runs)


def by_source(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["source"]: s for s in data["sources"]}


# -- what the audit of a history says -------------------------------------------------------------


def test_the_cli_logs_host_and_pid_on_every_line(history: History) -> None:
    """The audit tells hosts and runs apart: the CLI's lines carry both."""
    for events in history.runs:
        assert {e["host"] for e in events} == {os.uname().nodename}
        assert len({e["pid"] for e in events}) == 1
    assert len({events[0]["pid"] for events in history.runs}) == len(history.runs)


def test_json_gives_each_source_its_history(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    run = audit(capsys, str(history.log), "--format", "json")
    assert run.code == 0, run.err
    data = run.json()
    assert data["renders_total"] == 5 and data["renders_failed"] == 1
    assert data["lines"]["events"] == sum(len(r) for r in history.runs)
    assert not data["lines"]["foreign"] and not data["lines"]["malformed"]
    sources = by_source(data)
    agents = sources["AGENTS.md"]
    assert agents["versions"] == 2 and agents["loads"] == 5
    assert agents["renders"] == 4  # the failed render's prompt held nothing
    assert agents["sha256"] == history.sha(1, "AGENTS.md") != history.sha(0, "AGENTS.md")
    changed = next(e["timestamp"] for e in history.runs[1] if e["event"] == "source_loaded")
    assert agents["sha256_changed"] == changed
    assert agents["first_chars"] < agents["chars"] and agents["trend"] == agents["chars"] - agents["first_chars"]
    assert [c["sha256"] for c in agents["changes"]] == [history.sha(0, "AGENTS.md"), history.sha(1, "AGENTS.md")]
    assert agents["cache"] == {"miss": 5}
    notes = sources["notes.md"]
    assert notes["last_status"] == "skipped" and notes["last_reason"] == "not_found"
    deleted = next(e["timestamp"] for e in history.runs[2] if e.get("source") == "notes.md")
    assert notes["status_since"] == deleted
    assert notes["loads"] == 2 and notes["skips"] == {"not_found": 2} and notes["renders"] == 2
    assert sources["missing.md"]["skips"] == {"not_found": 4} and sources["missing.md"]["renders"] == 0
    b = next(s for key, s in sources.items() if key.endswith("b.md"))
    assert b["loads"] == 1 and b["renders"] == 1 and b["last_status"] == "loaded"
    assert sources["required.md"]["required"] is True


def test_json_gives_each_render(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    data = audit(capsys, str(history.log), "--format", "json").json()
    renders = data["renders"]
    assert [r["render_id"] for r in renders] == [run[-1]["render_id"] for run in history.runs]
    assert [r["failed"] for r in renders] == [False, False, False, False, True]
    assert [r["sources_loaded"] for r in renders[:4]] == [3, 3, 2, 3]
    assert all(r["host"] == os.uname().nodename and isinstance(r["pid"], int) for r in renders)
    for r, run in zip(renders, history.runs, strict=True):
        assert r["time"] == run[-1]["timestamp"] and r["events"] == len(run)
    assert renders[0]["sha256"] == history.runs[0][-1]["sha256"]
    assert renders[-1]["failures"] == [
        {
            "source": "required.md",
            "reason": "not_found",
            "detail": renders[-1]["failures"][0]["detail"],
            "name": "required.md",
            "url": str(history.folder / "required.md"),
        }
    ]


def test_the_table_answers_at_a_glance(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    run = audit(capsys, str(history.log))
    assert run.code == 0 and run.err == ""
    lines = run.out.splitlines()
    assert lines[0].startswith("1 log, 5 renders (1 failed), ")
    rows = {line.split()[0]: line.split() for line in lines if line.startswith(("AGENTS.md", "notes.md"))}
    assert rows["notes.md"][1:3] == ["skipped", "not_found"]
    assert rows["AGENTS.md"][1] == "loaded"
    header = next(line for line in lines if line.startswith("SOURCE "))
    assert header.split() == [
        "SOURCE", "STATUS", "REASON", "SINCE", "RENDERS", "LOADS", "SKIPS", "VERSIONS", "CHANGED",
        "CHARS", "TREND", "CACHE", "TRUNC", "DROPS", "ESC",
    ]  # fmt: skip
    assert "Renders" in lines and sum(" built " in line for line in lines) == 4 and " failed " in run.out


def test_at_a_time_gives_what_the_prompt_held(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    """``--at`` between the second and third runs: the edited AGENTS.md and notes.md, still there."""
    between = history.time(1)
    data = audit(capsys, str(history.log), "--at", between, "--format", "json").json()
    at = data["at"]
    assert at["render"]["render_id"] == history.runs[1][-1]["render_id"]
    held = {s["source"]: s for s in at["sources"]}
    assert held["AGENTS.md"]["sha256"] == history.sha(1, "AGENTS.md") and held["AGENTS.md"]["in_prompt"]
    assert held["notes.md"]["in_prompt"] and held["notes.md"]["sha256"] == history.sha(1, "notes.md")
    assert not held["missing.md"]["in_prompt"] and held["missing.md"]["reason"] == "not_found"
    first_load = next(e["timestamp"] for e in history.runs[0] if e.get("source") == "notes.md")
    assert held["notes.md"]["since"] == first_load  # since its version first appeared, not since the last run
    edited = next(e["timestamp"] for e in history.runs[1] if e.get("source") == "AGENTS.md")
    assert held["AGENTS.md"]["since"] == edited
    first_skip = next(e["timestamp"] for e in history.runs[0] if e.get("source") == "missing.md")
    assert held["missing.md"]["since"] == first_skip
    later = audit(capsys, str(history.log), "--at", history.time(2)).out
    assert f"render {history.runs[2][-1]['render_id']}" in later
    row = next(line for line in later.splitlines() if line.startswith("notes.md"))
    assert row.split()[1:4] == ["no", "skipped", "not_found"]


def test_at_before_any_render_says_so(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    run = audit(capsys, str(history.log), "--at", "2000-01-01")
    assert run.code == 0
    assert "Prompt at 2000-01-01 00:00:00Z (no render finished at or before that time)" in run.out
    assert audit(capsys, str(history.log), "--at", "2000-01-01", "--format", "json").json()["at"]["render"] is None


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--source", "notes.md"], {"notes.md"}),
        (["--source", "*.md", "--status", "skipped"], {"notes.md", "missing.md", "required.md"}),
        (["--reason", "not_found"], {"notes.md", "missing.md", "required.md"}),
        (["--status", "loaded"], {"AGENTS.md", "rules/*.md:a.md", "rules/*.md:b.md"}),
        (["--status", "failed"], {"required.md"}),
    ],
)
def test_filters_choose_the_sources(
    option: list[str], expected: set[str], history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    data = audit(capsys, str(history.log), *option, "--format", "json").json()
    found = set(by_source(data))
    children = {key for key in found if "a.md" in key or "b.md" in key}
    if "rules/*.md:a.md" in expected:  # a glob's children are keyed by the glob and the match
        assert len(children) == 2
        expected = (expected - {"rules/*.md:a.md", "rules/*.md:b.md"}) | children
    assert found == expected
    if option == ["--status", "failed"]:
        assert [r["failed"] for r in data["renders"]] == [True]


def test_a_reason_memconfig_does_not_give_is_warned_of_with_the_closest(
    history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--reason not_fond``: the audit runs (a log may hold other reasons) and says which reason was likely meant."""
    run = audit(capsys, str(history.log), "--reason", "not_fond", "--reason", "not_found", "--format", "json")

    assert run.code == 0
    assert run.err == (
        "memconfig: warning: --reason 'not_fond' is no reason memconfig gives (did you mean 'not_found'?)\n"
    )
    assert set(by_source(run.json())) == {"notes.md", "missing.md", "required.md"}
    assert audit(capsys, str(history.log), "--reason", "zzz", "--format", "json").err == (
        "memconfig: warning: --reason 'zzz' is no reason memconfig gives\n"
    )


def test_since_and_until_bound_the_renders(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    first_of_third = history.runs[2][0]["timestamp"]
    since = audit(capsys, str(history.log), "--since", first_of_third, "--format", "json").json()
    assert since["renders_total"] == 3 and since["lines"]["filtered"] == len(history.runs[0]) + len(history.runs[1])
    assert by_source(since)["notes.md"]["loads"] == 0
    until = audit(capsys, str(history.log), "--until", history.time(1), "--format", "json").json()
    assert until["renders_total"] == 2 and by_source(until)["notes.md"]["last_status"] == "loaded"
    assert audit(capsys, str(history.log), "--since", "1h", "--format", "json").json()["renders_total"] == 5
    assert audit(capsys, str(history.log), "--until", "1h", "--format", "json").json()["renders_total"] == 0


def test_usage_mistakes_exit_2_naming_them(
    history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args, says in [
        (["--since", "Tuesday"], "--since 'Tuesday': not a time"),
        (["--at", "soon"], "--at 'soon': not a time"),
        (["--since", "2026-12-02", "--until", "2026-12-01"], "is after --until"),
    ]:
        run = audit(capsys, str(history.log), *args)
        assert (run.code, run.out) == (2, ""), run
        assert run.err.startswith("memconfig: error: ") and says in run.err
    missing = tmp_path / "nope.jsonl"
    run = audit(capsys, str(missing))
    assert run.code == 2 and run.err == f"memconfig: error: no such log: {missing}\n"
    run = audit(capsys, str(tmp_path / "*.jsonl.gz"))
    assert run.code == 2 and f"no log matches {tmp_path}/*.jsonl.gz" in run.err
    run = audit(capsys, str(tmp_path))
    assert run.code == 2 and "is a folder" in run.err
    run = audit(capsys, "-", "-")
    assert run.code == 2 and "standard input" in run.err
    run = audit(capsys)
    assert run.code == 2 and "no LOG given" in run.err


def test_with_a_config_and_no_log_reads_its_logging_file(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    config = history.folder / "with-log.yaml"
    config.write_text(yaml.safe_dump({"version": 1, "logging": {"file": history.log.name}}), encoding="utf-8")
    data = audit(capsys, "-c", str(config), "--format", "json").json()
    assert data["renders_total"] == 5 and data["inputs"][0]["name"] == str(history.log)


# -- from anywhere ----------------------------------------------------------------------------------


COMPRESSIONS: dict[str, Callable[[bytes], bytes]] = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("suffix", list(COMPRESSIONS))
def test_compressed_copies_read_as_the_log(
    suffix: str, history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / f"memconfig.jsonl.{suffix}"
    copy.write_bytes(COMPRESSIONS[suffix](history.log.read_bytes()))
    plain = audit(capsys, str(history.log), "--format", "json").json()
    packed = audit(capsys, str(copy), "--format", "json").json()
    assert packed["inputs"] == [{**plain["inputs"][0], "name": str(copy)}]
    assert {**packed, "inputs": []} == {**plain, "inputs": []}


def test_a_glob_over_rotated_logs_some_gzipped(
    history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = history.log.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    (tmp_path / "memconfig-1.jsonl.gz").write_bytes(gzip.compress(b"".join(lines[:half])))
    (tmp_path / "memconfig-2.jsonl").write_bytes(b"".join(lines[half:]))
    data = audit(capsys, str(tmp_path / "memconfig-*"), "--format", "json").json()
    assert [i["name"] for i in data["inputs"]] == [
        str(tmp_path / "memconfig-1.jsonl.gz"),
        str(tmp_path / "memconfig-2.jsonl"),
    ]
    assert data["renders_total"] == 5


def _long_lived_log(folder: Path) -> Path:
    """One process, four renders under ``revalidate``: a source unchanged since the last turn logs nothing."""
    (folder / "a.md").write_text("A one.\n", encoding="utf-8")
    (folder / "b.md").write_text("B, never edited.\n", encoding="utf-8")
    config = Config.from_mapping(
        {"version": 1, "sources": ["a.md", "b.md"], "cache": {"policy": "revalidate"}}, base_dir=folder
    )
    log = folder / "whole.jsonl"
    pipeline, state = Pipeline.from_config(config), {}
    with open(log, "ab") as stream:
        configure_cli_logging("json", "info", stream)
        pipeline.build(state)
        for text in ("A two, longer.\n", "A three.\n", "A four, the last.\n"):
            (folder / "a.md").write_text(text, encoding="utf-8")
            pipeline.build(state)
    structlog.reset_defaults()
    return log


def test_rotated_logs_named_newest_first_read_in_time_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RotatingFileHandler's names: ``memconfig.jsonl`` newest, ``.1`` and ``.2`` older; a glob lists the newest first.

    The audit reads them oldest first (by their first event), so it says what the whole log says: each
    source's status now and since when, its renders, and what the prompt held at the end, including the
    source unchanged in the newer files (which logged nothing there).
    """
    whole = _long_lived_log(tmp_path)
    renders = [[]]  # type: list[list[bytes]]
    for line in whole.read_bytes().splitlines(keepends=True):
        renders[-1].append(line)
        if b'"prompt_built"' in line:
            renders.append([])
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    for name, part in (
        ("memconfig.jsonl.2", renders[:2]),
        ("memconfig.jsonl.1", renders[2:3]),
        ("memconfig.jsonl", renders[3:]),
    ):
        (rotated / name).write_bytes(b"".join(line for render in part for line in render))
    end = "2999-01-01"
    expected = audit(capsys, str(whole), "--format", "json", "--at", end).json()
    found = audit(capsys, str(rotated / "memconfig.jsonl*"), "--format", "json", "--at", end).json()
    assert [Path(i["name"]).name for i in found["inputs"]] == [
        "memconfig.jsonl.2",
        "memconfig.jsonl.1",
        "memconfig.jsonl",
    ]
    assert found["sources"] == expected["sources"]
    assert found["at"] == expected["at"]
    assert {s["source"]: s["in_prompt"] for s in found["at"]["sources"]} == {"a.md": True, "b.md": True}
    assert by_source(found)["b.md"]["renders"] == 4 and by_source(found)["a.md"]["versions"] == 4


def test_hosts_logs_overlapping_in_time_give_each_source_its_latest_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two hosts' logs over the same days, read one after the other: a source's status now is its latest event's."""

    def line(host: str, time: str, event: str, **fields: Any) -> bytes:
        return (
            orjson.dumps({"event": event, "render_id": f"{host}-1", "timestamp": time, "host": host, **fields}) + b"\n"
        )

    early, late = "2026-11-30T09:00:00.000000Z", "2026-12-02T09:00:00.000000Z"
    (tmp_path / "a.jsonl").write_bytes(  # host a: loaded on Monday, then skipped on Wednesday
        line("a", early, "source_loaded", source="x.md", chars=3, sha256="1" * 64)
        + line("a", late, "source_skipped", source="x.md", reason="not_found")
    )
    (tmp_path / "b.jsonl").write_bytes(  # host b, read second: loaded on Tuesday
        line("b", "2026-12-01T09:00:00.000000Z", "source_loaded", source="x.md", chars=3, sha256="1" * 64)
    )
    x = by_source(audit(capsys, str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--format", "json").json())[
        "x.md"
    ]
    assert (x["last_status"], x["last_reason"], x["status_since"]) == ("skipped", "not_found", late)
    assert x["loads"] == 2 and x["skips"] == {"not_found": 1}


def test_a_log_in_a_bucket(
    history: History, bucket: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``s3://…/*.jsonl.gz``, reached with the config's storage options (moto's S3, checking keys)."""
    for host in ("a", "b"):
        bucket.put(f"agents/{host}/memconfig-1.jsonl.gz", gzip.compress(history.log.read_bytes()))
    config = tmp_path / "audit.yaml"
    config.write_text(yaml.safe_dump({"version": 1, "storage": bucket.storage()}), encoding="utf-8")
    run = audit(capsys, "-c", str(config), f"s3://{bucket.name}/agents/*/memconfig-*.jsonl.gz", "--format", "json")
    assert run.code == 0, run.err
    data = run.json()
    assert [i["name"] for i in data["inputs"]] == [
        f"s3://{bucket.name}/agents/{host}/memconfig-1.jsonl.gz" for host in ("a", "b")
    ]
    assert data["renders_total"] == 5  # the same renders in two copies: counted once
    assert data["lines"]["repeated"] == data["inputs"][1]["lines"]  # every line of the copy, as a repeat
    table = audit(capsys, "-c", str(config), f"s3://{bucket.name}/agents/*/memconfig-*.jsonl.gz").out
    assert f"{data['lines']['repeated']:,} repeated (renders already read: a log given twice, or a copy)" in table
    secret = bucket.server.secret
    assert secret not in run.out + run.err


def test_a_log_over_http(history: History, web: WebServer, capsys: pytest.CaptureFixture[str]) -> None:
    url = web.serve("logs/memconfig.jsonl", history.log.read_bytes())
    run = audit(capsys, url, "--format", "json")
    assert run.code == 0, run.err
    assert run.json()["renders_total"] == 5 and run.json()["inputs"][0]["name"] == url
    signed = f"{url}?X-Amz-Signature=planted-signature-value&part=1"  # a "?" that is no glob; a query to mask
    run = audit(capsys, signed, "--format", "json")
    assert run.code == 0 and run.json()["renders_total"] == 5
    assert "planted-signature-value" not in run.out + run.err and "X-Amz-Signature=***" in run.out
    missing = audit(capsys, web.url("logs/gone.jsonl"))
    assert missing.code == 2 and "no such log" in missing.err


def test_a_log_on_standard_input(history: History) -> None:
    for given in (history.log.read_bytes(), gzip.compress(history.log.read_bytes())):
        run = audit_process("-", "--format", "json", stdin=given)
        assert run.code == 0, run.err
        data = run.json()
        assert data["renders_total"] == 5 and data["inputs"][0]["name"] == "<stdin>"


def test_a_log_that_cannot_be_read_is_reported_and_the_rest_read(
    history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(history.log.read_bytes())[:-40] + b"not gzip")
    run = audit(capsys, str(broken), str(history.log), "--format", "json")
    assert run.code == 1
    data = run.json()
    assert data["inputs"][0]["name"] == str(broken) and data["inputs"][0]["error"]
    assert data["inputs"][1]["error"] is None and data["renders_total"] >= 5
    assert f"memconfig: warning: cannot read {broken}: " in run.err and "Traceback" not in run.err
    table = audit(capsys, str(broken))
    assert f"unreadable: {broken}: " in table.out


# -- renders at once --------------------------------------------------------------------------------


def test_renders_from_many_threads_are_told_apart(tmp_path: Path) -> None:
    """Eight threads rendering at once into one log: every line lands in its own render, by render_id."""
    for i in range(5):
        (tmp_path / f"{i}.md").write_text(f"file {i}\n", encoding="utf-8")
    config = Config.from_mapping({"version": 1, "sources": [f"{i}.md" for i in range(5)]}, base_dir=tmp_path)
    log = tmp_path / "threads.jsonl"
    with open(log, "ab") as stream:
        configure_cli_logging("json", "info", stream)
        barrier = threading.Barrier(8)

        def work() -> None:
            barrier.wait()
            for _ in range(3):
                Pipeline.from_config(config).render()

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(HANG)
    structlog.reset_defaults()
    aggregator = Aggregator()
    with open(log, "rb") as stream:
        aggregator.feed(line_pieces(stream), InputSummary(str(log)))
    result = aggregator.finish()
    assert result.renders_total == 24
    # 5 source_loaded, the new block's prompt_manifest and prompt_built
    assert all(r.finished and r.loaded == 5 and r.events == 7 and r.sources_loaded == 5 for r in result.renders)
    assert len({r.render_id for r in result.renders}) == 24
    assert {s.source: s.renders for s in result.sources} == {f"{i}.md": 24 for i in range(5)}


def test_an_unchanged_turn_still_counts_its_sources(tmp_path: Path) -> None:
    """A long-lived process logs a source once; its later turns (only ``prompt_built``) still held it."""
    (tmp_path / "a.md").write_text("a\n", encoding="utf-8")
    config = Config.from_mapping({"version": 1, "sources": ["a.md", "gone.md"]}, base_dir=tmp_path)
    log = tmp_path / "turns.jsonl"
    with open(log, "ab") as stream:
        configure_cli_logging("json", "info", stream)
        pipeline = Pipeline.from_config(config)
        for _ in range(4):
            pipeline.render()
    structlog.reset_defaults()
    events = events_of(log)
    assert sum(e["event"] == "source_loaded" for e in events) == 1  # logged once
    aggregator = Aggregator()
    with open(log, "rb") as stream:
        aggregator.feed(line_pieces(stream), InputSummary(str(log)))
    sources = {s.source: s for s in aggregator.finish().sources}
    assert sources["a.md"].renders == 4 and sources["a.md"].loads == 1
    assert sources["gone.md"].skips == {"not_found": 1} and sources["gone.md"].renders == 0


@pytest.mark.parametrize(
    ("turns", "sources", "expected"),
    [
        pytest.param(1, ["a.md"], "1 log, 1 render, 1 source, ", id="one"),
        pytest.param(2, ["a.md", "b.md"], "1 log, 2 renders, 2 sources, ", id="two"),
    ],
)
def test_the_headline_counts_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], turns: int, sources: list[str], expected: str
) -> None:
    """One render of one source reads "1 render, 1 source"; two of each, "2 renders, 2 sources"."""
    for name in sources:
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    log = tmp_path / "log.jsonl"
    with open(log, "ab") as stream:
        configure_cli_logging("json", "info", stream)
        pipeline = Pipeline.from_config(Config.from_mapping({"version": 1, "sources": sources}, base_dir=tmp_path))
        for _ in range(turns):
            pipeline.render()
    structlog.reset_defaults()

    lines = audit(capsys, str(log)).out.splitlines()
    last = log.read_text(encoding="utf-8").splitlines()[-1]
    (log.parent / "one.jsonl").write_text(last + "\n", encoding="utf-8")

    assert lines[0].startswith(expected)
    assert audit(capsys, str(log.parent / "one.jsonl")).out.splitlines()[1] == "1 line, 1 event"


def test_a_source_dropped_in_every_render_is_out_since_its_first_drop(tmp_path: Path) -> None:
    """Over budget in three runs: each loads it and drops it again, and its drop began at the first."""
    (tmp_path / "small.md").write_text("small\n", encoding="utf-8")
    (tmp_path / "big.md").write_text("big " * 300 + "\n", encoding="utf-8")
    config = tmp_path / "memconfig.yaml"
    formatter = {"budget": {"max_chars": 600, "policy": "drop"}}
    config.write_text(yaml.safe_dump({"version": 1, "sources": ["small.md", "big.md"], "formatter": formatter}))
    log = tmp_path / "memconfig.jsonl"
    for _ in range(3):
        assert render(config, log).returncode == 0
    events = events_of(log)
    drops = [e for e in events if e["event"] == "source_dropped"]
    assert len(drops) == 3 and {e["source"] for e in drops} == {"big.md"}
    assert sum(e["event"] == "source_loaded" and e["source"] == "big.md" for e in events) == 3
    run = audit_process(str(log), "--format", "json")
    big = by_source(run.json())["big.md"]
    assert big["last_status"] == "dropped" and big["last_reason"] == "over_budget"
    assert big["status_since"] == drops[0]["timestamp"]  # not the latest run's drop
    at = audit_process(str(log), "--format", "json", "--at", events[-1]["timestamp"]).json()["at"]
    held = {s["source"]: s for s in at["sources"]}
    assert not held["big.md"]["in_prompt"] and held["big.md"]["since"] == drops[0]["timestamp"]


def test_on_a_terminal_a_long_audit_shows_a_bar_and_rich_tables(history: History, web: WebServer) -> None:
    """Logs slow to arrive: a bar on the terminal while they are read, tables drawn by rich; piped or quiet, neither."""

    urls = [web.serve(f"slow/{i}.jsonl", history.log.read_bytes()) for i in range(2)]
    for i in range(2):
        web.delay(f"slow/{i}.jsonl", 0.3, "GET")
    done = on_terminal("audit", *urls, stdout_too=True)
    assert done.returncode == 0
    text = CSI.sub("", done.text)
    assert "reading logs" in text and "/2" in text
    assert any("SINCE" in line and "LOADS" in line for line in text.splitlines())  # rich may fold long headings
    assert re.search(r"^\s*[━─]{10,}", text, re.MULTILINE)  # the rule rich draws under the headings
    quiet = on_terminal("audit", "--quiet", *urls, stdout_too=True)
    assert quiet.returncode == 0 and "reading logs" not in quiet.text and "LOADS" in quiet.text
    plain = piped("audit", *urls)
    assert plain.returncode == 0 and "\x1b" not in plain.stdout + plain.stderr and "reading logs" not in plain.stderr
    assert any(line.split()[:2] == ["SOURCE", "STATUS"] for line in plain.stdout.splitlines())


# -- bad input ---------------------------------------------------------------------------------------


EXPECTED = json.loads((BAD_LOGS / "expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_logs_are_counted_never_a_crash(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = BAD_LOGS / name
    run = audit(capsys, str(path), "--format", "json")
    assert run.code == 0 and "Traceback" not in run.err, run.err
    counts = run.json()["lines"]
    expected = EXPECTED[name]
    assert counts["events"] == expected["events"]
    for kind in ("foreign", "malformed", "unknown_events"):
        assert counts[kind] == expected.get(kind, {}), kind
    for kind in ("blank", "newer_schema"):
        assert counts[kind] == expected.get(kind, 0), kind
    table = audit(capsys, str(path))
    assert table.code == 0
    if expected.get("malformed"):
        assert "malformed (" in table.out


def test_the_bad_log_corpus_is_complete() -> None:
    assert set(EXPECTED) == {p.name for p in BAD_LOGS.glob("*.jsonl")}


def test_foreign_lines_are_counted_not_shown(capsys: pytest.CaptureFixture[str]) -> None:
    """Another program's lines may hold anything: the report gives their number, never their text."""
    path = BAD_LOGS / "foreign-lines.jsonl"
    for fmt in ("table", "json"):
        run = audit(capsys, str(path), "--format", fmt)
        assert "gunicorn" not in run.out and "another program" not in run.out
    assert "2 foreign (json 1, text 1)" in audit(capsys, str(path)).out


def test_a_render_in_one_line_is_listed_as_its_line_says(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An unchanged turn (its prompt_built alone) is listed alike, short or long, with or without --at."""
    built = {
        **{"schema": 1, "sources_loaded": 1, "sources_skipped": 0, "chars": 40, "sha256": "ab" * 32, "memo": True},
        **{"cache_hits": 1, "duration_ms": 0.3, "render_id": "p1-2", "event": "prompt_built", "level": "info"},
        **{"timestamp": "2026-12-01T08:00:00.000000Z", "host": "agent-1", "pid": 7},
    }
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    short.write_bytes(orjson.dumps(built) + b"\n")
    long.write_bytes(orjson.dumps({**built, "note": "x" * 5000}) + b"\n")  # longer than a line the audit keeps
    listed = [
        audit(capsys, str(log), "--format", "json", *at).json()["renders"]
        for log in (short, long)
        for at in ((), ("--at", "2026-12-02"))
    ]
    assert all(renders == listed[0] for renders in listed)
    assert listed[0] == [
        {
            **{"render_id": "p1-2", "process": "p1", "time": built["timestamp"], "started": built["timestamp"]},
            **{"host": "agent-1", "pid": 7, "failed": False, "finished": True, "schema": 1, "sha256": "ab" * 32},
            **{"chars": 40, "duration_ms": 0.3, "sources_loaded": 1, "sources_skipped": 0, "loaded": 0, "skipped": 0},
            **{"stale": 0, "dropped": 0, "truncated": 0, "escaped": 0, "cache_hits": 1, "failures": [], "events": 1},
        }
    ]


def test_every_event_memconfig_writes_is_one_the_audit_reads() -> None:
    """No event of the schema is counted as unknown: the audit has a reader for each (a new event needs one)."""
    lines = [orjson.dumps({"event": name, "render_id": None, "source": "AGENTS.md"}) + b"\n" for name in EVENTS]
    aggregator = Aggregator()
    aggregator.feed(lines, InputSummary("every-event.jsonl"))
    assert aggregator.counts.unknown_events == {} and aggregator.counts.foreign == {}
    assert aggregator.counts.lines == len(EVENTS)


def test_a_newer_schema_is_read_for_the_fields_known(capsys: pytest.CaptureFixture[str]) -> None:
    data = audit(capsys, str(BAD_LOGS / "newer-schema.jsonl"), "--format", "json").json()
    assert data["renders"][0]["schema"] == 2 and data["renders"][0]["chars"] == 40
    assert by_source(data)["AGENTS.md"]["loads"] == 1
    table = audit(capsys, str(BAD_LOGS / "newer-schema.jsonl")).out
    assert "2 from a newer schema (read for the fields known)" in table
    assert "1 unknown event (source_quarantined 1)" in table


def test_a_50_mb_line_is_cut_off_in_bounded_memory(history: History, tmp_path: Path) -> None:
    """A single 50 MB line among real events: counted as too long, never held whole (peak memory of the child)."""
    log = tmp_path / "huge.jsonl"
    events = history.log.read_bytes()
    with open(log, "wb") as out:
        out.write(events)
        out.write(b'{"event": "source_loaded", "render_id": "x-1", "detail": "' + b"x" * (50 << 20) + b'"}\n')
        out.write(events)
    code = (
        "import sys; from memconfig.cli import main; code = main(sys.argv[1:]); "
        "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')), file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "audit", str(log), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["lines"]["malformed"] == {"too_long": 1} and data["renders_total"] == 5
    assert data["lines"]["repeated"] == len(events.splitlines())  # the same events after it: read once
    peak_kib = int(done.stderr.split()[-2])  # "VmHWM:  61234 kB": the child's peak resident memory
    assert peak_kib < 150 * 1024, f"peak memory {peak_kib} KiB"


def test_lines_are_cut_at_the_limit() -> None:
    """A line over the limit is one ``too_long`` line, whatever its length; one of exactly the limit is read."""
    import io

    def counts(data: bytes, limit: int) -> LineCounts:
        aggregator = Aggregator()
        aggregator.feed(line_pieces(io.BytesIO(data), limit), InputSummary("x"), limit)
        return aggregator.counts

    small = counts(b'{"a":1}\n' + b"y" * 25 + b"\n[1,2,3,45]\n" + b"z" * 11 + b'\n{"b":2}', 10)
    assert small.lines == 5 and small.malformed == {"too_long": 2, "not_an_object": 1}
    assert small.foreign == {"json": 2}
    big = counts(b"a" * (MAX_LINE_BYTES + 1) + b'\n{"x":1}\n' + b"b" * (3 * MAX_LINE_BYTES), MAX_LINE_BYTES)
    assert big.lines == 3 and big.malformed == {"too_long": 2} and big.foreign == {"json": 1}


# -- polish: the table's PID, the package's API ------------------------------------------------------


def test_the_renders_table_shows_a_pid_as_plain_digits(
    history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "pids.jsonl"
    log.write_text("".join(json.dumps({**e, "pid": 2792}) + "\n" for e in events_of(history.log)), encoding="utf-8")
    run = audit(capsys, str(log))
    assert run.code == 0, run.err
    rows = [line for line in run.out.splitlines() if " built " in line or " failed " in line]
    assert rows and all(" 2792 " in row for row in rows) and "2,792" not in run.out


def test_the_package_re_exports_its_api_imported_when_used() -> None:
    code = (
        "import sys, memconfig.audit as a\n"
        "assert a.__all__ == sorted(a.__all__), a.__all__\n"
        "loaded = {m for m in sys.modules if m.startswith('memconfig.audit.')}\n"
        "assert not loaded, loaded\n"
        "from memconfig.audit import *\n"
        "assert read_audit and Filters and Audit and SourceSummary and log_inputs and mask_audit\n"
        "assert audit_data and audit_tables and write_html and write_html is a.html.write_html\n"
        "assert set(a.__all__) <= set(dir(a))\n"
        "try:\n"
        "    a.nothing\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "module 'memconfig.audit' has no attribute 'nothing'\n"


def test_on_a_terminal_a_long_log_shows_its_lines_read_so_far(web: WebServer) -> None:
    """One big log, slow to arrive: the bar says how many of its lines are read (a step per 65,536), not 0/1."""

    line = orjson.dumps(
        {"event": "source_loaded", "render_id": "p-1", "timestamp": "2026-12-01T09:00:00.000000Z", "source": "a.md"}
    )
    url = web.serve("big.jsonl", (line + b"\n") * 200_000)
    web.delay("big.jsonl", 0.4, "GET")  # each block of it
    done = on_terminal("audit", url, "--format", "json")
    assert done.returncode == 0
    text = CSI.sub("", done.text)
    assert f"reading logs: {url}, 65,536 lines" in text


def _stamp(i: int) -> str:
    return f"2026-12-01T{i // 3_600_000 % 24:02d}:{i // 60_000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1_000_000:06d}Z"


def _hostile(kind: str) -> Iterator[bytes]:
    """Logs built to grow an audit's memory, each past one of its bounds."""
    dumps = orjson.dumps
    if kind == "sources":  # 30,000 distinct sources: past the 10,000 itemised
        for i in range(30_000):
            yield dumps({"event": "source_loaded", "render_id": "p-1", "source": f"s{i}.md", "sha256": f"{i:064x}"})
    elif kind == "processes":  # 300 processes open at once, 400 sources each: past the states kept
        for i in range(120_000):
            source = f"{i // 300 % 400}-{'x' * 200}.md"
            yield dumps(
                {"event": "source_loaded", "render_id": f"p{i % 300}-1", "source": source, "sha256": f"{i:064x}"}
            )
    elif kind == "versions":  # 10,000 sources changing again and again: past the 100,000 changes and hashes kept
        for i in range(120_000):
            yield dumps(
                {"event": "source_loaded", "render_id": "p-1", "timestamp": _stamp(i), "source": f"s{i % 10_000}",
                 "sha256": f"{i:064x}"}
            )  # fmt: skip
    elif kind == "text":  # every text as long as a line allows, 1 GB in all
        for i in range(12_000):  # renders left open past the 10,000 kept, over 10,000 sources
            yield dumps(
                {"event": "source_skipped", "render_id": f"p{i % 100}-{i}", "source": "k" * 2000 + str(i % 10_000),
                 "reason": f"{'r' * 5000}{i}", "detail": "d" * 20_000, "name": "n" * 20_000, "url": "u" * 20_000,
                 "host": "h" * 20_000}
            )  # fmt: skip
    elif kind == "failures":  # failed renders naming thousands of failures each
        failures = [{"source": "s" * 1000, "reason": "r" * 500, "detail": "d" * 1000}] * 6
        for i in range(10_500):
            yield dumps({"event": "prompt_failed", "render_id": f"{'p' * 150}-{i}", "failures": failures})
    elif kind == "names":  # 200,000 distinct unknown event names
        for i in range(200_000):
            yield dumps({"event": f"event_{i}_{'x' * 50}", "render_id": None})


def test_sources_past_the_bound_are_counted_not_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memconfig.audit.aggregate import MAX_SOURCES

    log = tmp_path / "many.jsonl"
    log.write_bytes(
        b"".join(
            orjson.dumps({"event": "source_loaded", "render_id": "p-1", "source": f"s{i:05}.md", "chars": 1}) + b"\n"
            for i in range(MAX_SOURCES + 50)
        )
    )
    data = audit(capsys, str(log), "--format", "json").json()
    assert len(data["sources"]) == MAX_SOURCES and data["lines"]["not_itemised"] == {"sources": 50}
    assert data["renders"][0]["loaded"] == MAX_SOURCES + 50  # its render still counts them all
    table = audit(capsys, str(log)).out
    assert "50 events of sources past the audit's bounds (counted in their renders, not listed)" in table


@pytest.mark.parametrize("kind", ["sources", "processes", "versions", "text", "failures", "names"])
@pytest.mark.parametrize("output", ["json", "table", "html"])
def test_a_hostile_log_is_read_in_bounded_memory(kind: str, output: str, tmp_path: Path) -> None:
    """Whatever a log holds, the audit keeps a bounded share of it: the child's peak stays under 300 MB."""
    code = (
        "import sys; from memconfig.cli import main; code = main(sys.argv[1:]); "
        "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')), file=sys.stderr); sys.exit(code)"
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "audit",
            "-",
            *(["--html", str(tmp_path / "report.html")] if output == "html" else ["--format", output]),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None
    for line in _hostile(kind):
        child.stdin.write(line + b"\n")
    _, err = child.communicate(timeout=HANG)
    assert child.returncode == 0, err.decode()
    peak_kib = int(err.split()[-2])
    assert peak_kib < 300 * 1024, f"peak memory {peak_kib} KiB"
