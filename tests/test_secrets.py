"""No secret a user plants ever comes out: not on stdout or stderr, in a log file, an event, an error or a repr.

Every kind of secret memconfig is handed is planted at once (URL user-info,
storage options and headers, signed-URL query tokens, a credentials file,
``${VAR}`` values in URLs, headers, storage options and names) in sources that
load and in sources that fail every way real servers make them fail (404,
403, 500 retried, connection refused, timeout, S3 refusing a wrong secret), and
in configs that are wrong in every way that puts a secret next to the mistake.
Every command of the CLI's command table runs over each of them, in this
process and as a user runs it; every text that comes out is searched for each
secret as written, percent-encoded and base64-encoded, and for the ``SECRET-``
prefix every planted value starts with, so that half a secret is caught too.
The *names* of unset variables are not secrets: every error gives them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
import structlog
import yaml
from structlog.testing import capture_logs
from support.cli import ROOT
from support.servers import S3Server, WebServer

from memconfig import Pipeline
from memconfig.append import APPENDERS, appender_for
from memconfig.cli import main
from memconfig.cli.main import COMMANDS, LOGGED
from memconfig.config import load_config
from memconfig.exceptions import ConfigError, SourceError
from memconfig.integrations.langchain import MemconfigMiddleware
from memconfig.sources import build_sources

# -- the planted secrets -----------------------------------------------------------------------
# Every one starts with "SECRET-": no output may hold that prefix at all.

PASSWORD = "SECRET-userinfo-PW"
TOKEN = "SECRET-token-q+/="  # as signed-URL signatures are: base64, percent-encoded in the URL
STORAGE = "SECRET-storage-opt"
CREDFILE = "SECRET-credfile"
ENV_VALUE = "SECRET-env-val@/:"  # a password holding "@", "/" and ":" must stay a password
PREFIX = "SECRET-"
QUERY_TOKEN = quote(TOKEN, safe="")
USER = "reader"

# The variables the configs use; names are not secrets, so every error about one names it.
ENVIRONMENT = {
    "TEAM_API_TOKEN": ENV_VALUE,  # secret-looking name: its value is hidden wherever it is used
    "READER_LOGIN": ENV_VALUE,  # any name: substituted into user-info, so hidden
}
UNSET = ("UNSET_TEAM_TOKEN", "UNSET_READER_PASSWORD", "UNSET_S3_SECRET", "UNSET_CRED_TOKEN", "UNSET_HOST_PART")

#: Extra arguments each command needs to run; a command added to the CLI fails here until it has its own.
COMMAND_ARGS: dict[str, list[str]] = {
    "render": ["--system", "You are a careful assistant."],
    "validate": [],
    "sources": [],
    "explain": ["--format", "text"],
    # A log with secrets in another program's lines, a cut-off line and an unmasked URL: none may be printed.
    "audit": [str(ROOT / "tests" / "audit" / "bad_logs" / "planted-secrets.jsonl")],
}


def encodings(secret: str) -> set[str]:
    """*secret* as written and as a library or a header could encode it."""
    raw = secret.encode()
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
    }


def needles(*more: str) -> set[str]:
    """Every form of every planted secret, and of the ``user:password`` pairs Basic auth encodes."""
    found: set[str] = set()
    for secret in (PASSWORD, TOKEN, STORAGE, CREDFILE, ENV_VALUE, *more):
        found |= encodings(secret)
    for login in (f"{USER}:{PASSWORD}", f"{USER}:{ENV_VALUE}", f"{USER}:{quote(ENV_VALUE, safe=':')}"):
        found |= encodings(login)
    return found


def assert_clean(text: str, where: str, secrets: set[str]) -> None:
    """No planted secret, in any form, and not even the prefix they share, is in *text*."""
    leaked = sorted(s for s in secrets if s in text)
    assert not leaked, f"{where} leaks {leaked}:\n{text}"
    assert PREFIX not in text, f"{where} leaks part of a secret:\n{text}"


# -- servers -------------------------------------------------------------------------------------


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables the configs use set, the ones they must miss unset, and no ``MEMCONFIG_*`` override."""
    for name in [k for k in os.environ if k.upper().startswith("MEMCONFIG_")]:
        monkeypatch.delenv(name)
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)


# -- scenarios -----------------------------------------------------------------------------------


@dataclass
class Scenario:
    """A config on disk carrying secrets, what each command must exit with, and what must be said."""

    path: Path
    secrets: set[str]
    config_error: bool = False
    reader_exit: int = 0  # the exit code of a command that reads sources (validate reads none)
    says: list[str] = field(default_factory=list)  # what stderr must hold (key paths, variable names)
    shows: list[str] = field(default_factory=list)  # what a command that reads sources prints or logs


@dataclass
class World:
    """The servers the scenarios reach."""

    web: WebServer
    s3: S3Server
    bucket: str
    closed: int
    folder: Path

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.web.port}"

    def secrets(self) -> set[str]:
        return needles(self.s3.secret, self.s3.key)


@pytest.fixture
def world(web: WebServer, s3_server: S3Server, closed_port: int, tmp_path: Path, environment: None) -> World:
    """Sources that load and sources that fail: a web server's paths, a bucket, a refused port, a zip."""
    web.serve("signed.md", "signed content")
    web.serve("sas.md", "sas content")
    web.serve("env.md", "env login content")
    web.serve("header.md", "header content")
    web.serve("team.md", "team content")
    web.serve("spaced.md", "spaced login content")
    web.fail("forbidden.md", 403)
    web.fail("broken.md", 500)
    web.delay("slow.md", 30)
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("AGENTS.md", "bundle content")
    web.serve("bundle.zip", bundle.read_bytes())
    bucket = f"secrets-{tmp_path.name.lower().replace('_', '-')[-40:]}".rstrip("-")
    client = s3_server.client()
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="AGENTS.md", Body=b"bucket content")
    client.put_object(Bucket=bucket, Key="env.md", Body=b"bucket env content")
    return World(web, s3_server, bucket, closed_port, tmp_path)


def credentials(world: World) -> dict[str, Any]:
    """The credentials file: S3 keys, an HTTP header, and a planted secret of its own."""
    return {
        "team_s3": {"key": world.s3.key, "secret": world.s3.secret},
        # botocore's error names a profile it cannot find: a credentials entry's every value is masked
        "team_profile": {"profile": f"{CREDFILE}-profile"},
        "web_team": {"headers": {"Authorization": f"Bearer {CREDFILE}", "X-Team": CREDFILE}},
    }


def every_source(world: World, *, required: bool, policy: str = "once") -> dict[str, Any]:
    """One config with a secret in every place one can go, over every way a source loads or fails."""
    host, closed = world.host, world.closed
    login = f"{USER}:{PASSWORD}"
    return {
        "version": 1,
        "credentials_file": "creds.yaml",
        "storage": {
            "s3": {"endpoint_url": world.s3.endpoint_url, "client_kwargs": {"region_name": world.s3.region}},
            "http": {"headers": {"X-Api-Key": STORAGE}},
        },
        "loader": {"retries": 1, "backoff": 0.01, "timeout": 5},
        "cache": {"policy": policy},
        "sources": [
            f"http://{login}@{host}/signed.md?X-Amz-Signature={QUERY_TOKEN}&X-Amz-Credential={QUERY_TOKEN}&part=1",
            {"url": f"http://{host}/sas.md?sv=2024&sig={QUERY_TOKEN}", "name": "team ${TEAM_API_TOKEN}"},
            f"http://{USER}:${{READER_LOGIN}}@{host}/env.md",
            {
                "url": f"http://{host}/header.md",
                "storage_options": {
                    "headers": {
                        "Authorization": "Bearer ${TEAM_API_TOKEN}",
                        "X-Custom": "${TEAM_API_TOKEN}",
                        "Cookie": f"session={STORAGE}",
                    }
                },
            },
            {"url": f"http://{host}/team.md", "credentials": "web_team"},
            {"url": f"s3://{world.bucket}/AGENTS.md", "credentials": "team_s3"},
            {"url": f"s3://{world.bucket}/profiled.md", "credentials": "team_profile"},
            {
                "url": f"s3://{world.bucket}/env.md",
                "storage_options": {"key": world.s3.key, "secret": world.s3.secret, "client_kwargs": {}},
            },
            {
                "url": f"s3://{world.bucket}/other.md",
                "storage_options": {"key": world.s3.key, "secret": STORAGE},
            },
            {"url": f"http://{login}@{host}/missing.md?token={QUERY_TOKEN}", "required": required},
            f"http://{host}/forbidden.md?code={QUERY_TOKEN}",
            f"http://{host}/broken.md?sig={QUERY_TOKEN}",
            f"http://{host}/hmac.md?hmac={QUERY_TOKEN}&verify={QUERY_TOKEN}&expires=1700000000",
            # no secret-looking name: masked by its look (a signature's length and alphabet)
            f"http://{host}/by-rule.md?x={quote(TOKEN + 'Zk93JdQ0pL', safe='')}",
            f"http://{login}@127.0.0.1:{closed}/refused.md?token={QUERY_TOKEN}",
            {
                "url": f"http://{host}/slow.md?token={QUERY_TOKEN}",
                "timeout": 0.2,
                "storage_options": {"headers": {"Authorization": f"Bearer {STORAGE}"}},
            },
            f"zip://AGENTS.md::http://{login}@{host}/bundle.zip?token={QUERY_TOKEN}",
            # Passwords that make the URL invalid are still passwords: aiohttp sends the first, refuses the second.
            f"http://{login} with spaces@{host}/spaced.md",
            f"http://{login}/with#slash?and-more@{host}/slashed.md",
            {"glob": f"zip://*.md::http://{login}@127.0.0.1:{closed}/bundle.zip?token={QUERY_TOKEN}"},
        ],
    }


def write(world: World, config: dict[str, Any] | str, name: str = "memconfig.yaml") -> Path:
    (world.folder / "creds.yaml").write_text(yaml.safe_dump(credentials(world)), encoding="utf-8")
    path = world.folder / name
    text = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def _loads(world: World, required: bool) -> Scenario:
    path = write(world, every_source(world, required=required))
    shows = [f"http://***@{world.host}/missing.md?token=***"]  # a table or a log names it, masked
    return Scenario(path, world.secrets(), reader_exit=1 if required else 0, shows=shows)


# A config error next to a secret: (YAML text, the key paths or names stderr must give).
# "{pw}", "{token}", "{host}" are filled in; every one of these must exit 2.
_BAD_CONFIGS: dict[str, tuple[str, list[str]]] = {
    "unknown-key-next-to-a-secret": (
        """
        version: 1
        sources:
          - url: "http://reader:{pw}@{host}/x.md?token={token}"
            storage_option: {{headers: {{Authorization: "Bearer {storage}"}}}}
        """,
        ["sources[0].storage_option", "unknown key"],
    ),
    "storage-options-not-a-mapping": (
        """
        version: 1
        sources:
          - url: "http://{host}/x.md"
            storage_options: "Bearer {storage}"
        """,
        ["sources[0].storage_options"],
    ),
    "storage-not-a-mapping": (
        """
        version: 1
        storage:
          s3: "key={storage}"
        """,
        ["storage.s3"],
    ),
    "credentials-not-a-name": (
        """
        version: 1
        sources:
          - url: "s3://bucket/x.md"
            credentials: {{secret: "{storage}"}}
        """,
        ["sources[0].credentials"],
    ),
    "timeout-holding-a-secret": (
        """
        version: 1
        sources:
          - url: "http://reader:{pw}@{host}/x.md?sig={token}"
            timeout: "{storage}"
        """,
        ["sources[0].timeout"],
    ),
    "yaml-unclosed-quote-on-the-secret-line": (
        """
        version: 1
        sources:
          - url: "http://reader:{pw}@{host}/x.md?token={token}
            required: true
        """,
        ["YAML syntax error"],
    ),
    "yaml-colon-in-an-unquoted-secret": (
        """
        version: 1
        storage:
          http:
            headers:
              Authorization: Bearer {storage}: more
        """,
        ["YAML syntax error", ":5:"],
    ),
    "yaml-alias-for-a-secret": (
        """
        version: 1
        storage:
          s3:
            secret: *{storage}
        """,
        ["YAML syntax error", ":4:"],
    ),
    "yaml-tag-for-a-secret": (
        """
        version: 1
        storage:
          s3:
            secret: !{storage}
        """,
        ["YAML syntax error", ":4:"],
    ),
    "yaml-tab-before-a-secret": (
        "version: 1\nstorage:\n  s3:\n\tsecret: {storage}\n",
        ["YAML syntax error", ":4:"],
    ),
    "yaml-duplicate-secret-key": (
        """
        version: 1
        storage:
          s3:
            secret: "{storage}"
            secret: "{pw}"
        """,
        ["YAML syntax error", "duplicate key"],
    ),
    "invalid-ipv6-url": (
        """
        version: 1
        sources:
          - "http://reader:{pw}@[::1/x.md?token={token}"
        """,
        ["sources[0]"],
    ),
    "invalid-port": (
        """
        version: 1
        sources:
          - "http://reader:{pw}@127.0.0.1:99999/x.md?token={token}"
        """,
        ["sources[0]"],
    ),
    "unknown-protocol": (
        """
        version: 1
        sources:
          - "nosuch://reader:{pw}@{host}/x.md?token={token}"
        """,
        ["sources[0].url", "nosuch"],
    ),
    "duplicate-source": (
        """
        version: 1
        sources:
          - "http://reader:{pw}@{host}/x.md?token={token}"
          - "http://reader:{pw}@{host}/x.md?token={token}"
        """,
        ["sources[1]", "sources[0]"],
    ),
    "missing-credentials-entry": (
        """
        version: 1
        credentials_file: creds.yaml
        sources:
          - url: "http://reader:{pw}@{host}/x.md?token={token}"
            credentials: absent
        """,
        ["sources[0].credentials", "absent"],
    ),
    "unset-variable-in-a-header": (
        """
        version: 1
        sources:
          - url: "http://{host}/x.md?token={token}"
            storage_options:
              headers: {{Authorization: "Bearer ${{UNSET_TEAM_TOKEN}}", X-Other: "{storage}"}}
        """,
        ["sources[0].storage_options.headers.Authorization", "UNSET_TEAM_TOKEN"],
    ),
    "unset-variable-in-user-info": (
        """
        version: 1
        sources:
          - "http://reader:${{UNSET_READER_PASSWORD}}@{host}/x.md?sig={token}"
        """,
        ["sources[0]", "UNSET_READER_PASSWORD"],
    ),
    "unset-variable-inside-a-storage-secret": (
        """
        version: 1
        storage:
          s3: {{key: "{storage}", secret: "{pw}-${{UNSET_S3_SECRET}}"}}
        """,
        ["storage.s3.secret", "UNSET_S3_SECRET"],
    ),
    "unset-variable-in-a-url-host": (
        """
        version: 1
        sources:
          - url: "http://reader:{pw}@${{UNSET_HOST_PART}}/x.md?token={token}"
        """,
        ["sources[0].url", "UNSET_HOST_PART"],
    ),
}

# A credentials file that is wrong, on the line holding its secret.
_BAD_CREDENTIALS: dict[str, tuple[str, list[str]]] = {
    "credentials-yaml-syntax-error": (
        'team:\n  token: "{cred}\n  other: 1\n',
        ["credentials_file", "YAML syntax error"],
    ),
    "credentials-alias": ("team:\n  token: *{cred}\n", ["credentials_file", "YAML syntax error"]),
    "credentials-not-a-mapping": ('team: "token={cred}"\n', ["credentials_file"]),
    "credentials-unset-variable": (
        'team:\n  headers: {{Authorization: "Bearer {cred}-${{UNSET_CRED_TOKEN}}"}}\n',
        ["credentials_file", "UNSET_CRED_TOKEN"],
    ),
}


def _bad_config(world: World, name: str) -> Scenario:
    fill = {"pw": PASSWORD, "token": QUERY_TOKEN, "storage": STORAGE, "host": world.host, "cred": CREDFILE}
    if name in _BAD_CREDENTIALS:
        text, says = _BAD_CREDENTIALS[name]
        path = write(
            world,
            {"version": 1, "credentials_file": "bad-creds.yaml", "sources": [{"url": "x.md", "credentials": "team"}]},
        )
        (world.folder / "bad-creds.yaml").write_text(text.format(**fill), encoding="utf-8")
    else:
        text, says = _BAD_CONFIGS[name]
        lines = text.format(**fill).splitlines()
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        path = write(world, "\n".join(line[indent:] for line in lines).strip("\n") + "\n")
    return Scenario(path, world.secrets(), config_error=True, says=says)


SCENARIOS: dict[str, Callable[[World], Scenario]] = {
    "every-source": lambda world: _loads(world, required=False),
    "required-source-fails": lambda world: _loads(world, required=True),
    **{name: (lambda world, name=name: _bad_config(world, name)) for name in [*_BAD_CONFIGS, *_BAD_CREDENTIALS]},
}


# -- the command line ------------------------------------------------------------------------------


@dataclass
class Run:
    code: int
    out: str
    err: str
    log: str = ""

    @property
    def everything(self) -> str:
        return "\n".join((self.out, self.err, self.log))


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


def in_process(argv: list[str], capsys: pytest.CaptureFixture[str], log: Path | None = None) -> Run:
    """Run the CLI's ``main`` in this process, as the console script does."""
    capsys.readouterr()
    try:
        code = main(argv)
    finally:
        structlog.reset_defaults()  # the CLI configures structlog for the whole process
    out, err = capsys.readouterr()
    return Run(code, out, err, log.read_text(encoding="utf-8") if log is not None and log.exists() else "")


def as_subprocess(argv: list[str], log: Path | None = None, stdin: Path | None = None) -> Run:
    """Run ``python -m memconfig`` in a fresh process, in the test's environment; *stdin*'s text from its folder."""
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", *argv],
        input=stdin.read_text(encoding="utf-8") if stdin is not None else None,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=stdin.parent if stdin is not None else ROOT,
        env=dict(os.environ),
        timeout=120,
        check=False,
    )
    return Run(
        done.returncode, done.stdout, done.stderr, log.read_text(encoding="utf-8") if log and log.exists() else ""
    )


def check_run(run: Run, scenario: Scenario, command: str, reads: bool, where: str) -> None:
    """The exit code the scenario calls for, what it must say, no traceback, and no secret anywhere."""
    assert_clean(run.everything, where, scenario.secrets)
    assert "Traceback" not in run.everything, run.everything
    if scenario.config_error:
        assert run.code == 2, run.everything
        for said in scenario.says:
            assert said in run.err, f"{where}: {said!r} not in\n{run.err}"
        return
    assert run.code == (scenario.reader_exit if reads else 0), run.everything
    if reads:
        for shown in scenario.shows:
            assert shown in run.out + run.err + run.log, f"{where}: {shown!r} not shown"


def test_every_command_has_a_scenario() -> None:
    """Each command in the CLI's table is run over every scenario below; a new one needs its arguments here."""
    missing = sorted(set(COMMANDS) - set(COMMAND_ARGS))
    assert not missing, f"commands with no secrets scenario: {missing}; add them to COMMAND_ARGS"


@pytest.mark.parametrize("scenario_name", list(SCENARIOS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_secret_in_cli_output(
    command: str, scenario_name: str, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command, over every scenario, in this process: stdout, stderr and the JSON load log hold no secret."""
    scenario = SCENARIOS[scenario_name](world)
    reads = "--log-file" in help_of(command, capsys)
    argv = [command, "-c", str(scenario.path), *COMMAND_ARGS[command]]
    run = in_process(argv, capsys)
    check_run(run, scenario, command, reads, f"{command} over {scenario_name}")
    if reads and not scenario.config_error:
        lines = [json.loads(line) for line in run.err.splitlines() if line.startswith("{")]
        names = {e["event"] for e in lines}
        assert {"source_loaded", "source_skipped", "source_retried"} <= names, names
        reasons = {e["reason"] for e in lines if e["event"] == "source_skipped"}
        assert {"not_found", "permission_denied", "remote_error", "timeout"} <= reasons, reasons
    if command == "render" and scenario.reader_exit == 0 and not scenario.config_error:
        loaded = ("signed content", "env login content", "header content", "team content", "bundle content")
        for content in (*loaded, "spaced login content"):
            assert content in run.out  # the secrets were used, and are still nowhere to be seen


@pytest.mark.parametrize("output", [name for name, entry in APPENDERS.items() if entry.printable and name != "text"])
@pytest.mark.parametrize("scenario_name", ["every-source", "required-source-fails"])
def test_no_secret_in_any_render_format(
    output: str, scenario_name: str, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """``render --format json | openai | anthropic``: the records, messages and blocks show every URL masked."""
    scenario = SCENARIOS[scenario_name](world)
    system = [] if output == "json" else COMMAND_ARGS["render"]
    run = in_process(["render", "-c", str(scenario.path), "--format", output, *system], capsys)
    check_run(run, scenario, "render", True, f"render --format {output} over {scenario_name}")
    if scenario.reader_exit == 0:
        printed = json.loads(run.out)
        assert "signed content" in json.dumps(printed)  # the secrets were used, and are still nowhere to be seen
        if output == "json":
            assert {record["status"] for record in printed["sources"]} == {"loaded", "skipped"}


@pytest.mark.parametrize("log_format", ["json", "console"])
@pytest.mark.parametrize("command", LOGGED)  # the commands that write a load log
def test_no_secret_in_log_files(
    command: str, log_format: str, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--log-file`` in either format at debug level: the file, stdout and stderr hold no secret."""
    assert "--log-file" in help_of(command, capsys)
    scenario = SCENARIOS["required-source-fails"](world)
    log = world.folder / f"{command}.log"
    options = ["--log-file", str(log), "--log-format", log_format, "--log-level", "debug"]
    run = in_process([command, "-c", str(scenario.path), *COMMAND_ARGS[command], *options], capsys, log)
    check_run(run, scenario, command, True, f"{command} --log-format {log_format}")
    assert "source_retried" in run.log and "source_skipped" in run.log


@pytest.mark.parametrize("config_from", ["file", "stdin"])
@pytest.mark.parametrize("scenario_name", ["required-source-fails", "yaml-unclosed-quote-on-the-secret-line"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_secret_from_the_command_as_a_user_runs_it(
    command: str, scenario_name: str, config_from: str, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m memconfig`` in a fresh process (its own stdlib logging, warnings and streams) leaks nothing.

    The config is given as a file, or on standard input (``-c -``) from its folder.
    """
    scenario = SCENARIOS[scenario_name](world)
    reads = "--log-file" in help_of(command, capsys)
    log = world.folder / f"{command}-sub.log"
    options = ["--log-file", str(log)] if reads else []
    given, stdin = (str(scenario.path), None) if config_from == "file" else ("-", scenario.path)
    run = as_subprocess([command, "-c", given, *COMMAND_ARGS[command], *options], log, stdin)
    check_run(run, scenario, command, reads, f"python -m memconfig {command} over {scenario_name}")
    if reads and not scenario.config_error:
        assert all(json.loads(line) for line in run.log.splitlines())  # JSON lines, every one
        assert "source_retried" in run.log


# -- the library ---------------------------------------------------------------------------------


def shown(thing: object) -> str:
    return f"{thing!r}\n{thing!s}"


def test_no_secret_in_reprs_events_or_errors(world: World) -> None:
    """Config, sources, pipeline and stages, renders, records, results, events and SourceError show no secret."""
    scenario = SCENARIOS["required-source-fails"](world)
    secrets = scenario.secrets
    config = load_config(scenario.path)
    pipeline = Pipeline.from_config(config)
    things: list[object] = [config, *config.sources, config.loader, *build_sources(config)]
    things += [pipeline, pipeline.loader, pipeline.cache, pipeline.formatter, pipeline.appender, pipeline.processors]
    things += [*pipeline.processors.processors, *(appender_for(name, config) for name in APPENDERS)]
    things += [MemconfigMiddleware(pipeline), MemconfigMiddleware.from_config(config)]
    state: dict[str, Any] = {}
    with capture_logs() as logs, pytest.raises(SourceError) as caught:
        pipeline.build(state)
    error = caught.value
    assert error.source == f"http://***@{world.host}/missing.md?token=***"
    things += [error, *error.failures, error.detail, error.format_message()]
    for result in pipeline.load(state):
        things += [result, result.source, result.detail]
    for thing in things:
        assert_clean(shown(thing), type(thing).__name__, secrets)
    assert {e["event"] for e in logs} >= {"source_loaded", "source_skipped", "source_retried", "prompt_failed"}
    assert_clean(json.dumps(logs, default=str), "events", secrets)
    assert_clean(json.dumps(state, default=str), "the agent's state", secrets)


def test_no_secret_in_a_render_or_when_sources_go_stale(world: World) -> None:
    """A render, its records and state, and the events of sources that loaded and then failed, show no secret."""
    path = write(world, every_source(world, required=False, policy="always"))
    secrets = world.secrets()
    pipeline = Pipeline.from_yaml(path)
    state: dict[str, Any] = {}
    with capture_logs() as logs:
        first = pipeline.build(state)
        for path in ("signed.md", "sas.md", "env.md", "header.md", "team.md", "bundle.zip"):
            world.web.fail(path, 500)
        second = asyncio.run(pipeline.abuild(state))
        prompt = pipeline.render("You are careful.", state)
    assert "signed content" in first.text and "bucket content" in first.text and "team content" in first.text
    assert "env login content" in first.text and "header content" in first.text and "bundle content" in first.text
    assert any(e["event"] == "source_stale" for e in logs)
    for thing in (first, second, *first.sources, *second.sources, prompt, first.text):
        assert_clean(shown(thing), type(thing).__name__, secrets)
    assert_clean(json.dumps(logs, default=str), "events", secrets)
    assert_clean(json.dumps(state, default=str), "the agent's state", secrets)


def test_no_secret_through_the_stdlib_logger(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """With structlog unconfigured, events go to the stdlib logger ``memconfig``: its messages and fields are clean."""
    scenario = SCENARIOS["required-source-fails"](world)
    structlog.reset_defaults()
    with caplog.at_level(logging.DEBUG), pytest.raises(SourceError):
        Pipeline.from_yaml(scenario.path).build()
    records = [r for r in caplog.records if r.name == "memconfig"]
    assert any("source_retried" in r.getMessage() for r in records)
    # Other libraries' warnings too: Python prints those on stderr when the application configured nothing.
    # (Their debug records are the application's choice: botocore's show the access key id.)
    records += [r for r in caplog.records if r.name != "memconfig" and r.levelno >= logging.WARNING]
    for record in records:
        assert_clean(record.getMessage(), f"log record of {record.name}", scenario.secrets)
        assert_clean(json.dumps(getattr(record, "memconfig", {}), default=str), "record.memconfig", scenario.secrets)


@pytest.mark.parametrize("scenario_name", [*_BAD_CONFIGS, *_BAD_CREDENTIALS])
def test_no_secret_in_config_errors(scenario_name: str, world: World) -> None:
    """A ConfigError (its text, repr and every problem) names where the mistake is and quotes no secret."""
    scenario = SCENARIOS[scenario_name](world)
    with pytest.raises(ConfigError) as caught:
        load_config(scenario.path)
    error = caught.value
    message = error.format_message()
    for said in scenario.says:
        assert said in message
    for thing in (error, message, *error.problems):
        assert_clean(shown(thing), type(thing).__name__, scenario.secrets)


def test_no_secret_in_config_errors_from_a_mapping(environment: None) -> None:
    """``Config.from_mapping`` (the Python way in) reports like the YAML file does, names and no values."""
    data = {
        "version": 1,
        "sources": [
            {"url": f"http://reader:{PASSWORD}@127.0.0.1:9/x.md?token={QUERY_TOKEN}", "storage_option": {}},
            {
                "url": "http://127.0.0.1:9/y.md",
                "storage_options": {"headers": {"Authorization": "${UNSET_TEAM_TOKEN}"}},
            },
        ],
        "storage": {"s3": {"secret": f"{STORAGE}${{UNSET_S3_SECRET}}"}},
    }
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config(data)
    message = caught.value.format_message()
    assert "UNSET_TEAM_TOKEN" in message and "UNSET_S3_SECRET" in message and "sources[0].storage_option" in message
    for thing in (caught.value, *caught.value.problems):
        assert_clean(shown(thing), type(thing).__name__, needles())


@pytest.mark.parametrize(
    "field",
    [
        'formatter: {preset: "${API_TOKEN}"}',
        'appender: {format: "${API_TOKEN}"}',
        'loader: {encoding: "${API_TOKEN}"}',
        'formatter: {section: "{${API_TOKEN}}"}',
        'formatter: {template_file: "${API_TOKEN}"}',
        'logging: {file: "/no/such/folder/${API_TOKEN}"}',
    ],
)
def test_a_config_error_never_quotes_a_secret_variables_value(
    field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A message that quotes the value it rejects masks what a secret-named ``${VAR}`` put there."""
    monkeypatch.setenv("API_TOKEN", "SECRET-in-a-rejected-value")
    (tmp_path / "a.md").write_text("hi")
    config = tmp_path / "c.yaml"
    config.write_text(f"version: 1\n{field}\nsources: [a.md]\n")
    assert main(["render", "-c", str(config)]) == 2
    captured = capsys.readouterr()
    assert "SECRET" not in captured.out + captured.err
    assert "***" in captured.err
