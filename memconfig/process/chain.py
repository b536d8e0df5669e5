"""The processor chain: named rules in a fixed order, as markdown-it-py's ``Ruler`` keeps them.

The built-in rules run in the order of :data:`BUILT_IN`; a user's processor
runs after ``escaping`` and before ``budgets`` (they weigh what goes into the
block), unless :class:`Placed` before or after a built-in rule by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..held import Held
from ..model import NO_REASONS, Drop, Note, Processed, Section, SkipReason
from ..stages import PathsProcessor, Processor, provides
from .builtin_rules import BUILT_IN, unknown_rule
from .text import TextStep

__all__ = ["BUILT_IN", "Placed", "ProcessorChain", "Rule", "ordered"]

_USERS = BUILT_IN.index("escaping")  # a user's processor goes after this one unless placed


class Rule(NamedTuple):
    """A processor under its name in the chain."""

    name: str
    processor: Processor


class Placed:
    """A user's processor placed just before or just after a built-in rule (one of :data:`BUILT_IN`).

    Several placed at one spot run in the order given.

    Args:
        name: its name in the chain (its class's name by default).

    Raises:
        ValueError: neither or both of *before* and *after*, or a name that is no built-in rule.
    """

    __slots__ = ("after", "before", "name", "processor")

    def __init__(
        self, processor: Processor, *, before: str | None = None, after: str | None = None, name: str | None = None
    ) -> None:
        if (before is None) == (after is None):
            raise ValueError("Placed: give exactly one of before= or after=")
        anchor = before if before is not None else after
        if anchor not in BUILT_IN:
            raise ValueError(f"Placed: {unknown_rule(anchor)}")
        self.processor, self.before, self.after, self.name = processor, before, after, name

    def __repr__(self) -> str:
        spot = f"before={self.before!r}" if self.before is not None else f"after={self.after!r}"
        return f"Placed({self.processor!r}, {spot}{'' if self.name is None else f', name={self.name!r}'})"

    @property
    def rule(self) -> Rule:
        return Rule(self.name or _name_of(self.processor), self.processor)

    @property
    def spot(self) -> tuple[int, int]:
        """Where it goes: the built-in rule's place, and before (-1) or after (1) it."""
        if self.before is not None:
            return BUILT_IN.index(self.before), -1
        assert self.after is not None
        return BUILT_IN.index(self.after), 1


def ordered(built_in: Sequence[Rule], users: Sequence[Processor | Rule | Placed]) -> list[Rule]:
    """The chain's rules: the built-in ones in :data:`BUILT_IN` order, each of the user's at its spot.

    A user's bare processor or :class:`Rule` (one named by the caller) runs after
    ``escaping``, before ``budgets``, in the order given.

    Raises:
        ValueError: a built-in rule named outside :data:`BUILT_IN`.
    """
    keyed: list[tuple[tuple[int, int, int], Rule]] = []
    for rule in built_in:
        if rule.name not in BUILT_IN:
            raise ValueError(unknown_rule(rule.name))
        keyed.append(((BUILT_IN.index(rule.name), 0, len(keyed)), rule))
    for user in users:
        if isinstance(user, Placed):
            keyed.append(((*user.spot, len(keyed)), user.rule))
        elif isinstance(user, Rule):
            keyed.append(((_USERS, 1, len(keyed)), user))
        else:
            keyed.append(((_USERS, 1, len(keyed)), Rule(_name_of(user), user)))
    return [rule for _, rule in sorted(keyed, key=lambda item: item[0])]


def _name_of(processor: Processor) -> str:
    return type(processor).__name__


class ProcessorChain:
    """Runs each processor on the previous one's output; says which sections each one took out.

    Consecutive text steps (:class:`~memconfig.process.TextStep`) run as one
    pass, each section copied once however many of them change it. What each
    processor can do (take the paths in play) is asked here, once.

    Args:
        rules: the processors in order, each named (a bare processor: by its class).
    """

    def __init__(self, rules: Sequence[Processor | Rule]) -> None:
        self.rules = tuple(r if isinstance(r, Rule) else Rule(_name_of(r), r) for r in rules)
        self.processors = tuple(rule.processor for rule in self.rules)
        self.names = tuple(rule.name for rule in self.rules)
        self.token = "|".join(p.token for p in self.processors)
        takes = [provides(p, PathsProcessor) and p.takes_paths for p in self.processors]
        self.takes_paths = any(takes)
        """A processor decides by the render's paths in play (``rules: frontmatter``): blocks differ by paths."""
        self._steps: list[tuple[Processor, bool]] = []  # each step, and whether it is handed the paths
        for processor, paths in zip(self.processors, takes, strict=True):
            last = self._steps[-1][0] if self._steps else None
            if isinstance(processor, TextStep) and isinstance(last, _TextSteps):
                last.steps.append(processor)
            else:
                self._steps.append((_TextSteps([processor]) if isinstance(processor, TextStep) else processor, paths))

    def __repr__(self) -> str:
        return f"ProcessorChain({', '.join(f'{r.name}={r.processor.token}' for r in self.rules)})"

    def __call__(
        self, sections: Sequence[Section], paths: tuple[str, ...] = ()
    ) -> tuple[list[Section], list[Drop], list[Note]]:
        """The sections that go into the block, the ones taken out (why, by which processor), and the notes.

        *paths*: the render's paths in play, handed to the processors that take
        them (``takes_paths``, as :class:`~memconfig.process.rules.ApplyRules`).
        """
        current = list(sections)
        drops: list[Drop] = []
        notes: list[Note] = []
        first = True
        for processor, takes_paths in self._steps:
            returned = processor(current, paths) if takes_paths else processor(current)  # type: ignore[call-arg]
            reasons = NO_REASONS
            if isinstance(returned, Processed):
                notes += [note._replace(processor=note.processor or processor.token) for note in returned.notes]
                reasons = returned.reasons
                returned = returned.sections
            out = list(returned)
            if len(out) != len(current) or _emptied(out, current, first):
                kept = {s.source for s in out if not _blank(s.text)}
                present = {s.source for s in out}
                for section in current:
                    if section.source not in kept:
                        if section.source in present:
                            reason, detail = SkipReason.EMPTY, ""
                        else:
                            reason, detail = reasons.get(section.source, (SkipReason.DROPPED, ""))
                        drops.append(Drop(section, reason, processor.token, detail))
                out = [s for s in out if not _blank(s.text)]
            current, first = out, False
        return current, drops, notes


def _emptied(out: Sequence[Section], given: Sequence[Section], first: bool) -> bool:
    """Whether a step that handed back as many sections as *given* left one blank.

    After the *first* step, a section handed back as it came in is known not to be blank.
    (A loop, not ``any()`` over a generator: it runs once per section of every render.)
    """
    for s, c in zip(out, given, strict=True):  # noqa: SIM110
        if (first or s is not c) and _blank(s.text):
            return True
    return False


def _blank(text: str) -> bool:
    """Nothing, or only whitespace (which the formatter strips): no section to show."""
    return not text or text.isspace()


class _TextSteps:
    """Text steps run in one pass; a section they empty is reported under their joined tokens."""

    def __init__(self, steps: list[TextStep]) -> None:
        self.steps = steps
        self._held: Held[tuple[Section, Section]] = Held()  # each section cleaned, by the section it was cleaned from

    @property
    def token(self) -> str:
        return "|".join(step.token for step in self.steps)

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        cleans = [step.clean for step in self.steps]
        last, made = self._held.last, self._held.start()
        out = []
        for section in sections:
            found = last.get(section.source)
            if found is None or found[0] is not section:
                text = section.text
                for clean in cleans:
                    text = clean(text)
                found = (section, section if text is section.text else section.with_text(text))
            if made is not None:
                made[section.source] = found
            out.append(found[1])
        self._held.finish(made)
        return out
