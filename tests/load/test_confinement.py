"""``loader.allowed_roots``, ``allowed_protocols`` and ``allowed_hosts``: a config reads only what it is allowed to."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named, plain_pipeline

from memconfig import SourceError
from memconfig.cli import main


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``project/`` (the allowed root) beside ``outside/``, with links from one into the other."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "rules").mkdir(parents=True)
    outside.mkdir()
    (project / "AGENTS.md").write_text("inside")
    (project / "rules" / "style.md").write_text("style rule")
    (outside / "secret.md").write_text("outside text")
    os.symlink(outside / "secret.md", project / "link.md")
    os.symlink(outside, project / "rules" / "linked-dir")
    os.symlink(project / "AGENTS.md", project / "inner-link.md")
    return project


def _out(logs: list[dict[str, Any]]) -> dict[str, str]:
    return {e["source"]: e["reason"] for e in events_named(logs, "source_skipped")}


def _confined(tree: Path, sources: list[Any], **loader: Any) -> Any:
    return plain_pipeline(tree, sources, loader={"allowed_roots": ["."], **loader})


@pytest.mark.parametrize(
    "escape",
    [
        "../outside/secret.md",  # ..
        "link.md",  # a file symlink
        "rules/linked-dir/secret.md",  # through a directory symlink
        "file://{outside}/secret.md",  # a file:// URL
        "{outside}/secret.md",  # an absolute path
        "local://{outside}/secret.md",
    ],
)
def test_a_local_file_outside_the_roots_is_skipped(tree: Path, escape: str) -> None:
    escape = escape.format(outside=tree.parent / "outside")
    with capture_logs() as logs:
        text = _confined(tree, [escape, "AGENTS.md"]).render()
    assert text == "inside"
    (skip,) = events_named(logs, "source_skipped")
    assert (skip["source"], skip["reason"]) == (escape, "outside_root")
    assert "is outside loader.allowed_roots" in skip["detail"]
    assert "outside text" not in text


def test_links_that_stay_inside_are_read(tree: Path) -> None:
    assert _confined(tree, ["inner-link.md", "rules/../rules/style.md"]).render() == "inside\n\nstyle rule"


def test_glob_matches_are_confined_too(tree: Path) -> None:
    with capture_logs() as logs:
        text = _confined(tree, [{"glob": "**/*.md"}, {"glob": "rules/linked-dir/*.md"}]).render()
    assert text == "inside\n\nstyle rule"
    assert _out(logs) == {
        "link.md": "outside_root",
        "inner-link.md": "duplicate",
        "rules/linked-dir/*.md": "outside_root",  # its folder resolves outside: refused before it is listed
    }


def test_a_required_source_outside_fails_the_render(tree: Path) -> None:
    with pytest.raises(SourceError) as caught:
        _confined(tree, [{"url": "link.md", "required": True}]).render()
    assert [(f.source, f.reason) for f in caught.value.failures] == [("link.md", "outside_root")]


def test_roots_are_relative_to_base_dir_and_several_may_be_given(tree: Path) -> None:
    outside = tree.parent / "outside"
    pipeline = plain_pipeline(tree, ["link.md", "AGENTS.md"], loader={"allowed_roots": [".", str(outside)]})
    assert pipeline.render() == "outside text\n\ninside"


def test_a_zip_archive_outside_the_roots_is_refused(tree: Path) -> None:
    import zipfile

    archive = tree.parent / "outside" / "rules.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.md", "zipped")
    with capture_logs() as logs:
        _confined(tree, [f"zip://a.md::{archive}"]).render()
    assert _out(logs) == {f"zip://a.md::{archive}": "outside_root"}


def test_a_link_swapped_to_point_outside_is_caught_on_the_next_read(tree: Path) -> None:
    pipeline = _confined(tree, ["moving.md"])
    os.symlink(tree / "AGENTS.md", tree / "moving.md")
    state: dict[str, Any] = {}
    pipeline = plain_pipeline(tree, ["moving.md"], "revalidate", loader={"allowed_roots": ["."]})
    assert pipeline.render(state=state) == "inside"
    os.remove(tree / "moving.md")
    os.symlink(tree.parent / "outside" / "secret.md", tree / "moving.md")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == ""
    assert _out(logs) == {"moving.md": "outside_root"}


def test_protocols_not_allowed_are_skipped_before_anything_is_read(tree: Path, memfs: Any, web: Any) -> None:
    memfs.pipe("/notes/a.md", b"in memory")
    url = web.serve("/a.md", "over http")
    pipeline = plain_pipeline(
        tree, ["memory://notes/a.md", url, "AGENTS.md"], loader={"allowed_protocols": ["file", "https"]}
    )
    with capture_logs() as logs:
        assert pipeline.render() == "inside"
    assert _out(logs) == {"memory://notes/a.md": "protocol_not_allowed", url: "protocol_not_allowed"}
    assert not web.hits  # nothing was asked of the server
    details = {e["detail"] for e in events_named(logs, "source_skipped")}
    assert details == {
        "protocol 'memory' is not in loader.allowed_protocols",
        "protocol 'http' is not in loader.allowed_protocols",
    }


def test_an_alias_of_an_allowed_protocol_is_allowed(tree: Path) -> None:
    pipeline = plain_pipeline(tree, [f"local://{tree}/AGENTS.md"], loader={"allowed_protocols": ["file"]})
    assert pipeline.render() == "inside"


def test_a_chained_url_needs_every_link_allowed(tree: Path) -> None:
    import zipfile

    with zipfile.ZipFile(tree / "rules.zip", "w") as z:
        z.writestr("a.md", "zipped")
    chained = f"zip://a.md::{tree}/rules.zip"
    with capture_logs() as logs:
        plain_pipeline(tree, [chained], loader={"allowed_protocols": ["file"]}).render()
    assert _out(logs) == {chained: "protocol_not_allowed"}
    assert plain_pipeline(tree, [chained], loader={"allowed_protocols": ["file", "zip"]}).render() == "zipped"


def test_a_host_not_allowed_is_never_asked(tree: Path, web: Any) -> None:
    url = web.serve("/a.md", "over http")
    with capture_logs() as logs:
        text = plain_pipeline(tree, [url, "AGENTS.md"], loader={"allowed_hosts": ["docs.example.com"]}).render()
    assert text == "inside"
    (skip,) = events_named(logs, "source_skipped")
    assert (skip["reason"], skip["detail"]) == (
        "host_not_allowed",
        f"host '127.0.0.1:{web.port}' is not in loader.allowed_hosts",
    )
    assert not web.hits
    assert plain_pipeline(tree, [url], loader={"allowed_hosts": ["127.0.0.1"]}).render() == "over http"


def test_the_cli_fails_with_exit_1_naming_a_required_source_outside(tree: Path, capsys: Any) -> None:
    config = tree / "memconfig.yaml"
    config.write_text("version: 1\nloader: {allowed_roots: [.]}\nsources:\n  - {url: link.md, required: true}\n")
    assert main(["render", "-c", str(config)]) == 1
    err = capsys.readouterr().err
    assert "source 'link.md' was not loaded and the render needs it: outside_root" in err
    assert "Traceback" not in err


def test_a_git_repository_outside_the_roots_is_refused(tree: Path) -> None:
    outside = tree.parent / "outside"
    subprocess.run(["git", "init", "-q", str(outside)], check=True)
    subprocess.run(["git", "-C", str(outside), "add", "secret.md"], check=True)
    subprocess.run(
        ["git", "-C", str(outside), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True
    )
    url = "git://../outside:HEAD@secret.md"
    with capture_logs() as logs:
        assert _confined(tree, [url, "AGENTS.md"]).render() == "inside"
    assert _out(logs) == {url: "outside_root"}


def test_a_glob_outside_the_roots_is_refused_before_anything_is_listed(tree: Path) -> None:
    pattern = str(tree.parent / "outside" / "**" / "*.md")
    with capture_logs() as logs:
        assert _confined(tree, [{"glob": pattern}, "AGENTS.md"]).render() == "inside"
    (skip,) = events_named(logs, "source_skipped")
    assert (skip["source"], skip["reason"]) == (pattern, "outside_root")
    assert skip["detail"].endswith("is outside loader.allowed_roots: nothing was listed")
    assert not events_named(logs, "source_expanded")
