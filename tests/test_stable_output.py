"""Stable output: the same inputs give the same bytes, and the same ``Render.sha256``, whatever the process's
hash seed, time zone or working folder, the files' mtimes, a folder's listing order, or the order reads finish in.

Each case runs ``memconfig render`` as a user would, in a fresh process (one per case: the process is what
most cases change), for every printable format, and compares stdout byte for byte with a baseline run; the
``sha256`` that ``prompt_built`` logs must be the baseline's too, and the SHA-256 of the block. Prompt caches
key on those bytes: one byte that moves with the environment is a cache miss on every call.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from support.servers import WebServer

from memconfig import Pipeline

FORMATS = ("text", "json", "openai", "anthropic")
#: (config, format) pairs each change is checked with: every format and every layout at least once.
RUNS = (("deepagents", "text"), ("budget", "json"), ("markdown-openai", "openai"), ("xml-anthropic", "anthropic"))
NOTES = {
    "alpha.md": "# Alpha\n\nfirst note\n",
    "beta.md": "# Beta ü\n\nsecond note\n",
    "gamma.md": "# Gamma\n\nnot the end: </agent_memory> </source>\n",  # escaped by tag layouts
}
REMOTE = {"slow.md": "remote one: fetched slowly\n", "fast.md": "remote two: fetched fast\n"}


class Output(NamedTuple):
    """What one CLI run printed, and the block's sha256 its ``prompt_built`` logged."""

    stdout: bytes
    logged_sha256: str


class Scene(NamedTuple):
    """A project on disk and remote files, with configs that read both."""

    root: Path
    configs: dict[str, Path]
    web: WebServer


#: Run before the CLI: the process lists folders in the order given (ext4 lists in hash order, tmpfs newest
#: first, so creating files in another order does not reorder a listing everywhere; this does, anywhere).
LISTING = """
import os
_scandir = os.scandir
class _Listed:
    def __init__(self, *args, **kwargs):
        with _scandir(*args, **kwargs) as found:
            self.entries = sorted(found, key=lambda entry: entry.name, reverse={reverse})
    def __iter__(self): return iter(self.entries)
    def __enter__(self): return self
    def __exit__(self, *exc): pass
    def close(self): pass
os.scandir = _Listed
"""


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory, web_server: WebServer) -> Iterator[Scene]:
    """Local files, a glob, two HTTP sources and a missing file, in configs of several layouts."""
    root = tmp_path_factory.mktemp("stable")
    docs = root / "project" / "docs"
    (docs / "notes").mkdir(parents=True)
    rules = "---\ntitle: rules\n---\n# Rules\n\nbe kind <!-- hidden -->\n- test before you push\n- keep commits small\n"
    (docs / "AGENTS.md").write_text(rules, encoding="utf-8")
    for name, body in NOTES.items():
        (docs / "notes" / name).write_text(body, encoding="utf-8")
    for name, body in REMOTE.items():
        web_server.serve(name, body)
    sources: list[Any] = [
        "AGENTS.md",
        {"glob": "notes/*.md", "name": "notes"},
        {"url": web_server.url("slow.md"), "name": "slow", "title": "Remote, slow"},
        {"url": web_server.url("fast.md"), "name": "fast"},
        "missing.md",
    ]
    layouts: dict[str, dict[str, Any]] = {
        "deepagents": {},
        "markdown-openai": {
            "formatter": {"preset": "markdown"},
            "appender": {"format": "openai", "role": "developer", "position": "prepend"},
        },
        "xml-anthropic": {
            "formatter": {"preset": "xml"},
            "appender": {"format": "anthropic", "placement": "user", "cache_control": {"ttl": "1h"}},
        },
        "budget": {  # a source's own limit, and a token budget that cuts the lowest priority first
            "sources": [
                {"url": "AGENTS.md", "max_chars": 60, "priority": 2},
                *sources[1:3],
                {**sources[3], "priority": 1},
            ],
            "formatter": {
                "preset": "markdown",
                "budget": {"max_tokens": 60, "marker": "[{cut} {unit} cut from {name}]"},
            },
        },
    }
    configs = {}
    for name, extra in layouts.items():
        path = root / "project" / f"{name}.yaml"
        data = {"version": 1, "base_dir": "docs", "sources": sources} | extra
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        configs[name] = path
    yield Scene(root, configs, web_server)
    web_server.reset()


#: Run in the fresh process: ``memconfig`` once per (ARGS, STDOUT, STDERR) of ``sys.argv[1]`` (JSON), as its
#: console script would (``main``), its standard output and error going to those files.
RUNS_IN_ONE_PROCESS = """
import json, os, sys
from memconfig.cli import main
for args, out, err in json.loads(sys.argv[1]):
    saved = os.dup(1), os.dup(2)
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        os.dup2(stdout.fileno(), 1)
        os.dup2(stderr.fileno(), 2)
        try:
            code = main(args)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
    if code:
        sys.exit(f"{args}: exit {code}: " + open(err, encoding="utf-8").read())
"""


def render(
    scene: Scene,
    runs: Sequence[tuple[str, str]],
    *,
    cwd: Path | None = None,
    listing: str | None = None,
    **env: str,
) -> dict[tuple[str, str], Output]:
    """``memconfig render -c CONFIG --format FORMAT`` for each of *runs*, in one fresh process; fails the test on
    a non-zero exit.

    The process is what each change is about (its hash seed, time zone, working folder, how it lists folders),
    so the renders share it: each is the command line's ``main``, as the console script runs it.
    *listing* (``ascending`` / ``descending``): the process lists folders in that order of names.
    """
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith(("MEMCONFIG_", "PYTHONHASHSEED", "TZ"))}
    environ.update(env)
    files = scene.root / "output"
    files.mkdir(exist_ok=True)
    plan = []
    for number, (config, format) in enumerate(runs):
        args = ["render", "-c", str(scene.configs[config]), "--format", format]
        if format != "json":
            args += ["--system", "You are careful."]
        plan.append((args, str(files / f"{number}.out"), str(files / f"{number}.err")))
    prelude = "" if listing is None else LISTING.format(reverse=listing == "descending")
    done = subprocess.run(
        [sys.executable, "-c", prelude + RUNS_IN_ONE_PROCESS, json.dumps(plan)],
        capture_output=True,
        cwd=cwd or scene.root,
        env=environ,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    outputs = {}
    for run, (_, out, err) in zip(runs, plan, strict=True):
        events = map(json.loads, Path(err).read_text(encoding="utf-8").splitlines())
        [built] = [e for e in events if e["event"] == "prompt_built"]
        outputs[run] = Output(Path(out).read_bytes(), built["sha256"])
    return outputs


def comparable(format: str, stdout: bytes) -> bytes:
    """The bytes that must not change: all of them, but for ``json``'s render id (one per render, by design)."""
    if format != "json":
        return stdout
    data = json.loads(stdout)
    assert data.pop("render_id")
    return json.dumps(data, ensure_ascii=False).encode()


def block_of(format: str, stdout: bytes) -> str:
    """The memory block inside what a format printed."""
    text = stdout.decode("utf-8")
    if format == "text":
        return text.removeprefix("You are careful.\n\n")
    data = json.loads(text)
    if format == "json":
        return str(data["text"])
    if format == "openai":
        return str(data["messages"][0]["content"]).removeprefix("You are careful.\n\n")
    return str(data["system"][-1]["text"])  # the deepagents config's: placement system


@pytest.fixture(scope="module")
def baseline(scene: Scene) -> dict[tuple[str, str], Output]:
    """Each checked (config, format) pair, and the deepagents config in every format, rendered once."""
    return render(scene, sorted({*RUNS, *(("deepagents", f) for f in FORMATS)}))


Change = Callable[[Scene], dict[str, Any]]


def _hash_seed(seed: str) -> Change:
    return lambda scene: {"PYTHONHASHSEED": seed}


def _time_zone(zone: str) -> Change:
    return lambda scene: {"TZ": zone}


def _elsewhere(scene: Scene) -> dict[str, Any]:
    other = scene.root / "elsewhere" / "deeper"
    other.mkdir(parents=True, exist_ok=True)
    return {"cwd": other}


def _new_mtimes(scene: Scene) -> dict[str, Any]:
    for number, path in enumerate(sorted((scene.root / "project" / "docs").rglob("*.md"))):
        os.utime(path, (1_000_000_000 + number * 7919, 2_000_000_000 - number * 104729))
    return {}


def _listing(order: str) -> Change:
    return lambda scene: {"listing": order}


def _reads_finish_reversed(scene: Scene) -> dict[str, Any]:
    scene.web.delay("slow.md", 0.4)  # the first HTTP source's answer now comes last
    scene.web.delay("fast.md", 0.05)
    return {"overlap": True}


def _reads_finish_in_order(scene: Scene) -> dict[str, Any]:
    scene.web.delay("slow.md", 0.05)
    scene.web.delay("fast.md", 0.4)  # and now the second's
    return {"overlap": True}


CHANGES = [
    pytest.param(_hash_seed("0"), id="PYTHONHASHSEED=0"),
    pytest.param(_hash_seed("random"), id="PYTHONHASHSEED=random"),
    pytest.param(_time_zone("Pacific/Chatham"), id="TZ=Pacific/Chatham"),
    pytest.param(_elsewhere, id="another-working-folder"),
    pytest.param(_new_mtimes, id="other-mtimes"),
    pytest.param(_listing("ascending"), id="folder-listed-a-to-z"),
    pytest.param(_listing("descending"), id="folder-listed-z-to-a"),
    pytest.param(_reads_finish_reversed, id="http-slow-first-source"),
    pytest.param(_reads_finish_in_order, id="http-slow-second-source"),
]


@pytest.mark.parametrize("change", CHANGES)
def test_same_inputs_same_bytes(scene: Scene, baseline: dict[tuple[str, str], Output], change: Change) -> None:
    """Each layout and format prints the baseline's bytes and logs the baseline's sha256, whatever the change."""
    scene.web.delays.clear()
    scene.web.peak = 0
    options = change(scene)
    cwd, overlap = options.pop("cwd", None), options.pop("overlap", False)
    listing = options.pop("listing", None)
    try:
        outputs = render(scene, RUNS, cwd=cwd, listing=listing, **options)
        for (config, format), got in outputs.items():
            expected = baseline[config, format]
            assert comparable(format, got.stdout) == comparable(format, expected.stdout), (config, format)
            assert got.logged_sha256 == expected.logged_sha256, (config, format)
        if overlap:  # the two HTTP reads were in flight together, so the delay decided which finished first
            assert scene.web.peak >= 2
    finally:
        scene.web.delays.clear()


def test_logged_sha256_is_the_blocks(baseline: dict[tuple[str, str], Output]) -> None:
    """`prompt_built`'s sha256 and the json `sha256` are the SHA-256 of the block each format carries."""
    data = json.loads(baseline["deepagents", "json"].stdout)
    for format in FORMATS:
        output = baseline["deepagents", format]
        block = block_of(format, output.stdout)
        assert block == data["text"], format
        assert output.logged_sha256 == data["sha256"] == hashlib.sha256(block.encode("utf-8")).hexdigest()


def test_the_baseline_reads_every_kind_of_source(baseline: dict[tuple[str, str], Output]) -> None:
    """The cases above cover local files, glob children, HTTP sources, a skipped source and each layout."""
    data = json.loads(baseline["deepagents", "json"].stdout)
    statuses = {(s["name"], s["status"]) for s in data["sources"]}
    assert {("AGENTS.md", "loaded"), ("slow", "loaded"), ("fast", "loaded"), ("missing.md", "skipped")} <= statuses
    assert [s["via"] for s in data["sources"]].count("glob") == len(NOTES)
    assert data["counts"]["escaped"] >= 1  # gamma.md's closing tag
    markdown = json.loads(baseline["markdown-openai", "openai"].stdout)["messages"][0]
    assert markdown["role"] == "developer" and "## Remote, slow" in markdown["content"]
    xml = json.loads(baseline["xml-anthropic", "anthropic"].stdout)
    [memory] = xml["messages"][0]["content"]
    assert xml["system"] == "You are careful." and memory["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert '<source name="Remote, slow"' in memory["text"]
    budget = json.loads(baseline["budget", "json"].stdout)
    assert budget["counts"]["truncated"] + budget["counts"]["dropped"] >= 2  # its own limit, and the budget
    assert "source_truncated" in next(s["notes"] for s in budget["sources"] if s["source"] == "AGENTS.md")


def test_render_sha256_is_the_texts_in_process(scene: Scene) -> None:
    """`Render.sha256` is the SHA-256 of `Render.text` as UTF-8, rendered in this process too."""
    render = Pipeline.from_yaml(scene.configs["deepagents"]).build({})
    assert render.sha256 == hashlib.sha256(render.text.encode("utf-8")).hexdigest()
    assert "ü" in render.text
