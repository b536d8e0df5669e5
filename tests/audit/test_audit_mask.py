"""``memconfig audit`` over logs it did not write: no credential a foreign line carries is shown, anywhere.

Two logs are written as a foreign program (or an older memconfig) could:
one carries secrets in every field an audit shows (a source's key, name, URL
and hash, reasons and details, a failure's source, a host, a render id, an
unknown event's name, a time), each in a form a credential takes (URL
user-info, a signed URL's query, an ``Authorization`` header, ``key=value``,
JSON); the other carries, bare, a value the config's ``${API_TOKEN}`` puts
into its storage options, which only ``-c`` can tell is a secret. The real
CLI reads them (``python -m memconfig audit``: the table, ``--format json``,
``--html`` and ``--at``), and no output holds any secret, or even the
``SECRET-`` prefix they share; the sources are still named (a URL keeps its
host and path), and a clean source's fields are shown as logged.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import ROOT

HANG = 120  # seconds: only detects a hang; nothing here is timed
PREFIX = "SECRET-"
CONFIG_SECRET = "SECRET-config-tok"  # $API_TOKEN: the config's storage options hold it
BASIC = base64.b64encode(b"reader:SECRET-basic-pw").decode()
RENDER = "feedfacecafe-1"
T1, T2, T3 = "2026-12-01T09:00:00.000000Z", "2026-12-01T10:00:00.000000Z", "2026-12-01T11:00:00.000000Z"
SHA_A, SHA_B, PROMPT = "a" * 64, "b" * 64, "c" * 64
SIGNED_KEY = "https://reader:SECRET-key-pw@example.com/a.md?X-Amz-Signature=SECRET-key-sig&part=1"
FAILED_SOURCE = "https://b.example.com/y.md?X-Amz-Signature=SECRET-fail-sig&X-Amz-Credential=SECRET-fail-cred"


def event(kind: str, render_id: Any = RENDER, time: str = T1, **fields: Any) -> dict[str, Any]:
    return {
        "event": kind,
        "render_id": render_id,
        "timestamp": time,
        "level": "info",
        "host": "box",
        "pid": 7,
        **fields,
    }


def loaded(source: str, sha: str, render_id: Any = RENDER, time: str = T1, **fields: Any) -> dict[str, Any]:
    found = {"source": source, "name": source, "url": f"/srv/{source}", "bytes": 5, "chars": 5, "sha256": sha}
    return event("source_loaded", render_id, time, **{**found, "cache": "miss", **fields})


def built(render_id: Any = RENDER, time: str = T1, **fields: Any) -> dict[str, Any]:
    found = {"schema": 1, "sources_loaded": 1, "sources_skipped": 1, "chars": 40, "sha256": PROMPT, "duration_ms": 1.0}
    return event("prompt_built", render_id, time, **{**found, **fields})


# Every field an audit shows, each holding a credential in a form one takes; the clean AGENTS.md beside them.
FOREIGN = [
    loaded("AGENTS.md", SHA_A),
    event("SECRET-event-name"),
    event("source_loaded token=SECRET-event-token"),
    event("source_quarantined", source="AGENTS.md"),  # a newer memconfig's event: its name is shown
    loaded(
        SIGNED_KEY,
        SHA_A,
        name="team notes password=SECRET-name-pw",
        url="https://example.com/a.md?sig=SECRET-url-sig",
        cache="SECRET-cache",
    ),
    event(
        "source_skipped",
        source="https://example.com/skipped.md",
        name="skipped.md",
        url="https://example.com/skipped.md",
        reason="remote_error token=SECRET-reason-tok",
        detail="401 Authorization: Bearer SECRET-bearer-tok",
        required=False,
    ),
    event(
        "source_skipped",
        source="AGENTS.md",
        name="AGENTS.md",
        url="/srv/AGENTS.md",
        reason="not_found",
        detail=f"Proxy-Authorization: Basic {BASIC}",
        required=False,
    ),
    event(
        "source_dropped",
        source="https://example.com/dropped.md",
        name="dropped.md",
        url="https://example.com/dropped.md",
        reason="api_key=SECRET-drop-key",
        processor="budget",
        chars=5,
        detail='{"token": "SECRET-json-tok", "cookie": "Cookie: session=SECRET-cookie; theme=dark"}',
    ),
    built(),
    loaded(SIGNED_KEY, "token=SECRET-sha-tok", "api_key=SECRET-rid-2", T2),
    built("api_key=SECRET-rid-2", T2),
    event(
        "prompt_failed",
        "https://u:SECRET-rid-pw@example.com/r-3",
        T3,
        host="reader:SECRET-host-pw@box",
        failures=[{"source": FAILED_SOURCE, "reason": "SECRET-fail-reason", "detail": "password=SECRET-fail-pw"}],
    ),
    loaded("timeless.md", SHA_B, time="SECRET-not-a-time-padding-Z"),  # 27 characters ending in Z, as a time is
]
# The config's secret, bare: only -c says it is one.
KNOWN = [
    loaded(f"s3://bucket/{CONFIG_SECRET}/notes.md", SHA_B, f"{CONFIG_SECRET}-9", T2, host=CONFIG_SECRET),
    built(f"{CONFIG_SECRET}-9", T2, host=CONFIG_SECRET),
]


@dataclass
class Shown:
    """What one audit showed: stdout, stderr and the HTML page (if asked)."""

    code: int
    out: str
    err: str
    page: str = ""

    @property
    def everything(self) -> str:
        return self.out + self.err + self.page

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    found = {}
    for name, lines in (("foreign", FOREIGN), ("known", KNOWN)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        found[name] = path
    config = tmp_path / "memconfig.yaml"
    storage = {"s3": {"key": "reader", "secret": "${API_TOKEN}"}}
    config.write_text(yaml.safe_dump({"version": 1, "storage": storage}), encoding="utf-8")
    found["config"] = config
    return found


def audit(*args: str | Path, html: Path | None = None) -> Shown:
    """``python -m memconfig audit ARGS`` as a user runs it, with ``$API_TOKEN`` set."""
    extra = ["--html", str(html)] if html else []
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "audit", *map(str, args), *extra],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=ROOT,
        env={**os.environ, "API_TOKEN": CONFIG_SECRET},
        check=False,
    )
    page = html.read_text(encoding="utf-8") if html else ""
    return Shown(done.returncode, done.stdout, done.stderr, page)


def assert_clean(shown: Shown, where: str) -> None:
    assert shown.code == 0, shown.err
    for secret in (PREFIX, BASIC, "reader:"):
        assert secret not in shown.everything, f"{where} leaks {secret!r}:\n{shown.everything}"


def outputs(tmp_path: Path, *args: str | Path) -> dict[str, Shown]:
    return {
        "table": audit(*args),
        "json": audit(*args, "--format", "json"),
        "html": audit(*args, html=tmp_path / "report.html"),
        "at": audit(*args, "--at", T3),
        "at json": audit(*args, "--at", T3, "--format", "json"),
    }


def test_no_secret_of_a_foreign_log_is_shown(logs: dict[str, Path], tmp_path: Path) -> None:
    """Without a config: every credential form is masked in the table, the JSON, the page and ``--at``."""
    for where, shown in outputs(tmp_path, logs["foreign"]).items():
        assert_clean(shown, where)
        assert "example.com/a.md" in shown.everything, where  # still named: the host and path stay


def test_no_secret_the_config_knows_is_shown(logs: dict[str, Path], tmp_path: Path) -> None:
    """With ``-c``: a value of the config's ``${API_TOKEN}`` is masked wherever it is, bare in a key or a host too."""
    for where, shown in outputs(tmp_path, "-c", logs["config"], logs["foreign"], logs["known"]).items():
        assert_clean(shown, where)
        assert "s3://bucket/***/notes.md" in shown.everything, where


def test_masked_fields_still_name_what_they_are(logs: dict[str, Path]) -> None:
    """Each field keeps what is not a secret: a URL its host and path, a detail its words, a source its name."""
    data = audit(logs["foreign"], "--format", "json").json()
    sources = {s["source"]: s for s in data["sources"]}
    signed = sources["https://***@example.com/a.md?X-Amz-Signature=***&part=1"]
    assert signed["name"] == "team notes password=***"
    assert signed["url"] == "https://example.com/a.md?sig=***"
    assert signed["cache"] == {"***": 1, "miss": 1}
    hashes = [change["sha256"] for change in signed["changes"]]
    assert hashes[0] == SHA_A and set(hashes[1:]) <= {"***"}  # a hash that is not one: masked (or refused)
    skipped, dropped = sources["https://example.com/skipped.md"], sources["https://example.com/dropped.md"]
    assert skipped["last_detail"] == "401 Authorization: ***" and skipped["skips"] == {"***": 1}
    assert dropped["last_detail"] == '{"token": "***", "cookie": "***"}' and dropped["drops"] == {"***": 1}
    failure = next(r for r in data["renders"] if r["failed"])
    assert failure["render_id"] == "https://***@example.com/r-3"
    assert failure["failures"] == [
        {
            "source": "https://b.example.com/y.md?X-Amz-Signature=***&X-Amz-Credential=***",
            "reason": "***",
            "detail": "password=***",
            "name": "",  # a log from before failures named their sources
            "url": "",
        }
    ]
    assert [r["render_id"] for r in data["renders"]][:2] == [RENDER, "api_key=***"]
    assert failure["host"] == "***" and data["renders"][0]["host"] == "box"
    assert data["lines"]["unknown_events"] == {"***": 2, "source_quarantined": 1}


def test_a_clean_source_is_shown_as_logged(logs: dict[str, Path]) -> None:
    """Masking changes nothing that holds no secret: AGENTS.md's reason, hash, times and URL are as logged."""
    data = audit(logs["foreign"], "--format", "json").json()
    agents = next(s for s in data["sources"] if s["source"] == "AGENTS.md")
    assert (agents["name"], agents["url"], agents["last_reason"]) == ("AGENTS.md", "/srv/AGENTS.md", "not_found")
    assert agents["sha256"] == SHA_A and agents["cache"] == {"miss": 1}
    assert agents["status_since"] == T1
    assert data["first_time"] == T1


def test_the_filters_echoed_are_masked_and_still_match(logs: dict[str, Path], tmp_path: Path) -> None:
    """``--source`` with a password in it matches the source it names; the headline and JSON echo it masked."""
    pattern = "https://reader:SECRET-filter-pw@example.com/*"
    for where, shown in outputs(tmp_path, logs["foreign"], "--source", SIGNED_KEY, "--source", pattern).items():
        assert_clean(shown, where)
    data = audit(logs["foreign"], "--source", SIGNED_KEY, "--format", "json").json()
    assert [s["source"] for s in data["sources"]] == ["https://***@example.com/a.md?X-Amz-Signature=***&part=1"]
    assert data["filters"]["source"] == ["https://***@example.com/a.md?X-Amz-Signature=***&part=1"]
    table = audit(logs["foreign"], "--source", pattern).out
    assert "filters: source https://***@example.com/*" in table


def test_a_secret_written_in_the_config_is_masked_too(logs: dict[str, Path], tmp_path: Path) -> None:
    """A secret written literally in the config's storage options (no ``${VAR}``), found bare in a log: masked."""
    literal = "SECRET-literal-storage-key"
    config = tmp_path / "literal.yaml"
    config.write_text(
        yaml.safe_dump({"version": 1, "storage": {"s3": {"key": "reader", "secret": literal}}}), encoding="utf-8"
    )
    log = tmp_path / "literal.jsonl"
    lines = [loaded(f"s3://bucket/{literal}/notes.md", SHA_B, "feedfacecafe-2", T2), built("feedfacecafe-2", T2)]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for where, shown in outputs(tmp_path, "-c", config, log).items():
        assert_clean(shown, where)
        assert "s3://bucket/***/notes.md" in shown.everything, where


def test_a_secret_inside_a_state_word_leaves_the_state_as_it_is(tmp_path: Path) -> None:
    """A config secret that happens to be part of ``loaded`` masks a source's text, never the audit's own words."""
    config = tmp_path / "short.yaml"
    config.write_text(yaml.safe_dump({"version": 1, "storage": {"s3": {"key": "reader", "secret": "oade"}}}))
    log = tmp_path / "short.jsonl"
    lines = [loaded("s3://bucket/oade/notes.md", SHA_B, "feedfacecafe-3", T2), built("feedfacecafe-3", T2)]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    data = audit("-c", config, log, "--format", "json").json()
    [source] = data["sources"]
    assert source["source"] == "s3://bucket/***/notes.md"
    assert source["last_status"] == "loaded"
    [row] = audit("-c", config, log, "--at", T2, "--format", "json").json()["at"]["sources"]
    assert (row["status"], row["in_prompt"]) == ("loaded", True)
