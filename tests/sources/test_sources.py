"""Sources as the pipeline uses them: resolved URLs, storage options per filesystem of a chain, git repositories."""

from __future__ import annotations

import io
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from structlog.testing import capture_logs

from memconfig import Config, Pipeline
from memconfig.sources import Source, build_sources, protocol_problem, resolve_url
from memconfig.sources.options import defaults_for

CHAINED = "zip://AGENTS.md::s3://bucket/bundle.zip"
KEYS = {"key": "AKIAPLANTEDKEY1", "secret": "planted-secret-value"}


def sources_of(data: dict[str, Any], base_dir: Path | None = None) -> list[Source]:
    """Build the sources of a config mapping."""
    return build_sources(Config.from_mapping({"version": 1, **data}, base_dir=base_dir))


@pytest.fixture
def credentials_file(tmp_path: Path) -> Path:
    """A credentials file whose entry ``team`` holds keys and an endpoint for S3."""
    path = tmp_path / "credentials.yaml"
    path.write_text(
        "team: {key: AKIAPLANTEDKEY1, secret: planted-secret-value, client_kwargs: {endpoint_url: 'http://s3.local'}}\n",
        encoding="utf-8",
    )
    return path


# -- storage options of chained URLs -----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "source", "expected"),
    [
        pytest.param(
            {},
            {"url": CHAINED, "credentials": "team"},
            {"s3": {**KEYS, "client_kwargs": {"endpoint_url": "http://s3.local"}}},
            id="credentials-to-innermost",
        ),
        pytest.param({}, {"url": CHAINED, "storage_options": KEYS}, {"s3": KEYS}, id="flat-options-to-innermost"),
        pytest.param(
            {},
            {"url": CHAINED, "storage_options": {"zip": {"compression": 8}, "s3": {"anon": False}}},
            {"zip": {"compression": 8}, "s3": {"anon": False}},
            id="nested-options-to-their-protocol",
        ),
        pytest.param(
            {},
            {"url": CHAINED, "storage_options": {"anon": True, "s3": {"anon": False, "requester_pays": True}}},
            {"s3": {"anon": False, "requester_pays": True}},
            id="nested-over-flat",
        ),
        pytest.param(
            {"storage": {"s3": {"client_kwargs": {"region_name": "eu-west-1"}, "anon": True}, "zip": {"mode": "r"}}},
            {"url": CHAINED, "credentials": "team", "storage_options": {"anon": False}},
            {
                "zip": {"mode": "r"},
                "s3": {
                    **KEYS,
                    "anon": False,
                    "client_kwargs": {"region_name": "eu-west-1", "endpoint_url": "http://s3.local"},
                },
            },
            id="storage-deep-merged-under-each-protocol",
        ),
        pytest.param(
            {"storage": {"s3": {"client_kwargs": {"region_name": "eu-west-1"}}}},
            {"url": "s3://bucket/AGENTS.md", "credentials": "team", "storage_options": {"anon": False}},
            {**KEYS, "anon": False, "client_kwargs": {"region_name": "eu-west-1", "endpoint_url": "http://s3.local"}},
            id="single-url-stays-flat",
        ),
    ],
)
def test_chained_url_options_go_to_the_filesystem_that_fetches(
    credentials_file: Path, data: dict[str, Any], source: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Credentials and flat options of a chained URL are for its innermost protocol; nested ones for theirs."""
    [built] = sources_of({"credentials_file": str(credentials_file), **data, "sources": [source]})

    under = defaults_for("s3", 30.0)  # memconfig's own S3 options lie under everything the config gives
    expected = {**expected, "s3": {**under, **expected["s3"]}} if "s3" in expected else {**under, **expected}
    assert built.storage_options == expected


def test_chained_options_reach_the_inner_filesystem(memfs: Any) -> None:
    """fsspec opens the inner filesystem of a chain with its options and the outer with its own."""
    bundle = io.BytesIO()
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("AGENTS.md", "zipped\n")
    memfs.pipe("/bundle.zip", bundle.getvalue())
    [source] = sources_of(
        {
            "storage": {"zip": {"outer_marker": 1}},
            "sources": [{"url": "zip://AGENTS.md::memory://bundle.zip", "storage_options": {"inner_marker": 2}}],
        }
    )

    fs, path = source.open_fs()

    assert fs.cat(path) == b"zipped\n"
    assert fs.storage_options["outer_marker"] == 1
    assert (fs.storage_options["target_protocol"], fs.storage_options["target_options"]) == (
        "memory",
        {"inner_marker": 2},
    )


def test_chained_options_never_show_in_reprs(credentials_file: Path) -> None:
    """A chained source's nested credentials are masked in its repr and its log form."""
    [source] = sources_of(
        {"credentials_file": str(credentials_file), "sources": [{"url": CHAINED, "credentials": "team"}]}
    )

    for text in (repr(source), source.display_url, source.redact(f"denied: {KEYS}")):
        assert not any(secret in text for secret in KEYS.values()), text


# -- ${VAR} in URLs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "password",
    [
        pytest.param("Zx9/Qk+w==", id="slash-and-plus"),
        pytest.param("hunter#22", id="hash"),
        pytest.param("pa?ss:word", id="question-mark-and-colon"),
        pytest.param("p@ss/w0rd", id="at-and-slash"),
    ],
)
def test_password_from_a_variable_never_shows(password: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``${VAR}`` password in user-info is masked in the logged URL, the repr, events and library messages."""
    monkeypatch.setenv("MC_PASS", password)
    written = "https://alice:${MC_PASS}@127.0.0.1:1/AGENTS.md"
    pipeline = Pipeline.from_config({"version": 1, "sources": [{"url": written, "retries": 0, "timeout": 2}]})
    [source] = pipeline.cache.sources

    with capture_logs() as logs:
        pipeline.load()

    # Percent-encoded in user-info: a "/" or "@" in a password must not become part of the host.
    assert source.url == f"https://alice:{quote(password, safe=':')}@127.0.0.1:1/AGENTS.md"
    assert source.display_url == "https://***@127.0.0.1:1/AGENTS.md"
    for text in (repr(source), source.redact(f"cannot open {source.url}"), repr(logs)):
        assert password not in text, text
    assert [log["event"] for log in logs] == ["source_skipped"]


@pytest.mark.parametrize(
    ("written", "value"),
    [
        pytest.param("https://h.example/gist/${MC_GIST_SECRET}/raw/AGENTS.md", "9f8e7d6c5b4a3928", id="path"),
        pytest.param("https://${MC_API_TOKEN}.h.example/AGENTS.md", "tk-9f8e7d6c5b4a", id="host"),
        pytest.param("zip://AGENTS.md::https://h.example/${MC_BUNDLE_KEY}.zip", "bundle-9f8e7d6c", id="chained"),
        pytest.param("https://${MC_CREDS}@h.example/AGENTS.md", "alice:Zx9/Qk+w==", id="whole-user-info"),
        pytest.param("https://${MC_LOGIN}:pw@h.example/AGENTS.md", "alice.smith", id="user-name"),
        pytest.param("https://alice:${MC_UNSET:-de/fault#1}@h.example/AGENTS.md", "de/fault#1", id="default"),
    ],
)
def test_secret_values_from_variables_are_masked(written: str, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Values of secret-named variables, and any value put into user-info, are masked in the logged URL."""
    for name in ("MC_GIST_SECRET", "MC_API_TOKEN", "MC_BUNDLE_KEY", "MC_CREDS", "MC_LOGIN"):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MC_UNSET", raising=False)
    [source] = sources_of({"sources": [written]})

    assert value in source.url or quote(value, safe=":") in source.url
    for text in (source.display_url, repr(source), source.redact(f"GET {source.url}: 403")):
        assert value not in text, text
        assert "***" in text


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        pytest.param("${MC_NOTES_DIR}/AGENTS.md", "/srv/notes/AGENTS.md", id="notes-dir"),
        pytest.param("${HOME}/AGENTS.md", "/home/agent/AGENTS.md", id="home"),
        pytest.param("https://${MC_HOST}/docs/${MC_TOPIC}.md", "https://files.example/docs/style.md", id="host"),
        pytest.param(
            "https://alice:${MC_PASS}@${MC_HOST}/a.md?v=${MC_VERSION}",
            "https://***@files.example/a.md?v=2.1",
            id="beside-a-password",
        ),
    ],
)
def test_harmless_variables_stay_readable(written: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths, hosts and other values of variables with plain names are shown as they expand."""
    monkeypatch.setenv("MC_NOTES_DIR", "/srv/notes")
    monkeypatch.setenv("HOME", "/home/agent")
    monkeypatch.setenv("MC_HOST", "files.example")
    monkeypatch.setenv("MC_TOPIC", "style")
    monkeypatch.setenv("MC_VERSION", "2.1")
    monkeypatch.setenv("MC_PASS", "Zx9/Qk+w==")
    [source] = sources_of({"sources": [written]})

    assert source.display_url == expected
    assert f"url={expected!r}" in repr(source)


# -- chains ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "chained", "in_process"),
    [
        pytest.param("memory://a.md", False, True, id="single"),
        pytest.param("a.md", False, True, id="plain-path"),
        pytest.param("https://h/a.md", False, False, id="remote"),
        pytest.param("zip://a.md::memory://b.zip", True, False, id="chained"),
        pytest.param("simplecache::memory://a.md", True, False, id="bare-protocol"),
    ],
)
def test_source_knows_whether_its_url_is_chained(url: str, chained: bool, in_process: bool) -> None:
    """``Source.chained`` says whether the URL chains filesystems with ``::``; only single local URLs read inline."""
    [source] = sources_of({"sources": [url]})

    assert (source.chained, source.in_process) == (chained, in_process)


@pytest.mark.parametrize(
    ("entry", "glob_like"),
    [
        pytest.param("notes/*.md", True, id="star"),
        pytest.param("notes/a?.md", True, id="question-mark"),
        pytest.param("file://notes/[ab].md", True, id="brackets-in-a-file-url"),
        pytest.param("memory://notes/*.md", True, id="memory"),
        pytest.param("https://h/docs/*.md", True, id="http-path"),
        pytest.param("https://h/a.md?token=x", False, id="http-query"),
        pytest.param("http://[0:0:0:0:0:0:0:1]:8080/a.md", False, id="ipv6-host"),
        pytest.param("notes/a.md", False, id="plain"),
        pytest.param({"glob": "notes/*.md"}, False, id="a-glob-is-meant"),
    ],
)
def test_a_url_with_glob_characters_looks_like_a_glob(entry: Any, glob_like: bool) -> None:
    """``Source.glob_like``: a ``url:`` whose path holds ``*``, ``?`` or ``[`` (not an HTTP query or host); its
    ``not_found`` detail then says to write ``glob:``, any other skip's is kept as it is."""
    [source] = sources_of({"sources": [entry]})

    assert source.glob_like is glob_like
    hinted = "no such file; looks like a glob: write `glob:` instead of `url:` to match files"
    assert source.skip_detail("not_found", "no such file") == (hinted if glob_like else "no such file")
    assert source.skip_detail("is_directory", "is a directory") == "is a directory"


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        pytest.param("notes/a.md", "{base}/notes/a.md", id="plain-path"),
        pytest.param("file://notes/a.md", "file://{base}/notes/a.md", id="file-url"),
        pytest.param("zip://a.md::bundle.zip", "zip://a.md::{base}/bundle.zip", id="chained-local"),
        pytest.param("simplecache::memory://a.md", "simplecache::memory://a.md", id="bare-protocol-kept"),
        pytest.param("zip://a.md::https://h/b.zip", "zip://a.md::https://h/b.zip", id="remote-kept"),
    ],
)
def test_resolve_url_makes_local_parts_absolute(tmp_path: Path, written: str, expected: str) -> None:
    """Local parts of a URL resolve against base_dir; remote parts and bare protocol names stay as written."""
    config = Config.from_mapping({"version": 1}, base_dir=tmp_path)

    assert resolve_url(written, config.base_path) == expected.format(base=tmp_path)


def test_bare_protocol_in_a_chain_loads(memfs: Any, tmp_path: Path) -> None:
    """``simplecache::memory://a.md`` is read through fsspec's cache (with its options), not taken for a local file."""
    memfs.pipe("/a.md", b"cached\n")
    cache = tmp_path / "cache"
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "storage": {"simplecache": {"cache_storage": str(cache)}},
            "sources": ["simplecache::memory://a.md"],
        }
    )

    [result] = pipeline.load()

    assert (result.status, result.bytes) == ("loaded", 7)
    assert any(cache.iterdir())


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("zip://a.md::nosuchproto://b.zip", id="inner"),
        pytest.param("nosuchproto://a.md::memory://b.zip", id="outer"),
    ],
)
def test_protocol_problem_checks_every_part_of_a_chain(url: str) -> None:
    """A protocol that is not installed is found wherever it sits in a chain."""
    assert "unknown protocol 'nosuchproto'" in (protocol_problem(url) or "")


def test_chain_of_installed_protocols_has_no_problem() -> None:
    """A chain whose every protocol is installed is fine."""
    assert protocol_problem("zip://a.md::memory://b.zip") is None


# -- git ---------------------------------------------------------------------------------------


@pytest.fixture
def prompts_repo(tmp_path: Path) -> Path:
    """``tmp_path/config/prompts``: a git repository whose AGENTS.md reads ``pinned v1`` at tag v1, ``v2`` at v2."""
    path = tmp_path / "config" / "prompts"
    path.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(path), "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
            check=True,
            capture_output=True,
            env=env,
        )

    git("init", "-q", "-b", "main")
    for version in ("v1", "v2"):
        (path / "AGENTS.md").write_text(f"pinned {version}\n", encoding="utf-8")
        git("add", "AGENTS.md")
        git("commit", "-q", "-m", version)
        git("tag", version)
    return path


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        pytest.param("git://prompts:v1@AGENTS.md", "git://{base}/prompts:v1@AGENTS.md", id="relative-repo"),
        pytest.param("git://{base}/prompts:v1@AGENTS.md", "git://{base}/prompts:v1@AGENTS.md", id="absolute-repo"),
        pytest.param("git://v1@AGENTS.md", "git://{base}:v1@AGENTS.md", id="no-repo-is-base-dir"),
        pytest.param("git://AGENTS.md", "git://{base}:AGENTS.md", id="no-repo-no-ref"),
        pytest.param("zip://a.md::git://prompts:v1@b.zip", "zip://a.md::git://{base}/prompts:v1@b.zip", id="chained"),
    ],
)
def test_git_repository_resolves_against_base_dir(tmp_path: Path, written: str, expected: str) -> None:
    """The repository of a ``git://`` URL is a local path: relative to base_dir, and the key stays as written."""
    written = written.format(base=tmp_path)
    [source] = sources_of({"sources": [written]}, base_dir=tmp_path)

    assert source.url == expected.format(base=tmp_path)
    assert source.key == written


def test_git_source_with_relative_repository_loads_from_any_folder(
    prompts_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two refs of a repository given relative to base_dir load whatever the current folder is."""
    monkeypatch.chdir(tmp_path)
    pipeline = Pipeline.from_config(
        Config.from_mapping(
            {
                "version": 1,
                "formatter": {"preset": "plain"},
                "sources": ["git://prompts:v1@AGENTS.md", "git://prompts:v2@AGENTS.md"],
            },
            base_dir=prompts_repo.parent,
        )
    )

    results = pipeline.load()

    assert [(r.source.key, r.status) for r in results] == [
        ("git://prompts:v1@AGENTS.md", "loaded"),
        ("git://prompts:v2@AGENTS.md", "loaded"),
    ]
    assert "pinned v1" in pipeline.render() and "pinned v2" in pipeline.render()


def test_password_holding_at_and_slash_never_becomes_a_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``${VAR}`` password with ``@`` and ``/`` is sent encoded: no part of it is looked up or logged as a host."""
    monkeypatch.setenv("MC_PASS", "xy@SuperSecretPart42/zz")
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "sources": [{"url": "https://alice:${MC_PASS}@127.0.0.1:1/AGENTS.md", "retries": 0, "timeout": 2}],
        }
    )
    with capture_logs() as logs:
        [result] = pipeline.load()
    assert result.reason == "remote_error"
    assert "supersecretpart42" not in repr(logs).lower() and "SuperSecret" not in repr(result)


def test_whole_url_from_one_variable_keeps_its_password_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """``url: ${AGENTS_URL}`` holding ``user:pass`` with a ``/`` in the password shows neither in the logged URL."""
    monkeypatch.setenv("MC_AGENTS_URL", "https://alice:Zx9/Qk+w==@127.0.0.1:1/AGENTS.md")
    [source] = sources_of({"sources": ["${MC_AGENTS_URL}"]})
    for text in (source.display_url, repr(source), source.redact(f"cannot reach {source.url}")):
        assert "Zx9" not in text and "Qk+w" not in text, text


@pytest.mark.parametrize(
    "written",
    [
        pytest.param("a.md", id="relative"),
        pytest.param("./a.md", id="dot-slash"),
        pytest.param("rules/../a.md", id="dot-dot"),
        pytest.param("rules//a.md", id="double-slash"),
        pytest.param("rules/", id="trailing-slash"),
        pytest.param(".deepagents/AGENTS.md", id="dot-folder"),
        pytest.param("/etc/agents/a.md", id="absolute"),
        pytest.param("a@b=c.md", id="at-and-equals"),
    ],
)
def test_plain_paths_resolve_as_every_other_url_does(tmp_path: Path, written: str) -> None:
    """The shortcut for plain local paths gives the URL pathlib would, and the key as written."""
    config = Config.from_mapping({"version": 1, "sources": [written]}, base_dir=tmp_path)
    [source] = build_sources(config)
    assert source.url == resolve_url(written, config.base_path) == str(config.resolve_path(written))
    assert source.key == written
