"""``memconfig audit``: memconfig's load logs, from anywhere, read once into a summary per source and per render.

The public API is re-exported here, each name imported when first used
(:mod:`memconfig.lazy`): ``import memconfig.audit`` costs nothing, and the
audit command's table output never imports the HTML writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .aggregate import Filters
    from .html import write_html
    from .inputs import LogInput, log_inputs
    from .mask import mask_audit
    from .model import (
        Audit,
        InputSummary,
        LineCounts,
        PromptAt,
        RenderFailure,
        RenderSummary,
        SourceAt,
        SourceState,
        SourceSummary,
        VersionChange,
    )
    from .output import audit_data, audit_tables
    from .read import read_audit

__all__ = [
    "Audit",
    "Filters",
    "InputSummary",
    "LineCounts",
    "LogInput",
    "PromptAt",
    "RenderFailure",
    "RenderSummary",
    "SourceAt",
    "SourceState",
    "SourceSummary",
    "VersionChange",
    "audit_data",
    "audit_tables",
    "log_inputs",
    "mask_audit",
    "read_audit",
    "write_html",
]

#: Each public name: the module of this package that defines it.
_MODULES = {
    "Filters": "aggregate",
    "write_html": "html",
    "LogInput": "inputs",
    "log_inputs": "inputs",
    "mask_audit": "mask",
    **dict.fromkeys(
        (
            "Audit",
            "InputSummary",
            "LineCounts",
            "PromptAt",
            "RenderFailure",
            "RenderSummary",
            "SourceAt",
            "SourceState",
            "SourceSummary",
            "VersionChange",
        ),
        "model",
    ),
    "audit_data": "output",
    "audit_tables": "output",
    "read_audit": "read",
}


if not TYPE_CHECKING:  # the type checker reads the imports above
    __getattr__, __dir__ = lazy_names(__name__, _MODULES)
