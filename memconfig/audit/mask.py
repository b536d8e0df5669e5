"""Secrets masked in what an audit shows: a log from elsewhere (or an older memconfig) may not have masked them.

memconfig masks credentials before it logs, but an audit also reads logs it
did not write: a foreign program's memconfig-shaped lines, a hand-edited
file. Every string the audit's outputs (table, JSON, HTML) show passes
through here once, after the pass, so no output needs to think about it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..sources.redact import Redactor
from .model import Audit

__all__ = ["mask_audit"]


def mask_audit(audit: Audit, secrets: Sequence[str] = ()) -> Audit:
    """Mask credentials (URL forms, and each of *secrets* where it appears) in *audit*, in place; returns it."""
    redact = Redactor(None, secrets)
    for summary in audit.sources:
        summary.url, summary.last_detail = redact(summary.url), redact(summary.last_detail)
    for render in audit.renders:
        for failure in render.failures:
            failure.detail = redact(failure.detail)
    return audit
