"""DLF request signing of the REST client: options, token files and what the signature covers (the value itself
is checked by Java's signer in tests/java/test_java_rest_branches_tokens.py)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import pickle
from pathlib import Path

import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError, NotAuthorizedError, UnsupportedError
from lsmlake.metastore.rest_dlf import DlfKey, DlfSigner, dlf_signer

WHEN = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
KEY = {"dlf.access-key-id": "id-1", "dlf.access-key-secret": "secret-1"}


def signature(headers: dict[str, str]) -> str:
    return headers["Authorization"].rsplit("Signature=", 1)[1]


def test_the_signed_headers_and_what_the_signature_covers() -> None:
    signer = dlf_signer("http://127.0.0.1:1", {**KEY, "dlf.region": "cn-hangzhou"})
    get = signer.headers("GET", "/v1/config", {"warehouse": "lake"}, None, WHEN)
    assert get["x-dlf-date"] == "20260304T050607Z" and get["x-dlf-version"] == "v1"
    assert get["x-dlf-content-sha256"] == "UNSIGNED-PAYLOAD" and "content-md5" not in get
    assert get["Authorization"].startswith(
        "DLF4-HMAC-SHA256 Credential=id-1/20260304/cn-hangzhou/DlfNext/aliyun_v4_request,Signature="
    )
    body = json.dumps({"name": "db"})
    post = signer.headers("POST", "/v1/databases", None, body, WHEN)
    assert post["content-md5"] == base64.b64encode(hashlib.md5(body.encode()).digest()).decode()
    assert post["content-type"] == "application/json"
    # the method, path, query, body and time each change the signature; the query's order does not
    base = signature(signer.headers("GET", "/v1/x", {"a": "1", "b": "2"}, None, WHEN))
    assert base == signature(signer.headers("GET", "/v1/x", {"b": "2", "a": "1"}, None, WHEN))
    others = [
        signer.headers("DELETE", "/v1/x", {"a": "1", "b": "2"}, None, WHEN),
        signer.headers("GET", "/v1/y", {"a": "1", "b": "2"}, None, WHEN),
        signer.headers("GET", "/v1/x", {"a": "1", "b": "3"}, None, WHEN),
        signer.headers("GET", "/v1/x", {"a": "1", "b": "2"}, "{}", WHEN),
        signer.headers("GET", "/v1/x", {"a": "1", "b": "2"}, None, WHEN + dt.timedelta(seconds=1)),
    ]
    assert base not in {signature(h) for h in others}
    other_secret = DlfSigner("cn-hangzhou", DlfKey("id-1", "secret-2"))
    assert signature(other_secret.headers("GET", "/v1/x", {"a": "1", "b": "2"}, None, WHEN)) != base
    sts = DlfSigner("cn-hangzhou", DlfKey("id-1", "secret-1", "sts-1")).headers(
        "GET", "/v1/x", None, None, WHEN
    )
    assert sts["x-dlf-security-token"] == "sts-1"


def test_the_secret_stays_out_of_reprs_and_the_signer_pickles() -> None:
    signer = dlf_signer(
        "http://127.0.0.1:1", {**KEY, "dlf.region": "cn-hangzhou", "dlf.security-token": "sts-x"}
    )
    assert "secret-1" not in repr(signer) and "sts-x" not in repr(signer) and "id-1" in repr(signer)
    copy = pickle.loads(pickle.dumps(signer))
    assert copy.headers("GET", "/v1/x", None, None, WHEN) == signer.headers("GET", "/v1/x", None, None, WHEN)


def test_the_region_comes_from_the_option_or_the_uri() -> None:
    uri = "https://cn-shanghai-vpc.dlf.aliyuncs.com"
    assert dlf_signer(uri, KEY).region == "cn-shanghai"
    assert dlf_signer(uri, {**KEY, "dlf.region": "eu-west-1"}).region == "eu-west-1"
    with pytest.raises(InvalidOptionError, match=r"'dlf\.region' is not set"):
        dlf_signer("http://127.0.0.1:8080", KEY)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"dlf.region": "r-a"}, InvalidOptionError, "neither 'dlf.token-path' nor both"),
        ({"dlf.region": "r-a", "dlf.access-key-id": "x"}, InvalidOptionError, "neither 'dlf.token-path'"),
        (
            {**KEY, "dlf.region": "r-a", "dlf.signing-algorithm": "openapi"},
            UnsupportedError,
            "'default' signer",
        ),
        ({**KEY, "dlf.region": "r-a", "dlf.token-loader": "ecs"}, UnsupportedError, "dlf.token-loader"),
    ],
)
def test_bad_dlf_options_are_refused_naming_them(
    options: dict[str, str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        dlf_signer("http://127.0.0.1:1", options)


def test_a_dlf_catalog_option_is_known_and_a_misspelt_one_refused() -> None:
    with pytest.raises(InvalidOptionError, match=r"unknown catalog option\(s\) \['dlf.acess-key-id'\]"):
        lsmlake.Catalog(
            "lake", options={"metastore": "rest", "uri": "http://127.0.0.1:9", "dlf.acess-key-id": "x"}
        )


def _token_file(path: Path, key_id: str, expires: dt.datetime | None) -> None:
    token = {"AccessKeyId": key_id, "AccessKeySecret": "s", "SecurityToken": "t"}
    if expires is not None:
        token["Expiration"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(token))


def test_a_token_file_is_read_again_only_when_its_token_nears_expiry(tmp_path: Path) -> None:
    path = tmp_path / "token.json"
    now = dt.datetime.now(dt.UTC)
    _token_file(path, "soon-1", now + dt.timedelta(minutes=30))  # within the hour: read before each request
    signer = dlf_signer("http://127.0.0.1:1", {"dlf.region": "r-a", "dlf.token-path": str(path)})
    assert "Credential=soon-1/" in signer.headers("GET", "/v1/x", None, None)["Authorization"]
    _token_file(path, "later-2", now + dt.timedelta(hours=3))
    assert "Credential=later-2/" in signer.headers("GET", "/v1/x", None, None)["Authorization"]
    _token_file(path, "unread-3", None)
    assert "Credential=later-2/" in signer.headers("GET", "/v1/x", None, None)["Authorization"]
    path.write_text("not json")
    fresh = dlf_signer("http://127.0.0.1:1", {"dlf.region": "r-a", "dlf.token-path": str(path)})
    with pytest.raises(NotAuthorizedError, match="cannot read a DLF token from it"):
        fresh.headers("GET", "/v1/x", None, None)


def test_a_signer_is_plain_data_a_commit_environment_can_carry(tmp_path: Path) -> None:
    signer = dlf_signer("http://127.0.0.1:1", {**KEY, "dlf.region": "r-a"})
    copy = pickle.loads(pickle.dumps(signer))
    assert copy == signer and hash(copy) == hash(signer)
    path = tmp_path / "token.json"
    _token_file(path, "file-1", None)
    from_file = dlf_signer("http://127.0.0.1:1", {"dlf.region": "r-a", "dlf.token-path": str(path)})
    assert "Credential=file-1/" in from_file.headers("GET", "/v1/x", None, None)["Authorization"]
    _token_file(path, "file-2", None)
    moved = pickle.loads(pickle.dumps(from_file))  # another process reads the file itself
    assert "Credential=file-2/" in moved.headers("GET", "/v1/x", None, None)["Authorization"]
    assert "Credential=file-1/" in from_file.headers("GET", "/v1/x", None, None)["Authorization"]


def test_query_values_are_trimmed_as_javas_string_trim_does() -> None:
    """DLFDefaultSigner trims each query key and value with Java's String.trim (characters up to U+0020
    only) and writes ``k=`` for a value that is blank but not empty: a page token ending in an
    ideographic or no-break space keeps it, one of spaces only signs as ``k=``, never as ``k``."""
    signer = dlf_signer("http://127.0.0.1:1", {**KEY, "dlf.region": "cn-hangzhou"})

    def sig(query: dict[str, str]) -> str:
        return signature(signer.headers("GET", "/v1/x", query, None, WHEN))

    assert sig({"pageToken": "t \t"}) == sig({"pageToken": "t"})
    assert sig({"pageToken": "t\u3000"}) != sig({"pageToken": "t"})
    assert sig({"pageToken": "t\xa0"}) != sig({"pageToken": "t"})
    assert sig({"pageToken": "\x01t"}) == sig({"pageToken": "t"})
    assert sig({"pageToken": "  "}) != sig({"pageToken": ""})
