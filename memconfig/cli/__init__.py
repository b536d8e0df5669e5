"""The ``memconfig`` command line."""

from .main import main, run

__all__ = ["main", "run"]
