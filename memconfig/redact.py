"""Keep credentials out of everything memconfig prints, logs or raises.

Three kinds of secret reach memconfig: user-info in a URL
(``https://user:pass@host``), signed-URL query parameters
(``X-Amz-Signature=…``, ``sig=…``, ``token=…``) and storage options
(``secret``, ``password``, ``token`` …). Each is replaced by ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MASK", "Redactor", "is_secret_key", "redact_options", "redact_url"]

MASK = "***"

# Query parameters that carry a signature or a bearer secret.
_SECRET_QUERY_KEYS = frozenset(
    k.lower()
    for k in (
        "X-Amz-Signature",
        "X-Amz-Credential",
        "X-Amz-Security-Token",
        "Signature",
        "AWSAccessKeyId",
        "X-Goog-Signature",
        "X-Goog-Credential",
        "GoogleAccessId",
        "sig",
        "signature",
        "token",
        "access_token",
        "id_token",
        "refresh_token",
        "api_key",
        "apikey",
        "key",
        "password",
        "pass",
        "secret",
        "client_secret",
        "code",
        "auth",
        "se",
        "sp",
        "sv",
        "sr",
        "skoid",
        "sktid",
    )
)
# Storage-option keys whose values are secrets (matched on the lower-cased name).
_SECRET_OPTION_PARTS = ("secret", "password", "passwd", "token", "key", "credential", "auth", "signature", "sas")
_SAFE_OPTION_KEYS = frozenset({"anon", "key_prefix", "use_ssl", "requester_pays"})

# Up to the last "@" before the path: a password may hold an unescaped "@", as yarl (aiohttp) accepts.
_USERINFO_RE = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/\s?#]+)@")
_QUERY_RE = re.compile(r"(?P<sep>[?&;])(?P<key>[^=&;#\s?]+)=(?P<value>[^&;#\s\"'<>]*)")


def is_secret_key(name: str) -> bool:
    """Whether a storage-option or header name holds a secret."""
    low = name.lower()
    return low not in _SAFE_OPTION_KEYS and any(part in low for part in _SECRET_OPTION_PARTS)


def redact_url(text: str) -> str:
    """Mask URL user-info and secret query values anywhere in *text*."""
    if "@" in text:
        text = _USERINFO_RE.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    if "=" in text:
        text = _QUERY_RE.sub(
            lambda m: f"{m['sep']}{m['key']}={MASK}" if m["key"].lower() in _SECRET_QUERY_KEYS else m[0], text
        )
    return text


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of storage options with every secret value masked, nested ones too."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, Mapping):
            out[key] = redact_options(value)
        elif is_secret_key(str(key)) and value not in (None, "", False, True):
            out[key] = MASK
        else:
            out[key] = value
    return out


def _secret_values(options: Mapping[str, Any]) -> Iterable[str]:
    for key, value in options.items():
        if isinstance(value, Mapping):
            yield from _secret_values(value)
        elif is_secret_key(str(key)) and isinstance(value, str) and len(value) >= 4:
            yield value


class Redactor:
    """Masks the secrets of one source in any text (errors from libraries included).

    Library error messages can echo a URL or a header verbatim; besides the URL
    rules, every secret value known from the storage options is masked where
    it appears literally.
    """

    __slots__ = ("_values",)

    def __init__(self, options: Mapping[str, Any] | None = None, extra: Iterable[str] = ()) -> None:
        values = set(_secret_values(options or {})) | {v for v in extra if v and len(v) >= 4}
        self._values = tuple(sorted(values, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return redact_url(text)

    def __repr__(self) -> str:
        return f"Redactor({len(self._values)} secrets)"
