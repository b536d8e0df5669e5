"""memconfig's version, as installed: read from the package's metadata, which takes a few milliseconds (the
installed distributions are searched, the metadata parsed as e-mail headers), so only when asked for
(``memconfig.__version__``, ``memconfig --version``)."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("memconfig")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"
