"""``memconfig explain``: a dry run listing every source, its checks and verdict, and where each value was set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import ROOT, memconfig
from support.servers import Bucket, WebServer

from memconfig import Pipeline, SourceError
from memconfig.cli import main
from memconfig.config import load_config
from memconfig.explain import explain

HANG = 60  # seconds: only detects a hang; nothing here is timed


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.upper().startswith("MEMCONFIG_")]:
        monkeypatch.delenv(name)


def write(folder: Path, data: dict[str, Any] | str, name: str = "memconfig.yaml") -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def run_json(config: Path | str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["explain", "-c", str(config), "--format", "json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def by_key(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every planned source, matches included, by key."""
    found: dict[str, dict[str, Any]] = {}
    stack = list(report["sources"])
    while stack:
        source = stack.pop()
        found[source["key"]] = source
        stack += source["matches"]
    return found


def value(report: dict[str, Any], path: str) -> dict[str, Any]:
    return next(v for v in report["values"] if v["path"] == path)


def test_globs_are_listed_and_no_fifo_is_opened(tmp_path: Path) -> None:
    """A FIFO among a glob's matches and a FIFO source are named and skipped; explain returns without a writer."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("alpha")
    (docs / "b.md").write_text("beta beta")
    os.mkfifo(docs / "pipe.md")
    os.mkfifo(tmp_path / "fifo.md")
    config = write(tmp_path, {"version": 1, "sources": [{"glob": "docs/*.md"}, "fifo.md"]})
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "explain", "-c", str(config), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=ROOT,
        env=dict(os.environ),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sources = by_key(json.loads(done.stdout))
    glob = sources["docs/*.md"]
    assert glob["summary"] == "expands to 3 matches"
    assert [m["key"] for m in glob["matches"]] == ["docs/a.md", "docs/b.md", "docs/pipe.md"]
    assert sources["docs/a.md"]["summary"] == "would be read (5 bytes)"
    assert sources["docs/pipe.md"]["summary"] == "would be skipped: not_regular_file (is a FIFO, not a regular file)"
    assert sources["fifo.md"]["reason"] == "not_regular_file"
    assert {c["name"]: c["outcome"] for c in glob["checks"]} == {"max_matches": "3 matches"}


def test_one_match_one_byte_are_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A glob matching one file of one byte: "expands to 1 match", "max_matches: 1 match", "would be read (1 byte)"."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a")
    config = write(tmp_path, {"version": 1, "sources": [{"glob": "docs/*.md"}]})
    assert main(["explain", "-c", str(config)]) == 0
    out = capsys.readouterr().out
    assert "check max_matches: 1 match [ok]" in out and "-> expands to 1 match" in out
    assert "check max_bytes: 1 byte [ok]" in out and "-> would be read (1 byte)" in out


def test_the_text_report_names_sources_checks_verdicts_and_layers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default report is readable text: each source, its checks and verdict, each value with its layer."""
    (tmp_path / "a.md").write_text("alpha")
    config = write(tmp_path, "version: 1\nsources:\n  - a.md\n  - missing.md\nloader:\n  max_bytes: 100\n")
    assert main(["explain", "-c", str(config)]) == 0
    out = capsys.readouterr().out
    assert "no source was read" in out
    assert "  1. a.md  [file]" in out and "check max_bytes: 5 bytes [ok]" in out and "-> would be read (5 bytes)" in out
    assert "-> would be skipped: not_found (no such file)" in out
    assert "loader.max_bytes" in out and f"{config}:6:14" in out
    assert any(line.split()[:2] == ["loader.timeout", "30.0"] and line.endswith("default") for line in out.splitlines())


def test_home_variables_base_dir_and_cwd_are_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``~``, ``${VAR}`` (name shown), a relative ``base_dir`` and ``<cwd>``: as written and as resolved."""
    home, work, conf = tmp_path / "home", tmp_path / "work", tmp_path / "conf"
    for folder in (home, work, conf / "notes"):
        folder.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NOTES_FOLDER", "notes")
    monkeypatch.chdir(work)
    config = write(conf, {"version": 1, "base_dir": ".", "sources": ["~/AGENTS.md", "${NOTES_FOLDER}/a.md", "b.md"]})
    report = run_json(config, capsys)
    assert report["base_dir"] == str(conf)
    sources = by_key(report)
    assert sources["~/AGENTS.md"]["resolved"] == str(home / "AGENTS.md")
    assert sources["${NOTES_FOLDER}/a.md"]["resolved"] == str(conf / "notes" / "a.md")
    assert sources["${NOTES_FOLDER}/a.md"]["variables"] == ["NOTES_FOLDER"]
    assert value(report, "sources[1].url")["variables"] == ["NOTES_FOLDER"]
    assert sources["b.md"]["resolved"] == str(conf / "b.md")

    at_cwd = write(conf, {"version": 1, "base_dir": "<cwd>/sub", "sources": ["b.md"]}, "cwd.yaml")
    report = run_json(at_cwd, capsys)
    assert report["base_dir"] == str(work / "sub") and "working folder" in report["base_dir_from"]
    assert by_key(report)["b.md"]["resolved"] == str(work / "sub" / "b.md")


def test_each_value_names_the_layer_that_set_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file value has its line and column, an environment override names its variable, the rest are defaults."""
    text = "version: 1\nsources:\n  - a.md\nloader:\n  retries: 5\n  timeout: 9\ncache: {policy: ttl}\n"
    config = write(tmp_path, text)
    monkeypatch.setenv("MEMCONFIG_LOADER__TIMEOUT", "3")
    monkeypatch.setenv("MEMCONFIG_FORMATTER", '{"preset": "plain"}')
    report = run_json(config, capsys)
    assert value(report, "sources[0].url")["layer"] == {
        "kind": "file",
        "file": str(config),
        "line": 3,
        "column": 5,
        "variable": None,
        "preset": None,
    }
    assert value(report, "loader.retries")["where"] == f"{config}:5:12"
    assert value(report, "cache.policy")["where"] == f"{config}:7:17"
    timeout = value(report, "loader.timeout")
    assert (timeout["value"], timeout["where"]) == (3.0, "environment variable MEMCONFIG_LOADER__TIMEOUT")
    assert value(report, "formatter.preset")["where"] == "environment variable MEMCONFIG_FORMATTER"
    assert value(report, "formatter.separator")["layer"]["kind"] == "default"  # the JSON set only the preset
    assert (value(report, "loader.max_bytes")["value"], value(report, "loader.max_bytes")["where"]) == (
        1 << 20,
        "default",
    )


def test_what_a_tools_preset_fills_in_is_the_presets_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under ``preset: codex``, the values its defaults bring are ``preset codex``, not ``default``; the rest as before.

    What the config sets itself (``loader.max_bytes`` here) is the file's, and a field the preset leaves alone
    (``formatter.budget.max_chars``, ``loader.encoding``) is the default.
    """
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "AGENTS.md").write_text("agents")
    config = write(tmp_path, "version: 1\nformatter: {preset: codex}\nloader: {max_bytes: 5000}\n")
    monkeypatch.chdir(tmp_path)

    report = run_json(config, capsys)
    assert main(["explain", "-c", str(config)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}

    assert value(report, "loader.on_decode_error")["layer"] == {
        "kind": "preset",
        "file": None,
        "line": None,
        "column": None,
        "variable": None,
        "preset": "codex",
    }
    for path, shown in [
        ("loader.on_decode_error", '"replace"'),
        ("formatter.budget.max_bytes", "32768"),
        ("sources[0].discover.names", '["AGENTS.override.md", "AGENTS.md"]'),
    ]:
        assert value(report, path)["where"] == "preset codex"
        assert lines[path].split()[-2:] == ["preset", "codex"] and shown in lines[path]
    assert value(report, "loader.max_bytes")["where"] == f"{config}:3:21"
    assert value(report, "formatter.budget.max_chars")["where"] == "default"
    assert value(report, "loader.encoding")["where"] == "default"
    assert lines["loader.encoding"].endswith("default")


def test_a_config_on_standard_input_is_the_stdin_layer(tmp_path: Path) -> None:
    """``-c -``: values are at lines of ``<stdin>``, relative paths against the current folder."""
    (tmp_path / "a.md").write_text("alpha")
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "explain", "-c", "-", "--format", "json"],
        input="version: 1\n\nsources: [a.md]\n",
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert value(report, "sources[0].url")["layer"] == {
        "kind": "stdin",
        "file": "<stdin>",
        "line": 3,
        "column": 11,
        "variable": None,
        "preset": None,
    }
    assert by_key(report)["a.md"]["summary"] == "would be read (5 bytes)"


def test_confinement_and_limits_give_the_loaders_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Roots (inside or not, symlinks resolved), protocols, hosts, max_matches and max_bytes: checked, with verdicts."""
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "ok.md").write_text("fine")
    (inside / "big.md").write_text("x" * 50)
    (outside / "secret.md").write_text("no")
    (inside / "link.md").symlink_to(outside / "secret.md")
    many = inside / "many"
    many.mkdir()
    for i in range(4):
        (many / f"{i}.md").write_text("m")
    data = {
        "version": 1,
        "loader": {
            "allowed_roots": ["inside"],
            "allowed_protocols": ["file", "http"],
            "allowed_hosts": ["docs.example.com"],
            "max_matches": 3,
            "max_bytes": 10,
        },
        "sources": [
            "inside/ok.md",
            "inside/big.md",
            "outside/secret.md",
            "inside/link.md",
            {"glob": "inside/many/*.md"},
            {"glob": "outside/*.md"},
            "memory://x.md",
            "http://elsewhere.example.org/a.md",
        ],
    }
    report = run_json(write(tmp_path, data), capsys)
    sources = by_key(report)
    assert report["limits"]["allowed_roots"] == [str(inside)]
    assert sources["inside/ok.md"]["summary"] == "would be read (4 bytes)"
    checks = {c["name"]: c for c in sources["inside/ok.md"]["checks"]}
    assert checks["allowed_roots"]["passed"] is True and f"inside {inside}" in checks["allowed_roots"]["outcome"]
    assert checks["allowed_protocols"]["passed"] is True
    assert (
        sources["inside/big.md"]["summary"] == "would be skipped: too_large (larger than loader.max_bytes (10 bytes))"
    )
    assert sources["outside/secret.md"]["summary"].startswith("would be refused: outside_root")
    link = sources["inside/link.md"]
    assert link["reason"] == "outside_root" and f"resolves to {outside / 'secret.md'}" in link["detail"]
    assert sources["inside/many/*.md"]["summary"] == (
        "would be skipped: too_large (matched 4 files, more than loader.max_matches (3))"
    )
    assert sources["inside/many/*.md"]["matches"] == []
    assert (
        sources["outside/*.md"]["reason"] == "outside_root"
        and "nothing was listed" in sources["outside/*.md"]["detail"]
    )
    assert sources["memory://x.md"]["summary"].startswith("would be refused: protocol_not_allowed")
    http = sources["http://elsewhere.example.org/a.md"]
    assert http["reason"] == "host_not_allowed"
    assert {c["name"]: c["passed"] for c in http["checks"]} == {"allowed_protocols": True, "allowed_hosts": False}


def test_remote_sources_are_not_contacted(
    tmp_path: Path, web: WebServer, closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """An HTTP source, a zip over HTTP and a glob in it: no request is sent; a closed port is never dialled."""
    web.serve("a.md", "alpha")
    data = {
        "version": 1,
        "sources": [
            web.url("a.md"),
            f"zip://x.md::{web.url('b.zip')}",
            {"glob": f"zip://*.md::{web.url('b.zip')}"},
            f"http://127.0.0.1:{closed_port}/x.md",
        ],
    }
    report = run_json(write(tmp_path, data), capsys)
    sources = by_key(report)
    assert sources[web.url("a.md")]["summary"] == "would be read (not contacted: a dry run reads nothing)"
    assert sources[f"zip://*.md::{web.url('b.zip')}"]["verdict"] == "not_expanded"
    assert sources[f"http://127.0.0.1:{closed_port}/x.md"]["verdict"] == "read"
    assert sum(web.hits.values()) == 0


def test_a_remote_glob_is_listed_without_reading_its_files(
    tmp_path: Path, bucket: Bucket, capsys: pytest.CaptureFixture[str]
) -> None:
    """``s3://bucket/*.md`` is listed (with the loader's timeout); each match is planned, none is read."""
    bucket.put("notes/a.md", "alpha")
    bucket.put("notes/b.md", "beta")
    data = {"version": 1, "storage": bucket.storage(), "sources": [{"glob": f"s3://{bucket.name}/notes/*.md"}]}
    report = run_json(write(tmp_path, data), capsys)
    glob = report["sources"][0]
    assert glob["summary"] == "expands to 2 matches"
    assert [m["key"] for m in glob["matches"]] == [f"s3://{bucket.name}/notes/a.md", f"s3://{bucket.name}/notes/b.md"]
    assert {m["verdict"] for m in glob["matches"]} == {"read"}


def test_a_glob_that_cannot_be_listed_says_why(
    tmp_path: Path, closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A remote glob whose listing fails is skipped with the loader's reason, in time."""
    data = {"version": 1, "loader": {"timeout": 5}, "sources": [{"glob": f"http://127.0.0.1:{closed_port}/*.md"}]}
    report = run_json(write(tmp_path, data), capsys)
    glob = report["sources"][0]
    assert glob["verdict"] == "skipped" and glob["reason"] in {"remote_error", "not_found", "timeout"}, glob


def test_secrets_are_masked_and_variable_names_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``${API_TOKEN}`` shows its name, not its value; URL credentials, option secrets, credentials files masked."""
    monkeypatch.setenv("API_TOKEN", "SECRET-token-value")
    monkeypatch.setenv("MEMCONFIG_STORAGE", '{"s3": {"secret": "SECRET-from-env"}}')
    (tmp_path / "creds.yaml").write_text("team: {headers: {Authorization: 'Bearer SECRET-in-creds'}}\n")
    data = {
        "version": 1,
        "credentials_file": "creds.yaml",
        "sources": [
            {"url": "http://reader:SECRET-pw@127.0.0.1:9/a.md?sig=SECRET-sig", "name": "team ${API_TOKEN}"},
            {
                "url": "https://example.com/${API_TOKEN}/b.md",
                "storage_options": {"headers": {"X-Api": "${API_TOKEN}", "Cookie": "SECRET-cookie"}},
            },
            {"url": "https://example.com/c.md", "credentials": "team"},
        ],
    }
    config = write(tmp_path, data)
    for form in ("text", "json"):
        capsys.readouterr()
        assert main(["explain", "-c", str(config), "--format", form]) == 0
        out, err = capsys.readouterr()
        assert "SECRET" not in out + err
        assert "API_TOKEN" in out and "***" in out
    report = run_json(config, capsys)
    assert value(report, "sources[0].name")["value"] == "team ***"
    assert value(report, "sources[0].name")["variables"] == ["API_TOKEN"]
    assert by_key(report)["https://example.com/${API_TOKEN}/b.md"]["resolved"] == "https://example.com/***/b.md"
    assert value(report, "storage.s3.secret")["where"] == "environment variable MEMCONFIG_STORAGE"
    assert value(report, "sources[2].credentials")["value"] == "team"  # the entry's name, never its values


def test_check_rows_agree_with_the_verdict_on_an_allowed_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An option listed in ``loader.allowed_options`` fails no check row of a source that would be read."""
    data = {
        "version": 1,
        "loader": {
            "allowed_protocols": ["file", "zip", "http"],
            "allowed_hosts": ["docs.example.com"],
            "allowed_options": ["loader_hook", "client_kwargs.trust_env"],
        },
        "sources": [
            {"url": "zip://s.txt", "storage_options": {"fo": "x.zip", "loader_hook": "x"}},
            {"url": "http://docs.example.com/a.md", "storage_options": {"client_kwargs": {"trust_env": True}}},
        ],
    }
    capsys.readouterr()
    assert main(["explain", "-c", str(write(tmp_path, data))]) == 0
    out = capsys.readouterr().out
    assert "[FAILS]" not in out
    assert "check allowed_protocols: zip allowed [ok]" in out
    assert "check allowed_hosts: host allowed [ok]" in out
    assert out.count("-> would be read") == 2


def test_a_malformed_reference_mapping_is_explained_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``refs: [1, 2]`` under confinement: explain gives the refusal render gives, and exits 0."""
    data = {
        "version": 1,
        "loader": {"allowed_roots": ["."]},
        "sources": [{"url": "reference://a.md", "storage_options": {"fo": {"version": 1, "refs": [1, 2]}}}],
    }
    capsys.readouterr()
    assert main(["explain", "-c", str(write(tmp_path, data))]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert (
        "-> would be refused: option_not_allowed"
        " (storage option 'fo': its refs are not a mapping of keys to references)" in out
    )


def test_the_library_explains_a_loaded_config(tmp_path: Path) -> None:
    """``explain(config)`` reads the file again for its lines when not given the text."""
    config = load_config(write(tmp_path, "version: 1\nsources:\n  - a.md\n"))
    explanation = explain(config)
    assert str(next(v.layer for v in explanation.values if v.path == "sources[0].url")) == f"{config.file}:3:5"
    assert explanation.sources[0].summary == "would be skipped: not_found (no such file)"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("version: 1\nsources:\n  - url: a.md\n    url2: b\n", id="unknown-key"),
        pytest.param("version: 1\nsources: [\n", id="yaml-syntax"),
        pytest.param("version: 1\nloader: {timeout: -1}\n", id="bad-value"),
    ],
)
def test_a_bad_config_exits_2_with_validates_message(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad config: exit 2 and the very message ``validate`` gives, nothing on stdout."""
    config = write(tmp_path, text)
    assert main(["validate", "-c", str(config)]) == 2
    expected = capsys.readouterr()
    assert main(["explain", "-c", str(config)]) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err == expected.err and got.err.startswith("memconfig: error: ")


# -- an HTTP glob, and a local glob's matches as paths ----------------------------------------------------------------

_INDEX = '<html><body><a href="a.md">a.md</a> <a href="b.md">b.md</a> <a href="c.txt">c.txt</a> <a href="sub/">sub/</a>'


def test_an_http_glob_is_listed_with_one_request_and_no_match_read(
    tmp_path: Path, web: WebServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``https://host/dir/*.md``: one GET of the folder's index page (its links are the files), no match fetched."""
    web.serve("dir/", _INDEX)
    web.headers["dir/"]["Content-Type"] = "text/html"
    for name in ("a.md", "b.md", "c.txt"):
        web.serve(f"dir/{name}", name)
    report = run_json(write(tmp_path, {"version": 1, "sources": [{"glob": web.url("dir/*.md")}]}), capsys)
    glob = report["sources"][0]
    assert glob["summary"] == "expands to 2 matches"
    assert [m["key"] for m in glob["matches"]] == [web.url("dir/a.md"), web.url("dir/b.md")]
    assert dict(web.methods) == {("GET", "dir/"): 1}


def test_a_render_lists_an_http_glob_with_one_request_too(tmp_path: Path, web: WebServer) -> None:
    """The loader lists it the same way (explain uses its expander): one GET of the folder, then one per match."""
    web.serve("dir/", _INDEX)
    web.headers["dir/"]["Content-Type"] = "text/html"
    for name in ("a.md", "b.md", "c.txt"):
        web.serve(f"dir/{name}", f"{name} body")
    config = write(tmp_path, {"version": 1, "sources": [{"glob": web.url("dir/*.md")}]})
    done = memconfig("render", "-c", str(config))
    assert done.returncode == 0, done.stderr
    assert "a.md body" in done.stdout and "b.md body" in done.stdout and "c.txt" not in done.stdout
    assert dict(web.methods) == {("GET", "dir/"): 1, ("GET", "dir/a.md"): 1, ("GET", "dir/b.md"): 1}


def test_an_http_glob_over_a_missing_folder_matches_nothing(
    tmp_path: Path, web: WebServer, capsys: pytest.CaptureFixture[str]
) -> None:
    report = run_json(write(tmp_path, {"version": 1, "sources": [{"glob": web.url("nowhere/*.md")}]}), capsys)
    assert report["sources"][0]["summary"] == "would be skipped: not_found (the glob matched no file)"
    assert dict(web.methods) == {("GET", "nowhere/"): 1}


def test_a_local_glob_s_matches_are_shown_as_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its matches resolve to paths, as the glob itself does, not to ``file:///…`` URLs."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha")
    config = write(tmp_path, {"version": 1, "sources": [{"glob": "docs/*.md"}]})
    glob = run_json(config, capsys)["sources"][0]
    assert glob["resolved"] == f"{tmp_path}/docs/*.md"
    assert [m["resolved"] for m in glob["matches"]] == [f"{tmp_path}/docs/a.md"]
    assert main(["explain", "-c", str(config)]) == 0
    text = capsys.readouterr().out
    assert f"resolved:  {tmp_path}/docs/a.md" in text and "file://" not in text


def _git_repo(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def test_a_discovery_shows_its_walk_without_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The root and its marker, each folder, each candidate: taken, missing, not a regular file, not needed.

    Under pick first with skip_blank, the first regular file is shown taken, its blank
    check left to the render; a FIFO is stat-ed, never opened (the dry run cannot block).
    """
    repo = _git_repo(tmp_path / "repo")
    (repo / "AGENTS.override.md").write_text("   \n")  # blank: only a read could tell
    (repo / "AGENTS.md").write_text("Root.\n")
    work = repo / "services" / "api"
    work.mkdir(parents=True)
    os.mkfifo(work / "AGENTS.override.md")
    (work / "AGENTS.md").write_text("API.\n")
    config = write(tmp_path, {"version": 1, "sources": [{"discover": {"names": ["AGENTS.override.md", "AGENTS.md"]}}]})
    monkeypatch.chdir(work)
    report = run_json(config, capsys)
    [discovery] = report["sources"]
    assert (discovery["kind"], discovery["verdict"]) == ("discover", "expanded")
    assert discovery["detail"] == f"project root {repo} (holds .git); 3 folders from {work}"
    walked = {f["folder"]: [(c["path"], c["outcome"], c["detail"]) for c in f["candidates"]] for f in discovery["walk"]}
    blank_check = "its blank check is the render's (a blank file is passed over)"
    assert walked[str(repo)] == [
        (str(repo / "AGENTS.override.md"), "taken", blank_check),
        (str(repo / "AGENTS.md"), "not_needed", "an earlier candidate ends the folder's search"),
    ]
    assert walked[str(repo / "services")] == [
        (str(repo / "services/AGENTS.override.md"), "missing", "no such file"),
        (str(repo / "services/AGENTS.md"), "missing", "no such file"),
    ]
    assert walked[str(work)] == [
        (str(work / "AGENTS.override.md"), "not_regular_file", "is a FIFO, not a regular file"),
        (str(work / "AGENTS.md"), "taken", blank_check),
    ]
    assert [m["key"] for m in discovery["matches"]] == [str(repo / "AGENTS.override.md"), str(work / "AGENTS.md")]
    assert main(["explain", "-c", str(config)]) == 0
    text = capsys.readouterr().out
    assert f"walk: project root {repo} (holds .git); 3 folders from {work}" in text
    assert f"{work / 'AGENTS.override.md'}: not_regular_file (is a FIFO, not a regular file)" in text


def test_a_discovery_that_finds_nothing_and_without_a_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No marker above the start folder: only that folder; no file: skipped, not_found (as a render says)."""
    config = write(tmp_path, {"version": 1, "formatter": {"preset": "gemini"}})
    monkeypatch.chdir(tmp_path)
    [discovery] = run_json(config, capsys)["sources"]
    assert (discovery["verdict"], discovery["reason"]) == ("skipped", "not_found")
    assert discovery["detail"] == f"no root marker found: only the start folder; 1 folder from {tmp_path}"
    assert discovery["summary"].startswith("would be skipped: not_found")


def test_imports_settings_are_shown_but_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Imports are in the files' text, which a dry run does not read: their settings only, said so."""
    repo = _git_repo(tmp_path / "repo")
    (repo / "CLAUDE.md").write_text("@AGENTS.md\n")
    (repo / "AGENTS.md").write_text("Imported.\n")
    config = write(repo, {"version": 1, "formatter": {"preset": "claude"}})
    monkeypatch.chdir(repo)
    found = by_key(run_json(config, capsys))
    said = (
        "imports on (max_depth 5, markers none, allow_home False); which files are imported is found in each "
        "file's text, which a dry run does not read"
    )
    discovery = found["discover:all:CLAUDE.md|AGENTS.md,CLAUDE.local.md"]
    assert discovery["imports"] == said
    assert str(repo / "AGENTS.md") not in found  # not listed: finding it would take a read
    assert [m["key"] for m in discovery["matches"]] == [str(repo / "CLAUDE.md")]


def test_a_required_source_a_render_would_skip_says_the_render_would_fail(tmp_path: Path) -> None:
    """Required and out of the prompt (missing, a glob with no match, a glob whose every match is out): the verdict
    says render would fail (exit 1), as the render does; an optional one, or a required one that is in, does not."""
    (tmp_path / "AGENTS.md").write_text("Here.\n", encoding="utf-8")
    (tmp_path / "pipes").mkdir()
    os.mkfifo(tmp_path / "pipes" / "a.md")
    sources = [
        {"url": "AGENTS.md", "required": True},
        {"url": "gone.md", "required": True},
        "optional.md",
        {"glob": "nothing/*.md", "required": True},
        {"glob": "pipes/*.md", "required": True},
    ]
    config = load_config(write(tmp_path, {"version": 1, "sources": sources}))

    planned = {s.key: s for s in explain(config).sources}

    fails = "; render would fail (exit 1): the source is required"
    assert {key: (s.fails_render, s.summary) for key, s in planned.items()} == {
        "AGENTS.md": (False, "would be read (6 bytes)"),
        "gone.md": (True, "would be skipped: not_found (no such file)" + fails),
        "optional.md": (False, "would be skipped: not_found (no such file)"),
        "nothing/*.md": (True, "would be skipped: not_found (the glob matched no file)" + fails),
        "pipes/*.md": (True, "expands to 1 match" + fails),
    }
    assert planned["pipes/*.md"].matches[0].reason == "not_regular_file"
    with pytest.raises(SourceError) as caught:
        Pipeline.from_config(config).build()
    assert [f.source for f in caught.value.failures] == ["gone.md", "nothing/*.md", "pipes/*.md"]
