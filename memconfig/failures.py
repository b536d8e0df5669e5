"""Why a source is not in the prompt, as data: a closed set of reasons and a small failure record."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Failure", "SkipReason"]


class SkipReason(enum.StrEnum):
    """Why a source is left out of the prompt: the fixed vocabulary of ``source_skipped``.

    A ``str`` subclass: a reason compares equal to its value (``"not_found"``)
    and is written as that value in every log line.
    """

    NOT_FOUND = "not_found"
    IS_DIRECTORY = "is_directory"
    PERMISSION_DENIED = "permission_denied"
    DECODE_ERROR = "decode_error"
    TOO_LARGE = "too_large"
    EMPTY = "empty"
    TIMEOUT = "timeout"
    REMOTE_ERROR = "remote_error"
    ERROR = "error"
    DROPPED = "dropped"
    """Taken out by a processor."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A source that had to be in the prompt and is not: which, why, and the detail."""

    source: str
    reason: SkipReason
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.source!r}: {self.reason}"
        return f"{text} ({self.detail})" if self.detail else text
