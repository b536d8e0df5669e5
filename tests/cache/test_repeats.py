"""One file under several names goes in once, at its first position; each repeat says which source it repeats."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.opens import Opens, can_count_opens
from support.pipelines import events_named, plain_pipeline

from memconfig.sources.places import same_place


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("the a file")
    (tmp_path / "b.md").write_text("the b file")
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "a.md", tmp_path / "link-to-a.md")
    os.link(tmp_path / "a.md", tmp_path / "hard-a.md")
    return tmp_path


def _repeats(logs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["source"], e["detail"]) for e in events_named(logs, "source_skipped") if e["reason"] == "duplicate"]


def test_every_spelling_of_one_file_goes_in_once_at_the_first_position(folder: Path) -> None:
    sources = ["./a.md", "b.md", "a.md", "sub/../a.md", "link-to-a.md", "hard-a.md", str(folder / "a.md")]
    with capture_logs() as logs:
        text = plain_pipeline(folder, sources).render()

    assert text == "the a file\n\nthe b file"
    assert _repeats(logs) == [(s, "the same file as './a.md'") for s in sources[2:]]
    assert [e["source"] for e in events_named(logs, "source_loaded")] == ["./a.md", "b.md"]
    (built,) = events_named(logs, "prompt_built")
    assert (built["sources_loaded"], built["sources_skipped"]) == (2, 5)


def test_a_glob_match_that_repeats_a_declared_file_is_a_duplicate(folder: Path) -> None:
    with capture_logs() as logs:
        text = plain_pipeline(folder, ["./b.md", {"glob": "*.md"}]).render()
    assert text == "the b file\n\nthe a file"  # b first, where it was declared; a (and its links) once
    assert sorted(_repeats(logs)) == [
        ("b.md", "the same file as './b.md'"),
        ("hard-a.md", "the same file as 'a.md'"),
        ("link-to-a.md", "the same file as 'a.md'"),
    ]


def test_a_required_repeat_does_not_fail_the_render(folder: Path) -> None:
    pipeline = plain_pipeline(folder, ["a.md", {"url": "./a.md", "required": True}])
    assert pipeline.render() == "the a file"


@pytest.mark.parametrize("policy", ["once", "revalidate", "ttl", "always"])
def test_a_repeat_is_told_once_and_follows_its_file(folder: Path, policy: str) -> None:
    pipeline = plain_pipeline(folder, ["a.md", "./a.md"], policy, cache={"policy": policy, "ttl": 0})
    state: dict[str, Any] = {}
    with capture_logs() as first:
        assert pipeline.render(state=state) == "the a file"
    with capture_logs() as again:
        assert pipeline.render(state=state) == "the a file"
    assert len(_repeats(first)) == 1 and _repeats(again) == []
    if policy != "once":
        (folder / "a.md").write_text("the a file, edited")
        assert pipeline.render(state=state) == "the a file, edited"
    assert list(state["memory_contents"]) == ["a.md"]  # the repeat holds no copy


@pytest.mark.skipif(not can_count_opens(), reason="counts opens with inotify (Linux)")
def test_a_glob_match_repeating_a_declared_file_is_checked_not_read_again(folder: Path) -> None:
    """Under ``revalidate`` the repeat is asked at the version last seen: a render opens the file once it changed."""
    pipeline, state = plain_pipeline(folder, ["a.md", {"glob": "*.md"}], "revalidate"), {}  # type: ignore[var-annotated]
    with Opens(folder / "a.md") as opens:
        assert pipeline.render(state=state) == "the a file\n\nthe b file"
        assert opens.count() == 1
        with capture_logs() as logs:
            assert pipeline.render(state=state) == "the a file\n\nthe b file"
        assert opens.count() == 0
        assert _repeats(logs) == []
        (folder / "a.md").write_text("the a file, edited")
        opens.count()  # the edit's own
        render = pipeline.build(state)
        assert render.text == "the a file, edited\n\nthe b file"
        assert opens.count() == 1
    repeat = next(r for r in render.sources if r.source == "a.md (via *.md)")
    assert (repeat.status, repeat.reason, repeat.detail) == ("skipped", "duplicate", "the same file as 'a.md'")


def test_records_name_the_repeat(folder: Path) -> None:
    render = plain_pipeline(folder, ["a.md", "link-to-a.md"]).build()
    assert [(r.source, r.status, r.reason, r.detail) for r in render.sources] == [
        ("a.md", "loaded", None, ""),
        ("link-to-a.md", "skipped", "duplicate", "the same file as 'a.md'"),
    ]


def test_two_spellings_of_one_url_are_one_place() -> None:
    assert same_place("HTTPS://Docs.Example.com:443/rules/./x/../a%2Emd") == same_place(
        "https://docs.example.com/rules/a.md"
    )
    assert same_place("s3a://bucket/a.md") == same_place("s3://bucket/a.md")
    assert same_place("https://example.com/a.md") != same_place("https://example.com:8443/a.md")
    assert same_place("https://example.com/a.md?v=1") != same_place("https://example.com/a.md?v=2")
    # A path's meaning is the filesystem's: an object store's "./" is part of the key.
    assert same_place("memory://x/./a.md") != same_place("memory://x/a.md")


def test_the_same_url_spelled_twice_over_http_goes_in_once(web: Any, tmp_path: Path) -> None:
    url = web.serve("/rules/a.md", "remote rules")
    spelled = url.replace("/rules/a.md", "/rules/x/../%61.md")
    with capture_logs() as logs:
        text = plain_pipeline(tmp_path, [url, spelled]).render()
    assert text == "remote rules"
    assert _repeats(logs) == [(spelled, f"the same file as {url!r}")]


class HashFingerprintLoader:
    """A user's loader (not fsspec) whose fingerprint is a content hash, or an inode-looking token."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    def load(self, requests: Any) -> list[Any]:
        import hashlib

        from memconfig.model import LoadResult

        out = []
        for request in requests:
            sha = hashlib.sha256(b"Same rules.").hexdigest()
            fingerprint = self.token or sha
            out.append(
                LoadResult(request.source, "loaded", "Same rules.", bytes=11, sha256=sha, fingerprint=fingerprint)
            )
        return out


@pytest.mark.parametrize("token", [None, "12:11:1700000000"], ids=["content-hash", "inode-like"])
def test_a_users_loader_fingerprint_is_not_taken_for_a_local_file(tmp_path: Path, token: str | None) -> None:
    """Two paths read by another loader are two sources, whatever their fingerprints look like."""
    from memconfig import Pipeline

    config = {"version": 1, "sources": ["/one.md", "/two.md"], "formatter": {"preset": "plain"}}
    with capture_logs() as logs:
        text = Pipeline.from_config(config, loader=HashFingerprintLoader(token)).render()
    assert text == "Same rules.\n\nSame rules."
    assert _repeats(logs) == []


def _two_discoveries(root: Path) -> list[dict[str, Any]]:
    """A project with AGENTS.md at its root and in sub/, and two discoveries from sub/ that both take them."""
    (root / ".git").mkdir()
    (root / "AGENTS.md").write_text("root rules")
    (root / "sub").mkdir()
    (root / "sub" / "AGENTS.md").write_text("sub rules")
    return [
        {"discover": {"names": ["AGENTS.md"], "from": "sub"}},
        {"discover": {"names": ["CLAUDE.md", "AGENTS.md"], "from": "sub"}},
    ]


@pytest.mark.parametrize("policy", ["once", "revalidate", "ttl", "always", "watch"])
def test_a_file_two_discoveries_reach_goes_in_once(tmp_path: Path, policy: str) -> None:
    """Each file is in once, from the first discovery; the second's copy is a duplicate (info), under its own key."""
    sources = _two_discoveries(tmp_path)
    pipeline = plain_pipeline(tmp_path, sources, policy, cache={"policy": policy, "ttl": 0})
    state: dict[str, Any] = {}
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "root rules\n\nsub rules"
    second = "discover:first:CLAUDE.md,AGENTS.md@sub"
    root, sub = str(tmp_path / "AGENTS.md"), str(tmp_path / "sub" / "AGENTS.md")
    skipped = [e for e in events_named(logs, "source_skipped")]
    assert [(e["source"], e["name"], e["reason"], e["detail"], e["log_level"]) for e in skipped] == [
        (f"{root} (via {second})", root, "duplicate", f"the same file as {root!r}", "info"),
        (f"{sub} (via {second})", sub, "duplicate", f"the same file as {sub!r}", "info"),
    ]
    assert [e["source"] for e in events_named(logs, "source_loaded")] == [root, sub]
    assert list(state["memory_contents"]) == [root, sub]
    (tmp_path / "sub" / "CLAUDE.md").write_text("claude rules")  # the second discovery now takes its own file
    pipeline.close()
    if policy != "once":
        assert pipeline.render(state=state) == "root rules\n\nsub rules\n\nclaude rules"
        assert list(state["memory_contents"]) == [root, sub, str(tmp_path / "sub" / "CLAUDE.md")]


def test_a_glob_match_under_a_declared_sources_key_is_a_duplicate_not_dropped(folder: Path) -> None:
    """A glob before ``a.md``: the declared a.md keeps its place; the match is a duplicate (it was dropped silently)."""
    with capture_logs() as logs:
        text = plain_pipeline(folder, [{"glob": "[ab].md"}, "a.md"]).render()
    assert text == "the b file\n\nthe a file"
    assert _repeats(logs) == [("a.md (via [ab].md)", "the same file as 'a.md'")]
    (expanded,) = events_named(logs, "source_expanded")
    assert expanded["matches"] == ["a.md (via [ab].md)", "b.md"]


def test_records_name_a_repeat_reached_by_two_discoveries(tmp_path: Path) -> None:
    render = plain_pipeline(tmp_path, _two_discoveries(tmp_path)).build()
    second = "discover:first:CLAUDE.md,AGENTS.md@sub"
    root = str(tmp_path / "AGENTS.md")
    repeat = next(r for r in render.sources if r.source == f"{root} (via {second})")
    assert (repeat.status, repeat.reason, repeat.detail) == ("skipped", "duplicate", f"the same file as {root!r}")
