"""The bad config corpus: every malformed config exits 2 naming the file and where, never with a traceback.

The small cases are files in ``tests/config/bad_configs/``, each opening with
``# expect: <fragment of the message>`` and ``# where: <location>``: a key
path, ``LINE:COLUMN``, or ``-`` for the file itself. The large and odd ones
(50 MB, alias bombs, 10,000 levels of nesting, a folder, bad bytes) are
written into a temporary folder by ``tests/config/bad_configs/generated.py``; the
heaviest also run in a child process that reports its peak memory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import structlog

from memconfig.cli import main
from memconfig.config import Config
from memconfig.exceptions import ConfigError

CORPUS = Path(__file__).parent / "bad_configs"
COMMANDS = ("validate", "render", "explain")
HANG = 60  # seconds: only detects a hang; nothing here is timed
MAX_RSS_BYTES = 200 * 1024 * 1024

_spec = importlib.util.spec_from_file_location("bad_configs_generated", CORPUS / "generated.py")
assert _spec is not None and _spec.loader is not None
generated = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = generated
_spec.loader.exec_module(generated)


class Case(NamedTuple):
    path: Path
    expect: str
    where: str


def read_case(path: Path) -> Case:
    """A corpus file and what its first two comment lines promise."""
    first, second = path.read_text(encoding="utf-8").split("\n")[:2]
    assert first.startswith("# expect: ") and second.startswith("# where: "), path.name
    return Case(path, first.removeprefix("# expect: "), second.removeprefix("# where: "))


FILES = sorted(CORPUS.glob("*.yaml"))


def assert_reported(case: Case, code: int, out: str, err: str) -> None:
    """Exit 2, nothing on stdout, one error naming the file and the location, the fragment, no traceback."""
    file = str(case.path)
    assert code == 2, err
    assert "Traceback" not in out + err
    assert out == ""
    assert err.startswith(f"memconfig: error: {file}"), err
    assert max(map(len, err.splitlines())) <= 500 or len(file) > 200, "an error line over 500 characters"
    assert case.expect in err, err
    if case.where == "-":
        assert err.startswith(f"memconfig: error: {file}: "), err
    elif case.where == "L:C":
        assert re.match(rf"memconfig: error: {re.escape(file)}:\d+:\d+: ", err), err
    elif re.fullmatch(r"\d+:\d+", case.where):
        assert err.startswith(f"memconfig: error: {file}:{case.where}: "), err
    else:
        assert re.search(rf"(^|: |\n  ){re.escape(case.where)}: ", err), err


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ``MEMCONFIG_*`` override and none of the corpus's variables set; structlog reset after."""
    for name in list(os.environ):
        if name.upper().startswith(("MEMCONFIG_", "MC_BAD_")):
            monkeypatch.delenv(name)
    yield
    structlog.reset_defaults()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], clean_environment: None) -> Callable[..., tuple[int, str, str]]:
    """``memconfig.cli.main`` in this process: (exit code, stdout, stderr)."""

    def invoke(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_the_corpus_is_large_enough() -> None:
    """At least 60 committed cases, plus the generated ones."""
    assert len(FILES) >= 60
    assert len(generated.CASES) >= 10


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in FILES])
def test_bad_config_exits_2_naming_file_and_location(
    cli: Callable[..., tuple[int, str, str]], path: Path, command: str
) -> None:
    """Each committed bad config: exit 2, the file and location named, the expected words, no traceback."""
    case = read_case(path)

    assert_reported(case, *cli(command, "-c", str(path)))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("made", [pytest.param(c, id=c.name) for c in generated.CASES])
def test_generated_bad_config_exits_2(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path, made: generated.Generated, command: str
) -> None:
    """Each generated bad config (huge, bombs, deep nesting, a folder, bad bytes): exit 2 with its limit named."""
    path = tmp_path / f"{made.name}.yaml"
    made.make(path)

    assert_reported(Case(path, made.expect, made.where), *cli(command, "-c", str(path)))


# Each command's own peak (VmHWM, of the memory the child was exec'd into, reset before each command by
# /proc/self/clear_refs to the memory the child holds then): ru_maxrss would also count the parent's resident
# set at the moment it spawned the child, which is the test runner's, not memconfig's. One child runs the
# commands one after another, each as the console script would: what one left behind only adds to the next's.
_CHILD = """
import json, re, sys
from memconfig.cli import main
from memconfig.config import Config
from memconfig.exceptions import ConfigError
path, reports = sys.argv[1], {}
for command in sys.argv[2:]:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    print(f"--- {command}", file=sys.stderr, flush=True)
    code = main([command, "-c", path])
    with open("/proc/self/status") as status:
        peak = int(re.search(r"VmHWM:\\s*(\\d+) kB", status.read())[1])
    reports[command] = {"code": code, "maxrss_kib": peak}
sys.stdout.write(json.dumps(reports))
"""


@pytest.mark.parametrize("made", [pytest.param(c, id=c.name) for c in generated.CASES if c.heavy])
def test_heavy_bad_config_stays_small_in_a_child_process(tmp_path: Path, made: generated.Generated) -> None:
    """A 50 MB config, alias bombs and 10,000 levels of nesting: each command refuses it without a hang, under
    200 MB of memory."""
    path = tmp_path / f"{made.name}.yaml"
    made.make(path)
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith(("MEMCONFIG_", "MC_BAD_"))}

    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), *COMMANDS],
        capture_output=True,
        text=True,
        timeout=HANG,
        env=environ,
        check=False,
    )

    reports = json.loads(done.stdout)
    assert "Traceback" not in done.stderr, done.stderr
    errors = dict(part.split("\n", 1) for part in done.stderr.split("--- ")[1:])
    assert list(reports) == list(errors) == list(COMMANDS), done.stderr
    for command, report in reports.items():
        assert report["code"] == 2, (command, errors[command])
        assert made.expect in errors[command], command
        assert report["maxrss_kib"] * 1024 < MAX_RSS_BYTES, command


def test_a_bad_config_on_standard_input_is_named_stdin(clean_environment: None) -> None:
    """``-c -`` reports problems against ``<stdin>``, with line and column."""
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "validate", "-c", "-"],
        input="version: 1\nsources: [a.md\n",
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )

    assert done.returncode == 2
    assert done.stderr.startswith("memconfig: error: <stdin>:3:1: YAML syntax error: ")


def test_fifty_megabytes_on_standard_input_is_refused(tmp_path: Path, clean_environment: None) -> None:
    """Standard input is read no further than the size limit."""
    path = tmp_path / "huge.yaml"
    generated.CASES[0].make(path)

    with path.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "memconfig", "render", "-c", "-"],
            stdin=stdin,
            capture_output=True,
            timeout=HANG,
            check=False,
        )

    assert done.returncode == 2
    assert done.stderr.decode() == (
        "memconfig: error: <stdin>: the input is larger than the limit of 1 MiB (memconfig.config.MAX_CONFIG_BYTES)\n"
    )


def test_a_config_given_as_a_pipe_is_read(tmp_path: Path, clean_environment: None) -> None:
    """A config on a pipe the process was handed (``-c <(cat x)``: ``/dev/fd/N``) is read to its end, not refused;
    a FIFO named on disk is refused instead (tests/cli/test_named_paths.py)."""
    read, write = os.pipe()
    with subprocess.Popen(
        [sys.executable, "-m", "memconfig", "validate", "-c", f"/dev/fd/{read}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=(read,),
        cwd=tmp_path,
    ) as process:
        os.close(read)
        with os.fdopen(write, "w") as writer:
            writer.write("version: 1\nsources: [a.md]\n")
        out, err = process.communicate(timeout=HANG)

    assert (process.returncode, out, err) == (0, f"/dev/fd/{read}: ok (1 source)\n", "")


def test_json_nested_without_end_in_an_environment_override(
    cli: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``MEMCONFIG_*`` variable whose JSON nests 10,000 levels is a config error, not a RecursionError."""
    monkeypatch.setenv("MEMCONFIG_STORAGE", '{"s3": ' + '{"a": ' * 10_000 + "1" + "}" * 10_001)
    path = CORPUS / "data" / "minimal.yaml"

    code, out, err = cli("validate", "-c", str(path))

    assert (code, out) == (2, "")
    assert (
        err == f"memconfig: error: {path}: (environment): a MEMCONFIG_* variable holds JSON nested too deeply to read\n"
    )


def test_a_python_mapping_that_holds_itself_is_a_config_error() -> None:
    """``Config.from_mapping`` of a mapping that contains itself stops at the depth limit, with the key path."""
    storage: dict[str, object] = {}
    storage["s3"] = storage

    with pytest.raises(ConfigError) as raised:
        Config.from_mapping({"version": 1, "storage": storage})

    [problem] = raised.value.problems
    assert problem.path.startswith("storage.s3.s3.")
    assert problem.message == "nested deeper than the limit of 64 levels (memconfig.config.MAX_CONFIG_DEPTH)"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("field", ["name", "template"])
def test_an_environment_value_that_is_not_utf8_is_a_config_error_naming_it(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, command: str
) -> None:
    """``${MC_BAD_VALUE}`` holding bytes that are not UTF-8 (os.environ keeps them as surrogates): exit 2 naming the
    variable and where it is used, for validate as for render and explain; the value itself never shown."""
    os.environb[b"MC_BAD_VALUE"] = b"caf\xe9\xff"
    monkeypatch.setattr(os, "environ", os.environ)  # restored (with the variable deleted) after the test
    monkeypatch.delenv("MC_BAD_VALUE", raising=False)
    os.environb[b"MC_BAD_VALUE"] = b"caf\xe9\xff"
    text = (
        "version: 1\nsources: [{url: a.md, name: '${MC_BAD_VALUE}'}]\n"
        if field == "name"
        else "version: 1\nformatter: {template: '${MC_BAD_VALUE} {agent_memory}'}\n"
    )
    (tmp_path / "c.yaml").write_text(text)
    where = "sources[0].name" if field == "name" else "formatter.template"
    code, out, err = cli(command, "-c", str(tmp_path / "c.yaml"))
    assert (code, out) == (2, ""), err
    assert f"{where}: environment variable ${{MC_BAD_VALUE}} holds bytes that are not UTF-8" in err
    assert "caf" not in err and "Traceback" not in err
    del os.environb[b"MC_BAD_VALUE"]
