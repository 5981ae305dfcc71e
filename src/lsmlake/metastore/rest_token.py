"""Data tokens of the REST catalog (``data-token.enabled``): a table's FileIO built from the credentials its server gives."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from lsmlake.core.fileio import FileIO
from lsmlake.errors import MetastoreError
from lsmlake.metastore.rest_client import RestClient

# RESTApi.TOKEN_EXPIRATION_SAFE_TIME_MILLIS: a token this close to its expiry is fetched again
REFRESH_BEFORE_MS = 3_600_000
STORAGE_PREFIX = (
    "s3."  # the token's keys lsmlake's FileIO takes (Paimon's s3.* options); others are for other stores
)


@dataclass(frozen=True)
class TableToken:
    """One table's data token: FileIO options (the server's credentials) and when they expire (epoch ms)."""

    options: tuple[tuple[str, str], ...]
    expires_at_ms: int

    def __repr__(self) -> str:  # the values are credentials
        names = ", ".join(k for k, _ in self.options)
        return f"TableToken([{names}] (values hidden), expires_at_ms={self.expires_at_ms})"


@dataclass(frozen=True)
class TokenSource:
    """Where a table's data token comes from: ``GET .../tables/<table>/token`` of its REST server."""

    client: RestClient
    path: str
    what: str

    def fetch(self) -> TableToken:
        answer = self.client.get(self.path, what=self.what)
        token = answer.get("token") if isinstance(answer, Mapping) else None
        expires = answer.get("expiresAtMillis") if isinstance(answer, Mapping) else None
        if not isinstance(token, Mapping) or not isinstance(expires, int):
            names = sorted(answer) if isinstance(answer, Mapping) else type(answer).__name__
            raise MetastoreError(
                f"REST catalog: {self.what}: the data token answer is not a GetTableTokenResponse (a 'token' "
                f"object and 'expiresAtMillis'); it has {names}"
            )
        return TableToken(tuple(sorted((str(k), str(v)) for k, v in token.items())), expires)


class _FromToken:
    """A FileIO attribute read from the FileIO of the current token (assignments are ignored: FileIO's
    constructor sets them)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, io: TokenFileIO | None, owner: type) -> Any:
        if io is None:
            return self
        return getattr(io.current(), self.name)

    def __set__(self, io: TokenFileIO, value: Any) -> None:
        pass


class TokenFileIO(FileIO):
    """A table's FileIO whose credentials are its REST server's data token, as Java's RESTTokenFileIO:
    every file operation uses the FileIO of the current token, fetched again (and the FileIO rebuilt
    when it changed) once it is within an hour of expiring. The token's ``s3.*`` options override the
    catalog's (``storage``)."""

    fs = _FromToken()
    _conditional_put = _FromToken()
    _get_object = _FromToken()
    _delete_object = _FromToken()
    _head_object = _FromToken()
    _delete_objects = _FromToken()

    def __init__(
        self,
        uri: str,
        storage: Mapping[str, str],
        source: TokenSource,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._uri = uri
        self._storage = dict(storage)
        self._source = source
        self._clock = clock
        self._lock = threading.Lock()
        self._token: TableToken | None = None
        self._io: FileIO | None = None
        first = self.current()
        super().__init__(pafs.LocalFileSystem(), local=first.local, scheme=first.scheme)

    def __reduce__(self) -> tuple[Any, ...]:  # a copy in another process fetches its own token
        return (TokenFileIO, (self._uri, self._storage, self._source))

    def __repr__(self) -> str:
        return f"TokenFileIO({self._uri!r}, token={self._token!r})"

    @property
    def token(self) -> TableToken | None:
        """The token in use (None before the first fetch)."""
        return self._token

    def current(self) -> FileIO:
        """The FileIO of a token that is not within an hour of expiring."""
        with self._lock:
            now_ms = int(self._clock() * 1000)
            if (
                self._io is None
                or self._token is None
                or self._token.expires_at_ms - now_ms < REFRESH_BEFORE_MS
            ):
                token = self._source.fetch()
                if self._io is None or token.options != (self._token.options if self._token else None):
                    options = {
                        **self._storage,
                        **{k: v for k, v in token.options if k.startswith(STORAGE_PREFIX)},
                    }
                    self._io = FileIO.for_uri(self._uri, options)[0]
                self._token = token
            return self._io
