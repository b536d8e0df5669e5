"""Rules that must hold for every input: config loading fails only as a config error; content is shown or explained.

Each property runs a modest number of examples here (the suite must stay
fast); ``fuzz/`` runs the config parser for minutes.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.strategies import config_mappings, config_trees, content_bytes, yaml_texts

from memconfig import Config, ConfigError, Pipeline, SkipReason, SourceError
from memconfig.cli.main import main
from memconfig.config import load_config

#: 200 examples each in CI; ``PROPERTY_EXAMPLES=20000`` for a longer search.
PROPERTY = settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
REASONS = {str(reason) for reason in SkipReason}
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_examples = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def clean_environment() -> Iterator[None]:
    """No MEMCONFIG_* override (and no variable the strategies treat as unset) leaks in from outside."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("MEMCONFIG_"):
                patch.delenv(name)
        patch.delenv("UNSET_VARIABLE_FOR_TESTS", raising=False)
        yield


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the configs and sources of many examples, each in a folder of its own."""
    return tmp_path_factory.mktemp("properties")


def _folder(sandbox: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=sandbox))


# -- (a) config loading: a config, or a ConfigError; never anything else -------------------------


@PROPERTY
@given(data=st.one_of(config_mappings(), st.dictionaries(st.text(max_size=10), config_trees, max_size=4)))
def test_any_mapping_is_a_config_or_a_config_error(data: dict[Any, Any], sandbox: Path) -> None:
    """``Config.from_mapping`` and ``Pipeline.from_config`` on any nested data raise nothing but ``ConfigError``."""
    try:
        config = Config.from_mapping(data, file="generated.yaml", base_dir=_folder(sandbox))
        Pipeline.from_config(config)
    except ConfigError as exc:
        assert exc.problems
        assert exc.format_message().startswith("generated.yaml: ")
        assert "Traceback" not in exc.format_message()


@PROPERTY
@given(text=yaml_texts)
def test_any_yaml_text_is_a_config_or_a_config_error(text: str, sandbox: Path) -> None:
    """``load_config`` on any YAML text raises nothing but a ``ConfigError`` naming the file."""
    path = _folder(sandbox) / "memconfig.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        Pipeline.from_config(load_config(path))
    except ConfigError as exc:
        assert str(path) in exc.format_message()


@PROPERTY
@given(data=st.binary(max_size=200))
def test_any_bytes_are_a_config_or_a_config_error(data: bytes, sandbox: Path) -> None:
    """``load_config`` on any bytes (invalid UTF-8, NUL, BOMs) raises nothing but a ``ConfigError``."""
    path = _folder(sandbox) / "memconfig.yaml"
    path.write_bytes(data)
    try:
        load_config(path)
    except ConfigError as exc:
        assert str(path) in exc.format_message()


@PROPERTY
@given(text=yaml_texts)
def test_validate_exits_0_or_2_without_a_traceback(text: str, sandbox: Path) -> None:
    """``memconfig validate`` on any YAML text returns 0 (saying ok) or 2 (saying why), never raises."""
    path = _folder(sandbox) / "memconfig.yaml"
    path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", "-c", str(path)])
    assert code in (0, 2), (code, err.getvalue())
    assert "Traceback" not in err.getvalue()
    if code == 0:
        assert out.getvalue().startswith(f"{path}: ok (")
    else:
        assert err.getvalue().startswith(f"memconfig: error: {path}")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("version: 1\nsources: &s [*s]\n", id="list-containing-itself"),
        pytest.param("version: 1\nstorage: &m {s3: *m}\n", id="mapping-containing-itself"),
        pytest.param("version: 1\nsources:\n  - &m {url: a.md, storage_options: {x: *m}}\n", id="source-in-itself"),
    ],
)
def test_a_self_referencing_alias_is_a_config_error(text: str, tmp_path: Path) -> None:
    """A YAML alias inside its own anchor (data that contains itself) is a config error, not a RecursionError."""
    path = tmp_path / "memconfig.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in caught.value.format_message()


# -- (b) formatting: any content is in the block as documented, or skipped with a reason ------------

#: Each preset's section layout and whether it strips HTML comments (docs/configuration.md: "Presets"; docs/presets.md).
LAYOUTS = {
    "deepagents": ("{path}\n\n{content}", True),
    "plain": ("{content}", False),
    "markdown": ("## {name}\n\n{content}", True),
}


def _shown(data: bytes, on_decode_error: str, comments: bool) -> str | SkipReason:
    """What the block shows of a file holding *data*, or the reason it is skipped (docs/configuration.md's rules)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if on_decode_error != "replace":
            return SkipReason.DECODE_ERROR
        text = data.decode("utf-8", errors="replace")
    if "\0" in text:
        return SkipReason.BINARY
    text = text.removeprefix("\ufeff")
    if comments:
        text = _COMMENT.sub("", text)
    text = text.rstrip()
    return text if text else SkipReason.EMPTY


def _section(layout: str, key: str, content: str) -> str:
    # Slot by slot, so that a content holding "{path}" stays as it is.
    parts = re.split(r"(\{path\}|\{name\}|\{content\})", layout)
    values = {"{path}": key, "{name}": key, "{content}": content}
    return "".join(values.get(part, part) for part in parts)


@contextlib.contextmanager
def _sources(where: str, sandbox: Path, files: list[bytes]) -> Iterator[tuple[list[str], str | None]]:
    """*files* written as local files or ``memory://`` objects; yields their keys and the base folder."""
    if where == "local":
        folder = _folder(sandbox)
        for i, data in enumerate(files):
            (folder / f"f{i}.md").write_bytes(data)
        yield [f"f{i}.md" for i in range(len(files))], str(folder)
        return
    fs = fsspec.filesystem("memory")
    prefix = f"/properties-{next(_examples)}"
    keys = []
    for i, data in enumerate(files):
        fs.pipe(f"{prefix}/f{i}.md", data)
        keys.append(f"memory://{prefix.lstrip('/')}/f{i}.md")
    try:
        yield keys, None
    finally:
        fs.rm(prefix, recursive=True)


@PROPERTY
@given(
    files=st.lists(content_bytes, min_size=1, max_size=4),
    preset=st.sampled_from(sorted(LAYOUTS)),
    on_decode_error=st.sampled_from(["skip", "replace", "fail"]),
    separator=st.sampled_from(["\n\n", "\n---\n", "", " {content} "]),
    policy=st.sampled_from(["once", "revalidate"]),
    where=st.sampled_from(["local", "memory"]),
)
def test_content_is_in_the_block_verbatim_or_skipped_with_a_reason(
    files: list[bytes], preset: str, on_decode_error: str, separator: str, policy: str, where: str, sandbox: Path
) -> None:
    """Each file's content is in the prompt exactly as documented (BOM and, per preset, comments removed,
    right-stripped), or the file is skipped with a ``SkipReason``; one event per source, tied by ``render_id``."""
    layout, comments = LAYOUTS[preset]
    expected = [_shown(data, on_decode_error, comments) for data in files]
    with _sources(where, sandbox, files) as (keys, base):
        config: dict[str, Any] = {
            "version": 1,
            "sources": keys,
            "loader": {"on_decode_error": on_decode_error},
            "cache": {"policy": policy},
            "formatter": {"preset": preset, "template": "<<{agent_memory}>>", "separator": separator, "empty": "-"},
        }
        if base is not None:
            config["base_dir"] = base
        pipeline = Pipeline.from_config(config)
        state: dict[str, Any] = {}
        fails = on_decode_error == "fail" and SkipReason.DECODE_ERROR in expected
        with structlog.testing.capture_logs() as logs:
            if fails:
                with pytest.raises(SourceError) as caught:
                    pipeline.render("SYS", state)
            else:
                prompt = pipeline.render("SYS", state)

        # One event per source, every event of the render carrying its one render_id.
        assert {e.get("render_id") for e in logs} == {logs[-1]["render_id"]} != {None}
        outcome = {e["source"]: e for e in logs if e["event"] in ("source_loaded", "source_skipped")}
        assert len([e for e in logs if e["event"] in ("source_loaded", "source_skipped")]) == len(keys)
        assert set(outcome) == set(keys)
        dropped = {e["source"]: e for e in logs if e["event"] == "source_dropped"}
        for e in [*logs]:
            if e["event"] in ("source_skipped", "source_dropped"):
                assert e["reason"] in REASONS, e
        for key, want in zip(keys, expected, strict=True):
            got = outcome[key]
            if not isinstance(want, SkipReason):
                assert got["event"] == "source_loaded" and key not in dropped, (got, want)
            elif got["event"] == "source_skipped":
                assert got["reason"] == want, (got, want)
            else:  # read, then emptied by the cleaning (a comment-only file): dropped, with the reason
                assert want == SkipReason.EMPTY and dropped[key]["reason"] == "empty", (got, dropped)

        finals = [e for e in logs if e["event"] in ("prompt_built", "prompt_failed")]
        if fails:
            assert [e["event"] for e in finals] == ["prompt_failed"]
            failed = {f["source"] for f in finals[0]["failures"]}
            assert failed == {k for k, w in zip(keys, expected, strict=True) if w == SkipReason.DECODE_ERROR}
            assert caught.value.failures
            return
        assert [e["event"] for e in finals] == ["prompt_built"]
        shown = [_section(layout, k, w) for k, w in zip(keys, expected, strict=True) if not isinstance(w, SkipReason)]
        block = "<<" + (separator.join(shown) if shown else "-") + ">>"
        assert prompt == "SYS\n\n" + block

        # An unchanged turn gives the same prompt and logs only its prompt_built.
        with structlog.testing.capture_logs() as again:
            assert pipeline.render("SYS", state) == prompt
        assert [e["event"] for e in again] == ["prompt_built"]


# -- (d) budgets: the block fits, and every cut is told -------------------------------------------

_BUDGET_TEXT = st.lists(
    st.sampled_from(["word", "ab", " ", "\n", "\n", "\r\n", "日本", "🧠", "é", "x" * 40]), max_size=60
).map("".join)


@PROPERTY
@given(
    texts=st.lists(_BUDGET_TEXT, min_size=1, max_size=4),
    unit=st.sampled_from(["max_chars", "max_tokens"]),
    limit=st.integers(min_value=1, max_value=600),
    policy=st.sampled_from(["truncate", "drop"]),
    own=st.lists(st.one_of(st.none(), st.integers(min_value=1, max_value=200)), min_size=4, max_size=4),
    priorities=st.lists(st.integers(min_value=-2, max_value=2), min_size=4, max_size=4),
    marker=st.sampled_from([None, "", "<{cut} {unit} of {path} cut>"]),
)
def test_any_budget_gives_a_block_within_it_and_every_cut_is_logged(
    texts: list[str],
    unit: str,
    limit: int,
    policy: str,
    own: list[int | None],
    priorities: list[int],
    marker: str | None,
) -> None:
    """For any texts and budgets, the block is within formatter.budget, and a source not in it whole has a
    ``source_truncated`` or ``source_dropped`` (``over_budget``) event, not both; a cut never grows a source."""
    from memconfig.process.tokens import ESTIMATE

    count = len if unit == "max_chars" else ESTIMATE
    fs = fsspec.filesystem("memory")
    prefix = f"budget-{next(_examples)}"
    sources: list[dict[str, Any]] = []
    for i, text in enumerate(texts):
        fs.pipe(f"/{prefix}/f{i}.md", text.encode())
        source: dict[str, Any] = {"url": f"memory://{prefix}/f{i}.md", "priority": priorities[i]}
        if own[i] is not None:
            source[unit] = own[i]
        sources.append(source)
    budget: dict[str, Any] = {unit: limit, "policy": policy}
    if marker is not None:
        budget["marker"] = marker
    try:
        config = {"version": 1, "sources": sources, "formatter": {"preset": "plain", "budget": budget}}
        pipeline = Pipeline.from_config(config)
        with structlog.testing.capture_logs() as logs:
            render = pipeline.build({})
    finally:
        fs.rm(f"/{prefix}", recursive=True)
    assert count(render.text) <= limit
    loaded = {e["source"] for e in logs if e["event"] == "source_loaded"}
    cut = {e["source"]: e for e in logs if e["event"] == "source_truncated"}
    dropped = {e["source"]: e for e in logs if e["event"] == "source_dropped"}
    assert not set(cut) & set(dropped)
    for source, text in zip(sources, texts, strict=True):
        key = source["url"]
        if key not in loaded:
            continue
        if key in dropped:
            assert dropped[key]["reason"] == "over_budget"
        elif key in cut:
            size = "tokens" if unit == "max_tokens" else "chars"  # in its own unit (a marker may hold more characters)
            assert cut[key][f"{size}_after"] <= cut[key][f"{size}_before"]
            if marker is None:
                assert f"{key} cut here:" in render.text
        else:
            assert text.removeprefix("\ufeff").rstrip() in render.text
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert (built["truncated"], built["dropped"]) == (len(cut), len(dropped))
