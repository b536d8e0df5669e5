"""Conditional rules: a rule file's frontmatter says, per render, whether it goes into the prompt.

A source with ``rules: frontmatter`` (a file or a glob) is a set of rule files
in the style of Cursor's ``.cursor/rules/*.mdc`` and Claude Code's
``.claude/rules/*.md``; ``rules: claude`` reads only the key Claude Code reads
(``paths``: 2 and 4 below), ``rules: cursor`` only Cursor's (``alwaysApply``,
``globs``, ``description``). Each file's leading YAML block decides, given the
*paths in play* of this render (``Pipeline.build(paths=...)``, ``memconfig
render --path``, the LangChain middleware's state key):

1. ``alwaysApply: true``: it applies.
2. ``globs`` (Cursor) or ``paths`` (Claude Code), a list or one string with
   comma-separated patterns (Cursor's unquoted ``globs: *.ts,*.tsx``, which is
   not YAML, is read as Cursor reads it: the rest of the line, and so is an
   unquoted ``description:`` holding a colon; see :func:`_read_block`): it applies when one of the paths in play matches
   (``**``, ``{a,b}``, ``!`` to exclude; matched against each path relative to
   the rule file's project root, as Cursor and Claude Code match against the
   workspace: its nearest folder holding ``.git`` (a discovery's
   ``root_markers``), or the folder holding ``.claude/rules`` for a file a
   discovery's ``patterns`` found; the config's ``base_dir`` when the file is
   in no project; a path outside that folder matches nothing).
3. ``alwaysApply: false`` or a ``description`` and no patterns (Cursor's
   "agent requested" and manual rules): it does not apply; memconfig has no
   agent choosing rules by their description, so it is logged, not guessed.
4. none of these keys (no frontmatter at all, too): it applies (Claude Code
   loads a rule without ``paths`` unconditionally).

A file that does not apply is logged as ``source_skipped`` (reason
``not_applicable``, at ``debug``). A block that is not valid YAML, holds a
key of the wrong type, or is never closed is a ``frontmatter_invalid``
warning naming the file and the line, and the file is applied as if it said
``alwaysApply: true``: a rule someone wrote is never lost in silence (Cursor
skips such a file without a word). The block is stripped from what the
prompt shows, whatever the layout's ``strip_frontmatter``.

The decision needs no read: files are parsed from the contents in state,
once per version, and a render with other paths only decides again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

from ..model import Note, Processed, Section, SkipReason
from ..safe_yaml import safe_compose, safe_load
from .frontmatter import split_frontmatter

__all__ = [
    "RULES_MODES",
    "ApplyRules",
    "PathsInPlay",
    "Rule",
    "in_play",
    "read_rule",
    "rules_processor",
    "split_patterns",
]

#: The values a source's ``rules`` may take: which frontmatter keys decide (see :data:`DIALECT_KEYS`).
RULES_MODES = ("frontmatter", "claude", "cursor")
#: The keys each dialect reads. ``claude``: Claude Code's ``.claude/rules``, decided by ``paths`` alone (a rule
#: without it always applies; ``globs``, ``alwaysApply`` and ``description`` mean nothing there). ``cursor``:
#: Cursor's ``.mdc`` rules (``globs``, ``alwaysApply``, ``description``). ``frontmatter``: either tool's keys.
DIALECT_KEYS: Mapping[str, tuple[str, ...]] = {
    "frontmatter": ("alwaysApply", "globs", "paths", "description"),
    "claude": ("paths",),
    "cursor": ("alwaysApply", "globs", "description"),
}

PathsInPlay = tuple[str, ...]
"""Absolute, normalised paths, sorted, each once: what a render's rules are decided for (see :func:`in_play`)."""

_PARSED = 4096  # rule versions kept parsed: a rules folder's worth many times over, bounded under churn
_SHOWN = 3  # patterns quoted in a skip's detail


@dataclass(frozen=True, slots=True)
class Rule:
    """What one rule file's frontmatter says.

    Attributes:
        body: the text without its frontmatter: what the prompt shows.
        always: ``alwaysApply`` as written (``None``: not given).
        patterns: ``globs`` and ``paths``, split into single patterns.
        description: ``description``, if given.
        problem: why the frontmatter could not be read (``None``: it could), and *line* where.
    """

    body: str
    always: bool | None = None
    patterns: tuple[str, ...] = ()
    description: str | None = None
    problem: str | None = None
    line: int = 0


def in_play(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None) -> PathsInPlay:
    """*paths* as a render decides rules for them: absolute (relative ones against the working folder), each once.

    No file-system call: a path need not exist (a file about to be created is in play too).

    Raises:
        TypeError: an entry is not a path.
    """
    if paths is None:
        return ()
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out = set()
    for path in paths:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"a path in play must be a string or a path, not {type(path).__name__}")
        out.add(os.path.abspath(os.fspath(path)))
    return tuple(sorted(out))


def split_patterns(value: str) -> list[str]:
    """A comma-separated list of patterns split at the commas outside braces: ``a/*.ts, b/*.{js,jsx}`` is two."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(value):
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == "," and not depth:
            out.append(value[start:i])
            start = i + 1
    out.append(value[start:])
    return [part.strip() for part in out if part.strip()]


def read_rule(text: str, dialect: str = "frontmatter") -> Rule:
    """The rule *text* states in its frontmatter, reading the keys of *dialect* only (:data:`DIALECT_KEYS`)."""
    found = split_frontmatter(text)
    if found is None:
        return Rule(text)
    if found.yaml is None:
        never = "the frontmatter block opened on line 1 is never closed (no '---' line)"
        return Rule(found.body, problem=never, line=1)
    try:
        data = _read_block(found.yaml)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = found.line + (mark.line if mark is not None else 0)
        problem = getattr(exc, "problem", None) or str(exc)
        return Rule(found.body, problem=f"not valid YAML: {problem}", line=line)
    if data is None:
        return Rule(found.body)
    if not isinstance(data, dict):
        return Rule(found.body, problem="the frontmatter is not a mapping of keys", line=found.line)
    problems: list[tuple[str, str]] = []
    read = DIALECT_KEYS[dialect]
    data = {key: value for key, value in data.items() if key in read}
    always = data.get("alwaysApply")
    if always is not None and not isinstance(always, bool):
        problems.append(("alwaysApply", f"must be true or false, not {_shown(always)}"))
        always = None
    patterns: list[str] = []
    for key in ("globs", "paths"):
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            patterns += split_patterns(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            patterns += [p for item in value for p in split_patterns(item)]
        else:
            problems.append((key, f"must be a pattern or a list of patterns, not {_shown(value)}"))
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        problems.append(("description", f"must be text, not {_shown(description)}"))
        description = None
    if problems:
        key, message = problems[0]
        return Rule(found.body, problem=f"{key} {message}", line=found.line + _key_line(found.yaml, key))
    return Rule(found.body, always, tuple(patterns), description)


#: ``globs: *.ts,*.tsx`` as Cursor's rule editor writes it: a top-level ``globs``/``paths`` line whose value is
#: unquoted and not a YAML list or mapping (``*`` would start an alias, ``!`` a tag, ``%`` or ``@`` are reserved).
_RAW_PATTERNS = re.compile(r"^(globs|paths):[ \t]+([^\s\"'\[{#].*?)[ \t]*$", re.MULTILINE)
#: ``description: API handlers: validation and errors``, as the editor writes it too: a top-level unquoted
#: description on one line (not a list, a mapping or a ``|``/``>`` block), whose ``: `` YAML takes for a key.
_RAW_DESCRIPTION = re.compile(r"^(description):[ \t]+([^\s\"'\[{#|>].*?)[ \t]*$", re.MULTILINE)


def _read_block(block: str) -> Any:
    """The frontmatter *block* as YAML, each unquoted ``globs:``/``paths:``/``description:`` value taken as its
    line's raw text.

    Cursor reads ``globs: *.ts,*.tsx`` as one comma-separated string and
    ``description: API handlers: validation`` as one sentence; YAML does not.
    Only when the block as written is not YAML, each such value is quoted (its
    line kept) and the block read again by the same YAML reader: an error then
    is of a line the pre-pass left alone, and names it.
    """
    try:
        return safe_load(block)
    except yaml.YAMLError:
        quoted = block
        for raw in (_RAW_PATTERNS, _RAW_DESCRIPTION):
            quoted = raw.sub(lambda m: f"{m[1]}: {json.dumps(m[2], ensure_ascii=False)}", quoted)
        if quoted == block:
            raise
    return safe_load(quoted)


def _shown(value: Any) -> str:
    """A wrong value's kind, and the value when it is short: ``the string 'true'``."""
    kinds = {str: "the string", int: "the number", float: "the number", list: "a list", dict: "a mapping"}
    kind = kinds.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text}" if len(text) <= 40 and not isinstance(value, list | dict) else kind


def _key_line(text: str, key: str) -> int:
    """The line (0-based, in the block) where *key* is written; 0 if it cannot be told."""
    node = safe_compose(text)
    for key_node, _ in getattr(node, "value", ()):
        if getattr(key_node, "value", None) == key:
            return int(key_node.start_mark.line)
    return 0


def _matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether a relative path matches *patterns*: ``**``, braces, ``!`` excludes, ``*`` matches dot-files too."""
    from wcmatch import glob  # only a config with rules pays for the import

    flags = glob.GLOBSTAR | glob.BRACE | glob.NEGATE | glob.NEGATEALL | glob.DOTGLOB | glob.FORCEUNIX
    compiled = glob.compile(list(patterns), flags=flags)
    return compiled.match


class ApplyRules:
    """Leaves out the rule files that do not apply to this render's paths, and strips their frontmatter.

    Runs first in the chain, on the contents as read. A section is a rule
    file when its source, or the source it was expanded from, is one of
    *sources* (keys); other sections pass untouched.

    Args:
        sources: the keys of the sources with ``rules: frontmatter``.
        root: the folder paths in play are matched relative to for a rule file in no
            project (the config's ``base_dir``).
        anchored: for a discovery among *sources*, by key, its ``patterns``: a rule file it
            found is matched relative to the folder the pattern matched it from (the folder
            holding ``.claude/rules``, as Claude Code does), not relative to *root*.
        markers: by source key, the root markers that make a folder a project root
            (a discovery's ``root_markers``); ``.git`` for the others. Any other rule
            file under a project root is matched relative to that root.
    """

    takes_paths = True
    """The chain hands this processor the render's paths in play."""

    def __init__(
        self,
        sources: Collection[str] | Mapping[str, str],
        root: str | os.PathLike[str],
        anchored: Mapping[str, tuple[str, ...]] | None = None,
        markers: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.sources = frozenset(sources)
        self.dialects: dict[str, str] = dict(sources) if isinstance(sources, Mapping) else {}
        """By source key, the rules dialect it declared (``frontmatter`` when not given)."""
        self.root = PurePosixPath(os.path.abspath(os.fspath(root)))
        self.anchored = dict(anchored or {})
        self.markers = dict(markers or {})
        named = [
            *(f"{k}~{self.dialects.get(k, 'frontmatter')}" for k in sorted(self.sources)),
            *(f"{k}={','.join(v)}" for k, v in sorted(self.anchored.items())),
            *(f"{k}:{','.join(v)}" for k, v in sorted(self.markers.items())),
        ]
        digest = hashlib.sha256("\x1e".join(named).encode()).hexdigest()
        self.token = f"ApplyRules(root={str(self.root)!r}, sources={len(self.sources)}:{digest[:16]})"
        self._anchors: dict[str, PurePosixPath] = {}
        self._parsed: OrderedDict[tuple[str, str], tuple[Rule, Callable[[str], bool] | None]] = OrderedDict()

    def __repr__(self) -> str:
        return f"ApplyRules({sorted(self.sources)!r}, root={str(self.root)!r})"

    def __call__(self, sections: Sequence[Section], paths: PathsInPlay = ()) -> Processed:
        """The sections that apply to *paths* (absolute, from :func:`in_play`), frontmatter stripped."""
        relative = self._relative(paths)
        by_root: dict[PurePosixPath, list[str]] = {self.root: relative}
        kept: list[Section] = []
        notes: list[Note] = []
        reasons: dict[str, tuple[SkipReason, str]] = {}
        chosen = self.sources
        for section in sections:
            if section.source not in chosen and section.parent not in chosen:
                kept.append(section)
                continue
            dialects = self.dialects
            dialect = dialects.get(section.source) or dialects.get(section.parent or "") or "frontmatter"
            rule, matches = self._rule(section, dialect)
            if rule.problem is not None:
                fields = {"line": rule.line, "detail": f"{section.source}:{rule.line}: {rule.problem}"}
                notes.append(Note(section, "frontmatter_invalid", fields))
            else:
                root = self._anchor(section)
                if root not in by_root:
                    by_root[root] = self._relative(paths, root)
                why = _not_applying(rule, matches, by_root[root], len(paths), root)
                if why is not None:
                    reasons[section.source] = (SkipReason.NOT_APPLICABLE, why)
                    continue
            kept.append(section if rule.body is section.text else section.with_text(rule.body))
        return Processed(kept, notes, reasons)

    def _anchor(self, section: Section) -> PurePosixPath:
        """The folder *section*'s patterns are relative to (see the module): looked up once per rule file.

        Where its discovery's pattern found it; else the project root holding the
        rule file (its nearest ancestor with one of the markers); else the root.
        """
        anchor = self._anchors.get(section.source)
        if anchor is not None:
            return anchor
        patterns = self.anchored.get(section.parent) if section.parent is not None else None
        if patterns is not None:
            from ..expand.discover import found_in

            folder = found_in(section.source, patterns)
        else:
            folder = self._project_root(section)
        anchor = self.root if folder is None else PurePosixPath(folder)
        if len(self._anchors) >= _PARSED:
            self._anchors.clear()
        self._anchors[section.source] = anchor
        return anchor

    def _project_root(self, section: Section) -> str | None:
        """The project root of a local rule file: its nearest ancestor holding a marker (``.git``), or ``None``."""
        from ..expand.discover import project_root
        from ..model import ROOT_MARKERS
        from ..sources.urls import local_path

        url = local_path(section.url or "")
        if url is None or not os.path.isabs(url):
            return None  # a remote rule file has no project on this disk

        key = section.parent if section.parent in self.markers else section.source
        return project_root(os.path.dirname(os.path.normpath(url)), self.markers.get(key, ROOT_MARKERS))

    def _relative(self, paths: PathsInPlay, root: PurePosixPath | None = None) -> list[str]:
        """Each path in play relative to *root* (the processor's); those outside it are left out (no relative
        pattern matches them)."""
        root = self.root if root is None else root
        out = []
        for path in paths:
            pure = PurePosixPath(path)
            if pure.is_relative_to(root) and pure != root:
                out.append(pure.relative_to(root).as_posix())
        return out

    def _rule(self, section: Section, dialect: str) -> tuple[Rule, Callable[[str], bool] | None]:
        """The section's rule in *dialect* and its matcher, parsed once per version of the file."""
        version = f"{section.sha256}:{len(section.text)}" if section.sha256 else section.text
        key = (section.source, f"{dialect}:{version}")
        parsed = self._parsed.get(key)
        if parsed is None:
            rule = read_rule(section.text, dialect)
            parsed = (rule, _matcher(rule.patterns) if rule.patterns else None)
            self._parsed[key] = parsed
            while len(self._parsed) > _PARSED:
                self._parsed.popitem(last=False)
        return parsed


def _not_applying(
    rule: Rule, matches: Callable[[str], bool] | None, paths: Sequence[str], given: int = 0, root: object = None
) -> str | None:
    """Why *rule* does not apply to *paths* (those of the *given* paths in play inside *root*, relative to it),
    or ``None`` when it does."""
    if rule.always:
        return None
    if matches is not None:
        if any(matches(path) for path in paths):
            return None
        shown = ", ".join(rule.patterns[:_SHOWN]) + (", …" if len(rule.patterns) > _SHOWN else "")
        if not paths and given:  # paths were given, but none lies in the project its patterns are relative to
            outside = "the one given is" if given == 1 else f"all {given} given are"
            return f"no path in play matches its patterns ({shown}): {outside} outside its project root {root}"
        if not paths:
            return f"no path in play matches its patterns ({shown}): none given"
        return f"no path in play matches its patterns ({shown}); {len(paths)} in play"
    if rule.always is False or rule.description is not None:
        described = f" (description: {rule.description!r})" if rule.description else ""
        return "alwaysApply is false and it has no globs or paths: applied only on request" + described
    return None


def rules_sources(sources: Iterable[Any]) -> dict[str, str]:
    """The keys of the sources that declare ``rules:``, each with its dialect (``frontmatter``, ``claude``…)."""
    return {s.key: s.rules for s in sources if getattr(s, "rules", None) in RULES_MODES}


def rules_processor(sources: Iterable[Any], root: str | os.PathLike[str]) -> list[ApplyRules]:
    """The rules step for *sources* (none when no source declares rules), to run first in the chain."""
    sources = list(sources)
    keys = rules_sources(sources)
    anchored = {
        s.key: s.discover.patterns
        for s in sources
        if s.key in keys and getattr(s, "discover", None) is not None and s.discover.patterns
    }
    markers = {s.key: tuple(s.discover.root_markers) for s in sources if s.key in keys and getattr(s, "discover", None)}
    return [ApplyRules(keys, root, anchored, markers)] if keys else []
