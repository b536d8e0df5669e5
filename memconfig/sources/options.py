"""Storage options: which layers of a config reach which filesystem, deep-merged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .hosts import HTTP, HostGuard

__all__ = ["defaults_for", "merge_options", "options_for"]

_S3 = frozenset({"s3", "s3a"})


def options_for(
    protocols: Sequence[str],
    storage: Mapping[str, Mapping[str, Any]],
    named: Mapping[str, Any],
    own: Mapping[str, Any],
    seconds: float,
    allowed: Sequence[str] | None = None,
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

    Under all of them lie memconfig's defaults (:func:`defaults_for`, which
    need the source's timeout in *seconds*); over all of them, for HTTP when
    ``loader.allowed_hosts`` is set (*allowed*), the guard that checks every
    request's host (:class:`~memconfig.sources.hosts.HostGuard`), which the
    user cannot take away.

    Args:
        storage: the config's ``storage`` section; *named*: the entry of the
            ``credentials_file`` the source names (``{}``: none); *own*: its ``storage_options``.
    """
    defaults = {protocol: defaults_for(protocol, seconds) for protocol in protocols}
    guards = {protocol: _guard(protocol, allowed) for protocol in protocols}
    if (
        not own
        and not named
        and not any(protocol in storage for protocol in protocols)
        and not any(defaults.values())
        and not any(guards.values())
    ):
        return {}
    inner = protocols[-1]
    nested = {k: v for k, v in own.items() if k in protocols and isinstance(v, Mapping)}
    flat = {k: v for k, v in own.items() if k not in nested}
    merged = {
        protocol: merge_options(
            defaults[protocol],
            storage.get(protocol, {}),
            *((named, flat) if protocol == inner else ()),
            nested.get(protocol, {}),
            guards[protocol],
        )
        for protocol in protocols
    }
    if len(protocols) == 1:
        return merged[inner]
    return {protocol: options for protocol, options in merged.items() if options}


def defaults_for(protocol: str, timeout: float) -> dict[str, Any]:
    """memconfig's storage options for *protocol*, under everything the config gives.

    S3: botocore neither retries (memconfig does, and logs each retry; botocore's
    own retries, four by default with backoff, made an unreachable endpoint cost
    about 20 s) nor waits longer than the source's *timeout* to connect or read.
    s3fs passes ``config_kwargs`` to ``botocore.config.Config``.

    HTTP: no request waits longer than *timeout* (aiohttp's default is five
    minutes). The loader gives up on an attempt after *timeout* anyway, but a
    filesystem run in a worker thread (a zip over HTTP) would hold that thread
    until its request ended.
    """
    if protocol in HTTP:
        try:
            from aiohttp import ClientTimeout
        except ImportError:  # the http extra is not installed: reading the source says so
            return {}
        return {"client_kwargs": {"timeout": ClientTimeout(total=timeout)}}
    if protocol in _S3:
        return {
            "config_kwargs": {
                "connect_timeout": timeout,
                "read_timeout": timeout,
                "retries": {"max_attempts": 0, "mode": "standard"},  # no retry after the first attempt
            }
        }
    return {}


def _guard(protocol: str, allowed: Sequence[str] | None) -> dict[str, Any]:
    """For HTTP under an allow-list: the client middleware that refuses requests (redirects too) to other hosts."""
    if allowed is None or protocol not in HTTP:
        return {}
    return {"client_kwargs": {"middlewares": (HostGuard(tuple(allowed)),)}}


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
