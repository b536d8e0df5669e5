"""Token counts for max_tokens: the documented estimate, and exact tiktoken counts from local files only."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import yaml
from structlog.testing import capture_logs
from support.cli import ROOT, memconfig
from support.pipelines import events_named as _events
from support.pipelines import plain_pipeline

from memconfig import Config, ConfigError, Pipeline
from memconfig.install import install_hint
from memconfig.process.tokens import ESTIMATE, TiktokenCount, TokenEstimate, token_counter

#: cl100k_base's pre-tokenizer pattern, as tiktoken publishes it: the small test encoding splits text the same way.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
MERGES = [b"th", b"he", b"the", b" t", b" the", b"in", b"er", b"an", b"re", b"on", b" a", b"ing", b"li", b"ne"]


def _ranks() -> dict[bytes, int]:
    """Every single byte, then a few merges: a complete (if tiny) byte-pair vocabulary."""
    ranks = {bytes([b]): b for b in range(256)}
    for merge in MERGES:
        ranks[merge] = len(ranks)
    return ranks


@pytest.fixture
def encoding_file(tmp_path: Path) -> Path:
    """A small ``.tiktoken`` file: base64 token, space, rank, one a line."""
    path = tmp_path / "small.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in _ranks().items()))
    return path


@pytest.fixture
def small() -> tiktoken.Encoding:
    """The same vocabulary built directly with tiktoken: what exact counts must agree with."""
    return tiktoken.Encoding("small", pat_str=CL100K_PATTERN, mergeable_ranks=_ranks(), special_tokens={})


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tiktoken's cache pointed at an empty folder: nothing is on the machine."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    return cache


def _tokens_config(**tokens: Any) -> Config:
    return Config.from_mapping({"version": 1, "formatter": {"tokens": {"count": "tiktoken", **tokens}}})


# -- the estimate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("abc", 1, id="three-ascii"),
        pytest.param("abcd", 2, id="four-ascii-round-up"),
        pytest.param("日本", 3, id="two-cjk-6-bytes"),
        pytest.param("é", 1, id="two-byte-char"),
        pytest.param("ab日", 3, id="mixed: 2/3 + 3/2 rounds up to 3"),
        pytest.param("🧠", 2, id="emoji-4-bytes"),
        pytest.param("\ud800", 2, id="lone-surrogate-3-bytes"),
    ],
)
def test_estimate_is_ascii_bytes_over_3_plus_other_bytes_over_2_rounded_up(text: str, tokens: int) -> None:
    """The documented rule, exactly: ceil(ascii_bytes / 3 + other_utf8_bytes / 2)."""
    assert ESTIMATE(text) == tokens
    assert TokenEstimate()(text) == tokens


def test_estimate_needs_no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """count: estimate works with tiktoken unimportable."""
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    config = Config.from_mapping({"version": 1, "formatter": {"budget": {"max_tokens": 500}}})
    assert token_counter(config) is ESTIMATE
    Pipeline.from_config(config)


# -- tiktoken, from a local file ----------------------------------------------------------------


def test_encoding_file_gives_exact_counts(encoding_file: Path, small: tiktoken.Encoding, empty_cache: Path) -> None:
    """encoding_file: the counter counts what tiktoken counts with those ranks; the cache is not touched."""
    counter = token_counter(_tokens_config(encoding_file=str(encoding_file)))
    assert isinstance(counter, TiktokenCount)
    for text in ["the thing in the line", "日本語", "<|endoftext|> is text here", ""]:
        assert counter(text) == len(small.encode_ordinary(text))
    assert counter("the the the") < len("the the the")  # the merges are used
    assert list(empty_cache.iterdir()) == []


def test_encoding_file_is_relative_to_the_config(tmp_path: Path, encoding_file: Path) -> None:
    """A relative encoding_file resolves against the config's folder, as every path in it does."""
    config = Config.from_mapping(
        {"version": 1, "formatter": {"tokens": {"count": "tiktoken", "encoding_file": encoding_file.name}}},
        base_dir=tmp_path,
    )
    assert isinstance(token_counter(config), TiktokenCount)


def test_max_tokens_with_the_local_encoding(tmp_path: Path, encoding_file: Path, small: tiktoken.Encoding) -> None:
    """A source's max_tokens and the block's budget in exact tokens: cuts logged with exact counts, block within."""
    (tmp_path / "a.md").write_text("the line in the middle\n" * 30, encoding="utf-8")
    (tmp_path / "b.md").write_text("another line here\n" * 30, encoding="utf-8")
    tokens = {"count": "tiktoken", "encoding_file": str(encoding_file)}
    sources = [{"url": "a.md", "max_tokens": 60}, "b.md"]
    pipeline = plain_pipeline(
        tmp_path, sources, formatter={"preset": "plain", "tokens": tokens, "budget": {"max_tokens": 200}}
    )
    with capture_logs() as logs:
        render = pipeline.build({})
    assert len(small.encode_ordinary(render.text)) <= 200
    cuts = {e["source"]: e for e in _events(logs, "source_truncated")}
    a, b = render.text.split("\n\n")
    assert cuts["a.md"]["setting"] == "sources[0].max_tokens"
    assert cuts["a.md"]["tokens_after"] == len(small.encode_ordinary(a)) <= 60
    assert cuts["a.md"]["tokens_before"] == len(small.encode_ordinary(("the line in the middle\n" * 30).rstrip()))
    assert cuts["b.md"]["setting"] == "formatter.budget.max_tokens"
    assert cuts["b.md"]["tokens_after"] == len(small.encode_ordinary(b))
    assert "more tokens not shown]" in b


def test_a_changed_ranks_file_changes_the_pipelines_tokens(tmp_path: Path, encoding_file: Path) -> None:
    """The counter's token names the ranks' hash: other ranks, other cache tokens (memoised blocks are not reused)."""
    first = token_counter(_tokens_config(encoding_file=str(encoding_file)))
    other = tmp_path / "other.tiktoken"
    other.write_bytes(encoding_file.read_bytes() + base64.b64encode(b"zz") + b" 999\n")
    second = token_counter(_tokens_config(encoding_file=str(other)))
    assert first.token != second.token
    budget = {"max_tokens": 2000}
    one = Pipeline.from_config(
        {
            "version": 1,
            "formatter": {"tokens": {"count": "tiktoken", "encoding_file": str(encoding_file)}, "budget": budget},
        }
    )
    two = Pipeline.from_config(
        {"version": 1, "formatter": {"tokens": {"count": "tiktoken", "encoding_file": str(other)}, "budget": budget}}
    )
    assert one.cache.made_for != two.cache.made_for  # type: ignore[attr-defined]


# -- never downloading --------------------------------------------------------------------------


def test_missing_encoding_is_a_config_error_saying_how_to_provide_it(empty_cache: Path) -> None:
    """Nothing in tiktoken's cache and no encoding_file: ConfigError at formatter.tokens; nothing fetched or written."""
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config(
            {"version": 1, "formatter": {"tokens": {"count": "tiktoken"}, "budget": {"max_tokens": 900}}}
        )
    message = str(caught.value)
    assert message.startswith("formatter.tokens: the tiktoken encoding 'cl100k_base' is not on this machine")
    assert "never downloads" in message
    assert "formatter.tokens.encoding_file" in message
    assert f"TIKTOKEN_CACHE_DIR={empty_cache}" in message
    assert "tiktoken.get_encoding('cl100k_base')" in message
    assert list(empty_cache.iterdir()) == []


def test_a_cached_copy_that_does_not_match_tiktokens_hash_is_refused(empty_cache: Path, encoding_file: Path) -> None:
    """A file in tiktoken's cache under cl100k's name but with other ranks: refused (tiktoken would re-download it)."""
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cached = empty_cache / hashlib.sha1(url.encode()).hexdigest()
    cached.write_bytes(encoding_file.read_bytes())
    with pytest.raises(ConfigError) as caught:
        token_counter(_tokens_config())
    assert "does not match tiktoken's published hash" in str(caught.value)
    assert cached.read_bytes() == encoding_file.read_bytes()  # left as it was


@pytest.mark.parametrize(
    ("tokens", "where", "message"),
    [
        pytest.param(
            {"encoding": "no_such"}, "formatter.tokens.encoding", "tiktoken has no encoding 'no_such'", id="unknown"
        ),
        pytest.param({"encoding": "gpt2"}, "formatter.tokens.encoding", "GPT-2 data-gym files", id="data-gym"),
        pytest.param(
            {"encoding_file": "/no/such.tiktoken"},
            "formatter.tokens.encoding_file",
            "cannot be read",
            id="missing-file",
        ),
    ],
)
def test_unusable_encodings_are_config_errors(
    tokens: dict[str, str], where: str, message: str, empty_cache: Path
) -> None:
    """An unknown name, a data-gym encoding, an unreadable file: each a ConfigError at its key."""
    with pytest.raises(ConfigError) as caught:
        token_counter(_tokens_config(**tokens))
    assert str(caught.value).startswith(where + ": ") and message in str(caught.value)


def test_a_file_that_is_not_a_ranks_file_is_a_config_error(tmp_path: Path) -> None:
    """encoding_file pointing at another kind of file: a ConfigError naming the line."""
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("not base64 at all, and no rank\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        token_counter(_tokens_config(encoding_file=str(bad)))
    assert "formatter.tokens.encoding_file" in str(caught.value) and "line 1" in str(caught.value)


NOT_OPENED = "not a regular file: not opened (it could block, or never end)"


def test_an_encoding_file_that_is_a_fifo_is_refused_by_validate_and_render(tmp_path: Path) -> None:
    """encoding_file naming a FIFO: validate and render both exit 2 naming it; neither waits on it."""
    os.mkfifo(tmp_path / "ranks.tiktoken")
    (tmp_path / "team.md").write_text("Use tabs.\n", encoding="utf-8")
    tokens = "{count: tiktoken, encoding_file: ranks.tiktoken}"
    (tmp_path / "memconfig.yaml").write_text(
        f"version: 1\nsources: [team.md]\nformatter: {{tokens: {tokens}, budget: {{max_tokens: 900}}}}\n",
        encoding="utf-8",
    )
    for command in ("validate", "render"):
        done = memconfig(command, "-c", "memconfig.yaml", cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), (command, done.stderr)
        assert done.stderr.strip() == (
            f"memconfig: error: memconfig.yaml: formatter.tokens.encoding_file: {tmp_path / 'ranks.tiktoken'}"
            f" is a FIFO, {NOT_OPENED}"
        )


def test_an_encoding_file_over_the_limit_is_refused_saying_the_limit(tmp_path: Path) -> None:
    """A ranks file larger than 32 MiB is not read whole: a ConfigError saying the limit and its name."""
    huge = tmp_path / "huge.tiktoken"
    with huge.open("wb") as file:
        file.truncate((32 << 20) + 1)  # sparse: costs no disk
    with pytest.raises(ConfigError) as caught:
        token_counter(_tokens_config(encoding_file=str(huge)))
    assert str(caught.value) == (
        f"formatter.tokens.encoding_file: {huge} is larger than the limit of 33554432 bytes"
        " (memconfig.limits.MAX_RANKS_BYTES)"
    )


def test_tiktoken_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """count: tiktoken without the package: a ConfigError naming the command that installs the tokens extra."""
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config({"version": 1, "formatter": {"tokens": {"count": "tiktoken"}}})
    assert str(caught.value) == f"formatter.tokens.count: tiktoken is not installed: {install_hint('tokens')}"


def test_missing_encoding_exits_2_from_the_cli(tmp_path: Path, empty_cache: Path) -> None:
    """`memconfig render` with an encoding not on the machine: exit 2, the how-to in one message, no traceback."""
    (tmp_path / "a.md").write_text("text\n", encoding="utf-8")
    config = {
        "version": 1,
        "sources": ["a.md"],
        "formatter": {"tokens": {"count": "tiktoken"}, "budget": {"max_tokens": 900}},
    }
    (tmp_path / "memconfig.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMCONFIG_")}
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", "memconfig.yaml"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path,
        env={**environ, "PYTHONPATH": str(ROOT), "TIKTOKEN_CACHE_DIR": str(empty_cache)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "memconfig: error: memconfig.yaml: formatter.tokens: the tiktoken encoding 'cl100k_base'" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(empty_cache.iterdir()) == []
