"""Why a source is not in the prompt: its records live in :mod:`memconfig.model`."""

from .model import Failure, SkipReason

__all__ = ["Failure", "SkipReason"]
