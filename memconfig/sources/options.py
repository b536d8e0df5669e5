"""Storage options: which layers of a config reach which filesystem, deep-merged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["merge_options", "options_for"]


def options_for(
    protocols: Sequence[str], config: Config, own: Mapping[str, Any], credentials: str | None
) -> dict[str, Any]:
    """The storage options handed to fsspec for a URL whose chain has these protocols.

    For a single URL they are flat: ``storage[protocol]``, then the named
    ``credentials``, then the source's own ``storage_options``, each
    deep-merged over the one before.

    For a chained URL (``zip://a.md::s3://bucket/b.zip``) they are keyed by
    protocol, as :func:`fsspec.core.url_to_fs` takes them. ``credentials`` and
    the source's flat ``storage_options`` are for the innermost (last)
    protocol, the filesystem that fetches (here ``s3``); a mapping in
    ``storage_options`` keyed by a protocol of the chain (``{zip: {...}}``)
    is for that protocol; and each protocol's ``storage`` entry lies under
    what the source gives it.
    """
    storage = config.storage
    if not own and credentials is None and not any(protocol in storage for protocol in protocols):
        return {}
    inner = protocols[-1]
    nested = {k: v for k, v in own.items() if k in protocols and isinstance(v, Mapping)}
    flat = {k: v for k, v in own.items() if k not in nested}
    named = config.credentials_table.get(credentials, {}) if credentials is not None else {}
    merged = {
        protocol: merge_options(
            storage.get(protocol, {}),
            *((named, flat) if protocol == inner else ()),
            nested.get(protocol, {}),
        )
        for protocol in protocols
    }
    if len(protocols) == 1:
        return merged[inner]
    return {protocol: options for protocol, options in merged.items() if options}


def merge_options(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge mappings, a later one winning; nested mappings are copied, never shared."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, Mapping):
                below = out.get(key)
                value = merge_options(below if isinstance(below, Mapping) else {}, value)
            out[key] = value
    return out
