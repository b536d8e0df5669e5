"""What start-up time rests on (measured in benchmarks/startup.py; no timing here): what a command imports.

``render`` imports its own command's module, not the packages ``audit`` and
``explain`` bring; the XML-name classes written as negations (cheaper to
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


def _imported(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *args], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(done.stderr.splitlines()[-1].removeprefix("IMPORTED ").split(","))


def test_render_imports_only_its_own_command() -> None:
    """``memconfig render`` imports neither the audit package nor explain (nor their command modules)."""
    imported = _imported("render", "-c", "configs/example.yaml")

    assert "memconfig.cli.render" in imported
    assert not {name for name in imported if name.startswith(("memconfig.audit", "memconfig.explain"))}
    assert not imported & {"memconfig.cli.audit", "memconfig.cli.explain", "memconfig.cli.validate"}


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
