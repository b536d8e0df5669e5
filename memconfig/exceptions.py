"""The one exception tree of memconfig.

Every error a user can cause derives from :class:`MemconfigError` and carries
the exit code the CLI turns it into, so the CLI never has to guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .limits import MAX_ERROR_LINE
from .safe_text import escaped

if TYPE_CHECKING:
    from .model.status import Failure

__all__ = ["BudgetExceeded", "ConfigError", "MemconfigError", "OutputNotWritten", "Problem", "SourceError", "bounded"]


class MemconfigError(Exception):
    """Root of every error memconfig raises on purpose."""

    exit_code: int = 1

    def format_message(self) -> str:
        """The one-line (or few-line) text the CLI prints after ``memconfig: error:``, each line :func:`bounded`
        so that the printed line is at most :data:`~memconfig.limits.MAX_ERROR_LINE` characters, and its
        control characters escaped (a value from a config, ``ESC ]0;…BEL``, never acts on the terminal);
        the newlines between its lines are kept."""
        lines = self._message().split("\n")
        return bounded("\n".join(map(escaped, lines)), MAX_ERROR_LINE - _PREFIX)

    def _message(self) -> str:
        return str(self)


_PREFIX = len("memconfig: error: ")


def bounded(text: str, limit: int = MAX_ERROR_LINE) -> str:
    """*text* with each line at most *limit* characters: a longer one keeps its head (where) and its tail (why).

    A value echoed whole (a 900 KB unknown key) would make an error nobody can read;
    what is left out is said, with its length.
    """
    lines = text.split("\n")
    if all(len(line) <= limit for line in lines):
        return text
    return "\n".join(_cut(line, limit) if len(line) > limit else line for line in lines)


def _cut(line: str, limit: int) -> str:
    note = f" … ({len(line):,} characters, cut) … "
    tail = limit // 4
    head = limit - tail - len(note)
    return line[:head] + note + line[-tail:]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config: where (a key path) and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(MemconfigError, ValueError):
    """The config (or a CLI usage) is wrong; lists every problem found at once."""

    exit_code = 2

    def __init__(self, problems: Sequence[Problem] | str, *, file: str | None = None) -> None:
        if isinstance(problems, str):
            problems = [Problem("", problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.file = file
        super().__init__(self.format_message())

    def _message(self) -> str:
        prefix = f"{self.file}: " if self.file else ""
        if len(self.problems) == 1:
            return f"{prefix}{self.problems[0]}"
        lines = [f"{prefix}{len(self.problems)} problems"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


class SourceError(MemconfigError):
    """Sources that had to load did not; keeps every one of them and why.

    Not always ``required`` sources: ``on_decode_error: fail`` fails a render too.

    Attributes:
        failures: every source the render needed and did not get, in prompt order.
        source, reason, detail: those of the first, for callers that handle one.
    """

    exit_code = 1

    def __init__(self, failures: Sequence[Failure]) -> None:
        if not failures:
            raise ValueError("a SourceError needs at least one failure")
        self.failures: tuple[Failure, ...] = tuple(failures)
        first = self.failures[0]
        self.source, self.reason, self.detail = first.source, first.reason, first.detail
        super().__init__(self.format_message())

    def _message(self) -> str:
        if len(self.failures) == 1:
            first = self.failures[0]
            text = f"source {first.label} was not loaded and the render needs it: {first.reason}"
            return f"{text} ({first.detail})" if first.detail else text
        lines = [f"{len(self.failures)} sources were not loaded and the render needs them:"]
        return "\n".join(lines + [f"  {f}" for f in self.failures])


class BudgetExceeded(MemconfigError):
    """The memory block is over ``formatter.budget`` and its policy is ``fail``.

    Attributes:
        budget: the setting (``formatter.budget.max_chars`` or ``…max_tokens``).
        size: the block's size, in *unit*.
        limit: the budget.
        unit: ``characters`` or ``tokens``.
        largest: the largest sources as ``(key, size)``, largest first (at most three).
    """

    exit_code = 1

    def __init__(self, budget: str, size: int, limit: int, unit: str, largest: Sequence[tuple[str, int]]) -> None:
        self.budget, self.size, self.limit, self.unit = budget, size, limit, unit
        self.largest: tuple[tuple[str, int], ...] = tuple(largest)
        super().__init__(self.format_message())

    def _message(self) -> str:
        sources = ", ".join(f"{key!r} {size}" for key, size in self.largest)
        text = f"the memory block is {self.size} {self.unit}, over {self.budget} = {self.limit} (policy: fail)"
        return f"{text}; largest sources: {sources}" if sources else text

    @property
    def failures(self) -> tuple[Failure, ...]:
        """The largest sources, as ``prompt_failed`` lists them: reason ``over_budget``, their sizes in the detail."""
        from .model.status import Failure, SkipReason

        detail = f"{{}} of the block's {self.size} {self.unit}; {self.budget} is {self.limit}"
        return tuple(Failure(key, SkipReason.OVER_BUDGET, detail.format(size)) for key, size in self.largest)


class OutputNotWritten(MemconfigError, OSError):
    """The render's output (standard output, or ``-o FILE``) could not be written: ``cannot write the output``.

    Only this error says so (exit 74, ``EX_IOERR``); any other ``OSError`` is reported in its own words.
    """

    exit_code = 74

    def _message(self) -> str:
        return f"cannot write the output: {self.strerror or self}"
