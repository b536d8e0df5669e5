"""The loader stage: reads sources through fsspec.

``loader`` is the stage; ``reads`` the byte streams, ``fingerprints`` the
change tokens, ``errors`` what a failure means.
"""

from .fingerprints import fingerprint, local_fingerprint
from .loader import FsspecLoader, ReadSettings

__all__ = ["FsspecLoader", "ReadSettings", "fingerprint", "local_fingerprint"]
