"""Masking secrets: URL user-info, secret query parameters, storage options, and free text from libraries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memconfig.sources.redact import (
    MASK,
    Redactor,
    is_secret_key,
    redact_options,
    redact_text,
    redact_url,
    url_secrets,
    variable_secrets,
)

SECRET = "S3CRET-value"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, id=name)
        for name in (
            "auth_token",
            "private_token",
            "access_key",
            "api-key",
            "apikey",
            "jwt",
            "session",
            "sig",
            "token",
            "password",
            "client_secret",
            "X-Amz-Signature",
            "x-amz-signature",
            "X-Amz-Credential",
            "X-Amz-Security-Token",
            "Signature",
            "AWSAccessKeyId",
            "GoogleAccessId",
            "X-Goog-Signature",
            "code",
            "pwd",
            "hdnts",
            "hdnea",
        )
    ],
)
def test_secret_query_parameters_are_masked(name: str) -> None:
    """A query parameter whose name contains a secret part, or is a well-known signed-URL field, is masked."""
    assert redact_url(f"https://h/a.md?part=1&{name}={SECRET}") == f"https://h/a.md?part=1&{name}={MASK}"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, id=name)
        for name in ("se", "sp", "sv", "sr", "st", "spr", "part", "Policy", "X-Amz-Date", "state", "encoding")
    ],
)
def test_harmless_query_parameters_are_kept(name: str) -> None:
    """Azure SAS fields other than ``sig`` and other plain parameters are shown as written."""
    url = f"https://h/a.md?{name}=2030-01-01&x=1"

    assert redact_url(url) == url


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        pytest.param(
            "https://fn.azurewebsites.net/api/agents?code=SECRETfunctionKEY123",
            "SECRETfunctionKEY123",
            id="azure-function-key",
        ),
        pytest.param(
            "https://cdn.example.com/AGENTS.md?hdnts=exp=1700000000~acl=/*~hmac=deadbeefcafe",
            "deadbeefcafe",
            id="akamai-token",
        ),
        pytest.param("https://files.example.com/AGENTS.md?dl=1&pwd=SECRETpw99", "SECRETpw99", id="pwd"),
    ],
)
def test_capability_query_values_are_masked_whole(url: str, secret: str) -> None:
    """Function keys, Akamai tokens (which hold ``=`` and ``/``) and ``pwd`` are masked up to the next parameter."""
    redacted = redact_url(url)

    assert secret not in redacted
    assert redacted.endswith("=***")


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(JWT, id="signed"),
        pytest.param("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", id="unsigned"),
        pytest.param("eyJhbGciOiJSU0EtT0FFUCJ9.a2V5.aXY.Y2lwaGVy.dGFn", id="encrypted"),
    ],
)
def test_a_jwt_in_a_query_is_masked_by_its_look(value: str) -> None:
    """A JWT (dot-joined base64url segments, a JSON header first) is masked whatever its parameter is called."""
    assert redact_url(f"https://h/a.md?assertion={value}&x=1") == f"https://h/a.md?assertion={MASK}&x=1"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("1.2.3", id="version"),
        pytest.param("v2.10.0-rc1", id="tag"),
        pytest.param("Report.Final.v2.draft.md", id="file-name"),
        pytest.param("MyTeamGuidelines2024.Final.md", id="long-file-name"),
        pytest.param("docs.example.com", id="host"),
        pytest.param("eyJ.md", id="short"),
    ],
)
def test_dotted_values_that_are_not_tokens_are_kept(value: str) -> None:
    """File names, versions and hosts hold dots and mixed case but are not JWTs: shown as written."""
    url = f"https://h/a.md?v={value}"
    assert redact_url(url) == url


FRAGMENTS = (
    "x",
    "id",
    "-",
    "_",
    "se",
    "date",
    "Token",
    "key",
    "sig",
    "auth",
    "Session",
    "pass",
    "anon",
    "GoogleAccessId",
)


@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map("".join))
def test_query_rule_and_option_rule_agree(name: str) -> None:
    """A query parameter is masked exactly when the same name as a storage option would be."""
    masked = redact_url(f"https://h/a.md?{name}={SECRET}") != f"https://h/a.md?{name}={SECRET}"

    assert masked is is_secret_key(name)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param("git://prompts:v1@AGENTS.md", "git://prompts:v1@AGENTS.md", id="git-ref"),
        pytest.param("zip://a.md::git://repo:main@b.zip", "zip://a.md::git://repo:main@b.zip", id="chained-git"),
        pytest.param("https://u:pw@h/a.md", f"https://{MASK}@h/a.md", id="https"),
        pytest.param("git+https://u:pw@h/r.git", f"git+https://{MASK}@h/r.git", id="git-over-https"),
    ],
)
def test_git_urls_carry_no_user_info(url: str, expected: str) -> None:
    """``git://repo:ref@path`` names a repository and a ref, so it is not masked as user-info."""
    assert redact_url(url) == expected


def test_url_secrets_finds_what_redact_url_masks() -> None:
    """url_secrets gives user-info, its password (also decoded) and secret query values; none for git refs."""
    found = url_secrets("zip://a::https://reader:p%40ss@h/b.zip?token=T0KEN&part=1 git://repo:v1@c.md")

    assert set(found) == {"reader:p%40ss", "p%40ss", "reader:p@ss", "p@ss", "T0KEN"}


def test_redact_options_masks_secrets_under_any_key() -> None:
    """Values under secret names are masked whole, and every other string as a URL, nested ones too."""
    options = {
        "endpoint_url": "https://minio:PW_IN_ENDPOINT@minio.local:9000",
        "client_kwargs": {
            "headers": {"Cookie": "session=COOKIE_SECRET", "X-Session": "SESSION_ID", "Accept": "text/plain"},
            "region_name": "eu-west-1",
        },
        "mirrors": ["https://h/a.md?private_token=QTOKEN"],
        "anon": False,
    }

    assert redact_options(options) == {
        "endpoint_url": f"https://{MASK}@minio.local:9000",
        "client_kwargs": {
            "headers": {"Cookie": MASK, "X-Session": MASK, "Accept": "text/plain"},
            "region_name": "eu-west-1",
        },
        "mirrors": [f"https://h/a.md?private_token={MASK}"],
        "anon": False,
    }


@pytest.mark.parametrize(
    ("options", "message", "secret"),
    [
        pytest.param(
            {"endpoint_url": "https://minio:PW_IN_ENDPOINT@minio.local"},
            "login as minio with PW_IN_ENDPOINT refused",
            "PW_IN_ENDPOINT",
            id="user-info-password",
        ),
        pytest.param(
            {"client_kwargs": {"base_url": "https://h/?auth_token=QTOKEN1"}},
            "bad token QTOKEN1",
            "QTOKEN1",
            id="query-token",
        ),
        pytest.param(
            {"client_kwargs": {"headers": {"Cookie": "session=COOKIE_SECRET"}}},
            "sent Cookie: session=COOKIE_SECRET",
            "session=COOKIE_SECRET",
            id="cookie-header",
        ),
    ],
)
def test_redactor_masks_secrets_found_inside_option_values(
    options: dict[str, object], message: str, secret: str
) -> None:
    """Free text (a library's error message) loses secrets that sat inside non-secret-looking options."""
    assert secret not in Redactor(options)(message)
    assert MASK in Redactor(options)(message)


def test_redactor_leaves_short_values_alone() -> None:
    """Values shorter than four characters are not masked in free text, where they would hit ordinary words."""
    redact = Redactor({"token": "abc"}, ["xy"])

    assert redact("abc xy") == "abc xy"
    assert repr(redact) == "Redactor(0 secrets)"


@pytest.mark.parametrize(
    "password",
    [
        pytest.param("pa ss-S3CRET", id="space"),
        pytest.param("pa/ss-S3CRET", id="slash"),
        pytest.param("pa#ss-S3CRET", id="hash"),
        pytest.param("pa?ss-S3CRET", id="question-mark"),
        pytest.param("pa@/:ss-S3CRET", id="at-slash-colon"),
    ],
)
def test_a_password_that_makes_the_url_invalid_is_still_masked(password: str) -> None:
    """A source URL whose password holds a space or an unescaped ``/``, ``?``, ``#`` is masked up to its last ``@``."""
    url = f"http://reader:{password}@127.0.0.1:8080/a.md?token=T0KEN"

    assert redact_url(url) == f"http://{MASK}@127.0.0.1:8080/a.md?token={MASK}"
    assert password in url_secrets(url)
    assert redact_url(f"zip://a.md::{url}") == f"zip://a.md::http://{MASK}@127.0.0.1:8080/a.md?token={MASK}"


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://unpkg.com/@scope/pkg/AGENTS.md", id="at-in-path"),
        pytest.param("https://unpkg.com:443/@scope/pkg/AGENTS.md", id="port-then-at-in-path"),
        pytest.param("https://h/users/bob:x@y/AGENTS.md", id="colon-and-at-in-path"),
        pytest.param("git://prompts:v1@AGENTS.md", id="git-ref"),
    ],
)
def test_an_at_sign_in_a_path_is_not_user_info(url: str) -> None:
    """Reading a whole URL up to its last ``@`` never takes a host, a port or a path for a password."""
    assert redact_url(url) == url
    assert url_secrets(url) == []


def test_a_valid_url_keeps_an_at_sign_after_its_host() -> None:
    """In a URL with user-info and a host, a later ``@`` (in the path or a nested URL) is left where it is."""
    assert redact_url("http://u:pw@h/a@b.md") == f"http://{MASK}@h/a@b.md"
    assert redact_url("http://u:pw@h/x?next=http://a:b@c") == f"http://{MASK}@h/x?next=http://{MASK}@c"


def test_free_text_is_masked_only_by_the_strict_rule() -> None:
    """Library messages are not one URL: a space still ends user-info there, so words are never taken for it."""
    message = "GET http://h/a.md failed: user:bob@example.com has no access"

    assert redact_url(message) == message


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"401 Authorization: Bearer {SECRET}", f"401 Authorization: {MASK}"),
        (
            f"headers={{'Authorization': 'Basic {SECRET}', 'Accept': 'text/plain'}}",
            f"headers={{'Authorization': '{MASK}', 'Accept': 'text/plain'}}",
        ),
        (f"Proxy-Authorization=Digest user={SECRET}", f"Proxy-Authorization={MASK}"),
        (f"Cookie: session={SECRET}; theme=dark", f"Cookie: {MASK}"),
        (f"sent bearer {SECRET} to h", f"sent bearer {MASK} to h"),
        ("Basic dXNlcjpwYXNz", f"Basic {MASK}"),
        (f"remote_error token={SECRET} after 3 tries", f"remote_error token={MASK} after 3 tries"),
        (f"password = {SECRET}, user = bob", f"password = {MASK}, user = bob"),
        (f'{{"api_key": "{SECRET} with a space", "user": "bob"}}', f'{{"api_key": "{MASK}", "user": "bob"}}'),
        (f"client_secret: {SECRET}", f"client_secret: {MASK}"),
        (f"X-Amz-Signature={SECRET}&X-Amz-Date=20261201", f"X-Amz-Signature={MASK}&X-Amz-Date=20261201"),
        (f"https://u:{SECRET}@h/x?sig={SECRET}&page=2", f"https://{MASK}@h/x?sig={MASK}&page=2"),
    ],
)
def test_free_text_credentials_are_masked_in_forms_that_are_not_urls(text: str, masked: str) -> None:
    """A foreign log's text: a credential header, an auth scheme's credentials, a secret-looking name's value."""
    found = redact_text(text)

    assert found == masked
    assert redact_text(found) == found


@pytest.mark.parametrize(
    "text",
    [
        "Basic authentication required",
        "GET https://h:443/a.md at 2026-12-01T09:00:00.000000Z: 404",
        "reason: over_budget, chars=120 budget=100",
        "s3://bucket/keys/notes.md",
    ],
)
def test_free_text_without_credentials_is_kept(text: str) -> None:
    assert redact_text(text) == text


@given(st.text(alphabet="a=\"':; &?@/Bearer\n", max_size=200))
def test_redact_text_never_fails_and_is_stable(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


def test_variable_secrets_are_the_values_of_secret_looking_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values of ``${API_TOKEN}``-like references anywhere in a tree are found; ``${HOME}``-like ones are not."""
    monkeypatch.setenv("TEAM_API_TOKEN", "tok-value-1")
    monkeypatch.setenv("PLAIN_NAME", "plain-value")
    tree = {
        "sources": [{"name": "team ${TEAM_API_TOKEN}", "url": "x.md"}, "${PLAIN_NAME}.md"],
        "storage": {"http": {"headers": {"X-Custom": "${TEAM_API_TOKEN}", "X-Default": "${GIST_SECRET:-dflt-9}"}}},
        "broken": "${UNSET_TOKEN}",
    }

    assert sorted(variable_secrets(tree)) == ["dflt-9", "tok-value-1", "tok-value-1"]
