"""What start-up time rests on (measured in benchmarks/startup.py; no timing here): what a command imports.

``render`` imports its own command's module, not the packages ``audit`` and
``explain`` bring; the console script's import (``from memconfig.cli import
run``) imports none of the library, so that ``run`` pauses the collector before
all of it; the XML-name classes written as negations (cheaper to
compile) are the same sets of characters as the classes they stand for.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from support.cli import ROOT

from memconfig import xmlnames

_IMPORTED = textwrap.dedent(
    """
    import sys
    from memconfig.cli import main
    code = main(sys.argv[1:])
    names = sorted(m for m in sys.modules if m.startswith(("memconfig.cli.", "memconfig.audit", "memconfig.explain")))
    print("IMPORTED", ",".join(names), file=sys.stderr)
    sys.exit(code)
    """
)


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Python running *code* with *args*, in the repository, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )


def _imported(*args: str) -> set[str]:
    done = _child(_IMPORTED, *args)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.splitlines()[-1].removeprefix("IMPORTED ").split(","))


def test_render_imports_only_its_own_command() -> None:
    """``memconfig render`` imports neither the audit package nor explain (nor their command modules)."""
    imported = _imported("render", "-c", "configs/example.yaml")

    assert "memconfig.cli.render" in imported
    assert not {name for name in imported if name.startswith(("memconfig.audit", "memconfig.explain"))}
    assert not imported & {"memconfig.cli.audit", "memconfig.cli.explain", "memconfig.cli.validate"}


def test_the_console_scripts_import_brings_none_of_the_library() -> None:
    """``from memconfig.cli import run``, as the console script starts, imports no stage, config or dependency."""
    code = (
        "import sys\n"
        "from memconfig.cli import run\n"
        "tops = {'memconfig', 'pydantic', 'fsspec', 'structlog'}\n"
        "print(*sorted(m for m in sys.modules if m.split('.')[0] in tops))\n"
    )
    done = _child(code)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "memconfig",
        "memconfig.cli",
        "memconfig.cli.main",
        "memconfig.collector",
        "memconfig.exceptions",
        "memconfig.lazy",
        "memconfig.limits",
        "memconfig.safe_text",
        "memconfig.suggest",
    ]


def test_the_package_re_exports_its_api_imported_when_used() -> None:
    """``import memconfig`` imports no module of it; each public name is there when asked for, and in ``dir``."""
    code = (
        "import sys, importlib.metadata, memconfig\n"
        "loaded = {m for m in sys.modules if m.startswith('memconfig.') and m != 'memconfig.lazy'}\n"
        "assert not loaded, loaded\n"
        "from memconfig import *\n"
        "assert Pipeline.from_yaml('configs/example.yaml').render(system='S').startswith('S')\n"
        "assert __version__ == importlib.metadata.version('memconfig')\n"
        "assert set(memconfig.__all__) <= set(dir(memconfig))\n"
        "import memconfig.append as a, memconfig.expand as e\n"
        "assert a.JSONAppender is a.json.JSONAppender and e.GlobExpander is e.glob.GlobExpander\n"
        "try:\n"
        "    memconfig.nothing\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    done = _child(code)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "module 'memconfig' has no attribute 'nothing'\n"


def test_help_still_lists_every_command() -> None:
    """The top-level ``--help`` imports every command to list it with its help."""
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )

    assert done.returncode == 0
    for command in ("render", "validate", "sources", "audit", "explain"):
        assert re.search(rf"^\s+{command}\s+\S", done.stdout, re.MULTILINE), command


@pytest.mark.parametrize(
    ("listed", "negated"),
    [
        (xmlnames.NAME_START, xmlnames.NAME_START_CLASS),
        (xmlnames.NAME_CHAR, xmlnames.NAME_CHAR_CLASS),
        (xmlnames.NAME_CONTINUES, xmlnames.NAME_CONTINUES_CLASS),
    ],
    ids=["start", "char", "continues"],
)
def test_negated_name_classes_hold_the_same_characters(listed: str, negated: str) -> None:
    """Every code point is in the negated class exactly when it is in the class as the XML spec lists it."""
    plain, other = re.compile(f"[{listed}]"), re.compile(negated)

    differ = [hex(c) for c in range(sys.maxunicode + 1) if bool(plain.match(chr(c))) != bool(other.match(chr(c)))]

    assert differ == []
