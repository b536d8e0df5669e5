"""Keep credentials out of everything memconfig prints, logs or raises.

Three kinds of secret reach memconfig: user-info in a URL
(``https://user:pass@host``), signed-URL query parameters
(``X-Amz-Signature=…``, ``sig=…``, ``auth_token=…``) and storage options
(``secret``, ``password``, ``token``, a ``Cookie`` header …). Each is
replaced by ``***``.

One rule says which names hold a secret, for query parameters and option
keys alike (:func:`is_secret_key`): the lower-cased name contains a part such
as ``token``, ``key`` or ``sig``, or is a well-known signed-URL field.

User-info is found two ways. In free text (a library's error message) it is
what sits between ``scheme://`` and ``@`` with no space, ``/``, ``?`` or ``#``
in between. A text that *is* one URL (a source's location) is read more
widely, up to its last ``@``: a password written with a space or an unescaped
``/``, ``?`` or ``#`` makes an invalid URL, and is still a password.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from ..interpolation import expand_vars_traced
from ..lazy import compiled_when_used
from ..shapes import is_mapping

__all__ = [
    "MASK",
    "Redactor",
    "every_value",
    "is_secret_key",
    "mask",
    "redact_options",
    "redact_text",
    "redact_url",
    "secret_values_in",
    "url_secrets",
    "userinfo_spans",
    "variable_secrets",
]

MASK = "***"

# A name holds a secret when its lower-cased form contains one of these.
_SECRET_PARTS = (
    "token",
    "secret",
    "sig",
    "key",
    "auth",
    "pass",
    "session",
    "jwt",
    "credential",
    "cookie",
    "sas",
)
# Signed-URL and capability fields that are secret whatever the parts above say.
_SECRET_NAMES = frozenset(
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
        # Azure Functions' function key. Masking it makes two URLs that differ only in ``code``
        # (an OAuth authorization code, say) the same source: the safer error of the two.
        "code",
        "pwd",
        "hdnts",  # Akamai token authorization (query and cookie)
        "hdnea",
        "hmac",
        "verify",
        "hash",
    )
)
# Each pattern is compiled when first used (a millisecond together, at every start otherwise): a source's
# URL seldom holds an "@" or a "=", and only an audit masks free text.
# By rule, beside the names: a query value that looks like a signature or a token, whatever it is called —
# 20 or more characters of base64, hex or percent-encoding, with digits and letters of both cases (or 32 hex);
# or a JWT: three (signed) or five (encrypted) base64url segments joined by ".", the first a JSON header ("eyJ"),
# so that dotted file names and versions are kept.
_token_value_re = compiled_when_used(
    r"(?=[A-Za-z0-9+/=_%-]{20,}$)(?:(?=.*\d)(?=.*[a-z])(?=.*[A-Z]).*|[0-9a-fA-F]{32,})"
    r"|eyJ[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*){2}(?:(?:\.[A-Za-z0-9_-]*){2})?$"
)
_SAFE_NAMES = frozenset({"anon", "key_prefix", "use_ssl", "requester_pays"})
_MIN_SECRET = 4  # shorter values are not masked inside free text: they would mask ordinary words

# Up to the last "@" before the path: a password may hold an unescaped "@", as yarl (aiohttp) accepts.
_userinfo_re = compiled_when_used(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/\s?#]+)@")
_query_re = compiled_when_used(r"(?P<sep>[?&;])(?P<key>[^=&;#\s?]+)=(?P<value>[^&;#\s\"'<>]*)")
# fsspec's git URLs read ``git://repo:ref@path``: that is a repository and a ref, not user-info.
_NO_USERINFO = frozenset({"git://"})
# A whole URL (one line, from its scheme on); each ``::``-chained part is read on its own.
_whole_url_re = compiled_when_used(r"[a-zA-Z][a-zA-Z0-9+.\-]*://[^\n]*")
_scheme_re = compiled_when_used(r"[a-zA-Z][a-zA-Z0-9+.\-]*://")
# Before a path's "@": a host and port (``unpkg.com:443/@scope/x.md``), which is not user-info.
_NO_HOST = frozenset({"", "/", "?", "#", "@", ":"})  # what cannot start a host: the "@" before it was not the last
_host_port_re = compiled_when_used(r"[^:/?#@\s]*:\d*(?:[/?#]|$)")


def is_secret_key(name: str) -> bool:
    """Whether a storage-option, header or query-parameter name holds a secret."""
    low = name.lower()
    return low in _SECRET_NAMES or (low not in _SAFE_NAMES and any(part in low for part in _SECRET_PARTS))


def _userinfo(match: re.Match[str]) -> str | None:
    return None if match["scheme"].lower() in _NO_USERINFO else match["userinfo"]


def _whole_url_userinfo(text: str) -> list[tuple[int, int]]:
    """Where user-info sits in *text* when it is one URL, read up to the last ``@`` of each chained part.

    Only where the free-text rule finds no user-info followed by a host at the
    part's start (a valid URL is read as usual, so an ``@`` in its path or
    query stays there);
    only a ``user:password`` form whose user holds no ``/``, ``?`` or ``#``;
    and not a host and port followed by a path that holds an ``@``.
    """
    if "@" not in text or _whole_url_re().fullmatch(text) is None:
        return []
    spans = []
    start = 0
    for part in text.split("::"):
        scheme = _scheme_re().match(part)
        at = part.rfind("@")
        found = _userinfo_re().match(part)
        usual = found is not None and part[found.end() : found.end() + 1] not in _NO_HOST  # then a host follows
        if scheme is not None and not usual and scheme[0].lower() not in _NO_USERINFO and at > scheme.end():
            userinfo = part[scheme.end() : at]
            user = userinfo.split(":", 1)[0]
            if ":" in userinfo and not any(c in user for c in "/?#") and _host_port_re().match(userinfo) is None:
                spans.append((start + scheme.end(), start + at))
        start += len(part) + 2
    return spans


def redact_url(text: str) -> str:
    """Mask URL user-info and secret query values anywhere in *text*."""
    if "@" in text:
        for begin, end in reversed(_whole_url_userinfo(text)):
            text = text[:begin] + MASK + text[end:]
        text = _userinfo_re().sub(lambda m: m[0] if _userinfo(m) is None else f"{m['scheme']}{MASK}@", text)
    if "=" in text:
        text = _query_re().sub(lambda m: f"{m['sep']}{m['key']}={MASK}" if _secret_query(m) else m[0], text)
    return text


def _secret_query(match: re.Match[str]) -> bool:
    """Whether a query parameter's value is a secret: by its name, or by its look (:func:`_token_value_re`)."""
    return is_secret_key(match["key"]) or _token_value_re().match(match["value"]) is not None


# Free text another program wrote (a foreign log's line) may carry credentials in forms that are not URLs.
# A credential header's value, whole: quoted up to its closing quote, else to the end of the line.
_header_re = compiled_when_used(
    r"(?<![\w-])(?P<name>(?:proxy-)?authorization|(?:set-)?cookie)(?P<quote>[\"']?)(?P<op>\s*[:=]\s*)"
    r"(?:(?P<open>[\"'])[^\"'\n]{0,4096}(?P=open)?|[^\n]+)",
    re.IGNORECASE,
)
# An HTTP auth scheme and its credentials (RFC 9110's token68): ``Bearer …`` always, ``Basic …`` when it looks encoded.
_auth_scheme_re = compiled_when_used(
    r"\b(?P<scheme>bearer|basic)(?P<space>\s+)(?P<credentials>[A-Za-z0-9._~+/-]+=*)", re.IGNORECASE
)
_encoded_re = compiled_when_used(r"[0-9+/=]|.[A-Z]")  # a digit, base64's symbols, or a capital letter past the first
# ``name=value``, ``name: value``, ``"name": "value"`` (JSON, a Python dict's repr), for a secret-looking name.
_assignment_re = compiled_when_used(
    r"(?<![\w.-])(?P<key>[A-Za-z_][\w.-]*)(?P<quote>[\"']?)(?P<op>\s*=\s*|\s*:\s+|:(?=[\"']))"
    r"(?:\"(?P<double>[^\"\n]{0,256})\"|'(?P<single>[^'\n]{0,256})'|(?P<open>[\"']?)(?P<bare>[^\s&,;)}\]\"'<>]+))"
)


def _masked_header(match: re.Match[str]) -> str:
    head = f"{match['name']}{match['quote']}{match['op']}"
    return f"{head}{match['open']}{MASK}{match['open']}" if match["open"] else f"{head}{MASK}"


def _masked_scheme(match: re.Match[str]) -> str:
    credentials = match["credentials"]
    if match["scheme"].lower() == "basic" and len(credentials) < 16 and _encoded_re().search(credentials) is None:
        return match[0]  # "Basic authentication": a word, not base64
    return f"{match['scheme']}{match['space']}{MASK}"


def _masked_assignment(match: re.Match[str]) -> str:
    if not is_secret_key(match["key"]):
        return match[0]
    head = f"{match['key']}{match['quote']}{match['op']}"
    if match["double"] is not None:
        return f'{head}"{MASK}"'
    if match["single"] is not None:
        return f"{head}'{MASK}'"
    return f"{head}{match['open']}{MASK}"


def redact_text(text: str) -> str:
    """Mask every credential form free text may hold: :func:`redact_url`'s, and the ones that are not URLs.

    Those are a credential header's value (``Authorization: …``, ``Cookie: …``),
    an auth scheme's credentials (``Bearer …``, an encoded ``Basic …``) and a
    value given to a secret-looking name (``password=…``, ``api_key: …``,
    ``"token": "…"``, ``X-Amz-Signature=…`` outside a query). For text nobody
    vetted (a foreign log): a word after such a name is masked too, the safer error.
    """
    text = redact_url(text)
    if ":" in text or "=" in text:
        text = _header_re().sub(_masked_header, text)
        text = _assignment_re().sub(_masked_assignment, text)
    return _auth_scheme_re().sub(_masked_scheme, text)


def userinfo_spans(text: str) -> list[tuple[int, int]]:
    """Where URL user-info sits in *text*: ``(start, end)`` of each part :func:`redact_url` masks."""
    return [match.span("userinfo") for match in _userinfo_re().finditer(text) if _userinfo(match) is not None]


def url_secrets(text: str) -> list[str]:
    """The secrets :func:`redact_url` masks in *text* (user-info, its password, secret query values).

    Each is also given percent-decoded, as a library may echo the URL decoded.
    """
    found: list[str] = []
    if "@" in text:
        for start, end in [*_whole_url_userinfo(text), *userinfo_spans(text)]:
            userinfo = text[start:end]
            found += [userinfo, *userinfo.split(":", 1)[1:]]
    if "=" in text:
        found += [m["value"] for m in _query_re().finditer(text) if _secret_query(m)]
    return found + [unquote(s) for s in found if unquote(s) != s]


def mask(text: str, secrets: Iterable[str]) -> str:
    """*text* with each of *secrets* (the longest first, so one inside another goes whole) as ``***``."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def variable_secrets(tree: Any) -> list[str]:
    """The values that ``${VAR}`` references with secret-looking names (``${API_TOKEN}``) put into *tree*'s strings.

    A config keeps its strings expanded, where nothing says any more which
    part came from a variable: these are what must still be masked wherever
    such a string is shown (a source's name, a header under a harmless name).
    *tree* is the config as written; a string that does not expand is skipped
    (the config reports it).
    """
    found: list[str] = []
    stack = [tree]
    seen: set[int] = set()  # a mapping built in Python may hold itself
    while stack:  # no recursion: a mapping built in Python may nest deep
        value = stack.pop()
        if isinstance(value, str):  # the usual value, asked first: a str tested against an ABC is a slow "no"
            if "${" in value:
                try:
                    found += [sub.value for sub in expand_vars_traced(value)[1] if is_secret_key(sub.name)]
                except ValueError:
                    continue
            continue
        if isinstance(value, list | tuple):
            if id(value) not in seen:
                seen.add(id(value))
                stack.extend(value)
        elif is_mapping(value) and id(value) not in seen:
            seen.add(id(value))
            stack.extend(value.values())
    return found


def every_value(tree: Any) -> list[str]:
    """Every string *tree* holds, nested ones too: a credentials entry's values, all masked whatever their names."""
    found: list[str] = []
    stack = [tree]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if len(value) >= _MIN_SECRET:
                found.append(value)
        elif is_mapping(value):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return found


def _redact_value(key: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact_options(value)
    if is_secret_key(key) and value not in (None, "", False, True):
        return MASK
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, list | tuple):
        return type(value)(_redact_value("", v) for v in value)
    return value


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of storage options with every secret masked, nested ones too.

    A value under a secret name is masked whole; any other string is masked as
    a URL would be (``endpoint_url: https://user:***@host``).
    """
    return {key: _redact_value(str(key), value) for key, value in options.items()}


def secret_values_in(options: Mapping[str, Any]) -> Iterator[str]:
    """The secret values *options* hold: under a secret-looking name, or inside a URL-like value."""
    for key, value in options.items():
        yield from _secrets_in(str(key), value)


def _secrets_in(key: str, value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        yield from secret_values_in(value)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _secrets_in("", item)
    elif isinstance(value, str):
        if is_secret_key(key):
            yield value
        yield from url_secrets(value)


class Redactor:
    """Masks the secrets of one source in any text (errors from libraries included).

    Library error messages can echo a URL or a header verbatim; besides the URL
    rules, every secret value known from the storage options (under a secret
    name, or inside a URL-like value) is masked where it appears literally.
    """

    __slots__ = ("_values",)

    def __init__(self, options: Mapping[str, Any] | None = None, extra: Iterable[str] = ()) -> None:
        found = [*secret_values_in(options or {}), *extra]
        values = {v for v in found if len(v) >= _MIN_SECRET}
        self._values = tuple(sorted(values, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        return redact_url(self.mask_known(text))

    def mask_known(self, text: str) -> str:
        """*text* with each secret value known masked, and nothing else: for a text that cannot hold a URL."""
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def __repr__(self) -> str:
        return f"Redactor({len(self._values)} secrets)"
