"""Object stores: pyarrow's S3 filesystem for bytes, and an S3 conditional put for create-only publishes."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lsmlake.errors import InvalidOptionError, LsmlakeError

# Paimon's option names for S3 (s3.endpoint, s3.access-key, ...), also read from the usual AWS_* variables.
# ``s3.create.conditional.enabled`` is Hadoop S3A's ``fs.s3a.create.conditional.enabled`` as Paimon spells it
# (``s3.*`` becomes ``fs.s3a.*``): ``false`` for a store that does not honour ``If-None-Match: *``
CONDITIONAL_CREATE = "s3.create.conditional.enabled"
S3_OPTIONS = (
    "s3.endpoint",
    "s3.access-key",
    "s3.secret-key",
    "s3.region",
    "s3.session-token",
    CONDITIONAL_CREATE,
)


@dataclass(frozen=True)
class S3Settings:
    """Where and as whom to reach S3 (or an S3-compatible store)."""

    endpoint: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    region: str | None = None
    session_token: str | None = field(default=None, repr=False)
    # False: the store has no conditional put; create-only publishes then need a catalog lock
    conditional_create: bool = True

    @staticmethod
    def of(options: Mapping[str, str]) -> S3Settings:
        unknown = [k for k in options if k.startswith("s3.") and k not in S3_OPTIONS]
        if unknown:
            raise InvalidOptionError(f"unknown storage option(s) {unknown}; known: {list(S3_OPTIONS)}")
        return S3Settings(
            options.get("s3.endpoint"),
            options.get("s3.access-key"),
            options.get("s3.secret-key"),
            options.get("s3.region"),
            options.get("s3.session-token"),
            _boolean(options, CONDITIONAL_CREATE, default=True),
        )

    def filesystem(self) -> pafs.S3FileSystem:
        kwargs: dict[str, Any] = {}
        if self.endpoint:
            parsed = urlparse(self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}")
            kwargs["endpoint_override"] = parsed.netloc
            kwargs["scheme"] = parsed.scheme
        if self.access_key:
            kwargs["access_key"] = self.access_key
            kwargs["secret_key"] = self.secret_key
            kwargs["session_token"] = self.session_token
        if self.region:
            kwargs["region"] = self.region
        # a small file is then one PUT, not a three-request multipart upload; errors surface at close
        kwargs["allow_delayed_open"] = True
        return pafs.S3FileSystem(**kwargs)


def _boolean(options: Mapping[str, str], key: str, *, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise InvalidOptionError(f"storage option {key!r} = {value!r} is not a boolean (true or false)")
    return value.strip().lower() == "true"


def boto3_available() -> bool:
    return importlib.util.find_spec("boto3") is not None


def _boto3_client(settings: S3Settings) -> Any:
    try:
        import boto3
    except ImportError:  # optional: the `s3` extra
        raise LsmlakeError(
            "committing to S3 needs boto3 for conditional puts, which the 's3' extra installs: "
            "pip install '.[s3]' in an lsmlake checkout (or pip install boto3)"
        ) from None
    return boto3.client(
        "s3",
        endpoint_url=settings.endpoint,
        aws_access_key_id=settings.access_key,
        aws_secret_access_key=settings.secret_key,
        aws_session_token=settings.session_token,
        region_name=settings.region,
    )


class S3GetObject:
    """A whole object in one ``GET`` (pyarrow's input streams send a ``HEAD`` for the size first)."""

    def __init__(self, settings: S3Settings) -> None:
        self._client = _boto3_client(settings)

    def __call__(self, path: str) -> bytes:
        bucket, _, key = path.partition("/")
        try:
            return cast(bytes, self._client.get_object(Bucket=bucket, Key=key)["Body"].read())
        except self._client.exceptions.NoSuchKey:
            raise FileNotFoundError(path) from None


class S3HeadObject:
    """Whether a key is an object, in one ``HEAD`` (pyarrow's file info adds a ``LIST`` on a miss, to
    see whether the key is a directory)."""

    def __init__(self, settings: S3Settings) -> None:
        self._client = _boto3_client(settings)

    def __call__(self, path: str) -> bool:
        bucket, _, key = path.partition("/")
        try:
            self._client.head_object(Bucket=bucket, Key=key)
        except self._client.exceptions.ClientError as e:
            if e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return False
            raise
        return True


class S3DeleteObject:
    """One ``DELETE`` (pyarrow's delete sends a ``HEAD`` first and a ``PUT`` that re-creates the parent
    directory's marker object after it); deleting a missing key succeeds."""

    def __init__(self, settings: S3Settings) -> None:
        self._client = _boto3_client(settings)

    def __call__(self, path: str) -> None:
        bucket, _, key = path.partition("/")
        self._client.delete_object(Bucket=bucket, Key=key)


class S3DeleteObjects:
    """Up to 1,000 keys of one bucket deleted in one ``POST ?delete``; deleting missing keys succeeds."""

    def __init__(self, settings: S3Settings) -> None:
        self._client = _boto3_client(settings)

    def __call__(self, bucket: str, keys: list[str]) -> None:
        reply = self._client.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
        )
        errors = reply.get("Errors") or []
        if errors:
            first = errors[0]
            raise OSError(
                f"could not delete {len(errors)} of {len(keys)} object(s) in bucket {bucket}, e.g. "
                f"{first.get('Key')}: {first.get('Code')} {first.get('Message')}"
            )


class S3ConditionalPut:
    """``PUT`` with ``If-None-Match: *``: the object is created only if no object has that key."""

    def __init__(self, settings: S3Settings) -> None:
        self._client = _boto3_client(settings)

    def __call__(self, path: str, data: bytes) -> bool:
        bucket, _, key = path.partition("/")
        try:
            self._client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except self._client.exceptions.ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or e.response.get(
                "ResponseMetadata", {}
            ).get("HTTPStatusCode") in (409, 412):
                return False
            raise
