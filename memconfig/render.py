"""What a render produces: its records live in :mod:`memconfig.model`."""

from .model import Lazy, Render, Section, SourceRecord, Status

__all__ = ["Lazy", "Render", "Section", "SourceRecord", "Status"]
