"""YAML as memconfig reads it: plain data only, a repeated key is an error, a syntax error is one line, and bounded.

Kept apart because two files are YAML: the config itself
(:mod:`memconfig.config.loading`) and the ``credentials_file``
(:mod:`memconfig.config.checks`). It needs nothing of the config.

PyYAML's composer and constructor are recursive and expand aliases without
bound, so nodes are composed here, in Python, over the events of libyaml's
parser (fast, and not recursive): a document that nests deeper than
:data:`~memconfig.limits.MAX_CONFIG_DEPTH` or whose aliases expand
beyond :data:`~memconfig.limits.MAX_CONFIG_NODES` values (or
:data:`~memconfig.limits.MAX_CONFIG_TEXT` characters) is refused while
it is read, at the line and column where it crossed the bound.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.error import Mark, MarkedYAMLError
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import Node, ScalarNode
from yaml.resolver import Resolver

from .limits import MAX_CONFIG_DEPTH, MAX_CONFIG_NODES, MAX_CONFIG_TEXT

__all__ = ["Key", "LimitError", "safe_compose", "safe_load", "yaml_message"]

# An unquoted value that starts with "*", "!" or "&" (``secret: *x9Q``) is read as an alias, a tag or an
# anchor, and YAML's message would quote its name: part of a password. The line and column say where.
_QUOTED_NAME = re.compile(r"(undefined alias|for the tag|duplicate anchor) '[^']*'")
_NAME_HIDDEN = r"\1 (not shown; quote a value that starts with '*', '!' or '&')"
_TOO_DEEP = f"nested deeper than the limit of {MAX_CONFIG_DEPTH} levels (memconfig.config.MAX_CONFIG_DEPTH)"


class Key(NamedTuple):
    """A mapping key YAML did not read as a string, and its text as written (``on`` for ``True``)."""

    value: Any
    text: str

    def __str__(self) -> str:
        return str(self.value)


class LimitError(MarkedYAMLError):
    """A document crossed one of the bounds of :mod:`memconfig.limits`; not a syntax error."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _GuardedComposer(Composer):
    """PyYAML's composer, counting as it goes: nesting depth, and every value an alias brings in again.

    An alias is charged the expanded size of its anchor (measured when the
    anchor's node was composed), so a chain of anchors that doubles at each
    step is refused after a few steps, in the time it takes to read them.
    """

    def compose_document(self) -> Node | None:
        self._depth = 0
        self._nodes = 0
        self._chars = 0
        self._sizes: dict[str, tuple[int, int]] = {}
        self._open: set[str] = set()
        return super().compose_document()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[attr-defined]  # the parser's, mixed in below
        if isinstance(event, AliasEvent):
            name = event.anchor or ""  # an alias always names its anchor
            if name in self._open:
                raise LimitError(f"alias *{name} refers to a collection that holds it", event.start_mark)
            node = super().compose_node(parent, index)  # raises for an undefined alias
            self._charge(*self._sizes[name], event.start_mark)
            return node
        anchor: str | None = getattr(event, "anchor", None)
        collection = isinstance(event, CollectionStartEvent)
        if collection:
            if self._depth >= MAX_CONFIG_DEPTH:
                raise LimitError(_TOO_DEEP, event.start_mark)
            self._depth += 1
            if anchor is not None:
                self._open.add(anchor)
        before = (self._nodes, self._chars)
        node = super().compose_node(parent, index)
        self._charge(1, len(node.value) if isinstance(node, ScalarNode) else 0, event.start_mark)
        if collection:
            self._depth -= 1
        if anchor is not None:
            self._open.discard(anchor)
            self._sizes[anchor] = (self._nodes - before[0], self._chars - before[1])
        return node

    def _charge(self, nodes: int, chars: int, mark: Any) -> None:
        self._nodes += nodes
        self._chars += chars
        if self._nodes > MAX_CONFIG_NODES:
            raise LimitError(
                f"more than the limit of {MAX_CONFIG_NODES:,} values, aliases expanded"
                " (memconfig.config.MAX_CONFIG_NODES)",
                mark,
            )
        if self._chars > MAX_CONFIG_TEXT:
            raise LimitError(
                f"more than the limit of {MAX_CONFIG_TEXT >> 20} Mi characters of text, aliases expanded"
                " (memconfig.config.MAX_CONFIG_TEXT)",
                mark,
            )


try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: the same, in pure Python (slower on large files)
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(Reader, Scanner, Parser, _GuardedComposer, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            _GuardedComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

else:

    class _Loader(_GuardedComposer, CParser, SafeConstructor, Resolver):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _GuardedComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)


class _SafeLoader(_Loader):
    """``yaml.safe_load``, bounded, except that a key given twice in one mapping is an error, not a silent override.

    A key that is not a string comes back as a :class:`Key`, so that the
    problem reported for it can show the key as written.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        texts: dict[Any, str] = {}
        merged = False
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                if merged:  # a second "<<" would silently win over the first, as a repeated key would
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark, "duplicate key '<<'", key_node.start_mark
                    )
                merged = True
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
                if not isinstance(key, str) and isinstance(key_node, yaml.ScalarNode):
                    texts[key] = key_node.value
        mapping = super().construct_mapping(node, deep)
        if not texts:
            return mapping
        return {Key(k, texts[k]) if not isinstance(k, str) and k in texts else k: v for k, v in mapping.items()}


def _refuse_tag(loader: _SafeLoader, node: Node) -> Any:
    """``!!set``, ``!!omap``, ``!!pairs``: a config is made of plain mappings, sequences and scalars.

    A set's order follows the hash seed, so the sources it lists would come in
    another order on another run; the ordered forms mean nothing the plain ones do not.
    """
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    raise yaml.constructor.ConstructorError(None, None, f"the tag {tag} is not allowed in a config", node.start_mark)


for _tag in ("set", "omap", "pairs"):
    _SafeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)  # type: ignore[type-var]


def safe_load(text: str) -> Any:
    """Parse *text* as :func:`yaml.safe_load` does, but reject a key repeated in one mapping, and stay bounded.

    Raises:
        LimitError: *text* nests too deeply, or its aliases expand too far.
        yaml.YAMLError: *text* is not valid YAML, or repeats a key.
    """
    return _read(text, lambda loader: loader.get_single_data())


def safe_compose(text: str) -> Node | None:
    """The node tree of *text*, bounded as :func:`safe_load` is: each node keeps the line and column it starts at.

    For telling where in the file a value was written (``memconfig explain``).

    Raises:
        LimitError, yaml.YAMLError: as :func:`safe_load`.
    """
    node: Node | None = _read(text, lambda loader: loader.get_single_node())
    return node


def _read(text: str, step: Callable[[_SafeLoader], Any]) -> Any:
    loader = _SafeLoader(text)
    try:
        return step(loader)
    except yaml.reader.ReaderError as exc:
        raise _at_character(text, exc) from None
    except MarkedYAMLError as exc:
        raise _with_character(text, exc) from None
    except RecursionError:  # a guard missed a path; still a clean error
        raise LimitError(_TOO_DEEP, None) from None
    finally:
        loader.dispose()


def _at_character(text: str, exc: yaml.reader.ReaderError) -> MarkedYAMLError:
    """A character YAML does not allow, at its line and column (the reader gives only a byte offset)."""
    position = exc.position
    if isinstance(position, int) and not isinstance(exc.character, bytes):
        position = len(text.encode("utf-8")[:position].decode("utf-8", "ignore"))
    before = text[:position]
    mark = Mark("", position, before.count("\n"), position - before.rfind("\n") - 1, None, None)  # type: ignore[arg-type]
    what = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
    return MarkedYAMLError(problem=f"character {what} is not allowed in YAML ({exc.reason})", problem_mark=mark)


def _with_character(text: str, exc: MarkedYAMLError) -> MarkedYAMLError:
    """libyaml's terse messages made more useful: which character, what to check; its own depth bound as ours."""
    mark = exc.problem_mark
    if exc.problem == "exceeded maximum nesting depth":  # libyaml stops at 1,000 levels, before our bound is seen
        return LimitError(_TOO_DEEP, mark)
    if exc.problem in ("did not find expected key", "did not find expected '-' indicator"):
        exc.problem += "; check this line's indentation"
    elif exc.problem == "found character that cannot start any token" and mark is not None and mark.index < len(text):
        found = text[mark.index]
        hint = " (YAML indents with spaces, not tabs)" if found == "\t" else ""
        exc.problem = f"found character {found!r} that cannot start any token{hint}"
    return exc


def yaml_message(file: str, exc: yaml.YAMLError) -> str:
    """*exc* as one line, ``file:line:column: YAML syntax error: …`` when YAML gave a position.

    A :class:`LimitError` is not a syntax error, and says so by leaving those words out.
    """
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and mark is not None and context_mark.line != mark.line:
        context = f"{context} at {context_mark.line + 1}:{context_mark.column + 1}"
    text = _QUOTED_NAME.sub(_NAME_HIDDEN, f"{problem} ({context})" if context else str(problem))
    kind = "" if isinstance(exc, LimitError) else "YAML syntax error: "
    if mark is not None:
        return f"{file}:{mark.line + 1}:{mark.column + 1}: {kind}{text}"
    return f"{file}: {kind}{text}"
