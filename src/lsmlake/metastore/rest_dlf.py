"""DLF request signing for the REST catalog (``token.provider=dlf``): Paimon's DLF4-HMAC-SHA256 signature."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lsmlake.errors import InvalidOptionError, NotAuthorizedError, UnsupportedError

ACCESS_KEY_ID = "dlf.access-key-id"
ACCESS_KEY_SECRET = "dlf.access-key-secret"
SECURITY_TOKEN = "dlf.security-token"
REGION = "dlf.region"
TOKEN_PATH = "dlf.token-path"
TOKEN_LOADER = "dlf.token-loader"
SIGNING_ALGORITHM = "dlf.signing-algorithm"

ALGORITHM = "DLF4-HMAC-SHA256"
PRODUCT = "DlfNext"
REQUEST_TYPE = "aliyun_v4_request"
VERSION = "v1"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
DATE_HEADER = "x-dlf-date"
SHA256_HEADER = "x-dlf-content-sha256"
VERSION_HEADER = "x-dlf-version"
SECURITY_TOKEN_HEADER = "x-dlf-security-token"
SIGNED = ("content-md5", "content-type", SHA256_HEADER, DATE_HEADER, VERSION_HEADER, SECURITY_TOKEN_HEADER)
REFRESH_BEFORE_MS = (
    3_600_000  # RESTApi.TOKEN_EXPIRATION_SAFE_TIME_MILLIS: reload a token this close to expiry
)
_REGION_IN_URI = re.compile(r"(?:pre-)?([a-z]+-[a-z]+(?:-\d+)?)")  # DLFAuthProviderFactory's


@dataclass(frozen=True, repr=False)
class DlfKey:
    """An access key (with its STS security token, and when it expires, in epoch ms)."""

    access_key_id: str
    access_key_secret: str
    security_token: str | None = None
    expires_at_ms: int | None = None

    def __repr__(self) -> str:
        return f"DlfKey({self.access_key_id!r}, secret hidden)"


def _key_from_file(path: str) -> DlfKey:
    """A DLFToken JSON file (AccessKeyId, AccessKeySecret, SecurityToken, Expiration ``yyyy-MM-ddTHH:mm:ssZ``)."""
    try:
        with open(path, encoding="utf-8") as f:
            obj: Any = json.load(f)
        expiration = obj.get("Expiration")
        expires = None
        if expiration:
            when = dt.datetime.strptime(str(expiration), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
            expires = int(when.timestamp() * 1000)
        return DlfKey(str(obj["AccessKeyId"]), str(obj["AccessKeySecret"]), obj.get("SecurityToken"), expires)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise NotAuthorizedError(
            f"catalog option '{TOKEN_PATH}' = {path!r}: cannot read a DLF token from it ({type(e).__name__}: "
            f"{e}); it must be a JSON object with AccessKeyId, AccessKeySecret, SecurityToken, Expiration"
        ) from None


def _trim(text: str) -> str:
    """Java's String.trim: the characters up to U+0020 (controls and space) off both ends, no others."""
    return text.strip("".join(map(chr, range(0x21))))


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


class _LoadedKey:
    """The key last read from a token file (per process: a pickled copy reads the file again)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.key: DlfKey | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (_LoadedKey, ())


@dataclass(frozen=True, repr=False)
class DlfSigner:
    """Signs each request as Java Paimon's DLFAuthProvider with its default signer (DLFDefaultSigner)
    does: the signed headers (date, version, unsigned payload, body type and MD5, security token) and an
    ``Authorization`` header over the method, path, sorted query, those headers and the payload mark.
    The key is given (``dlf.access-key-id``/``-secret``) or read from ``dlf.token-path``, again when it
    is within an hour of expiring. Plain data (compared and hashed by its options): it travels with a
    table's commit environment."""

    region: str
    key: DlfKey | None = None
    token_path: str | None = None
    _loaded: _LoadedKey = field(default_factory=_LoadedKey, compare=False, hash=False)

    def __repr__(self) -> str:
        source = f"token file {self.token_path!r}" if self.token_path else repr(self.key)
        return f"DlfSigner(region={self.region!r}, {source})"

    def current_key(self, now_ms: int) -> DlfKey:
        if self.token_path is None:
            if self.key is None:
                raise NotAuthorizedError("REST catalog: no DLF access key to sign requests with")
            return self.key
        with self._loaded.lock:
            key = self._loaded.key
            if key is None or (
                key.expires_at_ms is not None and key.expires_at_ms - now_ms < REFRESH_BEFORE_MS
            ):
                key = self._loaded.key = _key_from_file(self.token_path)
            return key

    def headers(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: str | None,
        now: dt.datetime | None = None,
    ) -> dict[str, str]:
        """The headers that sign one request: ``path`` as sent (encoded, without the query), ``query``
        unencoded, ``body`` the exact text sent."""
        when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
        key = self.current_key(int(time.time() * 1000) if now is None else int(when.timestamp() * 1000))
        stamp = when.strftime("%Y%m%dT%H%M%SZ")
        day = stamp[:8]
        signed = {DATE_HEADER: stamp, SHA256_HEADER: UNSIGNED_PAYLOAD, VERSION_HEADER: VERSION}
        if body:
            signed["content-type"] = "application/json"
            signed["content-md5"] = base64.b64encode(hashlib.md5(body.encode("utf-8")).digest()).decode(
                "ascii"
            )
        if key.security_token is not None:
            signed[SECURITY_TOKEN_HEADER] = key.security_token
        # Java sorts the untrimmed keys, trims each key and value with String.trim, and writes "k=v"
        # whenever the value it trims is not empty
        params = sorted((query or {}).items())
        query_line = "&".join(f"{_trim(k)}={_trim(v)}" if v else _trim(k) for k, v in params)
        lines = [method, path, query_line]
        lines += [f"{k}:{_trim(signed[k])}" for k in sorted(signed) if k in SIGNED]
        lines.append(signed[SHA256_HEADER])
        scope = f"{day}/{self.region}/{PRODUCT}/{REQUEST_TYPE}"
        to_sign = "\n".join([ALGORITHM, stamp, scope, _sha256_hex("\n".join(lines))])
        signing_key = _hmac(("aliyun_v4" + key.access_key_secret).encode("utf-8"), day)
        for part in (self.region, PRODUCT, REQUEST_TYPE):
            signing_key = _hmac(signing_key, part)
        signature = hmac.new(signing_key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
        authorization = f"{ALGORITHM} Credential={key.access_key_id}/{scope},Signature={signature}"
        return {**signed, "Authorization": authorization}


def dlf_signer(uri: str, own: Mapping[str, str]) -> DlfSigner:
    """The signer the catalog options ask for (``token.provider=dlf``)."""
    algorithm = own.get(SIGNING_ALGORITHM) or ("openapi" if "dlfnext" in uri.lower() else "default")
    if algorithm.strip().lower() != "default":
        raise UnsupportedError(
            f"catalog option '{SIGNING_ALGORITHM}' = {algorithm!r}: lsmlake's REST client signs DLF requests "
            "with the 'default' signer (DLF4-HMAC-SHA256) only"
        )
    if own.get(TOKEN_LOADER):
        raise UnsupportedError(
            f"catalog option '{TOKEN_LOADER}' = {own[TOKEN_LOADER]!r}: lsmlake's REST client takes a DLF key from "
            f"'{ACCESS_KEY_ID}'/'{ACCESS_KEY_SECRET}' or a token file ('{TOKEN_PATH}') only"
        )
    region = own.get(REGION)
    if not region:
        found = _REGION_IN_URI.search(uri)
        if found is None:
            raise InvalidOptionError(
                f"token.provider is 'dlf' but the catalog option '{REGION}' is not set and the uri {uri!r} names no region"
            )
        region = found.group(1)
    if own.get(TOKEN_PATH):
        return DlfSigner(region, token_path=own[TOKEN_PATH])
    key_id, secret = own.get(ACCESS_KEY_ID), own.get(ACCESS_KEY_SECRET)
    if not key_id or not secret:
        raise InvalidOptionError(
            f"token.provider is 'dlf' but neither '{TOKEN_PATH}' nor both '{ACCESS_KEY_ID}' and "
            f"'{ACCESS_KEY_SECRET}' are set"
        )
    return DlfSigner(region, DlfKey(key_id, secret, own.get(SECURITY_TOKEN) or None))
