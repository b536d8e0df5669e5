"""The load log's schema version, a leaf: what reads logs (``memconfig audit``) need not import the emitters.

:mod:`memconfig.events` declares the schema (its records) and carries this
version in every ``prompt_built``; the audit compares an event's ``schema``
with it. Importing :mod:`memconfig.events` imports structlog, which reading a
log never needs.
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION"]

#: The version of the event schema (:data:`memconfig.events.EVENTS`' records); bumped when a field changes meaning
#: or goes away.
SCHEMA_VERSION = 1
