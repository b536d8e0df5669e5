"""``memconfig render -o FILE``: atomic, keeps the old file's mode, untouched when unchanged, 74 on failure."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import eventually, memconfig, watching

from memconfig.cli.output import write_output

WriteConfig = Callable[..., Path]


@pytest.fixture
def project(tmp_path: Path, write_config: WriteConfig) -> Path:
    """A team source and a config rendering it, in tmp_path."""
    (tmp_path / "team.md").write_text("Use tabs.\n", encoding="utf-8")
    write_config({"version": 1, "sources": ["team.md"]})
    return tmp_path


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _render(project: Path, *extra: str) -> Any:
    config = str(project / "memconfig.yaml")
    return memconfig("render", "-c", config, "--log-file", str(project / "log.jsonl"), *extra, cwd=project)


def test_output_file_holds_what_stdout_would_and_the_write_is_logged(project: Path) -> None:
    """-o FILE holds exactly the text render prints; output_written names it, with bytes, sha256 and the render's id."""
    printed = _render(project)
    assert printed.returncode == 0
    (project / "log.jsonl").unlink()
    done = _render(project, "-o", "AGENTS.md")
    assert (done.returncode, done.stdout) == (0, "")
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == printed.stdout
    logged = _events(project / "log.jsonl")
    [built] = [e for e in logged if e["event"] == "prompt_built"]
    [written] = [e for e in logged if e["event"] == "output_written"]
    data = (project / "AGENTS.md").read_bytes()
    assert written["path"] == "AGENTS.md" and written["format"] == "text"
    assert written["bytes"] == len(data) and written["render_id"] == built["render_id"]
    assert written["sha256"] == hashlib.sha256(data).hexdigest()  # the file's hash (the block's is prompt_built's)


def test_unchanged_content_leaves_the_file_untouched(project: Path) -> None:
    """A render whose output the file already holds does not write it: same inode, same mtime; output_unchanged."""
    assert _render(project, "-o", "AGENTS.md").returncode == 0
    target = project / "AGENTS.md"
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))  # long ago: any write would move it
    before = target.stat()
    (project / "log.jsonl").unlink()
    assert _render(project, "-o", "AGENTS.md").returncode == 0
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    kinds = [e["event"] for e in _events(project / "log.jsonl")]
    assert "output_unchanged" in kinds and "output_written" not in kinds


def test_a_changed_source_rewrites_the_file_keeping_its_mode(project: Path) -> None:
    """The file replaced keeps its permission bits (0640 stays 0640); the new text is in it."""
    target = project / "AGENTS.md"
    assert _render(project, "-o", "AGENTS.md").returncode == 0
    target.chmod(0o640)
    (project / "team.md").write_text("Use spaces.\n", encoding="utf-8")
    assert _render(project, "-o", "AGENTS.md").returncode == 0
    assert "Use spaces." in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in project.iterdir()) == ["AGENTS.md", "log.jsonl", "memconfig.yaml", "team.md"]


def test_a_new_file_gets_the_mode_open_would_give(tmp_path: Path) -> None:
    """A file that did not exist gets 0666 less the umask, as ``open(path, "w")`` gives (not mkstemp's 0600)."""
    umask = os.umask(0o027)
    try:
        assert write_output(str(tmp_path / "new.md"), b"text\n").written
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640


def test_format_json_goes_to_the_file(project: Path) -> None:
    """With --format, the file holds that appender's output (here the render as JSON)."""
    assert _render(project, "--format", "json", "-o", "render.json").returncode == 0
    written = json.loads((project / "render.json").read_text(encoding="utf-8"))
    assert "Use tabs." in written["text"]
    [event] = [e for e in _events(project / "log.jsonl") if e["event"] == "output_written"]
    assert event["format"] == "json"


def test_format_json_unchanged_but_for_its_render_id_and_counts_is_left_untouched(project: Path) -> None:
    """--format json -o twice: the second run's JSON differs only in render_id and the cache's counts, so the file
    is not written (same inode and mtime) and output_unchanged gives the file's bytes; an edit rewrites it."""
    assert _render(project, "--format", "json", "-o", "render.json").returncode == 0
    target = project / "render.json"
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    before, held = target.stat(), target.read_bytes()
    (project / "log.jsonl").unlink()
    assert _render(project, "--format", "json", "-o", "render.json").returncode == 0
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns, target.read_bytes()) == (before.st_ino, before.st_mtime_ns, held)
    logged = _events(project / "log.jsonl")
    [unchanged] = [e for e in logged if e["event"] == "output_unchanged"]
    assert (unchanged["bytes"], unchanged["sha256"]) == (len(held), hashlib.sha256(held).hexdigest())
    assert "output_written" not in {e["event"] for e in logged}
    (project / "team.md").write_text("Use spaces.\n", encoding="utf-8")
    assert _render(project, "--format", "json", "-o", "render.json").returncode == 0
    assert "Use spaces." in json.loads(target.read_text(encoding="utf-8"))["text"]


def test_per_run_keys_are_the_only_ones_left_out(tmp_path: Path) -> None:
    """write_output's per_run: a JSON object differing only in those keys is kept; in any other key, or a file
    that is not JSON, is replaced."""
    target = tmp_path / "render.json"
    target.write_bytes(b'{"text": "a", "render_id": "x-1", "counts": {"cache_hits": 0}}\n')
    kept = write_output(
        str(target), b'{"text": "a", "render_id": "x-22", "counts": {"cache_hits": 9}}\n', ["render_id", "counts"]
    )
    assert not kept.written and kept.held == target.read_bytes() and b"x-1" in kept.held
    assert write_output(str(target), b'{"text": "b", "render_id": "x-3"}\n', ["render_id", "counts"]).written
    target.write_bytes(b"not json\n")
    assert write_output(str(target), b'{"text": "b"}\n', ["render_id"]).written
    assert target.read_bytes() == b'{"text": "b"}\n'


@pytest.mark.parametrize("planted", ["live", "dangling"])
def test_a_link_at_the_output_is_refused_and_nothing_is_written_through_it(project: Path, planted: str) -> None:
    """-o AGENTS.md where AGENTS.md is a link (a live one into ~/.bashrc, or a dangling one into another folder):
    exit 2 naming the link and where it points; the link and its target as they were, nothing created."""
    elsewhere = project.parent / f"elsewhere-{planted}"
    elsewhere.mkdir()
    target = elsewhere / ".bashrc"
    if planted == "live":
        target.write_text("export PATH=/usr/bin\n", encoding="utf-8")
    (project / "AGENTS.md").symlink_to(target)
    result = _render(project, "-o", "AGENTS.md")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"memconfig: error: -o AGENTS.md is a symbolic link (to {target}): memconfig does not write through links; "
        "write to the file itself, or remove the link"
    )
    assert (project / "AGENTS.md").is_symlink() and os.readlink(project / "AGENTS.md") == str(target)
    if planted == "live":
        assert target.read_text(encoding="utf-8") == "export PATH=/usr/bin\n"
    else:
        assert not target.exists() and sorted(os.listdir(elsewhere)) == []
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_an_output_that_is_no_regular_file_is_refused_before_anything_is_read(project: Path, kind: str) -> None:
    """-o naming a FIFO (opening it would wait for a reader), a socket or a device: exit 2, never opened."""
    import socket

    server = socket.socket(socket.AF_UNIX)
    if kind == "fifo":
        os.mkfifo(project / "out")
        name, what = "out", "a FIFO"
    elif kind == "socket":
        server.bind(str(project / "out"))
        name, what = "out", "a socket"
    else:
        name, what = "/dev/zero", "a character device"
    with server:
        done = _render(project, "-o", name)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"memconfig: error: -o {name} is {what}, not a regular file: not opened (it could block, or never end)"
    )
    assert not (project / "log.jsonl").exists() or "output_written" not in (project / "log.jsonl").read_text()


def test_a_link_planted_after_the_check_is_not_written_through(tmp_path: Path) -> None:
    """write_output itself refuses a link (one put there after the command line was checked, under --watch)."""
    target = tmp_path / "victim"
    target.write_text("kept\n", encoding="utf-8")
    (tmp_path / "AGENTS.md").symlink_to(target)
    with pytest.raises(OSError, match=r"AGENTS.md: a symbolic link \(to .*victim\): memconfig does not write"):
        write_output(str(tmp_path / "AGENTS.md"), b"prompt\n")
    assert target.read_text(encoding="utf-8") == "kept\n"
    assert sorted(os.listdir(tmp_path)) == ["AGENTS.md", "victim"]


def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    """While the file is rewritten over and over, every read gives one whole version, never a mix or a cut."""
    target = tmp_path / "AGENTS.md"
    versions = [b"a" * 300_000, b"b" * 200_000 + b"\n"]
    write_output(str(target), versions[0])
    seen: set[bytes] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(target.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(200):
            write_output(str(target), versions[i % 2])
    finally:
        stop.set()
        reader.join(timeout=60)
    assert seen and seen <= set(versions)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["AGENTS.md"]  # no temporary file left


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(lambda p: None, "No such file or directory", id="missing-folder"),
    ],
)
def test_a_write_failure_exits_74_naming_the_file(project: Path, make: Callable[[Path], Any], reason: str) -> None:
    """An output that cannot be written exits 74 with one line naming it (no traceback; a FIFO is not opened)."""
    make(project)
    name = "out" if (project / "out").exists() else "no/such/folder/AGENTS.md"
    done = _render(project, "-o", name)
    assert done.returncode == 74
    assert done.stderr.strip() == f"memconfig: error: cannot write the output: {name}: {reason}"
    logged = _events(project / "log.jsonl")
    assert "output_written" not in {e["event"] for e in logged}
    [failed] = [e for e in logged if e["event"] == "output_failed"]
    assert (failed["path"], failed["detail"], failed["level"]) == (name, f"{name}: {reason}", "error")
    [built] = [e for e in logged if e["event"] == "prompt_built"]
    assert failed["render_id"] == built["render_id"]


def test_an_output_that_is_a_source_is_refused(project: Path, write_config: WriteConfig) -> None:
    """-o naming a file the config reads (here a glob's match) exits 2 and leaves it as it is."""
    write_config({"version": 1, "sources": [{"glob": "*.md"}]})
    (project / "AGENTS.md").write_text("by hand\n", encoding="utf-8")
    done = _render(project, "-o", "AGENTS.md")
    assert done.returncode == 2
    assert "memconfig: error: -o AGENTS.md is a source of this config (" in done.stderr
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == "by hand\n"


@pytest.mark.parametrize("watch", [pytest.param((), id="once"), pytest.param(("--watch",), id="watch")])
@pytest.mark.parametrize(
    ("config", "output", "taker"),
    [
        pytest.param({"formatter": {"preset": "claude"}}, "CLAUDE.local.md", "discover:", id="a-discovery-candidate"),
        pytest.param({"formatter": {"preset": "claude"}}, ".claude/rules/gen.md", "discover:", id="a-pattern-match"),
        pytest.param({"sources": [{"glob": "*.md"}]}, "OUT.md", "*.md", id="a-glob-match"),
    ],
)
def test_an_output_a_source_would_read_once_written_is_refused_before_the_first_write(
    tmp_path: Path, write_config: WriteConfig, config: dict[str, Any], output: str, taker: str, watch: tuple[str, ...]
) -> None:
    """-o onto a file that is not there yet but that a discovery looks for (CLAUDE.local.md beside CLAUDE.md, a
    .claude/rules match) or a glob would match: exit 2 naming the source, the file never created, with --watch
    too (which would otherwise render it into itself)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "CLAUDE.md").write_text("Use tabs.\n", encoding="utf-8")
    write_config({"version": 1, **config})
    done = _render(tmp_path, "-o", output, *watch)
    assert done.returncode == 2, done.stderr
    assert f"memconfig: error: -o {output} is a file this config's source {taker}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / output).exists()


@pytest.mark.parametrize("beside_claude_md", [True, False])
def test_agents_md_as_output_under_the_claude_preset_only_where_claude_would_not_read_it(
    tmp_path: Path, write_config: WriteConfig, beside_claude_md: bool
) -> None:
    """Claude Code reads AGENTS.md in a folder with no CLAUDE.md: -o AGENTS.md there is refused (exit 2, nothing
    written); beside a CLAUDE.md it is not read, and is written."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "CLAUDE.local.md").write_text("Mine.\n", encoding="utf-8")
    if beside_claude_md:
        (tmp_path / "CLAUDE.md").write_text("Use tabs.\n", encoding="utf-8")
    write_config({"version": 1, "formatter": {"preset": "claude"}})
    done = _render(tmp_path, "-o", "AGENTS.md")
    if beside_claude_md:
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "AGENTS.md").read_text(encoding="utf-8") == "Use tabs.\n\nMine."
    else:
        assert done.returncode == 2
        assert "memconfig: error: -o AGENTS.md is a file this config's source discover:all:CLAUDE.md|AGENTS.md" in (
            done.stderr
        )
        assert not (tmp_path / "AGENTS.md").exists()


@pytest.mark.parametrize(
    ("config", "output"),
    [
        pytest.param({"formatter": {"preset": "claude"}}, "sub/CLAUDE.local.md", id="a-folder-not-walked"),
        pytest.param({"formatter": {"preset": "claude"}}, "GEN.md", id="not-a-candidate-name"),
        pytest.param({"sources": [{"glob": "*.md"}]}, "OUT.txt", id="no-glob-match"),
    ],
)
def test_an_output_no_source_would_read_is_written(
    tmp_path: Path, write_config: WriteConfig, config: dict[str, Any], output: str
) -> None:
    """Beside those sources, a file none of them looks for is written as usual."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "CLAUDE.md").write_text("Use tabs.\n", encoding="utf-8")
    write_config({"version": 1, **config})
    done = _render(tmp_path, "-o", output)
    assert done.returncode == 0, done.stderr
    assert "Use tabs." in (tmp_path / output).read_text(encoding="utf-8")


@pytest.mark.parametrize("watch", [pytest.param(False, id="once"), pytest.param(True, id="watch")])
def test_a_glob_over_a_missing_archive_does_not_stop_the_write(
    project: Path, write_config: WriteConfig, watch: bool
) -> None:
    """A chained glob (zip://*.md::missing.zip) is a skip in the render, and -o writes the file as usual: the check
    for a file a glob would take never opens a filesystem that is not plain local (no "cannot write", no exit 74)."""
    write_config({"version": 1, "sources": ["team.md", {"glob": "zip://*.md::missing.zip"}]})
    out = project / "out.md"
    if watch:
        with watching(project, "-o", "out.md") as (process, errors):
            eventually(lambda: out.exists() or process.poll() is not None, "the first write")
            assert process.poll() is None, errors.read_text(encoding="utf-8")
        assert process.returncode == 0
        stderr = errors.read_text(encoding="utf-8")
    else:
        done = _render(project, "-o", "out.md")
        assert done.returncode == 0, done.stderr
        stderr = done.stderr
    assert "cannot write" not in stderr and "error" not in stderr, stderr
    assert "Use tabs." in out.read_text(encoding="utf-8")
    logged = _events(project / "log.jsonl")
    assert "output_written" in {e["event"] for e in logged}
    assert "output_failed" not in {e["event"] for e in logged}
    [skipped] = [e for e in logged if e["event"] == "source_skipped"][:1]
    assert (skipped["source"], skipped["reason"]) == ("zip://*.md::missing.zip", "not_found")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != "log.jsonl"}


@pytest.mark.parametrize(
    ("output", "clash"),
    [
        pytest.param("link.md", "a symbolic link (to team.md)", id="a-link-to-a-source"),
        pytest.param("hard.md", "a source of this config (team.md)", id="a-hard-link-to-a-source"),
        pytest.param("CLAUDE.md", "a source of this config (CLAUDE.md)", id="a-declared-source"),
        pytest.param("imported.md", "a source of this config (", id="an-imported-file"),
        pytest.param("rules/r.md", "a source of this config (", id="a-glob-match"),
        pytest.param("AGENTS.md", "a source of this config (", id="a-discovered-file"),
        pytest.param("memconfig.yaml", "the config file (", id="the-config"),
        pytest.param("config-link.yaml", "the config file (", id="a-link-to-the-config"),
        pytest.param("creds.yaml", "credentials_file (", id="the-credentials-file"),
        pytest.param("layout.txt", "formatter.template_file (", id="the-template-file"),
        pytest.param("log.jsonl", "the --log-file (", id="the-log-file"),
    ],
)
def test_an_output_that_is_a_file_the_run_reads_or_writes_is_refused(
    tmp_path: Path, write_config: WriteConfig, output: str, clash: str
) -> None:
    """-o onto a source (however reached: a link, a hard link, a glob, a discovery, an import), the config, its
    credentials or template, or the log exits 2 naming the clash, and every file is left as it was."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "team.md").write_text("Use tabs.\n", encoding="utf-8")
    (tmp_path / "CLAUDE.md").write_text("Claude notes.\n@imported.md\n", encoding="utf-8")
    (tmp_path / "imported.md").write_text("Imported.\n", encoding="utf-8")
    (tmp_path / "AGENTS.md").write_text("Agents.\n", encoding="utf-8")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "r.md").write_text("Rule.\n", encoding="utf-8")
    (tmp_path / "creds.yaml").write_text("{}\n", encoding="utf-8")
    (tmp_path / "layout.txt").write_text("{agent_memory}\n", encoding="utf-8")
    (tmp_path / "link.md").symlink_to("team.md")
    os.link(tmp_path / "team.md", tmp_path / "hard.md")
    (tmp_path / "config-link.yaml").symlink_to("memconfig.yaml")
    write_config(
        {
            "version": 1,
            "sources": ["team.md", "CLAUDE.md", {"glob": "rules/*.md"}, {"discover": {"names": ["AGENTS.md"]}}],
            "imports": {"enabled": True},
            "credentials_file": "creds.yaml",
            "formatter": {"template_file": "layout.txt"},
        }
    )
    assert _render(tmp_path).returncode == 0, _render(tmp_path).stderr  # the config itself is fine
    before = _snapshot(tmp_path)
    done = _render(tmp_path, "-o", output)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"memconfig: error: -o {output} is {clash}"), done.stderr
    assert "Traceback" not in done.stderr
    assert _snapshot(tmp_path) == before
    assert os.path.islink(tmp_path / "link.md") and os.path.islink(tmp_path / "config-link.yaml")


@pytest.mark.parametrize(
    ("config", "output", "source"),
    [
        pytest.param({"sources": ["${API_TOKEN}/a.md"]}, "a.md", "${API_TOKEN}/a.md", id="a-declared-source"),
        pytest.param(
            {"sources": ["${API_TOKEN}/CLAUDE.md"], "imports": {"enabled": True}},
            "b.md",
            "${API_TOKEN}/CLAUDE.md::@b.md",
            id="an-imported-file",
        ),
    ],
)
def test_a_source_under_a_secret_variable_is_refused_without_showing_the_secret(
    tmp_path: Path, write_config: WriteConfig, config: dict[str, Any], output: str, source: str
) -> None:
    """A source whose path comes from a secret-named ${VAR} (its logged URL masked) is still known as the output:
    exit 2 naming the source as written, the file untouched, and the variable's value nowhere in what is shown."""
    secret = "vault-5f3c9e1a"
    (tmp_path / ".git").mkdir()
    (tmp_path / secret).mkdir()
    (tmp_path / secret / "a.md").write_text("Precious.\n", encoding="utf-8")
    (tmp_path / secret / "CLAUDE.md").write_text("Notes.\n@b.md\n", encoding="utf-8")
    (tmp_path / secret / "b.md").write_text("Imported.\n", encoding="utf-8")
    write_config({"version": 1, **config})
    before = _snapshot(tmp_path / secret)
    path = f"{secret}/{output}"
    config_file = str(tmp_path / "memconfig.yaml")
    done = memconfig(
        "render", "-c", config_file, "--log-file", "log.jsonl", "-o", path, cwd=tmp_path, env={"API_TOKEN": secret}
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"memconfig: error: -o ***/{output} is a source of this config ({source}): writing it would put the prompt "
        "into the next render; write the output elsewhere, or leave it out of the sources\n"
    )
    assert _snapshot(tmp_path / secret) == before
    assert secret not in done.stdout + done.stderr + (tmp_path / "log.jsonl").read_text(encoding="utf-8")


def test_an_output_under_a_secret_variable_is_shown_masked(tmp_path: Path, write_config: WriteConfig) -> None:
    """-o into a folder named by a secret-named ${VAR}'s value (not a source): written, and the log's path masked."""
    secret = "vault-5f3c9e1a"
    (tmp_path / secret).mkdir()
    (tmp_path / secret / "a.md").write_text("Precious.\n", encoding="utf-8")
    write_config({"version": 1, "sources": ["${API_TOKEN}/a.md"]})
    config_file = str(tmp_path / "memconfig.yaml")
    path = f"{secret}/OUT.md"
    done = memconfig(
        "render", "-c", config_file, "--log-file", "log.jsonl", "-o", path, cwd=tmp_path, env={"API_TOKEN": secret}
    )
    assert done.returncode == 0, done.stderr
    assert "Precious." in (tmp_path / secret / "OUT.md").read_text(encoding="utf-8")
    logged = _events(tmp_path / "log.jsonl")
    [written] = [e for e in logged if e["event"] == "output_written"]
    assert written["path"] == "***/OUT.md"
    assert secret not in done.stdout + done.stderr + (tmp_path / "log.jsonl").read_text(encoding="utf-8")


def test_logging_file_as_the_output_is_refused(project: Path, write_config: WriteConfig) -> None:
    """The config's logging.file counts as the log too: exit 2, and the log keeps its lines."""
    write_config({"version": 1, "sources": ["team.md"], "logging": {"file": "run.log"}})
    config = str(project / "memconfig.yaml")
    assert memconfig("render", "-c", config, cwd=project).returncode == 0
    before = (project / "run.log").read_bytes()
    done = memconfig("render", "-c", config, "-o", "run.log", cwd=project)
    assert done.returncode == 2
    assert done.stderr.startswith("memconfig: error: -o run.log is logging.file ("), done.stderr
    assert (project / "run.log").read_bytes() == before


def test_an_empty_output_name_or_a_folder_is_a_usage_error(project: Path) -> None:
    """-o '' and -o FOLDER exit 2 with one line saying what is wrong (naming the folder); nothing is written."""
    done = _render(project, "-o", "")
    assert (done.returncode, done.stderr) == (2, "memconfig: error: -o needs a file name\n")
    (project / "out").mkdir()
    done = _render(project, "-o", "out")
    assert done.returncode == 2
    assert done.stderr.startswith("memconfig: error: -o out is a folder: "), done.stderr
    assert list((project / "out").iterdir()) == []
    assert not (project / "log.jsonl").exists() or "output_written" not in (project / "log.jsonl").read_text()


# -- render -o FILE --watch: a failed write --------------------------------------------------------------------

HANG = 20.0  # seconds: only a hang takes this long; nothing asserts a duration


def test_watch_outlives_a_failed_write_and_writes_the_file_once_it_can(project: Path) -> None:
    """Under --watch, the output replaced by a folder: one error line naming the file and why, one output_failed,
    the watch goes on; once the folder is gone the file gets the latest render (no edit needed); SIGINT exits 0."""
    (project / "out").mkdir()
    out = project / "out" / "OUT.md"
    with watching(project, "-o", "out/OUT.md") as (process, errors):
        eventually(lambda: out.exists() or process.poll() is not None, "the first write")
        out.unlink()
        out.mkdir()  # as if replaced by something else for a while
        (project / "team.md").write_text("Use spaces.\n", encoding="utf-8")
        message = "memconfig: error: cannot write the output: out/OUT.md: not a regular file"
        eventually(lambda: message in errors.read_text(encoding="utf-8"), "the failed write reported")
        assert process.poll() is None
        out.rmdir()
        eventually(lambda: out.is_file() and "Use spaces." in out.read_text(encoding="utf-8"), "the file written")
    assert process.returncode == 0
    lines = errors.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if "cannot write" in line] == [
        message + " (still watching: tried again every second)"
    ]  # tried again, printed once
    logged = _events(project / "log.jsonl")
    [failed] = [e for e in logged if e["event"] == "output_failed"]
    assert (failed["path"], failed["detail"]) == ("out/OUT.md", "out/OUT.md: not a regular file")
    last = [e for e in logged if e["event"] == "output_written"][-1]
    assert last["render_id"] == failed["render_id"]  # the render that failed to be written is the one written
    assert "Traceback" not in errors.read_text(encoding="utf-8")


def test_a_failed_write_under_watch_is_reported_with_control_characters_escaped(project: Path) -> None:
    """The -o path holds ESC and BEL: the "cannot write" line shows them as \\xNN, never raw on the terminal."""
    folder = "o\x1b]0;X\x07ut"
    (project / folder).mkdir()
    out = project / folder / "OUT.md"
    with watching(project, "-o", f"{folder}/OUT.md") as (process, errors):
        eventually(lambda: out.exists() or process.poll() is not None, "the first write")
        out.unlink()
        out.mkdir()
        (project / "team.md").write_text("Use spaces.\n", encoding="utf-8")
        shown = "memconfig: error: cannot write the output: o\\x1b]0;X\\x07ut/OUT.md: not a regular file"
        eventually(lambda: shown in errors.read_text(encoding="utf-8"), "the failed write reported")
        out.rmdir()
    assert "\x1b" not in errors.read_text(encoding="utf-8") and "\x07" not in errors.read_text(encoding="utf-8")


def _replace(path: Path, text: str) -> None:
    """Give *path* the content *text* in one rename, as an editor saving it does."""
    new = path.with_name(path.name + ".new")
    new.write_text(text, encoding="utf-8")
    os.replace(new, path)


def test_watch_outlives_an_edit_that_makes_the_output_a_source(tmp_path: Path, write_config: WriteConfig) -> None:
    """-o AGENTS.md --watch under preset claude, then CLAUDE.md imports @AGENTS.md: one error line saying the file
    is a source and is not written, the file kept as it was, the watch goes on; once the import is gone the file
    gets the new render; SIGINT exits 0."""
    (tmp_path / ".git").mkdir()
    claude = tmp_path / "CLAUDE.md"
    claude.write_text("Claude notes.\n", encoding="utf-8")
    write_config({"version": 1, "formatter": {"preset": "claude"}})
    out = tmp_path / "AGENTS.md"
    refused = (
        "memconfig: error: -o AGENTS.md is a source of this config ("
        f"{tmp_path / 'CLAUDE.md'}::@AGENTS.md): writing it would put the prompt into the next render; write the "
        "output elsewhere, or leave it out of the sources (not written; still watching)"
    )
    with watching(tmp_path, "-o", "AGENTS.md") as (process, errors):
        eventually(lambda: out.exists() or process.poll() is not None, "the first write")
        first = out.read_bytes()
        assert b"Claude notes." in first
        _replace(claude, "Claude notes.\nSee @AGENTS.md\n")  # whole: never seen half-written
        eventually(lambda: refused in errors.read_text(encoding="utf-8"), "the refusal reported")
        assert process.poll() is None
        assert out.read_bytes() == first
        _replace(claude, "Claude notes, new.\n")
        eventually(lambda: b"Claude notes, new." in out.read_bytes(), "the file written again")
        assert process.poll() is None
    assert process.returncode == 0
    lines = errors.read_text(encoding="utf-8").splitlines()
    assert lines and set(lines) == {refused}  # once per render that read the file; nothing else
    logged = _events(tmp_path / "log.jsonl")
    written = [e for e in logged if e["event"] == "output_written"]
    assert len(written) == 2  # the first render's and the one after the import was undone: none in between
    assert "output_failed" not in {e["event"] for e in logged}


# -- render -o -: standard output ------------------------------------------------------------------------------


def test_output_dash_is_standard_output(project: Path) -> None:
    """-o - prints what render prints (as -c - reads stdin): no file named '-', no output event; ./- is a file."""
    printed = _render(project)
    (project / "log.jsonl").unlink()
    done = _render(project, "-o", "-")
    assert (done.returncode, done.stdout) == (0, printed.stdout)
    assert not (project / "-").exists()
    assert not {"output_written", "output_unchanged"} & {e["event"] for e in _events(project / "log.jsonl")}
    assert _render(project, "-o", "./-").returncode == 0
    assert (project / "-").read_text(encoding="utf-8") == printed.stdout


def test_output_dash_with_watch_is_a_usage_error(project: Path) -> None:
    """--watch keeps a file current; with -o - there is none: exit 2 saying so, nothing written."""
    done = _render(project, "-o", "-", "--watch")
    assert done.returncode == 2
    assert done.stderr == (
        "memconfig: error: --watch keeps a file current, and -o - is standard output: give it with -o FILE\n"
    )
    assert not (project / "-").exists()
