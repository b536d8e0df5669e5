"""What a source reaches: every link of its URL, and every path, URL, protocol and host its storage options name.

A source names data in two ways: its URL (``zip://a.md::/srv/x.zip`` names a
zip archive on this machine) and its storage options (``{fo: /srv/x.zip}``
names the same archive; ``{proxy: …}``, ``{endpoint_url: …}`` name hosts; a
``reference://`` mapping names a file per key). :func:`reach` reads both the
same way and gives one :class:`Reached` per place, for confinement to judge
(:class:`memconfig.load.confinement.Confinement`). What the options of each
filesystem mean is the table below; an option not in it is :data:`UNKNOWN`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal, NamedTuple

from fsspec.core import split_protocol
from fsspec.implementations.local import LocalFileSystem

from .hosts import HTTP
from .urls import LOCAL, Part, chain

__all__ = ["OPTION_KINDS", "Reached", "connects", "reach"]

Kind = Literal["link", "path", "protocol", "host", "unknown", "unchecked"]
"""What a place is: a link to read (``link``), a local path (a cache folder), a protocol
named alone, a host connected to (a proxy, an endpoint), an option whose meaning is not
known, or one whose targets cannot be known before it is read."""


class Reached(NamedTuple):
    """One place a source reaches, and the storage option naming it (``""``: the source's URL)."""

    kind: Kind
    option: str
    """The option's dotted name (``fo``, ``client_kwargs.endpoint_url``; a chained URL's: ``zip.fo``)."""
    value: str
    """The link's text, the path, the protocol, the host's URL; why, for ``unchecked``."""
    where: str = ""
    """How messages name the option (``storage option 'fo' (reference 'a.md')``); ``""``: the URL."""
    part: Part | None = None
    """For a link: its protocol and path."""
    options: Mapping[str, Any] | None = None
    """For a link: the storage options it is read with (its endpoint is among them)."""


# What each storage option means, per filesystem: ``inert`` names no data; ``link`` is a path or URL
# read under the sibling ``target_protocol`` (else as written); ``path`` a local folder; ``protocol``
# a protocol; ``host`` a URL connected to; ``hosts`` a mapping of such URLs; ``options`` the options of
# the sibling ``target_protocol`` / ``remote_protocol``; ``references`` a reference mapping; a mapping,
# the options under that key (client keyword arguments).
_COMMON = dict.fromkeys(("skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths"), "inert")
_HTTP_CLIENT = {
    **dict.fromkeys(
        (
            "headers",
            "timeout",
            "middlewares",
            "auth",
            "cookies",
            "raise_for_status",
            "read_timeout",
            "conn_timeout",
            "read_bufsize",
            "trust_env",
            "skip_auto_headers",
        ),
        "inert",
    ),
    "proxy": "host",
}
_HTTP = {
    **_COMMON,
    **dict.fromkeys(
        (
            "headers",
            "auth",
            "simple_links",
            "block_size",
            "same_scheme",
            "size_policy",
            "cache_type",
            "cache_options",
            "encoded",
            "params",
            "cookies",
            "ssl",
            "verify_ssl",
            "timeout",
            "allow_redirects",
            "max_redirects",
            "proxy_auth",
            "proxy_headers",
        ),
        "inert",
    ),
    "proxy": "host",
    "client_kwargs": _HTTP_CLIENT,
}
_S3_CLIENT = {
    **dict.fromkeys(
        ("region_name", "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "verify", "use_ssl"), "inert"
    ),
    "endpoint_url": "host",
}
_S3_CONFIG = {
    **dict.fromkeys(
        (
            "connect_timeout",
            "read_timeout",
            "retries",
            "region_name",
            "signature_version",
            "s3",
            "max_pool_connections",
            "user_agent",
            "user_agent_extra",
            "tcp_keepalive",
            "request_checksum_calculation",
            "response_checksum_validation",
        ),
        "inert",
    ),
    "proxies": "hosts",
}
_S3 = {
    **_COMMON,
    **dict.fromkeys(
        (
            "anon",
            "key",
            "secret",
            "token",
            "username",
            "password",
            "use_ssl",
            "requester_pays",
            "default_block_size",
            "default_fill_cache",
            "default_cache_type",
            "version_aware",
            "cache_regions",
            "s3_additional_kwargs",
            "max_concurrency",
            "profile",
        ),
        "inert",
    ),
    "endpoint_url": "host",
    "client_kwargs": _S3_CLIENT,
    "config_kwargs": _S3_CONFIG,
}
_GCS = {
    **_COMMON,
    **dict.fromkeys(
        (
            "project",
            "access",
            "token",
            "consistency",
            "cache_timeout",
            "requester_pays",
            "default_location",
            "version_aware",
            "requests_timeout",
            "timeout",
        ),
        "inert",
    ),
    "endpoint_url": "host",
}
_ARCHIVE = {
    **_COMMON,
    "fo": "link",
    "target_protocol": "protocol",
    "target_options": "options",
    **dict.fromkeys(("mode", "compression", "allowZip64", "compresslevel", "index_store"), "inert"),
}
_CACHE = {
    **_COMMON,
    "target_protocol": "protocol",
    "target_options": "options",
    "cache_storage": "path",
    **dict.fromkeys(("same_names", "compression", "expiry_time", "check_files", "cache_check"), "inert"),
}
_REFERENCE = {
    **_COMMON,
    "fo": "references",
    "target": "link",
    "target_protocol": "protocol",
    "target_options": "options",
    "remote_protocol": "protocol",
    "remote_options": "options",
    **dict.fromkeys(("template_overrides", "simple_templates", "max_gap", "max_block", "cache_size"), "inert"),
}
OPTION_KINDS: Mapping[str, Mapping[str, Any]] = {
    "file": {**_COMMON, "auto_mkdir": "inert"},
    "local": {**_COMMON, "auto_mkdir": "inert"},
    "memory": _COMMON,
    "http": _HTTP,
    "https": _HTTP,
    "s3": _S3,
    "s3a": _S3,
    "gs": _GCS,
    "gcs": _GCS,
    "zip": _ARCHIVE,
    "tar": _ARCHIVE,
    "reference": _REFERENCE,
    "git": {**_COMMON, "path": "path", "fo": "path", "ref": "inert"},
    "github": {**_COMMON, **dict.fromkeys(("org", "repo", "sha", "username", "token", "timeout"), "inert")},
    "dir": {**_COMMON, "path": "link", "target_protocol": "protocol", "target_options": "options"},
    **dict.fromkeys(("simplecache", "filecache", "blockcache", "cached"), _CACHE),
}
"""What memconfig knows each filesystem's storage options to mean (docs/sources.md lists them)."""

# The filesystems that read only through others or on this machine: they connect to nothing themselves.
_OFFLINE = frozenset(
    {*LOCAL, "memory", "zip", "tar", "reference", "git", "dir", "data", "simplecache", "filecache", "blockcache"}
    | {"cached"}
)
# Protocols whose URL names the host connected to.
_HOSTED = frozenset({*HTTP, "ftp", "sftp", "ssh", "smb", "webdav", "webhdfs"})
# Protocols that connect to a fixed service unless an endpoint is given.
_SERVICE = {
    "s3": "https://s3.amazonaws.com",
    "s3a": "https://s3.amazonaws.com",
    "gs": "https://storage.googleapis.com",
    "gcs": "https://storage.googleapis.com",
    "github": "https://api.github.com",
    "gist": "https://api.github.com",
}
_TEMPLATE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def connects(part: Part, options: Mapping[str, Any]) -> Reached | Literal[False] | None:
    """The host a link connects to, as a ``host`` place (``None``: it connects to nothing; ``False``: not known).

    HTTP, FTP, SFTP…: the URL's host. S3, GCS, GitHub: the endpoint the
    options give (``endpoint_url``, ``client_kwargs.endpoint_url``), else the
    service's own. Another protocol, a filesystem memconfig does not know:
    ``False``.
    """
    protocol = part.protocol or "file"
    if protocol in _OFFLINE:
        return None
    if protocol in _HOSTED:
        return Reached("host", "", part.text)
    if protocol not in _SERVICE:
        return False
    client = options.get("client_kwargs")
    if isinstance(client, Mapping) and isinstance(client.get("endpoint_url"), str):
        return Reached(
            "host", "client_kwargs.endpoint_url", client["endpoint_url"], _option("client_kwargs.endpoint_url")
        )
    if isinstance(options.get("endpoint_url"), str):
        return Reached("host", "endpoint_url", options["endpoint_url"], _option("endpoint_url"))
    return Reached("host", "", _SERVICE[protocol])


def reach(url: str, options: Mapping[str, Any]) -> Iterator[Reached]:
    """Every place a source with this URL and these (merged) storage options reaches, the URL's links first.

    *options* are as :func:`memconfig.sources.options.options_for` gives them:
    flat for a single URL, keyed by protocol for a chained one.
    """
    parts = chain(url)
    for part in parts:
        protocol = part.protocol or "file"
        own = _mapping(options if len(parts) == 1 else options.get(protocol))
        yield Reached("link", "", part.text, "", part, own)
        if protocol == "dir":
            yield from _dir_target(part, own)
    for part in parts:
        protocol = part.protocol or "file"
        if len(parts) == 1:
            yield from _options(protocol, options, "")
        elif isinstance(options.get(protocol), Mapping):
            yield from _options(protocol, options[protocol], protocol + ".")
    if len(parts) > 1:
        for key in options:
            if not any((part.protocol or "file") == key for part in parts):
                yield Reached("unknown", str(key), str(key), _option(str(key)))


def _options(protocol: str, options: Mapping[str, Any], prefix: str) -> Iterator[Reached]:
    """The places *options* for *protocol* name (each named by its dotted key after *prefix*)."""
    kinds = OPTION_KINDS.get(protocol)
    yield from _walk(kinds, options, options, prefix)


def _walk(
    kinds: Mapping[str, Any] | None, options: Mapping[str, Any], siblings: Mapping[str, Any], prefix: str
) -> Iterator[Reached]:
    # protocols first: a link read under a protocol not allowed is refused for the protocol
    ordered = sorted(options.items(), key=lambda item: kinds is None or kinds.get(item[0]) != "protocol")
    for key, value in ordered:
        name = prefix + str(key)
        kind = kinds.get(key) if kinds is not None else None
        if kind is None:
            yield Reached("unknown", name, name, _option(name))
        elif isinstance(kind, Mapping):
            if isinstance(value, Mapping):
                yield from _walk(kind, value, value, name + ".")
            else:
                yield Reached("unknown", name, name, _option(name))
        elif kind == "inert":
            continue
        elif kind == "link":
            yield from _link(name, value, siblings.get("target_protocol"), siblings.get("target_options"))
        elif kind == "path":
            if isinstance(value, str):
                # a cache folder is made as written, its files are written by fsspec's local filesystem: ``~`` expanded
                for path in dict.fromkeys((value, os.path.expanduser(value))):
                    yield Reached("path", name, path, _option(name))
            else:
                yield Reached("unchecked", name, "it is not a path", _option(name))
        elif kind == "protocol":
            if isinstance(value, str):
                yield Reached("protocol", name, value, _option(name))
        elif kind == "options" and isinstance(value, Mapping):
            yield from _options(_protocol_of_options(key, siblings), value, name + ".")
        elif kind == "host":
            if isinstance(value, str):
                yield Reached("host", name, value, _option(name))
        elif kind == "hosts":
            if isinstance(value, Mapping):
                for scheme, target in value.items():
                    if isinstance(target, str):
                        yield Reached("host", f"{name}.{scheme}", target, _option(f"{name}.{scheme}"))
        elif kind == "references":
            yield from _references(name, value, siblings)


def _link(name: str, value: Any, protocol: Any, options: Any, *, where: str | None = None) -> Iterator[Reached]:
    """A path or URL an option names, its last link read under *protocol* (if a string) with *options*."""
    shown = where or _option(name)
    if not isinstance(value, str):
        yield Reached("unchecked", name, "it is not a path or URL", shown)
        return
    own = _mapping(options)
    parts = chain(value)
    for part in (*parts[:-1], _under(parts[-1], protocol)):
        yield Reached("link", name, part.text, shown, part, own)


def _under(part: Part, protocol: Any) -> Part:
    """*part* as the filesystem of *protocol* reads it, as fsspec's ``protocol=`` does: in place of its own protocol.

    That filesystem takes off only its own prefix: under ``file``, ``memory://../x``
    is the local path ``memory:/../x`` below the working directory.
    """
    if not isinstance(protocol, str) or protocol == part.protocol:
        return part
    path = LocalFileSystem._strip_protocol(part.text) if protocol in LOCAL else part.text
    return Part(protocol, path, f"{protocol}://{path}")


def _dir_target(part: Part, options: Mapping[str, Any]) -> Iterator[Reached]:
    """What a ``dir://`` link reads: its path below the ``path`` option, under ``target_protocol`` (else ``file``)."""
    root = options.get("path")
    if isinstance(root, str):
        joined = f"{root}/{part.path}" if part.path else root
        shown = _option("path") + f" (with {part.text!r})"
        yield from _link(
            "path", joined, options.get("target_protocol") or "file", options.get("target_options"), where=shown
        )


def _references(name: str, value: Any, siblings: Mapping[str, Any]) -> Iterator[Reached]:
    """The targets of a reference mapping: ``{key: [url, offset, size]}``, or version 1's ``refs`` and ``templates``."""
    if not isinstance(value, Mapping):
        why = "a reference file's targets cannot be checked before it is read; give the references inline"
        yield Reached("unchecked", name, why, _option(name))
        return
    refs = value.get("refs", value) if value.get("version") == 1 else value
    templates = {**_mapping(value.get("templates")), **_mapping(siblings.get("template_overrides"))}
    if "gen" in value:
        yield Reached("unchecked", name, "generated references cannot be checked before they are made", _option(name))
        return
    if not isinstance(refs, Mapping):
        yield Reached("unchecked", name, "its refs are not a mapping of keys to references", _option(name))
        return
    protocol, options = siblings.get("remote_protocol"), siblings.get("remote_options")
    default = siblings.get("target")
    targets: list[tuple[str, str | None, bool]] = []  # (key, target as read or None: a template not given, own)
    for key, ref in refs.items():
        if not isinstance(ref, list) or not ref:
            continue  # inline data
        target = ref[0] if ref[0] is not None else default
        if isinstance(target, str):
            target = _TEMPLATE.sub(lambda m: str(templates.get(m.group(1), m.group(0))), target)
            targets.append((key, None if "{{" in target else target, bool(ref[0])))
    # a target with a protocol of its own is read by that filesystem; one without, by remote_protocol's
    # (none given: by the one fsspec infers from the templates and targets)
    written = [target for _, target, own in targets if own and target is not None]
    unmarked = protocol if isinstance(protocol, str) else _inferred_protocol(templates, written)
    for key, target, _ in targets:
        where = _option(name) + f" (reference {key!r})"
        if target is None:
            yield Reached("unchecked", name, "its target is a template not given", where)
            continue
        protocol_of_target: Any = None if split_protocol(target)[0] is not None else unmarked
        yield from _link(name, target, protocol_of_target, options, where=where)


def _inferred_protocol(templates: Mapping[str, Any], written: list[str]) -> str:
    """The filesystem fsspec's ReferenceFileSystem reads a target without a protocol by, given no remote_protocol.

    The last new protocol a template names, unless one of the targets the
    references *written* themselves (in order, templates applied) has a
    protocol not seen yet (none counts, as the local filesystem's): the first such.
    """
    seen: set[str | None] = set()
    inferred: str | None = None
    for template in templates.values():
        found = split_protocol(template)[0] if isinstance(template, str) else None
        if found and found not in seen:
            seen.add(found)
            inferred = found
    for target in written:
        found = split_protocol(target)[0]
        if found not in seen:
            inferred = found or "file"
            break
    return inferred or "file"


def _protocol_of_options(key: str, siblings: Mapping[str, Any]) -> str:
    """The filesystem ``target_options`` / ``remote_options`` are for: the one named beside them, else ``fo``'s."""
    named = siblings.get("remote_protocol" if key == "remote_options" else "target_protocol")
    if isinstance(named, str):
        return named
    fo = siblings.get("fo")
    if key == "target_options" and isinstance(fo, str):
        return chain(fo)[-1].protocol or "file"
    return "file"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _option(name: str) -> str:
    return f"storage option {name!r}"
