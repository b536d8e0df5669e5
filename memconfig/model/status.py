"""Where a source stands after a load pass or a render, why one is out of the prompt, and a failure: the one vocabulary.

Every record, event and report says ``loaded``, ``skipped``, ``not_found`` …
through these enums; as ``str`` subclasses they are written as their values.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Failure", "SkipReason", "Status", "source_label"]


class Status(enum.StrEnum):
    """Where a source stands after a load pass or a render: the one vocabulary of every record and event.

    A ``str`` subclass, as :class:`SkipReason` is: ``Status.LOADED == "loaded"``.
    """

    LOADED = "loaded"
    """Read, and its content is in the prompt."""
    UNCHANGED = "unchanged"
    """A load pass found it as it was: the copy kept is still current (a render's record says ``loaded``)."""
    SKIPPED = "skipped"
    """Not in the prompt; its record's ``reason`` says why."""
    STALE = "stale"
    """A refresh failed; the last good copy is in the prompt."""

    @property
    def in_prompt(self) -> bool:
        """Whether a source with this status has content in the prompt."""
        return self is not Status.SKIPPED


class SkipReason(enum.StrEnum):
    """Why a source is left out of the prompt: the fixed vocabulary of ``source_skipped``.

    A ``str`` subclass: a reason compares equal to its value (``"not_found"``)
    and is written as that value in every log line.
    """

    NOT_FOUND = "not_found"
    """No file (or object) there: at ``info`` for an optional source, a warning for a required one."""
    IS_DIRECTORY = "is_directory"
    """A folder, not a file."""
    PERMISSION_DENIED = "permission_denied"
    """The file may not be read, or the server refused it (HTTP 401 or 403, S3 access denied)."""
    DECODE_ERROR = "decode_error"
    """Not valid text in ``loader.encoding`` (under ``on_decode_error: skip``)."""
    TOO_LARGE = "too_large"
    """Over ``loader.max_bytes``, or a glob matching more than ``loader.max_matches`` files."""
    EMPTY = "empty"
    """Nothing left once comments and whitespace are removed."""
    TIMEOUT = "timeout"
    """A remote read took longer than its timeout."""
    REMOTE_ERROR = "remote_error"
    """A remote store answered with an error, or could not be reached (the status in ``detail``)."""
    ERROR = "error"
    """Any other failure (``detail`` says what)."""
    DROPPED = "dropped"
    """Taken out by a processor."""
    BINARY = "binary"
    """Holds NUL bytes: not text."""
    NOT_REGULAR_FILE = "not_regular_file"
    """A FIFO, socket or device: never opened for reading (it could block or never end)."""
    SYMLINK_LOOP = "symlink_loop"
    """A symbolic link that leads back to itself."""
    CHANGED_DURING_READ = "changed_during_read"
    """Kept changing while it was read (rewritten in place on every one of three reads): no consistent copy."""
    DUPLICATE = "duplicate"
    """The same file as an earlier source (another spelling, a symlink, a hard link, a glob's match; ``detail``
    names it): it goes in once, at the first position."""
    OUTSIDE_ROOT = "outside_root"
    """A local file outside ``loader.allowed_roots`` (symlinks resolved), or an import outside the project root."""
    IMPORT_CYCLE = "import_cycle"
    """An ``@path`` import of a file already on the current import chain."""
    IMPORT_DEPTH = "import_depth"
    """An ``@path`` import in a file at ``imports.max_depth``: left as text."""
    PROTOCOL_NOT_ALLOWED = "protocol_not_allowed"
    """A protocol not in ``loader.allowed_protocols``."""
    HOST_NOT_ALLOWED = "host_not_allowed"
    """A host (or a redirect's target, a proxy, an endpoint) not in ``loader.allowed_hosts``."""
    OPTION_NOT_ALLOWED = "option_not_allowed"
    """A storage option memconfig cannot judge, under an allow-list, and not in ``loader.allowed_options``."""
    OVER_BUDGET = "over_budget"
    """Left out by a budget: ``formatter.budget`` (or the source's own limit) had no room for any of it."""
    NOT_APPLICABLE = "not_applicable"
    """A rule file (``rules: frontmatter``) whose frontmatter does not apply to this render's paths in play:
    logged at ``debug``, never a failure."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A source that had to be in the prompt and is not: which (its key and its name), why, and the detail."""

    source: str
    reason: SkipReason
    detail: str = ""
    name: str = ""
    """The source's name, where the config gave one; empty: its key is its name."""
    url: str = ""
    """Where it is read from, credentials masked."""

    @property
    def label(self) -> str:
        """How messages name the source: by the name the user gave, the URL beside it (else the key alone)."""
        return source_label(self.name, self.source, self.url, repr)

    def __str__(self) -> str:
        text = f"{self.label}: {self.reason}"
        return f"{text} ({self.detail})" if self.detail else text


def source_label(name: str, key: str, url: str, show: Callable[[str], str] = str) -> str:
    """A source as messages and reports name it: the name the user gave, its URL beside it (unless the name is its key).

    *show* writes the name (or the key alone): ``repr`` in a message, where it is quoted.
    """
    if name and name != key:
        return f"{show(name)} ({url or key})"
    return show(key)
