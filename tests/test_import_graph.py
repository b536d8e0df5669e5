"""The package imports in one direction: no module reaches itself again through its imports.

Every import counts, those at the top of a module, those inside functions
(imported lazily, for start-up time) and those under ``if TYPE_CHECKING:``,
read from the source (nothing is imported). ``from ..config import Config``
depends on ``memconfig/config/__init__.py``; ``from . import gitignore`` on
that submodule; the implicit import of a submodule's parent package is not an
edge there (a package's ``__init__`` re-exports its submodules, which would make
every package a circle of its own, counting the type checker's imports).

What an import runs is checked too: the top-level imports of each module,
with the packages above every module it imports (``from ..sources.options``
runs ``sources/__init__.py`` first), form no circle, so no import order of
the package's modules can meet a module half made.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memconfig"


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path], *, run: bool = False) -> Iterator[str]:
    """The package's modules that the module *name* (at *path*) imports, anywhere in its text.

    *run*: only the imports run when it is imported (at its top level, not under an ``if``).
    """
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in tree.body if run else ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                if f"{origin}.{alias.name}" in modules:
                    yield f"{origin}.{alias.name}"
                elif origin in modules:
                    yield origin


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imported(name, path, modules)) - {name} for name, path in modules.items()}


def _run_graph() -> dict[str, set[str]]:
    """What importing each module runs: its top-level imports, and the packages above each module imported."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        found = set(_imported(name, path, modules, run=True))
        parents = {".".join(m.split(".")[:i]) for m in found for i in range(2, m.count(".") + 1)}
        graph[name] = (found | {p for p in parents if not name.startswith(p + ".")}) - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its first module again at its end), or ``None`` when there is none."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path, on_path = [start], {start}
        stack = [iter(sorted(graph[start]))]
        while stack:
            following = next(stack[-1], None)
            if following is None:
                stack.pop()
                finished = path.pop()
                done.add(finished)
                on_path.discard(finished)
            elif following in on_path:
                return [*path[path.index(following) :], following]
            elif following not in done:
                path.append(following)
                on_path.add(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_walk_sees_lazy_and_type_checking_imports() -> None:
    """The graph holds an import made inside a function and one made only for the type checker."""
    graph = _graph()

    assert "memconfig.process.rules" in graph["memconfig.pipeline"]  # inside _rules, for start-up time
    assert "memconfig.config.schema" in graph["memconfig.append.text"]  # under TYPE_CHECKING only


def test_a_circle_is_found_and_named() -> None:
    """The search names the modules of a circle in order, the first again at the end."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_module_imports_itself_through_others() -> None:
    """The package's imports, every one of them, form no circle (leaves, then the config, the stages, the wiring)."""
    cycle = _cycle(_graph())

    assert cycle is None, "import circle: " + " -> ".join(cycle or ())


def test_importing_a_module_never_runs_into_itself() -> None:
    """What an import runs (a package's ``__init__`` included) forms no circle either: no import order matters."""
    graph = _run_graph()

    assert "memconfig.sources" in graph["memconfig.config.checks"]  # sources.options runs sources/__init__ first
    cycle = _cycle(graph)
    assert cycle is None, "import circle when run: " + " -> ".join(cycle or ())
