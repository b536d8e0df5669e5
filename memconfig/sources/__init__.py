"""Sources as the pipeline uses them: resolved URLs, merged options, redaction."""

from .source import Source, build_sources
from .urls import protocol_problem, resolve_url

__all__ = ["Source", "build_sources", "protocol_problem", "resolve_url"]
