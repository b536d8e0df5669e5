"""Loaders of URL protocols of their own, from the loader registry: a plugin's ``mydb://`` read by its loader.

A source whose URL (not chained) has a protocol registered in
:data:`memconfig.registry.LOADERS` is read by that loader; every other one
by fsspec (:class:`~memconfig.load.FsspecLoader`, which hands the others
over). Each registered target is a class whose ``from_config`` takes the
config's ``loader`` settings; it is built once per pipeline, and only for
the protocols the sources use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..registry import loaders
from ..sources.urls import registered_protocol

if TYPE_CHECKING:
    from ..config.schema import LoaderConfig
    from ..sources.source import Source
    from ..stages import Loader

__all__ = ["protocol_loaders"]


def protocol_loaders(sources: Sequence[Source], settings: LoaderConfig) -> dict[str, Loader]:
    """The registered loaders the *sources* need, by protocol, each built from the ``loader`` *settings*.

    Raises:
        ConfigError: a loader's module is not installed (the message says what to install).
    """
    protocols = {p for s in sources if "://" in s.url and (p := registered_protocol(s.url)) is not None}
    return {protocol: loaders.load(protocol).from_config(settings) for protocol in sorted(protocols)}
