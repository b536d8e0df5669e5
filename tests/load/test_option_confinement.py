"""Storage options that name data are confined as a source's URL is: ``fo``, targets, proxies, endpoints, caches."""

from __future__ import annotations

import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs
from support.pipelines import events_named, plain_pipeline

from memconfig import Pipeline
from memconfig.load.confinement import Confinement
from memconfig.sources import Source
from memconfig.sources.reach import OPTION_KINDS, reach


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``project/`` (the allowed root) beside ``outside/``, each with an archive holding ``s.txt``."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "AGENTS.md").write_text("inside")
    (outside / "secret.md").write_text("outside text")
    for folder, text in ((project, "zipped inside"), (outside, "zipped outside")):
        with zipfile.ZipFile(folder / "x.zip", "w") as z:
            z.writestr("s.txt", text)
    with tarfile.open(outside / "x.tar", "w") as t:
        t.add(outside / "secret.md", arcname="s.txt")
    return project


def _skips(logs: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {e["source"]: (e["reason"], e["detail"]) for e in events_named(logs, "source_skipped")}


def _render(tree: Path, sources: list[Any], **sections: Any) -> tuple[str, dict[str, tuple[str, str]]]:
    sections.setdefault("loader", {"allowed_roots": ["."]})
    with capture_logs() as logs:
        text = plain_pipeline(tree, [*sources, "AGENTS.md"], **sections).render()
    return text, _skips(logs)


def test_an_archive_named_by_fo_outside_the_roots_is_refused(tree: Path) -> None:
    outside = tree.parent / "outside" / "x.zip"
    text, skips = _render(tree, [{"url": "zip://s.txt", "storage_options": {"fo": str(outside)}}])
    assert text == "inside"
    reason, detail = skips["zip://s.txt"]
    assert reason == "outside_root"
    assert detail == f"storage option 'fo': {outside} is outside loader.allowed_roots"


def test_an_archive_named_by_fo_inside_the_roots_is_read(tree: Path) -> None:
    text, skips = _render(tree, [{"url": "zip://s.txt", "storage_options": {"fo": str(tree / "x.zip")}}])
    assert (text, skips) == ("zipped inside\n\ninside", {})


def test_a_storage_section_is_confined_as_the_source_own_options_are(tree: Path) -> None:
    outside = tree.parent / "outside" / "x.tar"
    text, skips = _render(tree, ["tar://s.txt"], storage={"tar": {"fo": str(outside)}}, loader={"allowed_roots": ["."]})
    assert text == "inside"
    assert skips["tar://s.txt"][0] == "outside_root"
    assert "outside text" not in text


def test_the_targets_of_a_reference_mapping_are_confined(tree: Path) -> None:
    secret = tree.parent / "outside" / "secret.md"
    refs = {"a.md": [f"file://{secret}"], "b.md": "inline text"}
    source = {"url": "reference://a.md", "storage_options": {"fo": refs, "remote_protocol": "file"}}
    text, skips = _render(tree, [source])
    assert text == "inside"
    assert skips["reference://a.md"] == (
        "outside_root",
        f"storage option 'fo' (reference 'a.md'): {secret} is outside loader.allowed_roots",
    )


def test_a_reference_mapping_inside_the_roots_is_read(tree: Path) -> None:
    refs = {"a.md": [f"file://{tree}/AGENTS.md"]}
    source = {"url": "reference://a.md", "storage_options": {"fo": refs, "remote_protocol": "file"}}
    text, skips = _render(tree, [source])
    assert (text, skips) == ("inside\n\ninside", {})


def test_a_reference_file_is_refused_under_confinement_as_its_targets_cannot_be_checked_first(tree: Path) -> None:
    (tree / "refs.json").write_text(json.dumps({"a.md": [f"file://{tree.parent}/outside/secret.md"]}))
    source = {"url": "reference://a.md", "storage_options": {"fo": str(tree / "refs.json")}}
    text, skips = _render(tree, [source])
    assert text == "inside"
    reason, detail = skips["reference://a.md"]
    assert reason == "option_not_allowed"
    assert "a reference file's targets cannot be checked before it is read" in detail


def test_a_target_protocol_must_be_allowed(tree: Path, memfs: Any) -> None:
    memfs.pipe("/x.zip", (tree / "x.zip").read_bytes())
    source = {"url": "zip://s.txt", "storage_options": {"fo": "/x.zip", "target_protocol": "memory"}}
    text, skips = _render(tree, [source], loader={"allowed_protocols": ["file", "zip"]})
    assert text == "inside"
    assert skips["zip://s.txt"] == (
        "protocol_not_allowed",
        "storage option 'target_protocol': protocol 'memory' is not in loader.allowed_protocols",
    )


def test_a_cache_folder_outside_the_roots_is_refused(tree: Path, tmp_path: Path) -> None:
    url = f"simplecache::{tree}/AGENTS.md"
    source = {"url": url, "storage_options": {"simplecache": {"cache_storage": str(tmp_path / "elsewhere")}}}
    _text, skips = _render(tree, [source])
    assert skips[url] == (
        "outside_root",
        f"storage option 'simplecache.cache_storage': {tmp_path / 'elsewhere'} is outside loader.allowed_roots",
    )
    assert not (tmp_path / "elsewhere").exists()


def test_a_proxy_to_another_host_is_refused_and_never_asked(tree: Path, web: Any) -> None:
    url = web.serve("/a.md", "over http")
    source = {"url": url, "storage_options": {"proxy": "http://internal.example:3128"}}
    text, skips = _render(tree, [source], loader={"allowed_hosts": ["127.0.0.1"]})
    assert text == "inside"
    assert skips[url] == (
        "host_not_allowed",
        "storage option 'proxy': host 'internal.example:3128' is not in loader.allowed_hosts",
    )
    assert not web.hits


def test_a_client_proxy_is_checked_as_a_proxy_is(tree: Path, web: Any) -> None:
    url = web.serve("/a.md", "over http")
    source = {"url": url, "storage_options": {"client_kwargs": {"proxy": f"http://127.0.0.1:{web.port}"}}}
    _text, skips = _render(tree, [source], loader={"allowed_hosts": ["docs.example.com", "127.0.0.1"]})
    assert skips == {}


def test_an_s3_endpoint_is_a_host_to_allow(tree: Path, bucket: Any) -> None:
    url = bucket.put("a.md", "from s3")
    endpoint = bucket.server.endpoint_url
    host = endpoint.removeprefix("http://")
    storage = bucket.storage()
    text, skips = _render(tree, [url], storage=storage, loader={"allowed_hosts": ["docs.example.com"]})
    assert skips[url] == (
        "host_not_allowed",
        f"storage option 'endpoint_url': host '{host}' is not in loader.allowed_hosts",
    )
    text, skips = _render(tree, [url], storage=storage, loader={"allowed_hosts": ["127.0.0.1"]})
    assert (text, skips) == ("from s3\n\ninside", {})


def test_an_s3_endpoint_in_client_kwargs_is_checked_too(tree: Path, bucket: Any) -> None:
    url = bucket.put("a.md", "from s3")
    options = bucket.server.options()
    options["client_kwargs"] = {"endpoint_url": options.pop("endpoint_url")}
    _text, skips = _render(tree, [url], storage={"s3": options}, loader={"allowed_hosts": ["docs.example.com"]})
    assert skips[url][0] == "host_not_allowed"
    assert skips[url][1].startswith("storage option 'client_kwargs.endpoint_url': host '127.0.0.1:")


def test_s3_without_an_endpoint_reaches_aws_which_must_be_allowed(tree: Path) -> None:
    _text, skips = _render(tree, ["s3://bucket/a.md"], loader={"allowed_hosts": ["docs.example.com"]})
    assert skips["s3://bucket/a.md"] == ("host_not_allowed", "host 's3.amazonaws.com' is not in loader.allowed_hosts")


def test_a_protocol_whose_host_memconfig_cannot_tell_is_refused_under_allowed_hosts(tree: Path) -> None:
    _text, skips = _render(tree, ["dbfs://folder/a.md"], loader={"allowed_hosts": ["docs.example.com"]})
    assert skips["dbfs://folder/a.md"] == (
        "host_not_allowed",
        "protocol 'dbfs' connects to hosts memconfig cannot tell, and loader.allowed_hosts is set",
    )


def test_an_endpoint_in_a_credentials_entry_is_checked(tree: Path, bucket: Any) -> None:
    url = bucket.put("a.md", "from s3")
    (tree / "creds.yaml").write_text(json.dumps({"team": bucket.server.options()}))
    source = {"url": url, "credentials": "team"}
    _text, skips = _render(
        tree, [source], credentials_file=str(tree / "creds.yaml"), loader={"allowed_hosts": ["docs.example.com"]}
    )
    assert skips[url][0] == "host_not_allowed"
    key = bucket.server.options()["key"]
    assert key not in json.dumps(skips)


def test_an_option_memconfig_does_not_know_is_refused_under_an_allow_list(tree: Path) -> None:
    source = {"url": "zip://s.txt", "storage_options": {"fo": str(tree / "x.zip"), "loader_hook": "x"}}
    text, skips = _render(tree, [source])
    assert skips["zip://s.txt"] == (
        "option_not_allowed",
        "storage option 'loader_hook' is not one memconfig can check; list it in loader.allowed_options to allow it",
    )
    text, skips = _render(tree, [source], loader={"allowed_roots": ["."], "allowed_options": ["loader_hook"]})
    assert (text, skips) == ("zipped inside\n\ninside", {})


def test_without_an_allow_list_options_are_not_judged(tree: Path) -> None:
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "base_dir": str(tree),
            "formatter": {"preset": "plain"},
            "sources": [{"url": "zip://s.txt", "storage_options": {"fo": str(tree.parent / "outside" / "x.zip")}}],
        }
    )
    assert pipeline.render() == "zipped outside"


def test_explain_gives_the_option_refusal_render_gives(tree: Path) -> None:
    from memconfig import Config
    from memconfig.explain import explain

    outside = tree.parent / "outside" / "x.zip"
    config = {
        "version": 1,
        "base_dir": str(tree),
        "loader": {"allowed_roots": ["."]},
        "sources": [{"url": "zip://s.txt", "storage_options": {"fo": str(outside)}}],
    }
    (planned,) = explain(Config.from_mapping(config)).sources
    assert (planned.verdict, planned.reason) == ("refused", "outside_root")
    assert planned.detail == f"storage option 'fo': {outside} is outside loader.allowed_roots"


def test_an_endpoint_for_one_link_of_a_chained_url_is_checked(tree: Path) -> None:
    url = "zip://s.txt::s3://bucket/x.zip"
    source = {"url": url, "storage_options": {"s3": {"endpoint_url": "http://internal.example:9000", "anon": True}}}
    _text, skips = _render(tree, [source], loader={"allowed_hosts": ["docs.example.com"]})
    assert skips[url] == (
        "host_not_allowed",
        "storage option 'endpoint_url': host 'internal.example:9000' is not in loader.allowed_hosts",
    )


def test_templated_reference_targets_are_checked_as_they_expand(tree: Path) -> None:
    secret = tree.parent / "outside" / "secret.md"
    refs = {"version": 1, "templates": {"u": f"file://{secret}"}, "refs": {"a.md": ["{{u}}"], "b.md": ["{{ v }}"]}}
    source = {"url": "reference://a.md", "storage_options": {"fo": refs}}
    _text, skips = _render(tree, [source])
    assert skips["reference://a.md"] == (
        "outside_root",
        f"storage option 'fo' (reference 'a.md'): {secret} is outside loader.allowed_roots",
    )
    refs["templates"] = {"u": f"file://{tree}/AGENTS.md"}
    _text, skips = _render(tree, [source])
    assert skips["reference://a.md"] == (
        "option_not_allowed",
        "storage option 'fo' (reference 'b.md'): its target is a template not given",
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``HOME`` pointed at ``home/`` beside the project (outside the roots), holding a secret and an archive."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "secret.md").write_text("home text")
    with zipfile.ZipFile(folder / "x.zip", "w") as z:
        z.writestr("s.txt", "zipped home")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.mark.parametrize(
    ("source", "option", "found"),
    [
        pytest.param({"url": "zip://s.txt", "storage_options": {"fo": "~/x.zip"}}, "'fo'", "x.zip", id="fo"),
        pytest.param(
            {"url": "reference://a.md", "storage_options": {"fo": {"a.md": ["~/secret.md"]}}},
            "'fo' (reference 'a.md')",
            "secret.md",
            id="reference",
        ),
        pytest.param(
            {
                "url": "reference://a.md",
                "storage_options": {
                    "fo": {"version": 1, "templates": {"u": "~/secret.md"}, "refs": {"a.md": ["{{u}}"]}}
                },
            },
            "'fo' (reference 'a.md')",
            "secret.md",
            id="templated-reference",
        ),
    ],
)
def test_a_home_path_in_an_option_is_judged_where_fsspec_reads_it(
    tree: Path, home: Path, monkeypatch: pytest.MonkeyPatch, source: dict[str, Any], option: str, found: str
) -> None:
    """``~`` in a path an option names is the home folder, as fsspec reads it, not a folder named ``~``."""
    monkeypatch.chdir(tree)
    text, skips = _render(tree, [source])
    assert text == "inside"
    assert skips[source["url"]] == (
        "outside_root",
        f"storage option {option}: {home / found} is outside loader.allowed_roots",
    )


def test_a_home_cache_folder_is_judged_as_made_and_as_written_to(
    tree: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsspec makes ``~/cache`` as written but writes its files into the home folder: both must be in the roots."""
    monkeypatch.chdir(tree)
    url = f"simplecache::{tree}/AGENTS.md"
    source = {"url": url, "storage_options": {"simplecache": {"cache_storage": "~/cache"}}}
    (home / "cache").mkdir()
    text, skips = _render(tree, [source])
    assert text == "inside"
    assert skips[url] == (
        "outside_root",
        f"storage option 'simplecache.cache_storage': {home / 'cache'} is outside loader.allowed_roots",
    )
    assert list((home / "cache").iterdir()) == []


def test_a_target_protocol_replaces_the_protocol_of_the_value_it_reads(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``target_protocol: file``, ``memory://../../outside/x.zip`` is a local path below a folder ``memory:``."""
    monkeypatch.chdir(tree)
    (tree / "memory:").mkdir()
    options = {"fo": "memory://../../outside/x.zip", "target_protocol": "file"}
    text, skips = _render(tree, [{"url": "zip://s.txt", "storage_options": options}])
    assert text == "inside"
    outside = tree.parent / "outside" / "x.zip"
    assert skips["zip://s.txt"] == (
        "outside_root",
        f"storage option 'fo': {tree}/memory://../../outside/x.zip (resolves to {outside})"
        " is outside loader.allowed_roots",
    )


@pytest.mark.parametrize(
    "fo",
    [
        pytest.param({"version": 1, "refs": [1, 2]}, id="refs-a-list"),
        pytest.param({"version": 1, "refs": None}, id="refs-null"),
    ],
)
def test_a_malformed_reference_mapping_is_refused_not_a_traceback(tree: Path, fo: dict[str, Any]) -> None:
    """``refs`` that is not a mapping cannot be checked: ``option_not_allowed``, never an exception."""
    text, skips = _render(tree, [{"url": "reference://a.md", "storage_options": {"fo": fo}}])
    assert text == "inside"
    assert skips["reference://a.md"] == (
        "option_not_allowed",
        "storage option 'fo': its refs are not a mapping of keys to references",
    )


def test_a_dir_url_is_confined_below_its_path(tree: Path) -> None:
    """``dir://../outside/x.zip`` with ``path`` inside the roots reads outside them: refused, naming both."""
    url = "dir://../outside/x.zip"
    text, skips = _render(tree, [{"url": url, "storage_options": {"path": str(tree)}}])
    assert text == "inside"
    assert skips[url] == (
        "outside_root",
        f"storage option 'path' (with {url!r}): {tree}/../outside/x.zip (resolves to {tree.parent}/outside/x.zip)"
        " is outside loader.allowed_roots",
    )
    _text, skips = _render(tree, [{"url": "dir://AGENTS.md", "storage_options": {"path": str(tree)}}])
    assert skips["dir://AGENTS.md"][0] != "outside_root"  # not refused (the loader cannot read dir:// yet: an error)


_OPTION_NAMES = sorted({name for kinds in OPTION_KINDS.values() for name in kinds} | {"refs", "version", "templates"})
_PLACES = ("~/x", "file:../x", "memory://a", "http://[::1", "http://h:99999/", "s3://b/k", "zip://a::file://x", "{{u}}")
_JSON_LIKE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=30)
    | st.binary(max_size=8)
    | st.sampled_from(_PLACES),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(_OPTION_NAMES) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_REFERENCES = st.fixed_dictionaries({"version": st.just(1), "refs": _JSON_LIKE}, optional={"templates": _JSON_LIKE})
_URLS = ("zip://s.txt", "reference://a.md", "dir://a.md", "simplecache::file:///a.md", "s3://b/a.md", "http://h/a.md")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    url=st.sampled_from(_URLS),
    options=st.dictionaries(st.sampled_from(_OPTION_NAMES) | st.text(max_size=8), _JSON_LIKE, max_size=5)
    | st.fixed_dictionaries({"fo": _REFERENCES | _JSON_LIKE}),
)
def test_no_storage_options_make_confinement_raise(tree: Path, url: str, options: dict[str, Any]) -> None:
    """Whatever shape a config gives its storage options, confinement gives a verdict, never an exception."""
    confinement = Confinement([str(tree)], ["file", "zip", "reference", "dir", "simplecache", "s3", "http"], ["h"])
    source = Source(key=url, name=url, url=url, storage_options=options)
    list(reach(url, options))
    refused = confinement.refusal(source)
    assert refused is None or isinstance(refused[1], str)


def test_a_proxy_that_cannot_be_parsed_is_refused_not_a_traceback(tree: Path, web: Any) -> None:
    """An IPv6 proxy without its ``]`` matches no allowed host; the detail names the host, never the rest."""
    url = web.serve("/a.md", "over http")
    source = {"url": url, "storage_options": {"proxy": "http://user:pw@[::1/x?token=t"}}
    text, skips = _render(tree, [source], loader={"allowed_hosts": ["127.0.0.1"]})
    assert text == "inside"
    assert skips[url] == ("host_not_allowed", "storage option 'proxy': host '[::1' is not in loader.allowed_hosts")
    assert not web.hits


def test_a_reference_target_without_a_protocol_is_judged_by_the_filesystem_fsspec_infers(
    tree: Path, memfs: Any
) -> None:
    """No remote_protocol: fsspec reads `/refs/b.md` with the protocol the first target names (memory), so it is
    judged as a memory link (allowed), not as a local file (`file` not allowed); the render reads it."""
    memfs.pipe("/refs/a.md", b"alpha")
    memfs.pipe("/refs/b.md", b"beta")
    refs = {"a.md": ["memory://refs/a.md"], "b.md": ["/refs/b.md"]}
    source = {"url": "reference://b.md", "storage_options": {"fo": refs}}
    loader = {"allowed_protocols": ["reference", "memory", "file"]}
    assert _render(tree, [source], loader=loader) == ("beta\n\ninside", {})
    loader = {"allowed_protocols": ["reference", "memory"]}
    with capture_logs():
        text = plain_pipeline(tree, [source], loader=loader).render()
    assert text == "beta"


def test_an_option_path_holding_a_nul_byte_is_outside_every_root(tree: Path) -> None:
    """A reference's target path with a NUL byte names no file: refused as outside the roots, not a ValueError
    (found by the property above)."""
    confinement = Confinement([str(tree)], ["file", "reference"], None)
    source = Source(key="reference://a.md", name="a", url="reference://a.md", storage_options={"fo": {"a": ["\x00"]}})

    reason, detail = confinement.refusal(source) or (None, "")

    assert reason == "outside_root"
    assert detail.startswith("storage option 'fo' (reference 'a'): ") and "is outside loader.allowed_roots" in detail
