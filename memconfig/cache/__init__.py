"""The state cache stage: contents in the caller's state, and when to read them again.

``policy`` is the stage (the flow every render runs); ``meta`` the typed
record of a state (frozen dataclasses); ``stored`` that record as the state
holds it (JSON, versioned, each object read once); ``merge`` how a pass's
results fold into it; ``store`` the process's newest good copies; ``flights``
single flight.
"""

from .merge import STALE_REASONS
from .meta import META_VERSION
from .policy import PolicyCache

__all__ = ["META_VERSION", "STALE_REASONS", "PolicyCache"]
