"""Fuzz target: bytes as a YAML config, and as a source's content, through ``load_config`` and ``Pipeline.render``.

Run with atheris (``pip install -e '.[fuzz]'``), from the repository's root::

    python fuzz/fuzz_config.py fuzz/corpus -max_total_time=600 -rss_limit_mb=2048 -timeout=20

Any other libFuzzer flag works too; ``-runs=N`` for a fixed number of inputs.
Without atheris the same target runs on random mutations of the seed corpus
(``python fuzz/fuzz_config.py --no-atheris --seconds 600``), uninstrumented.

What counts as a crash: any exception other than :class:`memconfig.ConfigError`
(a bad config) or :class:`memconfig.SourceError` (a required source missing);
an input that takes longer than ``FUZZ_ALARM`` seconds (default 5: a hang,
raised in the main thread with the stack where it stood, by a watchdog thread
sending ``SIGUSR1``; libFuzzer's own ``-timeout``, which keeps ``SIGALRM``, is
the backstop for a hang that never gives up the GIL); a ``MemoryError`` under the address
space cap (``FUZZ_MEMORY_MB``, default 4096); and, for content, a render whose
block is not the content as documented (BOM stripped, HTML comments stripped
where the preset does it, right-stripped) while the source is not skipped with
a :class:`memconfig.SkipReason`.

A crash stops libFuzzer. To fuzz on past a bug already reported, name its
exception class in ``FUZZ_KNOWN`` (``FUZZ_KNOWN=RecursionError``): such an
input is then counted, its first example saved as ``known-<Class>`` next to the
crash artifacts (``FUZZ_ARTIFACTS``, default the current folder), and the
counts printed when the run ends.

The first byte of an input picks what the rest is: a whole config (0-127), a
source's content under a config chosen by the next bytes (128-223), or both
(224-255: config text, then ``\\x00\\x00`` and content). Configs resolve
relative paths in a sandbox folder holding ``a.md``, ``sub/b.md`` and
``fuzz.md`` (the content); remote reads get a 1 s timeout and no retries
through the environment, so an unreachable host is not taken for a hang.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import random
import re
import resource
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType

# Set before memconfig reads them: environment overrides the config file.
os.environ.update(
    {
        "MEMCONFIG_LOADER__TIMEOUT": "1",
        "MEMCONFIG_LOADER__RETRIES": "0",
        "MEMCONFIG_LOADER__BACKOFF": "0",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ACCESS_KEY_ID": "fuzz",
        "AWS_SECRET_ACCESS_KEY": "fuzz",
    }
)

try:
    import atheris
except ImportError:  # the random-mutation fallback below needs nothing
    atheris = None

if atheris is not None and "--no-atheris" not in sys.argv:
    with atheris.instrument_imports(include=["memconfig", "yaml"]):
        import memconfig
        from memconfig import ConfigError, Pipeline, SkipReason, SourceError
        from memconfig.config import load_config
else:
    import memconfig
    from memconfig import ConfigError, Pipeline, SkipReason, SourceError
    from memconfig.config import load_config

KNOWN = frozenset(filter(None, os.environ.get("FUZZ_KNOWN", "").split(",")))
ARTIFACTS = Path(os.environ.get("FUZZ_ARTIFACTS", "."))
_known_seen: dict[str, int] = {}
ALARM = float(os.environ.get("FUZZ_ALARM", "5"))
MEMORY_MB = int(os.environ.get("FUZZ_MEMORY_MB", "4096"))
SANDBOX = Path(tempfile.mkdtemp(prefix="memconfig-fuzz-"))
CONFIG = SANDBOX / "memconfig.yaml"
CONTENT = SANDBOX / "fuzz.md"
A_TEXT = "alpha rules\n"
B_TEXT = "beta notes\n"
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_PRESET_SECTIONS = {"deepagents": "{path}\n\n{content}", "plain": "{content}", "markdown": "## {name}\n\n{content}"}


class Hang(BaseException):
    """An input ran past the alarm (a BaseException: library code catching Exception must not swallow it)."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"input still running after {ALARM} s")


class Watchdog(threading.Thread):
    """Sends the main thread ``SIGUSR1`` when an input runs past its deadline (one thread for the whole run)."""

    def __init__(self) -> None:
        super().__init__(name="fuzz-watchdog", daemon=True)
        self._lock = threading.Condition()
        self._deadline: float | None = None
        self._main = threading.main_thread().ident

    def arm(self, seconds: float) -> None:
        with self._lock:
            self._deadline = time.monotonic() + seconds
            self._lock.notify()

    def disarm(self) -> None:
        with self._lock:
            self._deadline = None

    def run(self) -> None:
        with self._lock:
            while True:
                if self._deadline is None:
                    self._lock.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._lock.wait(left)
                    continue
                self._deadline = None
                assert self._main is not None
                signal.pthread_kill(self._main, signal.SIGUSR1)


WATCHDOG = Watchdog()


def _setup() -> None:
    (SANDBOX / "sub").mkdir()
    (SANDBOX / "a.md").write_text(A_TEXT)
    (SANDBOX / "sub" / "b.md").write_text(B_TEXT)
    CONTENT.write_bytes(b"")
    signal.signal(signal.SIGUSR1, _on_alarm)
    WATCHDOG.start()
    cap = MEMORY_MB << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _render_config(text: str) -> None:
    """A config's text through everything a user's config meets: load, build, render."""
    CONFIG.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        config = load_config(CONFIG)
        pipeline = Pipeline.from_config(config)
        prompt = pipeline.render("system", {})
    except (ConfigError, SourceError):
        return
    assert isinstance(prompt, str), type(prompt)


def _expected(content: bytes, decode: str, comments: bool) -> str | None:
    """The content as the block must show it, or ``None`` if it cannot be in it (undecodable under skip/fail)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        if decode != "replace":
            return None
        text = content.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff")
    if comments:
        text = _COMMENT.sub("", text)
    return text.rstrip()


def _render_content(content: bytes, choice: bytes) -> None:
    """*content* as a source's file: in the block as documented, or skipped with a reason."""
    pick = (choice + b"\x00\x00\x00")[:3]
    preset = ("deepagents", "plain", "markdown")[pick[0] % 3]
    decode = ("skip", "replace", "fail")[pick[1] % 3]
    policy = ("once", "revalidate", "always")[pick[2] % 3]
    CONTENT.write_bytes(content)
    config = {
        "version": 1,
        "sources": ["a.md", "fuzz.md", "sub/b.md"],
        "loader": {"on_decode_error": decode},
        "cache": {"policy": policy},
        "formatter": {"preset": preset, "template": "<<{agent_memory}>>"},
    }
    pipeline = Pipeline.from_config(memconfig.Config.from_mapping(config, base_dir=SANDBOX))
    expected = _expected(content, decode, _PRESET_SECTIONS[preset] != "{content}")
    try:
        render = pipeline.build({})
    except SourceError as exc:
        assert decode == "fail" and expected is None, exc
        return
    record = {r.source: r for r in render.sources}["fuzz.md"]
    if record.status == "skipped":
        assert isinstance(record.reason, SkipReason), record
        if expected is not None and expected:  # a file that could be shown: only NUL bytes may keep it out
            assert record.reason == SkipReason.BINARY and b"\x00" in content, (record, expected[:80])
        return
    assert record.status == "loaded", record
    assert expected, (record, content[:80])
    sections = [("a.md", A_TEXT.rstrip()), ("fuzz.md", expected), ("sub/b.md", B_TEXT.rstrip())]
    layout = _PRESET_SECTIONS[preset]
    body = "\n\n".join(
        layout.replace("{content}", "\x00C").replace("{path}", path).replace("{name}", path).replace("\x00C", text)
        for path, text in sections
    )
    assert render.text == f"<<{body}>>", (render.text[:200], body[:200])


def test_one_input(data: bytes) -> None:
    """One input: a config, a content, or both (see the module's docstring)."""
    if not data:
        return
    mode, rest = data[0], data[1:]
    WATCHDOG.arm(ALARM)
    try:
        _one(mode, rest)
    except Exception as exc:
        name = type(exc).__name__
        if name not in KNOWN:
            raise
        if name not in _known_seen:
            digest = hashlib.sha1(data).hexdigest()[:12]
            (ARTIFACTS / f"known-{name}-{digest}").write_bytes(data)
        _known_seen[name] = _known_seen.get(name, 0) + 1
    finally:
        WATCHDOG.disarm()


def _report_known() -> None:
    if _known_seen:
        counts = ", ".join(f"{name}: {count}" for name, count in sorted(_known_seen.items()))
        print(f"known failures (FUZZ_KNOWN), inputs: {counts}", file=sys.stderr)


atexit.register(_report_known)


def _one(mode: int, rest: bytes) -> None:
    if mode < 128:
        _render_config(rest.decode("utf-8", errors="surrogateescape"))
    elif mode < 224:
        _render_content(rest[3:], rest[:3])
    else:
        text, _, content = rest.partition(b"\x00\x00")
        CONTENT.write_bytes(content)
        _render_config(text.decode("utf-8", errors="surrogateescape"))


def _mutate(seed: bytes, rng: random.Random) -> bytes:
    """A few byte-level edits of *seed*: flips, inserts, deletes, duplicated chunks."""
    data = bytearray(seed)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        at = rng.randint(0, len(data))
        if op == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[at:at] = bytes(rng.choice(b"{}[]:-&*!#'\"\n \t|>%@`,?\x00\xff") for _ in range(rng.randint(1, 4)))
        elif op == 2:
            del data[at : at + rng.randint(1, 16)]
        else:
            chunk = data[at : at + rng.randint(1, 64)]
            data[at:at] = chunk * rng.randint(1, 4)
    return bytes(data)


def _fallback(seconds: float, corpus: Path) -> None:
    """Random mutations of the seeds for *seconds*, for machines without atheris; stops at the first crash."""
    seeds = [p.read_bytes() for p in sorted(corpus.iterdir()) if p.is_file()] or [b"\x00version: 1\n"]
    rng = random.Random(int(os.environ.get("FUZZ_SEED", "0")))
    end, runs = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        data = _mutate(rng.choice(seeds), rng)
        try:
            test_one_input(data)
        except BaseException:
            Path("crash-fallback").write_bytes(data)
            print(f"crash after {runs} inputs; input written to crash-fallback", file=sys.stderr)
            raise
        runs += 1
    print(f"Done {runs} runs in {seconds:.0f} second(s), no crash")


def main() -> None:
    here = Path(__file__).resolve().parent
    argv = sys.argv
    _setup()
    if atheris is None or "--no-atheris" in argv:
        seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 60.0
        _fallback(seconds, here / "corpus")
        return
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
